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
-- ARGV[7] node  the run_id of the Redis process, as buy.lua's ARGV[10] (lib/fence_of)
--
-- Returns {status, taken, stock_after, in_count, pending, stale...}:
--   status      ok | not_preheated (nothing written)
--               | fenced: the bucket's Redis is not the process preheat loaded it on
--               (docs/failover.md): nothing taken, nothing written, no stale listed
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
-- are written together or not at all. Every value read is validated
-- (lib/strict_int, key types, the stale records' shape) before the debit.

--- @include "lib/guarded"
--- @include "lib/strict_int"
--- @include "lib/shown"
--- @include "lib/corrupt"
--- @include "lib/read"
--- @include "lib/now_ms"
--- @include "lib/slot_stock"
--- @include "lib/fence_of"

return guarded(function()
  local preheated, stock, expire_at = slot_stock()
  local in_count = read(KEYS[5], 'HLEN', KEYS[5])
  local pending = read(KEYS[4], 'ZCARD', KEYS[4])
  read(KEYS[3], 'HEXISTS', KEYS[3], ARGV[2])
  if not preheated then
    return {'not_preheated', 0, -1, 0, 0}
  end
  -- A fenced bucket's stock may hold units already sold: none leave it.
  local recorded, flag = unpack(read(KEYS[1], 'HMGET', KEYS[1], 'master_run_id', 'fenced'))
  if fence_of(KEYS[1], recorded, flag, ARGV[7]) then
    return {'fenced', 0, stock, in_count, pending}
  end
  local now = now_ms()

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
      redis.call('PEXPIREAT', KEYS[3], expire_at)
      redis.call('PEXPIREAT', KEYS[4], expire_at)
    end
  end
  return reply
end, function(problem)
  return {'corrupt_state', problem}
end)
