#!lua
-- release.lua — release reservations: give their units back, atomically and
-- exactly once. Either one named order (`seckill cancel`) or up to `limit`
-- orders whose deadline has passed on the Redis clock (`seckill expire`).
--
-- KEYS[1] reservations  hash   order id -> reservation record (lua/lib/record.lua)
-- KEYS[2] deadlines     zset   order id -> deadline ms, reserved orders only
-- KEYS[3] meta          hash   initial_stock (preheated?); a bucket's `sold_out` proof
--                              is cleared by a release
-- KEYS[4] stock         string units left: a released order's units come back here,
--                              the stock of the slot (item or bucket) the order was sold from;
--                              a release that brings it back from empty publishes
--                              `returned` on the shard channel of its name (SPUBLISH)
-- KEYS[5] buyers        hash   user -> units bought (decremented when ARGV rebuy = 1)
-- KEYS[6] buyer_orders  hash   user -> latest order id (dropped with the user's last unit)
-- KEYS[7] orders        stream one `expired`/`cancelled` event per released order
-- KEYS[8] reservation_counts hash reservation counters (reserved_/expired_/cancelled_
--                              orders, units)
-- KEYS[9] seats         string a seat item's section (docs/seats.md): a released
--                              order's seats go from held (h) back to free (.);
--                              passed with KEYS[10] only for a seat item
-- KEYS[10] seat_orders  hash   order id -> its seats' indexes (lib/order_seats)
-- ARGV[1] mode          "cancel" (ARGV order_id) or "expire" (due orders, up to ARGV limit)
-- ARGV[2] order_id      cancel: the order; expire: ""
-- ARGV[3] reason        cancel: why (copied into the event); expire: ""
-- ARGV[4] limit         expire: most orders released by this call (bounded work per call)
-- ARGV[5] rebuy         "1": the user's bought count goes down by the units (may buy
--                       again); "0": it stays (campaign option rebuy_after_release)
-- ARGV[6] campaign      campaign id (copied into the events)
-- ARGV[7] item          item id     (copied into the events)
--
-- Returns, mode cancel: {outcome, state, qty, deadline_ms, changed_at_ms, user}
--   cancelled        was reserved: released now, event appended
--   already_cancelled cancelled before: nothing changed
--   expired          released by its deadline before: nothing changed
--   paid             paid: a paid order is never released; nothing changed
--   unknown_order    no reservation with this id in this item
--   not_preheated    the item's stock or meta key is gone (expired?): nothing changed
-- Returns, mode expire: {released, units, due_left, unreadable}
--   released/units   orders and units released by this call
--   due_left         orders still due after it (call again while > 0)
--   unreadable       ids whose record does not parse: taken off the deadline
--                    list (so they cannot block the others) and named here
--
-- Safe with any number of expirers and cancels at once and after any crash:
-- each release re-checks the record's state (and, for expiry, its deadline)
-- inside this script, so an order is released at most once and a paid order
-- never. Key-expiry notifications play no part. Every key is read (type
-- checked) and every stored number validated (lib/strict_int) before the
-- first write; a wrong type or a malformed value is an error "CORRUPT
-- <key>: ..." and nothing is written (in mode expire, a malformed buyer
-- count fails the call after the orders before it were released, each of
-- them whole). A caller whose ACL lacks one of the writes (the buyer's role)
-- is refused with NOPERM before the first (lib/refuse_unless_allowed): nothing is written.

--- @include "lib/guarded"
--- @include "lib/shown"
--- @include "lib/read"
--- @include "lib/int_of"
--- @include "lib/now_ms"
--- @include "lib/record"
--- @include "lib/order_reply"
--- @include "lib/check_counters"
--- @include "lib/refuse_unless_allowed"
--- @include "lib/order_seats"

local mode = ARGV[1]
local rebuy = ARGV[5] == '1'

-- The writes a release makes, for the ACL check before the first.
local function release_writes()
  local writes = {{'XADD', KEYS[7], '*', 'event', 'expired'}, {'INCRBY', KEYS[4], '1'},
    {'HDEL', KEYS[3], 'sold_out'}, {'HSET', KEYS[1], 'o', 'r'}, {'ZREM', KEYS[2], 'o'},
    {'ZADD', KEYS[2], '1', 'o'}, {'HINCRBY', KEYS[8], 'reserved_units', '1'}}
  if KEYS[9] then
    table.insert(writes, {'SETRANGE', KEYS[9], '0', '.'})
  end
  if rebuy then
    table.insert(writes, {'HINCRBY', KEYS[5], 'u', '-1'})
    table.insert(writes, {'HDEL', KEYS[5], 'u'})
    table.insert(writes, {'HDEL', KEYS[6], 'u'})
  end
  return writes
end

-- Release one reserved order (its record `r` parsed) at `now`: every read
-- first, so a malformed value fails before this order's first write.
local function release_order(order_id, r, new_state, reason, now)
  local qty = tonumber(r.qty)
  local bought = 0
  if rebuy then
    bought = int_of(KEYS[5], 'units of user ' .. shown(r.user),
      redis.call('HGET', KEYS[5], r.user) or '0')
  end
  local seats = order_seats(KEYS[9], KEYS[10], order_id, 'h')
  local event_id = redis.call('XADD', KEYS[7], '*',
    'order_id', order_id, 'campaign', ARGV[6], 'item_id', ARGV[7], 'user_id', r.user,
    'qty', r.qty, 'price_cents', r.price, 'bought_at_ms', r.bought_at, 'deadline_ms', r.deadline,
    'event', new_state, 'event_at_ms', now, 'reason', reason)
  local stock_after = redis.call('INCRBY', KEYS[4], qty)
  if stock_after > 0 and stock_after <= qty then
    -- Back from empty: every `serve` instance reopens the item now
    -- (docs/serve.md, "Cheap refusals"); pcall: the broadcast is only advice.
    redis.pcall('SPUBLISH', KEYS[4], 'returned')
  end
  -- A bucketed item's proven sell-out is no longer true (docs/buckets.md);
  -- the caller clears it in the item's other buckets.
  redis.call('HDEL', KEYS[3], 'sold_out')
  set_seats(KEYS[9], seats, '.')
  if rebuy then
    if bought <= qty then
      redis.call('HDEL', KEYS[5], r.user)
      if redis.call('HGET', KEYS[6], r.user) == order_id then
        redis.call('HDEL', KEYS[6], r.user)
      end
    else
      redis.call('HINCRBY', KEYS[5], r.user, -qty)
    end
  end
  redis.call('HSET', KEYS[1], order_id,
    record_text(new_state, r.qty, r.price, r.bought_at, r.deadline, now, event_id, r.user))
  redis.call('ZREM', KEYS[2], order_id)
  redis.call('HINCRBY', KEYS[8], 'reserved_orders', -1)
  redis.call('HINCRBY', KEYS[8], 'reserved_units', -qty)
  redis.call('HINCRBY', KEYS[8], new_state .. '_orders', 1)
  redis.call('HINCRBY', KEYS[8], new_state .. '_units', qty)
  r.state, r.changed_at = new_state, now
end

return guarded(function()
  local stock_value = read(KEYS[4], 'GET', KEYS[4])
  local stock = stock_value and int_of(KEYS[4], 'stock', stock_value)
  if not read(KEYS[3], 'HGET', KEYS[3], 'initial_stock') then
    stock = nil -- meta gone (expired): the item is not preheated any more
  end
  check_counters(KEYS[8])
  read(KEYS[1], 'HLEN', KEYS[1])
  read(KEYS[2], 'ZCARD', KEYS[2])
  read(KEYS[5], 'HLEN', KEYS[5])
  read(KEYS[6], 'HLEN', KEYS[6])
  read(KEYS[7], 'XLEN', KEYS[7])
  local now_number = now_ms()
  local now = string.format('%d', now_number)

  if mode == 'cancel' then
    local order_id = ARGV[2]
    local r = record_of(KEYS[1], order_id, redis.call('HGET', KEYS[1], order_id))
    if not r then
      return order_reply('unknown_order', nil)
    end
    if r.state == 'cancelled' then
      return order_reply('already_cancelled', r)
    end
    if r.state == 'expired' or r.state == 'paid' then
      return order_reply(r.state, r)
    end
    if not stock then
      return order_reply('not_preheated', r)
    end
    refuse_unless_allowed(release_writes())
    release_order(order_id, r, 'cancelled', ARGV[3], now)
    return order_reply('cancelled', r)
  elseif mode == 'expire' then
    local limit = tonumber(ARGV[4])
    if not limit or limit < 1 then
      return redis.error_reply('ERR release.lua: limit must be >= 1, got ' .. tostring(ARGV[4]))
    end
    local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, limit)
    if #due > 0 and not stock then
      -- No stock key: the sale's keys expired or were deleted. Releasing would
      -- create a stock key without expiry; leave the reservations as they are.
      return {0, 0, #due, {}}
    end
    if #due > 0 then
      refuse_unless_allowed(release_writes())
    end
    local released, units, unreadable = 0, 0, {}
    for _, order_id in ipairs(due) do
      local record = redis.call('HGET', KEYS[1], order_id)
      local parsed, r = pcall(record_of, KEYS[1], order_id, record)
      if not parsed then
        r = nil
      end
      if r and r.state == 'reserved' and tonumber(r.deadline) <= now_number then
        release_order(order_id, r, 'expired', '', now)
        released = released + 1
        units = units + tonumber(r.qty)
      elseif r and r.state == 'reserved' then
        -- The record's deadline is later than its score: trust the record.
        redis.call('ZADD', KEYS[2], r.deadline, order_id)
      else
        -- Paid or released already, no record, or a record that does not
        -- parse: nothing this script may release, and it must not block the
        -- due orders behind it. Unparsable ones are named for the operator.
        if record and not r then
          table.insert(unreadable, order_id)
        end
        redis.call('ZREM', KEYS[2], order_id)
      end
    end
    return {released, units, redis.call('ZCOUNT', KEYS[2], '-inf', now), unreadable}
  end
  return redis.error_reply('ERR release.lua: mode must be cancel or expire, got ' .. tostring(mode))
end)
