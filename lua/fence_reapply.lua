#!lua
-- fence_reapply.lua — re-apply one order the order database proves was sold
-- and a fenced slot no longer holds (a failover, a restart or a restore lost
-- its writes): `seckill reconcile --fence` (docs/failover.md, "The fence").
--
-- KEYS[1] meta          hash   (see buy.lua); the slot must be fenced (lib/fence_of)
-- KEYS[2] stock         string units left: debited by qty
-- KEYS[3] buyers        hash   user -> units bought: credited by qty (per-user limits hold)
-- KEYS[4] buyer_orders  hash   user -> latest order id: this order when it is the later one
-- KEYS[5] orders        stream the order entry, added again under its own stream id
-- ARGV[1] stream_id     the entry's id as the database stored it (<ms>-<seq>)
-- ARGV[2] order_id
-- ARGV[3] campaign
-- ARGV[4] item
-- ARGV[5] user
-- ARGV[6] qty           integer >= 1
-- ARGV[7] price_cents   integer >= 0
-- ARGV[8] bought_at_ms  integer >= 1
--
-- Returns {status, stock after}:
--   reapplied      the entry added, the stock debited, the buyer credited
--   present        the stream holds an entry with this id already: nothing written
--                  (a second run of reconcile --fence)
--   behind         the stream holds later entries than this id, so it cannot be added
--                  in its place: nothing written (reconcile then names the order)
--   short          fewer than qty units left: nothing written
--   open           the slot is not fenced: nothing written (a live sale is never debited)
--   not_preheated  no stock or initial_stock: nothing written
-- Refuses before its first write: an argument that is not what it says (ERR), a
-- key of the wrong type or a malformed stored value (CORRUPT <key>: ...). The
-- entry (XADD, which checks the id order itself) is the first write.

--- @include "lib/guarded"
--- @include "lib/read"
--- @include "lib/int_of"
--- @include "lib/strict_int"
--- @include "lib/argument"
--- @include "lib/fence_of"
--- @include "lib/shown"
--- @include "lib/corrupt"

local qty = argument('fence_reapply', 6, 'qty', 1)
argument('fence_reapply', 7, 'price_cents', 0)
argument('fence_reapply', 8, 'bought_at_ms', 1)
if not string.match(ARGV[1], '^%d+%-%d+$') then
  return redis.error_reply('ERR fence_reapply: stream_id ' .. shown(ARGV[1]) .. ' is not <ms>-<seq>')
end
if ARGV[2] == '' or ARGV[5] == '' then
  return redis.error_reply('ERR fence_reapply: order_id and user must not be empty')
end

return guarded(function()
  local initial, recorded, flag, expire_at_ms =
    unpack(read(KEYS[1], 'HMGET', KEYS[1], 'initial_stock', 'master_run_id', 'fenced',
      'expire_at_ms'))
  local stock_value = read(KEYS[2], 'GET', KEYS[2])
  if not initial or not stock_value then
    return {'not_preheated', -1}
  end
  int_of(KEYS[1], 'initial_stock', initial)
  local stock = int_of(KEYS[2], 'stock', stock_value)
  local bought = read(KEYS[3], 'HGET', KEYS[3], ARGV[5])
  if bought then
    int_of(KEYS[3], 'units of user ' .. shown(ARGV[5]), bought)
  end
  local latest = read(KEYS[4], 'HGET', KEYS[4], ARGV[5])
  local expires = expire_at_ms and expire_at_ms ~= '' and strict_int(expire_at_ms)
  local present = #read(KEYS[5], 'XRANGE', KEYS[5], ARGV[1], ARGV[1]) > 0
  if not fence_of(KEYS[1], recorded, flag, nil) then
    return {'open', stock}
  end
  if present then
    return {'present', stock}
  end
  if stock < qty then
    return {'short', stock}
  end
  -- The first write: refused by XADD itself when a later id exists.
  local added = redis.pcall('XADD', KEYS[5], ARGV[1],
    'order_id', ARGV[2], 'campaign', ARGV[3], 'item_id', ARGV[4], 'user_id', ARGV[5],
    'qty', ARGV[6], 'price_cents', ARGV[7], 'bought_at_ms', ARGV[8],
    'request_id', '', 'deadline_ms', '')
  if type(added) == 'table' and added.err then
    if string.find(added.err, 'equal or smaller', 1, true) then
      return {'behind', stock}
    end
    corrupt(KEYS[5], added.err)
  end
  local left = redis.call('DECRBY', KEYS[2], qty)
  redis.call('HINCRBY', KEYS[3], ARGV[5], qty)
  if not latest or latest < ARGV[2] then
    redis.call('HSET', KEYS[4], ARGV[5], ARGV[2])
  end
  if expires then
    redis.call('PEXPIREAT', KEYS[3], expires)
    redis.call('PEXPIREAT', KEYS[4], expires)
  end
  return {'reapplied', left}
end)
