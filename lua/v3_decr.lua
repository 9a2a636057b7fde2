-- v3_decr.lua — the reference chapter's V3: check stock and take one unit, atomically.
--
-- Used only by `seckill loadtest --variant v3`, to measure the smallest safe
-- script against the full buy script. No user, no dedupe, no order stream.
--
-- KEYS[1] stock  string units left
-- ARGV   none
--
-- Returns 1 when one unit was taken, 0 when sold out (or the key is missing).
-- A stock that is not a strict integer (what DECR accepts) or a key of the
-- wrong type is an error "CORRUPT <key>: ..." and nothing is written.

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

-- Redis's own integer syntax (string2ll), narrowed to what a double holds
-- exactly (|n| <= 2^53): the same rule as buy.lua.
local TWO_TO_53 = '9007199254740992'
local function strict_int(value)
  if value == '0' then
    return 0
  end
  local digits = type(value) == 'string' and string.match(value, '^%-?([1-9]%d*)$')
  if not digits or #digits > #TWO_TO_53 or (#digits == #TWO_TO_53 and digits > TWO_TO_53) then
    return nil
  end
  return tonumber(value)
end

local value = read(KEYS[1], 'GET', KEYS[1])
if not value then
  return 0
end
if not strict_int(value) then
  error({err = 'CORRUPT ' .. KEYS[1] .. ': stock holds ' .. string.format('%q', string.sub(value, 1, 40))
    .. ', not an integer'})
end
if tonumber(value) <= 0 then
  return 0
end
redis.call('DECR', KEYS[1])
return 1
