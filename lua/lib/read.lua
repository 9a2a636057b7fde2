--- @include "lib/corrupt"

-- lib/read — run one command on `key`: its reply, or `corrupt(key, <Redis's
-- error>)` (WRONGTYPE, "not an integer" of an INCR). A command the caller's
-- ACL refuses is raised as itself (NOPERM: a role one command short), never
-- dressed up as damaged data.
local function read(key, ...)
  local reply = redis.pcall(...)
  if type(reply) == 'table' and reply.err then
    if string.find(reply.err, "The user executing the script can't", 1, true) then
      error(reply)
    end
    corrupt(key, reply.err)
  end
  return reply
end
