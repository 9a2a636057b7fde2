#!lua
-- pay.lua — mark one reserved order paid, atomically, if its deadline has not
-- passed on the Redis clock (`TIME`). Idempotent: paying again changes nothing.
--
-- KEYS[1] reservations  hash   order id -> reservation record (lua/lib/record.lua)
-- KEYS[2] deadlines     zset   order id -> deadline ms, reserved orders only
-- KEYS[3] meta          hash   read only: initial_stock says the item is preheated
-- KEYS[4] orders        stream the order's `paid` event goes here, for the database
-- KEYS[5] reservation_counts hash reservation counters: reserved_/paid_ orders and units
-- KEYS[6] seats         string a seat item's section (docs/seats.md): the order's seats
--                              go from held (h) to sold (s); passed with KEYS[7] only
--                              for a seat item
-- KEYS[7] seat_orders   hash   order id -> its seats' indexes (lib/order_seats)
-- ARGV[1] order_id      the order to pay
-- ARGV[2] campaign      campaign id (copied into the event)
-- ARGV[3] item          item id     (copied into the event)
--
-- Returns {outcome, state, qty, deadline_ms, changed_at_ms, user} (state .. user
-- are the record after this call; "" and 0 for unknown_order):
--   paid           was reserved and now < deadline: now paid; event appended
--   already_paid   paid before: nothing changed
--   expired        the deadline has passed (state expired, or still reserved
--                  until `seckill expire` releases it): nothing changed
--   cancelled      cancelled before: nothing changed
--   unknown_order  no reservation with this id in this item
--   not_preheated  the item's meta key is gone (expired?): nothing changed
--
-- A payment at or after the deadline is always refused, whether or not an
-- expirer has run yet: the deadline alone decides, so pay and expire racing
-- at the deadline cannot both win. Every key is read (type checked) and every
-- stored number validated (lib/strict_int) before the first write; a wrong
-- type or a malformed value is an error "CORRUPT <key>: ..." and nothing is
-- written. A caller whose ACL lacks one of the writes (the buyer's role) is
-- refused with NOPERM before the first (lib/refuse_unless_allowed): nothing is written.

--- @include "lib/guarded"
--- @include "lib/read"
--- @include "lib/now_ms"
--- @include "lib/record"
--- @include "lib/order_reply"
--- @include "lib/check_counters"
--- @include "lib/refuse_unless_allowed"
--- @include "lib/order_seats"

return guarded(function()
  local order_id = ARGV[1]
  local r = record_of(KEYS[1], order_id, read(KEYS[1], 'HGET', KEYS[1], order_id))
  -- Every other key read (type checked) before any answer or write.
  read(KEYS[2], 'ZSCORE', KEYS[2], order_id)
  local preheated = read(KEYS[3], 'HGET', KEYS[3], 'initial_stock')
  check_counters(KEYS[5])
  read(KEYS[4], 'XLEN', KEYS[4])
  if not r then
    return order_reply('unknown_order', nil)
  end
  if r.state == 'paid' then
    return order_reply('already_paid', r)
  elseif r.state == 'expired' or r.state == 'cancelled' then
    return order_reply(r.state, r)
  end
  local now = now_ms()
  if now >= tonumber(r.deadline) then
    return order_reply('expired', r)
  end
  -- Without meta (expired) the counters (which expire with it) would be
  -- written into a key with no expiry.
  if not preheated then
    return order_reply('not_preheated', r)
  end
  local seats = order_seats(KEYS[6], KEYS[7], order_id, 'h')
  local writes = {{'XADD', KEYS[4], '*', 'event', 'paid'},
    {'HSET', KEYS[1], order_id, 'paid'}, {'ZREM', KEYS[2], order_id},
    {'HINCRBY', KEYS[5], 'paid_units', '1'}}
  if seats then
    writes[#writes + 1] = {'SETRANGE', KEYS[6], '0', 's'}
  end
  refuse_unless_allowed(writes)
  local changed_at = string.format('%d', now)
  local event_id = redis.call('XADD', KEYS[4], '*',
    'order_id', order_id, 'campaign', ARGV[2], 'item_id', ARGV[3], 'user_id', r.user,
    'qty', r.qty, 'price_cents', r.price, 'bought_at_ms', r.bought_at, 'deadline_ms', r.deadline,
    'event', 'paid', 'event_at_ms', changed_at, 'reason', '')
  redis.call('HSET', KEYS[1], order_id,
    record_text('paid', r.qty, r.price, r.bought_at, r.deadline, changed_at, event_id, r.user))
  redis.call('ZREM', KEYS[2], order_id)
  set_seats(KEYS[6], seats, 's')
  redis.call('HINCRBY', KEYS[5], 'reserved_orders', -1)
  redis.call('HINCRBY', KEYS[5], 'reserved_units', -tonumber(r.qty))
  redis.call('HINCRBY', KEYS[5], 'paid_orders', 1)
  redis.call('HINCRBY', KEYS[5], 'paid_units', tonumber(r.qty))
  r.state, r.changed_at = 'paid', changed_at
  return order_reply('paid', r)
end)
