#!lua
-- buy.lua — one purchase attempt, one round trip, atomic.
--
-- KEYS[1] meta          hash   initial_stock, closed, starts_at_ms, ends_at_ms,
--                              per_user_limit, rate_window_ms, rate_max,
--                              price_cents, expire_at_ms (written by preheat)
-- KEYS[2] stock         string units left
-- KEYS[3] buyers        hash   user -> units bought
-- KEYS[4] buyer_orders  hash   user -> latest order id
-- KEYS[5] requests      hash   "<len(user)>:<user>:<request_id>" -> order id of an ok attempt
-- KEYS[6] orders        stream one entry per order
-- KEYS[7] rate          string this user's attempts in the current rate-limit window
-- ARGV[1] user          user id
-- ARGV[2] qty           integer >= 1
-- ARGV[3] request_id    "" = no idempotency
-- ARGV[4] order_id      order id to use if this attempt succeeds
-- ARGV[5] campaign      campaign id (copied into the order entry)
-- ARGV[6] item          item id     (copied into the order entry)
-- KEYS[8] reservations  hash   order id -> reservation record (lua/pay.lua has its format)
-- KEYS[9] deadlines     zset   order id -> payment deadline ms, reserved orders only
-- ARGV[7] payment_timeout_ms  "0" = an ok is final; else the ok is a reservation
--                             due at now + this (Redis time), recorded in KEYS[8]/KEYS[9],
--                             counted in meta (reserved_orders, reserved_units)
--
-- Returns {outcome, order_id, stock_left}:
--   outcome    ok | sold_out | duplicate | rate_limited | closed | not_started | ended | not_preheated
--   order_id   the new order (ok), the remembered order (ok on a retried request id),
--              the user's existing order (duplicate), otherwise ""
--   stock_left units left after this attempt, -1 when not preheated
--
-- Every precondition is checked before the first state write: Redis has no
-- rollback, so a refusal (or a key of the wrong type) must leave stock,
-- buyers and the stream untouched.
-- The one write that may come earlier is the rate-limit counter: counting an
-- attempt is the point of a rate limit, refused or not. The `#!lua` shebang
-- makes Redis refuse the whole script up front under OOM instead of failing
-- half-way. Only `ok` is remembered under the request id: a refused attempt
-- changed nothing, so retrying it simply evaluates again.

local user = ARGV[1]
local qty = tonumber(ARGV[2])
local request_id = ARGV[3]

local request_field = false
if request_id ~= '' then
  request_field = string.len(user) .. ':' .. user .. ':' .. request_id
  local remembered = redis.call('HGET', KEYS[5], request_field)
  if remembered then
    return {'ok', remembered, tonumber(redis.call('GET', KEYS[2]) or '-1')}
  end
end

local meta = redis.call('HMGET', KEYS[1], 'initial_stock', 'closed', 'starts_at_ms',
  'ends_at_ms', 'per_user_limit', 'rate_window_ms', 'rate_max', 'price_cents', 'expire_at_ms')
local stock = tonumber(redis.call('GET', KEYS[2]))
if not meta[1] or not stock then
  return {'not_preheated', '', -1}
end
if meta[2] == '1' then
  return {'closed', '', stock}
end

local time = redis.call('TIME')
local now_ms = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
if meta[3] and meta[3] ~= '' and now_ms < tonumber(meta[3]) then
  return {'not_started', '', stock}
end
if meta[4] and meta[4] ~= '' and now_ms >= tonumber(meta[4]) then
  return {'ended', '', stock}
end

local rate_max = tonumber(meta[7] or '0') or 0
if rate_max > 0 then
  local attempts = redis.call('INCR', KEYS[7])
  if attempts == 1 then
    redis.call('PEXPIRE', KEYS[7], meta[6])
  end
  if attempts > rate_max then
    return {'rate_limited', '', stock}
  end
end

local limit = tonumber(meta[5] or '1') or 1
local bought = tonumber(redis.call('HGET', KEYS[3], user) or '0')
if bought + qty > limit then
  return {'duplicate', redis.call('HGET', KEYS[4], user) or '', stock}
end
if stock < qty then
  return {'sold_out', '', stock}
end

-- All checks passed. Every key a write below touches has been read above
-- (a wrong type fails there, before any write) except buyer_orders and the
-- stream: read the one, and write the other first, so a type error still
-- leaves nothing half-done.
redis.call('HEXISTS', KEYS[4], user)
local timeout = tonumber(ARGV[7]) or 0
local deadline = ''
if timeout > 0 then
  -- Reservation: read its keys first too (a wrong type fails before any write).
  redis.call('HEXISTS', KEYS[8], ARGV[4])
  redis.call('ZSCORE', KEYS[9], ARGV[4])
  deadline = string.format('%d', now_ms + timeout)
end
local entry_id = redis.call('XADD', KEYS[6], '*',
  'order_id', ARGV[4], 'campaign', ARGV[5], 'item_id', ARGV[6], 'user_id', user,
  'qty', qty, 'price_cents', meta[8] or '0', 'bought_at_ms', now_ms, 'request_id', request_id,
  'deadline_ms', deadline)
if timeout > 0 then
  redis.call('HSET', KEYS[8], ARGV[4], string.format('reserved %d %d %d %s %d %s %s',
    qty, tonumber(meta[8] or '0'), now_ms, deadline, now_ms, entry_id, user))
  redis.call('ZADD', KEYS[9], deadline, ARGV[4])
  redis.call('HINCRBY', KEYS[1], 'reserved_orders', 1)
  redis.call('HINCRBY', KEYS[1], 'reserved_units', qty)
end
local left = redis.call('DECRBY', KEYS[2], qty)
redis.call('HINCRBY', KEYS[3], user, qty)
redis.call('HSET', KEYS[4], user, ARGV[4])
if request_field then
  redis.call('HSET', KEYS[5], request_field, ARGV[4])
end
if meta[9] and meta[9] ~= '' then
  -- The order stream never expires: it holds promises not yet in the database.
  redis.call('PEXPIREAT', KEYS[3], meta[9])
  redis.call('PEXPIREAT', KEYS[4], meta[9])
  if request_field then
    redis.call('PEXPIREAT', KEYS[5], meta[9])
  end
  if timeout > 0 then
    redis.call('PEXPIREAT', KEYS[8], meta[9])
    redis.call('PEXPIREAT', KEYS[9], meta[9])
  end
end
return {'ok', ARGV[4], left}
