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
--   taken       units debited under ARGV[2] (0 = none: empty, or ARGV[1] = 0)
--               = min(stock, max(qty, ceil(stock / 2))): half of what is there,
--               so a drained hot bucket does not come back for every buy
--   stock_after units left here after the debit
--   in_count    HLEN xfer_in
--   pending     ZCARD xfer_pending before this debit
--   stale       flat list: transfer id, "<dest> <units> <ms>" of pending debits
--               older than stale_ms (their taker is probably dead)
-- Every read comes before the first write; the debit and its two log entries
-- are written together or not at all.

local meta = redis.call('HMGET', KEYS[1], 'initial_stock', 'expire_at_ms')
local stock = tonumber(redis.call('GET', KEYS[2]))
if not meta[1] or not stock then
  return {'not_preheated', 0, -1, 0, 0}
end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local in_count = redis.call('HLEN', KEYS[5])
local pending = redis.call('ZCARD', KEYS[4])
redis.call('HEXISTS', KEYS[3], ARGV[2])

local reply = {'ok', 0, stock, in_count, pending}
local stale = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now - tonumber(ARGV[4]),
  'LIMIT', 0, tonumber(ARGV[5]))
for _, id in ipairs(stale) do
  reply[#reply + 1] = id
  reply[#reply + 1] = redis.call('HGET', KEYS[3], id) or ''
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
  if meta[2] and meta[2] ~= '' then
    redis.call('PEXPIREAT', KEYS[3], meta[2])
    redis.call('PEXPIREAT', KEYS[4], meta[2])
  end
end
return reply
