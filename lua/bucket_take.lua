#!lua
-- bucket_take.lua — one bucket's part of a buyer's sweep (docs/buckets.md):
-- take units for a transfer to the buyer's home bucket and log the debit, and
-- report what a sweep must know. One bucket's keys only; atomic.
--
-- KEYS[1] meta          hash   (only read: is the bucket preheated? its expire_at_ms)
-- KEYS[2] stock         string units left in this bucket
-- KEYS[3] xfer_out      hash   transfer id -> "<dest bucket> <units> <ms>", every debit
-- KEYS[4] xfer_pending  zset   transfer id -> debit ms, debits whose credit is unconfirmed
-- KEYS[5] xfer_in       hash   (only HLEN: credits ever received)
-- ARGV[1] qty the buyer needs: take nothing when "0" (the home bucket's visit)
-- ARGV[2] transfer_id for a debit (a fresh ULID)
-- ARGV[3] dest bucket (the buyer's home)
-- ARGV[4] stale_ms pending debits older than this are returned for settling
-- ARGV[5] max_stale at most this many stale transfers returned
-- ARGV[6] exact "1": take min(stock, qty) (the rebalancer); "0": the buyer's rule below
--
-- Returns {status, taken, stock_after, in_count, pending, stale...}:
--   status      ok | not_preheated (nothing written)
--               | corrupt_state: the reply is {'corrupt_state', "<key>: <what is wrong>"}
--               and nothing is written
--   taken       units debited under ARGV[2] (0 = none: empty, or ARGV[1] = 0)
--               = min(stock, max(qty, ceil(stock / 2))): half of what is there,
--               so a drained hot bucket does not come back for every buy
--   stock_after units left here after the debit
--   in_count    HLEN xfer_in
--   pending     ZCARD xfer_pending before this debit
--   stale       flat list: transfer id, "<dest> <units> <ms>" of pending debits
--               older than stale_ms (their taker is probably dead)
-- Every read comes before the first write; the debit and its two log entries
-- are written together or not at all. Every value read is validated as
-- strictly as lua/buy.lua does (strict integers within ±2^53, key types, the
-- stale records' shape) before the debit.

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


local function visit()
local meta = read(KEYS[1], 'HMGET', KEYS[1], 'initial_stock', 'expire_at_ms')
local stock_value = read(KEYS[2], 'GET', KEYS[2])
local stock = stock_value and int_of(KEYS[2], 'stock', stock_value)
local in_count = read(KEYS[5], 'HLEN', KEYS[5])
local pending = read(KEYS[4], 'ZCARD', KEYS[4])
read(KEYS[3], 'HEXISTS', KEYS[3], ARGV[2])
if not meta[1] or not stock then
  return {'not_preheated', 0, -1, 0, 0}
end
int_of(KEYS[1], 'initial_stock', meta[1])
local expire_at = optional_int_of(KEYS[1], 'expire_at_ms', meta[2])
if expire_at and expire_at < 1 then
  corrupt(KEYS[1], 'expire_at_ms holds ' .. shown(meta[2]) .. ', not a positive integer')
end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local reply = {'ok', 0, stock, in_count, pending}
local stale = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now - tonumber(ARGV[4]),
  'LIMIT', 0, tonumber(ARGV[5]))
for _, id in ipairs(stale) do
  local record = redis.call('HGET', KEYS[3], id)
  if not record or not string.find(record, '^%d+ [1-9]%d* %d+$')
      or not strict_int(string.match(record, '^%d+ (%d+)')) then
    corrupt(KEYS[3], 'pending transfer ' .. shown(id) .. ' holds ' .. shown(record)
      .. ', not "<bucket> <units> <ms>"')
  end
  reply[#reply + 1] = id
  reply[#reply + 1] = record
end

local qty = tonumber(ARGV[1])
if qty > 0 and stock > 0 then
  local taken = math.min(stock, math.max(qty, math.ceil(stock / 2)))
  if ARGV[6] == '1' then
    taken = math.min(stock, qty)
  end
  reply[2] = taken
  reply[3] = redis.call('DECRBY', KEYS[2], taken)
  redis.call('HSET', KEYS[3], ARGV[2], ARGV[3] .. ' ' .. taken .. ' ' .. string.format('%d', now))
  redis.call('ZADD', KEYS[4], now, ARGV[2])
  if expire_at then
    redis.call('PEXPIREAT', KEYS[3], meta[2])
    redis.call('PEXPIREAT', KEYS[4], meta[2])
  end
end
return reply
end

local ok, result = pcall(visit)
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
