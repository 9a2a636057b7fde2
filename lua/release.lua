#!lua
-- release.lua — release reservations: give their units back, atomically and
-- exactly once. Either one named order (`seckill cancel`) or up to `limit`
-- orders whose deadline has passed on the Redis clock (`seckill expire`).
--
-- KEYS[1] reservations  hash   order id -> reservation record (format in lua/pay.lua)
-- KEYS[2] deadlines     zset   order id -> deadline ms, reserved orders only
-- KEYS[3] meta          hash   initial_stock (preheated?); a bucket's `sold_out` proof
--                              is cleared by a release
-- KEYS[4] stock         string units left: a released order's units come back here,
--                              the stock of the slot (item or bucket) the order was sold from
-- KEYS[5] buyers        hash   user -> units bought (decremented when ARGV rebuy = 1)
-- KEYS[6] buyer_orders  hash   user -> latest order id (dropped with the user's last unit)
-- KEYS[7] orders        stream one `expired`/`cancelled` event per released order
-- KEYS[8] reservation_counts hash reservation counters (reserved_/expired_/cancelled_
--                              orders, units)
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
-- checked) and every stored number validated before the first write; a
-- wrong type or a malformed value is an error "CORRUPT <key>..." and nothing
-- is written (in mode expire, a malformed buyer count fails the call after the
-- orders before it were released, each of them whole).

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

-- A stored number as strictly as INCRBY/HINCRBY take it (no sign but '-',
-- no leading zero, |n| <= 2^53), or an error naming where it is; nil stays nil.
local function integer(where, value)
  if not value then return nil end
  if not (value == '0' or string.match(value, '^-?[1-9]%d*$')) or #value > 17
      or math.abs(tonumber(value)) > 9007199254740992 then
    error({err = 'CORRUPT ' .. where .. ' is not an integer: ' .. string.format('%q', value)})
  end
  return tonumber(value)
end

-- A reservation record (format above), every number checked; nil when absent.
local function parse(key, order_id, record)
  if not record then return nil end
  local r = {}
  r.state, r.qty, r.price, r.bought_at, r.deadline, r.changed_at, r.event_id, r.user =
    string.match(record, '^(%l+) (%d+) (%d+) (%d+) (%d+) (%d+) (%S+) (.*)$')
  local where = key .. ' field ' .. order_id
  if not r.state then
    error({err = 'CORRUPT ' .. where .. ' is not a reservation record'})
  end
  for _, name in ipairs({'qty', 'price', 'bought_at', 'deadline', 'changed_at'}) do
    integer(where .. ' (' .. name .. ')', r[name])
  end
  if r.state ~= 'reserved' and r.state ~= 'paid' and r.state ~= 'expired' and r.state ~= 'cancelled' then
    error({err = 'CORRUPT ' .. where .. ': unknown state ' .. r.state})
  end
  return r
end

-- The counters a state change moves, checked before the first write.
local COUNTERS = {'reserved_orders', 'reserved_units', 'paid_orders', 'paid_units',
  'expired_orders', 'expired_units', 'cancelled_orders', 'cancelled_units'}
local function check_counters(meta)
  local values = read(meta, 'HMGET', meta, unpack(COUNTERS))
  for i, name in ipairs(COUNTERS) do
    integer(meta .. ' field ' .. name, values[i])
  end
end


local mode = ARGV[1]
local rebuy = ARGV[5] == '1'

local stock = integer(KEYS[4], read(KEYS[4], 'GET', KEYS[4]))
if not read(KEYS[3], 'HGET', KEYS[3], 'initial_stock') then
  stock = nil -- meta gone (expired): the item is not preheated any more
end
check_counters(KEYS[8])
read(KEYS[1], 'HLEN', KEYS[1])
read(KEYS[2], 'ZCARD', KEYS[2])
read(KEYS[5], 'HLEN', KEYS[5])
read(KEYS[6], 'HLEN', KEYS[6])
read(KEYS[7], 'XLEN', KEYS[7])

local time = redis.call('TIME')
local now_ms = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local now = string.format('%d', now_ms)

-- Release one reserved order (its record fields parsed): every read first,
-- so a malformed value fails before this order's first write.
local function release(order_id, r, new_state, reason)
  local qty = tonumber(r.qty)
  local bought = 0
  if rebuy then
    bought = integer(KEYS[5] .. ' field ' .. r.user, redis.call('HGET', KEYS[5], r.user)) or 0
  end
  local event_id = redis.call('XADD', KEYS[7], '*',
    'order_id', order_id, 'campaign', ARGV[6], 'item_id', ARGV[7], 'user_id', r.user,
    'qty', r.qty, 'price_cents', r.price, 'bought_at_ms', r.bought_at, 'deadline_ms', r.deadline,
    'event', new_state, 'event_at_ms', now, 'reason', reason)
  redis.call('INCRBY', KEYS[4], qty)
  -- A bucketed item's proven sell-out is no longer true (docs/buckets.md);
  -- the caller clears it in the item's other buckets.
  redis.call('HDEL', KEYS[3], 'sold_out')
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
  redis.call('HSET', KEYS[1], order_id, table.concat(
    {new_state, r.qty, r.price, r.bought_at, r.deadline, now, event_id, r.user}, ' '))
  redis.call('ZREM', KEYS[2], order_id)
  redis.call('HINCRBY', KEYS[8], 'reserved_orders', -1)
  redis.call('HINCRBY', KEYS[8], 'reserved_units', -qty)
  redis.call('HINCRBY', KEYS[8], new_state .. '_orders', 1)
  redis.call('HINCRBY', KEYS[8], new_state .. '_units', qty)
  r.state, r.changed_at = new_state, now
end

if mode == 'cancel' then
  local order_id = ARGV[2]
  local r = parse(KEYS[1], order_id, redis.call('HGET', KEYS[1], order_id))
  if not r then
    return {'unknown_order', '', 0, 0, 0, ''}
  end
  local function reply(outcome)
    return {outcome, r.state, tonumber(r.qty), tonumber(r.deadline), tonumber(r.changed_at), r.user}
  end
  if r.state == 'cancelled' then return reply('already_cancelled') end
  if r.state == 'expired' or r.state == 'paid' then return reply(r.state) end
  if not stock then return reply('not_preheated') end
  release(order_id, r, 'cancelled', ARGV[3])
  return reply('cancelled')
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
  local released, units, unreadable = 0, 0, {}
  for _, order_id in ipairs(due) do
    local record = redis.call('HGET', KEYS[1], order_id)
    local ok, parsed = pcall(parse, KEYS[1], order_id, record)
    local r = ok and parsed or nil
    if r and r.state == 'reserved' and tonumber(r.deadline) <= now_ms then
      release(order_id, r, 'expired', '')
      released = released + 1
      units = units + tonumber(r.qty)
    elseif r and r.state == 'reserved' then
      -- The record's deadline is later than its score: trust the record.
      redis.call('ZADD', KEYS[2], r.deadline, order_id)
    else
      -- Paid or released already, no record, or a record that does not
      -- parse: nothing this script may release, and it must not block the
      -- due orders behind it. Unparsable ones are named for the operator.
      if record and not r then table.insert(unreadable, order_id) end
      redis.call('ZREM', KEYS[2], order_id)
    end
  end
  return {released, units, redis.call('ZCOUNT', KEYS[2], '-inf', now), unreadable}
else
  return redis.error_reply('ERR release.lua: mode must be cancel or expire, got ' .. tostring(mode))
end
