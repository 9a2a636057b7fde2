#!lua
-- bucket_credit.lua — settle a transfer: credit its units to the destination
-- bucket unless already credited (docs/buckets.md). Used by a sweep that met a
-- stale pending transfer and by `reconcile --repair`; the buyer's own credit is
-- part of bucket_buy.lua. One bucket's keys only; atomic; idempotent.
--
-- KEYS[1] meta     hash   (only read: preheated? expire_at_ms, the fence)
-- KEYS[2] stock    string units left in the destination bucket; a credit that brings
--                         it back from empty publishes `returned` on the shard channel
--                         of its name (SPUBLISH)
-- KEYS[3] xfer_in  hash   transfer id -> "<source bucket> <units> <ms>"
-- ARGV[1] transfer_id
-- ARGV[2] source bucket
-- ARGV[3] units
-- ARGV[4] node     the run_id of this process as the client read it (lib/fence_of)
--
-- Returns {status, stock_after}:
--   credited          units added now (stock_after includes them)
--   already_credited  the id is in xfer_in: nothing written
--   fenced            the bucket is fenced after a failover (docs/failover.md):
--                     nothing written, the transfer stays in transit
--   not_preheated     no meta or stock here: nothing written (the transfer
--                     stays in transit; reconcile names it)
--   corrupt_state     a stored value is malformed; stock_after is then
--                     "<key>: <what is wrong>" and nothing is written (in transit)
-- Every value read is validated (lib/strict_int, key types) before the first write.

--- @include "lib/guarded"
--- @include "lib/strict_int"
--- @include "lib/shown"
--- @include "lib/read"
--- @include "lib/now_ms"
--- @include "lib/slot_stock"
--- @include "lib/fence_of"

return guarded(function()
  local preheated, stock, expire_at = slot_stock()
  local credited = read(KEYS[3], 'HEXISTS', KEYS[3], ARGV[1]) == 1
  if not preheated then
    return {'not_preheated', -1}
  end
  local recorded, flag = unpack(read(KEYS[1], 'HMGET', KEYS[1], 'master_run_id', 'fenced'))
  if fence_of(KEYS[1], recorded, flag, ARGV[4]) then
    return {'fenced', stock}
  end
  if credited then
    return {'already_credited', stock}
  end
  if not strict_int(ARGV[3]) then
    return redis.error_reply('ERR units ' .. shown(ARGV[3]) .. ' is not an integer')
  end
  stock = redis.call('INCRBY', KEYS[2], ARGV[3])
  if stock > 0 and stock <= tonumber(ARGV[3]) then
    -- Back from empty: every `serve` instance re-reads the item now
    -- (docs/serve.md, "Cheap refusals"); pcall: the broadcast is only advice.
    redis.pcall('SPUBLISH', KEYS[2], 'returned')
  end
  redis.call('HSET', KEYS[3], ARGV[1], ARGV[2] .. ' ' .. ARGV[3] .. ' ' .. string.format('%d', now_ms()))
  if expire_at then
    redis.call('PEXPIREAT', KEYS[3], expire_at)
  end
  return {'credited', stock}
end, function(problem)
  return {'corrupt_state', problem}
end)
