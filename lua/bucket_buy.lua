#!lua
-- bucket_buy.lua — one purchase attempt in the buyer's HOME bucket of a bucketed
-- item (docs/buckets.md), optionally crediting a transfer first; one round trip, atomic.
--
-- KEYS[1] meta          hash   as buy.lua's, of this bucket (initial_stock = its share)
-- KEYS[2] stock         string units left in this bucket
-- KEYS[3] buyers        hash   user -> units bought (users whose home is this bucket)
-- KEYS[4] buyer_orders  hash   user -> latest order id
-- KEYS[5] requests      hash   "<len(user)>:<user>:<request_id>" -> order id of an ok attempt
-- KEYS[6] orders        stream one entry per order sold from this bucket
-- KEYS[7] rate          string this user's attempts in the current rate-limit window
-- KEYS[8] xfer_in       hash   transfer id -> "<source bucket> <units> <ms>", every credit
-- ARGV[1] user id
-- ARGV[2] qty (integer >= 1)
-- ARGV[3] request_id ("" = no idempotency)
-- ARGV[4] order_id to use if this attempt succeeds
-- ARGV[5] campaign id (copied into the order entry)
-- ARGV[6] item id     (copied into the order entry)
-- ARGV[7] count_attempt "1" on the attempt's first call (counts it against the
--         rate limit), "0" on the calls after a transfer (already counted)
-- ARGV[8] credit_id transfer id to credit first ("" = none)
-- ARGV[9] credit_source its source bucket
-- ARGV[10] credit_units its units
-- KEYS[9] reservations  hash   order id -> reservation record (lua/pay.lua has its format)
-- KEYS[10] deadlines    zset   order id -> payment deadline ms, reserved orders only
-- ARGV[11] payment_timeout_ms  "0" = an ok is final; else a reservation, as in buy.lua,
--                              recorded in THIS bucket (where its units come from)
--
-- Returns {outcome, order_id, stock_left, in_count, proven}:
--   outcome    as buy.lua's; sold_out means THIS BUCKET has fewer than qty
--              units (the client then sweeps the other buckets: never shown as
--              is), unless proven = 1
--   in_count   HLEN xfer_in after this call (credits ever received)
--   proven     1 when meta has sold_out = 1: a sweep proved every bucket empty
--              with nothing in transit, which stays true for good (no unit can
--              enter a bucket without a debit from another); the client answers
--              sold_out at once
--
-- The credit comes first and is unconditional (when the bucket is preheated):
-- its units already left the source bucket, so they land here even when the
-- purchase below is then refused — stock for the next buyer, never leaked.
-- It is applied at most once per transfer id (xfer_in). After it, every
-- precondition of the purchase is checked before the purchase's first write,
-- as in buy.lua; the `#!lua` shebang makes Redis refuse the whole script up
-- front under OOM.

local function now_ms()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

local user = ARGV[1]
local qty = tonumber(ARGV[2])
local request_id = ARGV[3]

local meta = redis.call('HMGET', KEYS[1], 'initial_stock', 'closed', 'starts_at_ms',
  'ends_at_ms', 'per_user_limit', 'rate_window_ms', 'rate_max', 'price_cents', 'expire_at_ms',
  'sold_out')
local stock = tonumber(redis.call('GET', KEYS[2]))
local preheated = meta[1] and stock

if ARGV[8] ~= '' and preheated and redis.call('HEXISTS', KEYS[8], ARGV[8]) == 0 then
  stock = redis.call('INCRBY', KEYS[2], ARGV[10])
  redis.call('HSET', KEYS[8], ARGV[8], ARGV[9] .. ' ' .. ARGV[10] .. ' ' .. string.format('%d', now_ms()))
  if meta[9] and meta[9] ~= '' then
    redis.call('PEXPIREAT', KEYS[8], meta[9])
  end
end
local in_count = redis.call('HLEN', KEYS[8])

local request_field = false
if request_id ~= '' then
  request_field = string.len(user) .. ':' .. user .. ':' .. request_id
  local remembered = redis.call('HGET', KEYS[5], request_field)
  if remembered then
    return {'ok', remembered, stock or -1, in_count, 0}
  end
end

if not preheated then
  return {'not_preheated', '', -1, in_count, 0}
end
if meta[2] == '1' then
  return {'closed', '', stock, in_count, 0}
end

local now = now_ms()
if meta[3] and meta[3] ~= '' and now < tonumber(meta[3]) then
  return {'not_started', '', stock, in_count, 0}
end
if meta[4] and meta[4] ~= '' and now >= tonumber(meta[4]) then
  return {'ended', '', stock, in_count, 0}
end

local rate_max = tonumber(meta[7] or '0') or 0
if rate_max > 0 and ARGV[7] == '1' then
  local attempts = redis.call('INCR', KEYS[7])
  if attempts == 1 then
    redis.call('PEXPIRE', KEYS[7], meta[6])
  end
  if attempts > rate_max then
    return {'rate_limited', '', stock, in_count, 0}
  end
end

local limit = tonumber(meta[5] or '1') or 1
local bought = tonumber(redis.call('HGET', KEYS[3], user) or '0')
if bought + qty > limit then
  return {'duplicate', redis.call('HGET', KEYS[4], user) or '', stock, in_count, 0}
end
if stock < qty then
  return {'sold_out', '', stock, in_count, meta[10] == '1' and 1 or 0}
end

-- As in buy.lua: buyer_orders read and the stream written first, so a type
-- error still leaves nothing of the purchase half-done.
redis.call('HEXISTS', KEYS[4], user)
local timeout = tonumber(ARGV[11]) or 0
local deadline = ''
if timeout > 0 then
  -- Reservation (as in buy.lua): its keys read first, so a wrong type fails before any write.
  redis.call('HEXISTS', KEYS[9], ARGV[4])
  redis.call('ZSCORE', KEYS[10], ARGV[4])
  deadline = string.format('%d', now + timeout)
end
local entry_id = redis.call('XADD', KEYS[6], '*',
  'order_id', ARGV[4], 'campaign', ARGV[5], 'item_id', ARGV[6], 'user_id', user,
  'qty', qty, 'price_cents', meta[8] or '0', 'bought_at_ms', now, 'request_id', request_id,
  'deadline_ms', deadline)
if timeout > 0 then
  redis.call('HSET', KEYS[9], ARGV[4], string.format('reserved %d %d %d %s %d %s %s',
    qty, tonumber(meta[8] or '0'), now, deadline, now, entry_id, user))
  redis.call('ZADD', KEYS[10], deadline, ARGV[4])
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
  redis.call('PEXPIREAT', KEYS[3], meta[9])
  redis.call('PEXPIREAT', KEYS[4], meta[9])
  if request_field then
    redis.call('PEXPIREAT', KEYS[5], meta[9])
  end
  if timeout > 0 then
    redis.call('PEXPIREAT', KEYS[9], meta[9])
    redis.call('PEXPIREAT', KEYS[10], meta[9])
  end
end
return {'ok', ARGV[4], left, in_count, 0}
