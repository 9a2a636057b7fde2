#!lua
-- buy.lua — one purchase attempt, one round trip, atomic.
--
-- KEYS[1] meta          hash   initial_stock, closed, starts_at_ms, ends_at_ms,
--                              per_user_limit, rate_window_ms, rate_max,
--                              price_cents, expire_at_ms (written by preheat)
-- KEYS[2] stock         string units left
-- KEYS[3] buyers        hash   user -> units bought
-- KEYS[4] buyer_orders  hash   user -> latest order id
-- KEYS[5] requests      hash   "<len(user)>:<user>:<request_id>" -> "<order id>:<qty>" of an ok
--                              attempt (a bare "<order id>" written by older versions is read too)
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
--                             counted in KEYS[10] (reserved_orders, reserved_units)
-- KEYS[10] reservation_counts hash reservation counters; not in meta, so the buyer
--                             role never needs a write on meta (docs/security.md)
--
-- Returns {outcome, order_id, stock_left}:
--   outcome    ok | sold_out | duplicate | rate_limited | closed | not_started | ended
--              | not_preheated | corrupt_state | request_id_reused
--   order_id   the new order (ok), the remembered order (ok on a retried request id;
--              request_id_reused when that retry asks another qty: nothing is bought),
--              the user's existing order (duplicate); for corrupt_state the problem,
--              "<key>: <what is wrong>"; otherwise ""
--   stock_left units left after this attempt, -1 when not preheated or corrupt
--
-- Every precondition is checked before the first state write: Redis has no
-- rollback, so a refusal must leave stock, buyers and the stream untouched.
-- That includes the stored state itself: every value read is validated as
-- strictly as the command that later writes it (a strict integer, no sign
-- but '-', no leading zero, |n| <= 2^53 so a double holds it exactly and no
-- increment can overflow; a key of the wrong type), so `1.5`, ` 5`, `5e0`,
-- `0x10` never reach DECRBY/HINCRBY/PEXPIRE half-way: the outcome is then
-- corrupt_state and nothing at all is written.
-- The one write that may come earlier is the rate-limit counter: counting an
-- attempt is the point of a rate limit, refused or not. The `#!lua` shebang
-- makes Redis refuse the whole script up front under OOM instead of failing
-- half-way. Only `ok` is remembered under the request id: a refused attempt
-- changed nothing, so retrying it simply evaluates again.

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
  -- string.find without a capture allocates nothing: this runs ~10 times per attempt.
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

local function attempt()
local user = ARGV[1]
local qty = tonumber(ARGV[2])
local request_id = ARGV[3]

-- Stock, validated wherever it is answered from.
local function stock_or_nil()
  local value = read(KEYS[2], 'GET', KEYS[2])
  if not value then
    return nil
  end
  return int_of(KEYS[2], 'stock', value)
end

local request_field = false
if request_id ~= '' then
  request_field = string.len(user) .. ':' .. user .. ':' .. request_id
  local remembered = read(KEYS[5], 'HGET', KEYS[5], request_field)
  if remembered then
    local order_id, bought_qty = string.match(remembered, '^([^:]*):(%d+)$')
    if not order_id then
      order_id = remembered
    elseif tonumber(bought_qty) ~= qty then
      return {'request_id_reused', order_id, stock_or_nil() or -1}
    end
    return {'ok', order_id, stock_or_nil() or -1}
  end
end

local meta = read(KEYS[1], 'HMGET', KEYS[1], 'initial_stock', 'closed', 'starts_at_ms',
  'ends_at_ms', 'per_user_limit', 'rate_window_ms', 'rate_max', 'price_cents', 'expire_at_ms')
local stock = stock_or_nil()
if not meta[1] or not stock then
  return {'not_preheated', '', -1}
end
-- Every meta field is checked now, whichever branch below would use it.
int_of(KEYS[1], 'initial_stock', meta[1])
if meta[2] and meta[2] ~= '0' and meta[2] ~= '1' then
  corrupt(KEYS[1], 'closed holds ' .. shown(meta[2]) .. ', not 0 or 1')
end
local starts_at = optional_int_of(KEYS[1], 'starts_at_ms', meta[3])
local ends_at = optional_int_of(KEYS[1], 'ends_at_ms', meta[4])
local limit = meta[5] and int_of(KEYS[1], 'per_user_limit', meta[5]) or 1
local rate_window = optional_int_of(KEYS[1], 'rate_window_ms', meta[6])
local rate_max = meta[7] and int_of(KEYS[1], 'rate_max', meta[7]) or 0
if meta[8] then
  int_of(KEYS[1], 'price_cents', meta[8])
end
local expire_at = optional_int_of(KEYS[1], 'expire_at_ms', meta[9])
if rate_max > 0 and not (rate_window and rate_window >= 1) then
  corrupt(KEYS[1], 'rate_window_ms holds ' .. shown(meta[6]) .. ', not a positive integer')
end
if expire_at and expire_at < 1 then
  corrupt(KEYS[1], 'expire_at_ms holds ' .. shown(meta[9]) .. ', not a positive integer')
end
-- The keys written after the checks: their types and values, read now.
-- (The rate counter is checked by INCR itself, below: it refuses a malformed
-- counter without writing, and it is the first write.)
local bought_value = read(KEYS[3], 'HGET', KEYS[3], user) or '0'
local bought = strict_int(bought_value)
if not bought then
  corrupt(KEYS[3], 'units of user ' .. shown(user) .. ' hold ' .. shown(bought_value)
    .. ', not an integer')
end
local previous_order = read(KEYS[4], 'HGET', KEYS[4], user)
read(KEYS[6], 'XLEN', KEYS[6])
-- A reservation (payment_timeout_ms > 0): its keys and counters, read now too.
local timeout = strict_int(ARGV[7] or '0') or 0
if timeout > 0 then
  read(KEYS[8], 'HEXISTS', KEYS[8], ARGV[4])
  read(KEYS[9], 'ZSCORE', KEYS[9], ARGV[4])
  local counters = read(KEYS[10], 'HMGET', KEYS[10], 'reserved_orders', 'reserved_units')
  optional_int_of(KEYS[10], 'reserved_orders', counters[1])
  optional_int_of(KEYS[10], 'reserved_units', counters[2])
end

if meta[2] == '1' then
  return {'closed', '', stock}
end

local time = redis.call('TIME')
local now_ms = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
if starts_at and now_ms < starts_at then
  return {'not_started', '', stock}
end
if ends_at and now_ms >= ends_at then
  return {'ended', '', stock}
end

-- Nothing is written before this point. INCR refuses a counter that is not
-- an integer (or of the wrong type) without writing: corrupt_state then.
if rate_max > 0 then
  local attempts = read(KEYS[7], 'INCR', KEYS[7])
  if attempts == 1 then
    redis.call('PEXPIRE', KEYS[7], meta[6])
  end
  if attempts > rate_max then
    return {'rate_limited', '', stock}
  end
end

if bought + qty > limit then
  return {'duplicate', previous_order or '', stock}
end
if stock < qty then
  return {'sold_out', '', stock}
end

-- All checks passed, every key and value written below was validated above.
-- Validated fields are written as the strings read (a strict integer is
-- already what the command expects), never re-rendered from a Lua number.
local deadline = timeout > 0 and string.format('%d', now_ms + timeout) or ''
local entry_id = redis.call('XADD', KEYS[6], '*',
  'order_id', ARGV[4], 'campaign', ARGV[5], 'item_id', ARGV[6], 'user_id', user,
  'qty', qty, 'price_cents', meta[8] or '0', 'bought_at_ms', now_ms, 'request_id', request_id,
  'deadline_ms', deadline)
if timeout > 0 then
  redis.call('HSET', KEYS[8], ARGV[4], string.format('reserved %d %s %d %s %d %s %s',
    qty, meta[8] or '0', now_ms, deadline, now_ms, entry_id, user))
  redis.call('ZADD', KEYS[9], deadline, ARGV[4])
  redis.call('HINCRBY', KEYS[10], 'reserved_orders', 1)
  redis.call('HINCRBY', KEYS[10], 'reserved_units', qty)
end
local left = redis.call('DECRBY', KEYS[2], qty)
redis.call('HINCRBY', KEYS[3], user, qty)
redis.call('HSET', KEYS[4], user, ARGV[4])
if request_field then
  redis.call('HSET', KEYS[5], request_field, ARGV[4] .. ':' .. qty)
end
if expire_at then
  -- The order stream never expires: it holds promises not yet in the database.
  redis.call('PEXPIREAT', KEYS[3], meta[9])
  redis.call('PEXPIREAT', KEYS[4], meta[9])
  if request_field then
    redis.call('PEXPIREAT', KEYS[5], meta[9])
  end
  if timeout > 0 then
    redis.call('PEXPIREAT', KEYS[8], meta[9])
    redis.call('PEXPIREAT', KEYS[9], meta[9])
    redis.call('PEXPIREAT', KEYS[10], meta[9])
  end
end
return {'ok', ARGV[4], left}
end

local ok, result = pcall(attempt)
if ok then
  return result
end
if type(result) == 'table' and result[CORRUPT] then
  return {'corrupt_state', result[CORRUPT], -1}
end
-- Any other error (a write refused after the checks: should not happen) is raised as is.
if type(result) == 'table' then
  return result
end
return redis.error_reply(tostring(result))
