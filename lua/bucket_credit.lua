#!lua
-- bucket_credit.lua — settle a transfer: credit its units to the destination
-- bucket unless already credited (docs/buckets.md). Used by a sweep that met a
-- stale pending transfer and by `reconcile --repair`; the buyer's own credit is
-- part of bucket_buy.lua. One bucket's keys only; atomic; idempotent.
--
-- KEYS[1] meta     hash   (only read: preheated? expire_at_ms)
-- KEYS[2] stock    string units left in the destination bucket
-- KEYS[3] xfer_in  hash   transfer id -> "<source bucket> <units> <ms>"
-- ARGV[1] transfer_id
-- ARGV[2] source bucket
-- ARGV[3] units
--
-- Returns {status, stock_after}:
--   credited          units added now (stock_after includes them)
--   already_credited  the id is in xfer_in: nothing written
--   not_preheated     no meta or stock here: nothing written (the transfer
--                     stays in transit; reconcile names it)
--   corrupt_state     a stored value is malformed; stock_after is then
--                     "<key>: <what is wrong>" and nothing is written (in transit)
-- Every value read is validated as strictly as lua/buy.lua does (strict
-- integers within ±2^53, key types) before the first write.

-- A corrupt value aborts the script through error(): its body runs under
-- pcall, and only this marker becomes the corrupt_state outcome.
local CORRUPT = {}
local function corrupt(key, what)
  error({[CORRUPT] = key .. ': ' .. what})
end

local function shown(value)
  if type(value) ~= 'string' then
    return tostring(value)
  end
  if #value > 40 then
    value = string.sub(value, 1, 40) .. '...'
  end
  return string.format('%q', value)
end

-- Redis's own integer syntax (string2ll), narrowed to what a double holds exactly.
local TWO_TO_53 = '9007199254740992'
local function strict_int(value)
  if value == '0' then
    return 0
  end
  if type(value) ~= 'string' or not string.find(value, '^%-?[1-9]%d*$') then
    return nil
  end
  local digits = #value - (string.byte(value, 1) == 45 and 1 or 0)
  if digits > 16 or (digits == 16 and string.sub(value, -16) > TWO_TO_53) then
    return nil
  end
  return tonumber(value)
end

local function int_of(key, what, value)
  local n = strict_int(value)
  if not n then
    corrupt(key, what .. ' holds ' .. shown(value) .. ', not an integer')
  end
  return n
end

-- '' (or absent) means "none" for optional fields.
local function optional_int_of(key, what, value)
  if not value or value == '' then
    return nil
  end
  return int_of(key, what, value)
end

-- A read whose WRONGTYPE error names its key.
local function read(key, ...)
  local reply = redis.pcall(...)
  -- A command or key the caller's ACL refuses is no damaged key: raised as
  -- itself (NOPERM; reads come before the first write).
  if type(reply) == 'table' and reply.err
      and string.find(reply.err, "The user executing the script can't", 1, true) then
    error(reply)
  end
  if type(reply) == 'table' and reply.err then
    corrupt(key, reply.err)
  end
  return reply
end


local function credit()
local meta = read(KEYS[1], 'HMGET', KEYS[1], 'initial_stock', 'expire_at_ms')
local stock_value = read(KEYS[2], 'GET', KEYS[2])
local stock = stock_value and int_of(KEYS[2], 'stock', stock_value)
local credited = read(KEYS[3], 'HEXISTS', KEYS[3], ARGV[1]) == 1
if not meta[1] or not stock then
  return {'not_preheated', -1}
end
int_of(KEYS[1], 'initial_stock', meta[1])
local expire_at = optional_int_of(KEYS[1], 'expire_at_ms', meta[2])
if expire_at and expire_at < 1 then
  corrupt(KEYS[1], 'expire_at_ms holds ' .. shown(meta[2]) .. ', not a positive integer')
end
if credited then
  return {'already_credited', stock}
end
if not strict_int(ARGV[3]) then
  return redis.error_reply('ERR units ' .. shown(ARGV[3]) .. ' is not an integer')
end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
stock = redis.call('INCRBY', KEYS[2], ARGV[3])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2] .. ' ' .. ARGV[3] .. ' ' .. string.format('%d', now))
if expire_at then
  redis.call('PEXPIREAT', KEYS[3], meta[2])
end
return {'credited', stock}
end

local ok, result = pcall(credit)
if ok then
  return result
end
if type(result) == 'table' and result[CORRUPT] then
  return {'corrupt_state', result[CORRUPT]}
end
if type(result) == 'table' then
  return result
end
return redis.error_reply(tostring(result))
