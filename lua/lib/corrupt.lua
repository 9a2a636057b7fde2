-- lib/corrupt — how a script refuses stored state it cannot trust, before
-- its first write (Redis has no rollback): `corrupt(key, what)` aborts the
-- script body with a marker, `guarded(body, answer)` runs the body and turns
-- the marker into the script's refusal — `answer(problem)` for the scripts
-- whose callers expect an outcome (`corrupt_state`), else an error reply
-- `CORRUPT <key>: <what is wrong>` — and `read` is a command whose error
-- names its key. Any other error (NOPERM of a role one command short, OOM of
-- a write) is raised as itself, never dressed up as damaged data.
--- @include "lib/strict_int"

-- Abort the body: `key` holds something the script cannot use. (The marker
-- is a field name, not a table of its own: a table would be built on every call.)
local function corrupt(key, what)
  error({seckill_corrupt = key .. ': ' .. what})
end

-- A stored value as a message shows it: quoted, at most 40 bytes.
local function shown(value)
  if type(value) ~= 'string' then
    return tostring(value)
  end
  if #value > 40 then
    value = string.sub(value, 1, 40) .. '...'
  end
  return string.format('%q', value)
end

-- Run one command on `key`: its reply, or `corrupt(key, <Redis's error>)`
-- (WRONGTYPE, "not an integer" of an INCR); a command the caller's ACL
-- refuses is raised as itself (NOPERM: a role one command short).
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

-- `value` as a strict integer, or `corrupt` naming `what` in `key`.
local function int_of(key, what, value)
  local n = strict_int(value)
  if not n then
    corrupt(key, what .. ' holds ' .. shown(value) .. ', not an integer')
  end
  return n
end

-- An optional field: '' or absent is "none" (nil).
local function optional_int_of(key, what, value)
  if not value or value == '' then
    return nil
  end
  return int_of(key, what, value)
end

-- An optional time in the future of the epoch (expire_at_ms): '' or absent
-- is none (nil); else a strict integer >= 1.
local function expiry_of(key, what, value)
  local n = optional_int_of(key, what, value)
  if n and n < 1 then
    corrupt(key, what .. ' holds ' .. shown(value) .. ', not a positive integer')
  end
  return n
end

-- A flag: absent, '0' or '1'; true for '1'.
local function flag_of(key, what, value)
  if value and value ~= '0' and value ~= '1' then
    corrupt(key, what .. ' holds ' .. shown(value) .. ', not 0 or 1')
  end
  return value == '1'
end

-- Run `body`; a `corrupt` inside becomes `answer(problem)`, or without
-- `answer` the error reply `CORRUPT <problem>`. Any other error stays itself.
local function guarded(body, answer)
  local ok, result = pcall(body)
  if ok then
    return result
  end
  if type(result) == 'table' and result.seckill_corrupt then
    if answer then
      return answer(result.seckill_corrupt)
    end
    return redis.error_reply('CORRUPT ' .. result.seckill_corrupt)
  end
  if type(result) == 'table' then
    return result
  end
  return redis.error_reply(tostring(result))
end
