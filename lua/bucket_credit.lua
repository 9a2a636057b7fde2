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

local meta = redis.call('HMGET', KEYS[1], 'initial_stock', 'expire_at_ms')
local stock = tonumber(redis.call('GET', KEYS[2]))
if not meta[1] or not stock then
  return {'not_preheated', -1}
end
if redis.call('HEXISTS', KEYS[3], ARGV[1]) == 1 then
  return {'already_credited', stock}
end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
stock = redis.call('INCRBY', KEYS[2], ARGV[3])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2] .. ' ' .. ARGV[3] .. ' ' .. string.format('%d', now))
if meta[2] and meta[2] ~= '' then
  redis.call('PEXPIREAT', KEYS[3], meta[2])
end
return {'credited', stock}
