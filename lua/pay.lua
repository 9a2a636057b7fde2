#!lua
-- pay.lua — mark one reserved order paid, atomically, if its deadline has not
-- passed on the Redis clock (`TIME`). Idempotent: paying again changes nothing.
--
-- KEYS[1] reservations  hash   order id -> reservation record (below)
-- KEYS[2] deadlines     zset   order id -> deadline ms, reserved orders only
-- KEYS[3] meta          hash   read only: initial_stock says the item is preheated
-- KEYS[4] orders        stream the order's `paid` event goes here, for the database
-- KEYS[5] reservation_counts hash reservation counters: reserved_/paid_ orders and units
-- ARGV[1] order_id      the order to pay
-- ARGV[2] campaign      campaign id (copied into the event)
-- ARGV[3] item          item id     (copied into the event)
--
-- The reservation record, written by buy.lua and rewritten on every state change:
--   "<state> <qty> <price_cents> <bought_at_ms> <deadline_ms> <changed_at_ms> <event_stream_id> <user>"
--   state            reserved | paid | expired | cancelled
--   changed_at_ms    when the record got this state (Redis time)
--   event_stream_id  the order stream entry that announced this state
--   user             last: it may contain spaces
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
-- stored number validated before the first write; a wrong type or a
-- malformed value is an error "CORRUPT <key>..." and nothing is written.

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


local r = parse(KEYS[1], ARGV[1], read(KEYS[1], 'HGET', KEYS[1], ARGV[1]))
-- Every other key read (type checked) before any answer or write.
read(KEYS[2], 'ZSCORE', KEYS[2], ARGV[1])
local preheated = read(KEYS[3], 'HGET', KEYS[3], 'initial_stock')
check_counters(KEYS[5])
read(KEYS[4], 'XLEN', KEYS[4])
if not r then
  return {'unknown_order', '', 0, 0, 0, ''}
end
local state, qty, price, bought_at, deadline, changed_at, user =
  r.state, r.qty, r.price, r.bought_at, r.deadline, r.changed_at, r.user
local function reply(outcome)
  return {outcome, state, tonumber(qty), tonumber(deadline), tonumber(changed_at), user}
end
if state == 'paid' then
  return reply('already_paid')
elseif state == 'expired' or state == 'cancelled' then
  return reply(state)
end
local time = redis.call('TIME')
local now_ms = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
if now_ms >= tonumber(deadline) then
  return reply('expired')
end

-- Without meta (expired) the counters (which expire with it) would be
-- written into a key with no expiry.
if not preheated then
  return reply('not_preheated')
end
local now = string.format('%d', now_ms)
local event_id = redis.call('XADD', KEYS[4], '*',
  'order_id', ARGV[1], 'campaign', ARGV[2], 'item_id', ARGV[3], 'user_id', user,
  'qty', qty, 'price_cents', price, 'bought_at_ms', bought_at, 'deadline_ms', deadline,
  'event', 'paid', 'event_at_ms', now, 'reason', '')
state, changed_at = 'paid', now
redis.call('HSET', KEYS[1], ARGV[1], table.concat(
  {state, qty, price, bought_at, deadline, changed_at, event_id, user}, ' '))
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HINCRBY', KEYS[5], 'reserved_orders', -1)
redis.call('HINCRBY', KEYS[5], 'reserved_units', -tonumber(qty))
redis.call('HINCRBY', KEYS[5], 'paid_orders', 1)
redis.call('HINCRBY', KEYS[5], 'paid_units', tonumber(qty))
return reply('paid')
