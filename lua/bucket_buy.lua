#!lua
-- bucket_buy.lua — one purchase attempt in the buyer's HOME bucket of a bucketed
-- item (docs/buckets.md), optionally crediting a transfer first; one round trip, atomic.
--
-- KEYS[1] meta          hash   as buy.lua's, of this bucket (initial_stock = its share)
-- KEYS[2] stock         string units left in this bucket
-- KEYS[3] buyers        hash   user -> units bought (users whose home is this bucket)
-- KEYS[4] buyer_orders  hash   user -> latest order id
-- KEYS[5] requests      hash   "<len(user)>:<user>:<request_id>" -> "<order id>:<qty>" of an ok
--                              attempt (a bare "<order id>" written by older versions is read too)
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
-- KEYS[11] reservation_counts hash  reservation counters of this bucket (not in meta)
--
-- Returns {outcome, order_id, stock_left, in_count, proven}:
--   outcome    as buy.lua's; sold_out means THIS BUCKET has fewer than qty
--              units (the client then sweeps the other buckets: never shown as
--              is), unless proven = 1; request_id_reused when the request id
--              bought another qty (order_id names that order, nothing is bought);
--              corrupt_state when a stored value is malformed (order_id is
--              "<key>: <what is wrong>"; nothing at all is written, not even the
--              credit: the transfer stays in transit, reconcile names it)
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
-- front under OOM. Every value read is validated as strictly as buy.lua does
-- (strict integers within ±2^53, flags 0/1, key types) before the credit, the
-- first write: a corrupt value is the corrupt_state outcome and nothing is written.

-- A corrupt value aborts the attempt through error(): `attempt` runs under
-- pcall, and only this marker becomes the corrupt_state outcome.
local CORRUPT = {}
local function corrupt(key, what)
  error({[CORRUPT] = key .. ': ' .. what})
end

local function shown(value)
  if type(value) ~= 'string' then
    return tostring(value)
  end
  if #value > 40 then
    value = string.sub(value, 1, 40) .. '...'
  end
  return string.format('%q', value)
end

-- Redis's own integer syntax (string2ll), narrowed to what a double holds exactly.
local TWO_TO_53 = '9007199254740992'
local function strict_int(value)
  if value == '0' then
    return 0
  end
  if type(value) ~= 'string' or not string.find(value, '^%-?[1-9]%d*$') then
    return nil
  end
  local digits = #value - (string.byte(value, 1) == 45 and 1 or 0)
  if digits > 16 or (digits == 16 and string.sub(value, -16) > TWO_TO_53) then
    return nil
  end
  return tonumber(value)
end

local function int_of(key, what, value)
  local n = strict_int(value)
  if not n then
    corrupt(key, what .. ' holds ' .. shown(value) .. ', not an integer')
  end
  return n
end

-- '' (or absent) means "none" for optional fields.
local function optional_int_of(key, what, value)
  if not value or value == '' then
    return nil
  end
  return int_of(key, what, value)
end

local function flag_of(key, what, value)
  if value and value ~= '0' and value ~= '1' then
    corrupt(key, what .. ' holds ' .. shown(value) .. ', not 0 or 1')
  end
  return value == '1'
end

-- A read whose WRONGTYPE error names its key.
local function read(key, ...)
  local reply = redis.pcall(...)
  -- A command or key the caller's ACL refuses is no damaged key: raised as
  -- itself (NOPERM; reads come before the first write).
  if type(reply) == 'table' and reply.err
      and string.find(reply.err, "The user executing the script can't", 1, true) then
    error(reply)
  end
  if type(reply) == 'table' and reply.err then
    corrupt(key, reply.err)
  end
  return reply
end

local function now_ms()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

local function attempt()
local user = ARGV[1]
local qty = tonumber(ARGV[2])
local request_id = ARGV[3]
local crediting = ARGV[8] ~= ''
local counting = ARGV[7] == '1'

-- Every key read and every value validated now, before the credit (the first write).
local meta = read(KEYS[1], 'HMGET', KEYS[1], 'initial_stock', 'closed', 'starts_at_ms',
  'ends_at_ms', 'per_user_limit', 'rate_window_ms', 'rate_max', 'price_cents', 'expire_at_ms',
  'sold_out')
local stock_value = read(KEYS[2], 'GET', KEYS[2])
local stock = stock_value and int_of(KEYS[2], 'stock', stock_value)
local preheated = meta[1] and stock
local in_count = read(KEYS[8], 'HLEN', KEYS[8])
local credited_before = crediting and read(KEYS[8], 'HEXISTS', KEYS[8], ARGV[8]) == 1
local request_field = false
local remembered = false
if request_id ~= '' then
  request_field = string.len(user) .. ':' .. user .. ':' .. request_id
  remembered = read(KEYS[5], 'HGET', KEYS[5], request_field)
end
local starts_at, ends_at, limit, rate_window, rate_max, expire_at
if preheated then
  int_of(KEYS[1], 'initial_stock', meta[1])
  flag_of(KEYS[1], 'closed', meta[2])
  starts_at = optional_int_of(KEYS[1], 'starts_at_ms', meta[3])
  ends_at = optional_int_of(KEYS[1], 'ends_at_ms', meta[4])
  limit = meta[5] and int_of(KEYS[1], 'per_user_limit', meta[5]) or 1
  rate_window = optional_int_of(KEYS[1], 'rate_window_ms', meta[6])
  rate_max = meta[7] and int_of(KEYS[1], 'rate_max', meta[7]) or 0
  if meta[8] then
    int_of(KEYS[1], 'price_cents', meta[8])
  end
  expire_at = optional_int_of(KEYS[1], 'expire_at_ms', meta[9])
  flag_of(KEYS[1], 'sold_out', meta[10])
  if rate_max > 0 and not (rate_window and rate_window >= 1) then
    corrupt(KEYS[1], 'rate_window_ms holds ' .. shown(meta[6]) .. ', not a positive integer')
  end
  if expire_at and expire_at < 1 then
    corrupt(KEYS[1], 'expire_at_ms holds ' .. shown(meta[9]) .. ', not a positive integer')
  end
  -- The rate counter is INCRed after the credit: validated now, not by INCR.
  if counting and rate_max > 0 then
    local attempts = read(KEYS[7], 'GET', KEYS[7])
    if attempts then
      int_of(KEYS[7], 'attempts', attempts)
    end
  end
end
local bought_value = read(KEYS[3], 'HGET', KEYS[3], user) or '0'
local bought = strict_int(bought_value)
if not bought then
  corrupt(KEYS[3], 'units of user ' .. shown(user) .. ' hold ' .. shown(bought_value)
    .. ', not an integer')
end
local previous_order = read(KEYS[4], 'HGET', KEYS[4], user)
read(KEYS[6], 'XLEN', KEYS[6])
-- A reservation (payment_timeout_ms > 0, as in buy.lua): its keys and counters, read now too.
-- (Their types are checked on every call, like every key of this script.)
local timeout = strict_int(ARGV[11] or '0') or 0
read(KEYS[9], 'HLEN', KEYS[9])
read(KEYS[10], 'ZCARD', KEYS[10])
read(KEYS[11], 'HLEN', KEYS[11])
if timeout > 0 then
  local counters = read(KEYS[11], 'HMGET', KEYS[11], 'reserved_orders', 'reserved_units')
  optional_int_of(KEYS[11], 'reserved_orders', counters[1])
  optional_int_of(KEYS[11], 'reserved_units', counters[2])
end
if crediting and not strict_int(ARGV[10]) then
  return redis.error_reply('ERR credit_units ' .. shown(ARGV[10]) .. ' is not an integer')
end

if crediting and preheated and not credited_before then
  stock = redis.call('INCRBY', KEYS[2], ARGV[10])
  redis.call('HSET', KEYS[8], ARGV[8], ARGV[9] .. ' ' .. ARGV[10] .. ' ' .. string.format('%d', now_ms()))
  if expire_at then
    redis.call('PEXPIREAT', KEYS[8], meta[9])
  end
  in_count = in_count + 1
end

if remembered then
  local order_id, bought_qty = string.match(remembered, '^([^:]*):(%d+)$')
  if not order_id then
    order_id = remembered
  elseif tonumber(bought_qty) ~= qty then
    return {'request_id_reused', order_id, stock or -1, in_count, 0}
  end
  return {'ok', order_id, stock or -1, in_count, 0}
end

if not preheated then
  return {'not_preheated', '', -1, in_count, 0}
end
if meta[2] == '1' then
  return {'closed', '', stock, in_count, 0}
end

local now = now_ms()
if starts_at and now < starts_at then
  return {'not_started', '', stock, in_count, 0}
end
if ends_at and now >= ends_at then
  return {'ended', '', stock, in_count, 0}
end

if rate_max > 0 and counting then
  local attempts = redis.call('INCR', KEYS[7])
  if attempts == 1 then
    redis.call('PEXPIRE', KEYS[7], meta[6])
  end
  if attempts > rate_max then
    return {'rate_limited', '', stock, in_count, 0}
  end
end

if bought + qty > limit then
  return {'duplicate', previous_order or '', stock, in_count, 0}
end
if stock < qty then
  return {'sold_out', '', stock, in_count, meta[10] == '1' and 1 or 0}
end

-- All checks passed, every key and value written below was validated above.
local deadline = timeout > 0 and string.format('%d', now + timeout) or ''
local entry_id = redis.call('XADD', KEYS[6], '*',
  'order_id', ARGV[4], 'campaign', ARGV[5], 'item_id', ARGV[6], 'user_id', user,
  'qty', qty, 'price_cents', meta[8] or '0', 'bought_at_ms', now, 'request_id', request_id,
  'deadline_ms', deadline)
if timeout > 0 then
  redis.call('HSET', KEYS[9], ARGV[4], string.format('reserved %d %s %d %s %d %s %s',
    qty, meta[8] or '0', now, deadline, now, entry_id, user))
  redis.call('ZADD', KEYS[10], deadline, ARGV[4])
  redis.call('HINCRBY', KEYS[11], 'reserved_orders', 1)
  redis.call('HINCRBY', KEYS[11], 'reserved_units', qty)
end
local left = redis.call('DECRBY', KEYS[2], qty)
redis.call('HINCRBY', KEYS[3], user, qty)
redis.call('HSET', KEYS[4], user, ARGV[4])
if request_field then
  redis.call('HSET', KEYS[5], request_field, ARGV[4] .. ':' .. qty)
end
if expire_at then
  redis.call('PEXPIREAT', KEYS[3], meta[9])
  redis.call('PEXPIREAT', KEYS[4], meta[9])
  if request_field then
    redis.call('PEXPIREAT', KEYS[5], meta[9])
  end
  if timeout > 0 then
    redis.call('PEXPIREAT', KEYS[9], meta[9])
    redis.call('PEXPIREAT', KEYS[10], meta[9])
    redis.call('PEXPIREAT', KEYS[11], meta[9])
  end
end
return {'ok', ARGV[4], left, in_count, 0}
end

local ok, result = pcall(attempt)
if ok then
  return result
end
if type(result) == 'table' and result[CORRUPT] then
  return {'corrupt_state', result[CORRUPT], -1, 0, 0}
end
-- Any other error (a write refused after the checks: should not happen) is raised as is.
if type(result) == 'table' then
  return result
end
return redis.error_reply(tostring(result))
