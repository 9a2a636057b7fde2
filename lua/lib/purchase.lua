-- lib/purchase — one purchase attempt in one slot (a plain item, or a
-- bucket of a bucketed item): the whole of lua/buy.lua and the purchase half
-- of lua/bucket_buy.lua. Both scripts take the same first ten KEYS and
-- first seven ARGV (their headers list them); bucket_buy.lua adds its own after.
--
-- The order of the work is the cost of a hot item (docs/lua.md):
--   1. stock, and a retried request id, which answers its order and nothing else;
--   2. (sold out early is lib/sold_out, run before this is even defined);
--   3. meta in one HMGET: preheat's terms are trusted when they are exactly
--      the text preheat validated (`validated`), else validated one by one;
--   4. every other key the writes touch, read now (type and value), so the
--      first write cannot be followed by a refused one;
--   5. closed, window (Redis TIME), rate limit (a rate-limited attempt
--      writes nothing), per-user limit, stock;
--   6. the order entry (XADD) is the first write of an `ok` and checks the
--      stream's type itself; a refusal's only write is counting the attempt.
-- With the item's waiting room on (meta `waiting_room` = 1, written by
-- preheat), the admission is read with the other keys (4.) and decided after
-- the window (5.), before the rate limit: a refused admission writes
-- nothing (lib/admission). Off, not one more command runs, and the room's
-- library is not even defined (below).
--- @include "lib/corrupt"
--- @include "lib/clock"
--- @include "lib/record"

-- The waiting room's library, defined only when an item's room is on: Lua
-- creates every helper of a script again on each call, and lib/admission's
-- cost a sale without a room ≈ 3 µs per attempt (docs/waiting-room.md).
local function room_library()
--- @include "lib/admission"
  return {plain_room = plain_room, bucket_room = bucket_room}
end

-- The room whose keys start at KEYS[at]: a bucket's, or a plain item's.
local function room_gate(bucket, at)
  local library = room_library()
  if bucket then
    return library.bucket_room(at)
  end
  return library.plain_room(at)
end

-- The numbers of preheat's terms — initial_stock, starts_at_ms, ends_at_ms,
-- per_user_limit, rate_window_ms, rate_max, price_cents, expire_at_ms, read
-- into meta[1..8], and meta[9] `validated`, those eight as preheat checked
-- and wrote them joined by ' ' — from that text when they are exactly it,
-- else checked one by one (a hand edit, a slot preheated by an older seckill).
local function terms_of(key, meta)
  local validated = meta[9]
  if validated then
    local complete, joined = pcall(table.concat, meta, ' ', 1, 8)
    if complete and joined == validated then
      return tonumber(meta[2]), tonumber(meta[3]), tonumber(meta[4]), tonumber(meta[5]),
        tonumber(meta[6]), tonumber(meta[8])
    end
  end
  int_of(key, 'initial_stock', meta[1])
  local starts_at = optional_int_of(key, 'starts_at_ms', meta[2])
  local ends_at = optional_int_of(key, 'ends_at_ms', meta[3])
  local limit = meta[4] and int_of(key, 'per_user_limit', meta[4]) or 1
  local rate_window = optional_int_of(key, 'rate_window_ms', meta[5])
  local rate_max = meta[6] and int_of(key, 'rate_max', meta[6]) or 0
  if meta[7] then
    int_of(key, 'price_cents', meta[7])
  end
  local expire_at = expiry_of(key, 'expire_at_ms', meta[8])
  if rate_max > 0 and not (rate_window and rate_window >= 1) then
    corrupt(key, 'rate_window_ms holds ' .. shown(meta[5]) .. ', not a positive integer')
  end
  return starts_at, ends_at, limit, rate_window, rate_max, expire_at
end

-- The answer to a retried request id: its order, or request_id_reused when
-- the retry asks another qty; with a reservation, the order's deadline and state.
local function replayed(remembered, qty, stock, timeout)
  local order_id, bought_qty = string.match(remembered, '^([^:]*):(%d+)$')
  if not order_id then
    -- "<order id>" alone, as versions before the qty was kept wrote it.
    order_id = remembered
  elseif tonumber(bought_qty) ~= qty then
    return 'request_id_reused', order_id, stock or -1, 0, ''
  end
  if timeout > 0 then
    local r = record_of(KEYS[8], order_id, read(KEYS[8], 'HGET', KEYS[8], order_id))
    if r then
      return 'ok', order_id, stock or -1, tonumber(r.deadline), r.state
    end
  end
  return 'ok', order_id, stock or -1, 0, ''
end

-- The attempt: returns outcome, order_id, stock_left, deadline_ms,
-- reservation_state, and meta's `sold_out` (the bucket proof, read only with
-- `bucket`). `stock_seen`: the stock key's reply lib/sold_out already read
-- in this call (a string, or false for no key), nil to read it here.
-- `bucket` is nil for a plain item, else what bucket_buy.lua adds:
--   counting   count this attempt against the rate limit (its first call)
--   crediting  a transfer is credited first (`check` and `credit` below)
--   check()    type-check and read the bucket's own keys; nothing written
--   credit(stock, expire_at_ms)  the credit, the attempt's first write,
--              after every read; returns the stock after it
-- `room_at` is where the script's waiting-room keys start (lib/admission's
-- plain_room or, with `bucket`, bucket_room), read only when meta says the
-- room is on.
local function purchase(bucket, stock_seen, room_at)
  local user, request_id, order_id = ARGV[1], ARGV[3], ARGV[4]
  local qty = tonumber(ARGV[2])
  local timeout = strict_int(ARGV[7]) or 0
  local crediting = bucket and bucket.crediting
  local stock_value = stock_seen
  if stock_value == nil then
    stock_value = read(KEYS[2], 'GET', KEYS[2])
  end
  local stock = stock_value and int_of(KEYS[2], 'stock', stock_value)
  local request_field, remembered = false, false
  if request_id ~= '' then
    request_field = #user .. ':' .. user .. ':' .. request_id
    remembered = read(KEYS[5], 'HGET', KEYS[5], request_field)
    if remembered and not crediting then
      return replayed(remembered, qty, stock, timeout)
    end
  end
  local bought_value = read(KEYS[3], 'HGET', KEYS[3], user)
  local bought = 0
  if bought_value then
    bought = strict_int(bought_value)
    if not bought then
      corrupt(KEYS[3], 'units of user ' .. shown(user) .. ' hold ' .. shown(bought_value)
        .. ', not an integer')
    end
  end

  local meta
  if bucket then
    meta = read(KEYS[1], 'HMGET', KEYS[1], 'initial_stock', 'starts_at_ms', 'ends_at_ms',
      'per_user_limit', 'rate_window_ms', 'rate_max', 'price_cents', 'expire_at_ms', 'validated',
      'closed', 'sold_out', 'waiting_room')
  else
    meta = read(KEYS[1], 'HMGET', KEYS[1], 'initial_stock', 'starts_at_ms', 'ends_at_ms',
      'per_user_limit', 'rate_window_ms', 'rate_max', 'price_cents', 'expire_at_ms', 'validated',
      'closed', 'waiting_room')
  end
  local preheated = meta[1] and stock
  local starts_at, ends_at, limit, rate_window, rate_max, expire_at
  if preheated then
    starts_at, ends_at, limit, rate_window, rate_max, expire_at = terms_of(KEYS[1], meta)
    flag_of(KEYS[1], 'closed', meta[10])
    if bucket then
      flag_of(KEYS[1], 'sold_out', meta[11])
    end
  end
  local proven = bucket and meta[11] == '1'
  local previous_order = read(KEYS[4], 'HGET', KEYS[4], user)
  if timeout > 0 then
    read(KEYS[8], 'HLEN', KEYS[8])
    read(KEYS[9], 'ZCARD', KEYS[9])
    local counts = read(KEYS[10], 'HMGET', KEYS[10], 'reserved_orders', 'reserved_units')
    optional_int_of(KEYS[10], 'reserved_orders', counts[1])
    optional_int_of(KEYS[10], 'reserved_units', counts[2])
  end
  local counting = rate_max and rate_max > 0 and (not bucket or bucket.counting)
  local attempts
  if counting then
    attempts = read(KEYS[7], 'GET', KEYS[7])
    if attempts then
      attempts = int_of(KEYS[7], 'attempts', attempts)
    end
  end
  local gate = preheated and flag_of(KEYS[1], 'waiting_room', meta[bucket and 12 or 11])
    and room_gate(bucket, room_at).read(user)
  if bucket then
    bucket.check()
  end
  -- Nothing is written before this point.
  if crediting and preheated then
    stock = bucket.credit(stock, meta[8])
  end
  if remembered then
    return replayed(remembered, qty, stock, timeout)
  end
  if not preheated then
    return 'not_preheated', '', -1, 0, '', false
  end
  if meta[10] == '1' then
    return 'closed', '', stock, 0, '', proven
  end
  local now = now_ms()
  if starts_at and now < starts_at then
    return 'not_started', '', stock, 0, '', proven
  end
  if ends_at and now >= ends_at then
    return 'ended', '', stock, 0, '', proven
  end
  if gate and gate.refused then
    return gate.refused, gate.detail, stock, 0, '', proven
  end
  -- A rate-limited attempt is not counted again: the window closes when it
  -- would have anyway, and the answer stays rate_limited until then.
  if counting and attempts and attempts >= rate_max then
    return 'rate_limited', '', stock, 0, '', proven
  end
  local outcome
  if bought + qty > limit then
    outcome = 'duplicate'
  elseif stock < qty then
    outcome = 'sold_out'
  end

  local deadline = timeout > 0 and string.format('%d', now + timeout) or ''
  local entry_id
  if not outcome then
    -- The first write, and its own type check: nothing is written when the
    -- stream is not one. Validated values are written as the strings read.
    entry_id = read(KEYS[6], 'XADD', KEYS[6], '*',
      'order_id', order_id, 'campaign', ARGV[5], 'item_id', ARGV[6], 'user_id', user,
      'qty', ARGV[2], 'price_cents', meta[7] or '0', 'bought_at_ms', now,
      'request_id', request_id, 'deadline_ms', deadline)
  end
  if counting then
    if attempts then
      redis.call('INCR', KEYS[7])
    else
      redis.call('SET', KEYS[7], '1', 'PX', meta[5])
    end
  end
  if outcome == 'duplicate' then
    return outcome, previous_order or '', stock, 0, '', proven
  elseif outcome then
    return outcome, '', stock, 0, '', proven
  end

  if timeout > 0 then
    local bought_at = string.format('%d', now)
    redis.call('HSET', KEYS[8], order_id, record_text('reserved', ARGV[2], meta[7] or '0',
      bought_at, deadline, bought_at, entry_id, user))
    redis.call('ZADD', KEYS[9], deadline, order_id)
    redis.call('HINCRBY', KEYS[10], 'reserved_orders', 1)
    redis.call('HINCRBY', KEYS[10], 'reserved_units', qty)
  end
  local left = redis.call('DECRBY', KEYS[2], qty)
  redis.call('HINCRBY', KEYS[3], user, qty)
  redis.call('HSET', KEYS[4], user, order_id)
  if request_field then
    redis.call('HSET', KEYS[5], request_field, order_id .. ':' .. qty)
  end
  if gate then
    gate.spent()
  end
  if expire_at then
    -- The order stream never expires: it holds promises not yet in the database.
    redis.call('PEXPIREAT', KEYS[3], meta[8])
    redis.call('PEXPIREAT', KEYS[4], meta[8])
    if request_field then
      redis.call('PEXPIREAT', KEYS[5], meta[8])
    end
    if timeout > 0 then
      redis.call('PEXPIREAT', KEYS[8], meta[8])
      redis.call('PEXPIREAT', KEYS[9], meta[8])
      redis.call('PEXPIREAT', KEYS[10], meta[8])
    end
  end
  return 'ok', order_id, left, timeout > 0 and tonumber(deadline) or 0,
    timeout > 0 and 'reserved' or '', proven
end
