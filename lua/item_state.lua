#!lua flags=no-writes
-- item_state.lua — read one item's state in one round trip (a script rather
-- than a pipeline because a Redis Cluster connection cannot pipeline generically).
--
-- KEYS[1] meta    hash
-- KEYS[2] stock   string
-- KEYS[3] buyers  hash
-- KEYS[4] orders  stream
-- ARGV    none
--
-- Returns {initial_stock|false, closed|false, switch_reason|false,
--          switched_at_ms|false, switched_by|false, stock|false, buyers, stream_len}
-- A key of the wrong type is an error "CORRUPT <key>: ..." (values are checked by the caller).

-- A read whose WRONGTYPE error names its key (error code CORRUPT).
local function read(key, ...)
  local reply = redis.pcall(...)
  -- A command or key the caller's ACL refuses is no damaged key: raised as
  -- itself (NOPERM; reads come before the first write).
  if type(reply) == 'table' and reply.err
      and string.find(reply.err, "The user executing the script can't", 1, true) then
    error(reply)
  end
  if type(reply) == 'table' and reply.err then
    error({err = 'CORRUPT ' .. key .. ': ' .. reply.err})
  end
  return reply
end

local meta = read(KEYS[1], 'HMGET', KEYS[1], 'initial_stock', 'closed', 'switch_reason',
  'switched_at_ms', 'switched_by')
return {meta[1], meta[2], meta[3], meta[4], meta[5], read(KEYS[2], 'GET', KEYS[2]),
  read(KEYS[3], 'HLEN', KEYS[3]), read(KEYS[4], 'XLEN', KEYS[4])}
