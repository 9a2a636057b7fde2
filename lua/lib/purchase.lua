--- @include "lib/strict_int"
--- @include "lib/corrupt"
--- @include "lib/shown"
--- @include "lib/read"
--- @include "lib/int_of"
--- @include "lib/flag_of"
--- @include "lib/now_ms"
--- @include "lib/record"
--- @include "lib/terms_of"
--- @include "lib/replayed"
--- @include "lib/room_kind_of"
--- @include "lib/fence_of"

-- lib/purchase — one purchase attempt in one slot (a plain item, or a
-- bucket of a bucketed item): the whole of lua/buy.lua and the purchase half
-- of lua/bucket_buy.lua. Both scripts take the same first ten KEYS and
-- first seven ARGV (their headers list them); bucket_buy.lua adds its own after.
--
-- The order of the work is the cost of a hot item (docs/lua.md):
--   1. stock, and a retried request id, which answers its order and nothing
--      else (lib/replayed, its value checked; a credit call answers it only
--      after its credit, but checks it first);
--   2. (sold out early is lib/sold_out_early, run before this is even defined);
--   3. meta in one HMGET: preheat's terms are trusted when they are exactly
--      the text preheat validated (`validated`, lib/terms_of), else
--      validated one by one;
--   4. every other key the writes touch, read now (type and value), so the
--      first write cannot be followed by a refused one;
--   5. closed, window (Redis TIME), rate limit (a rate-limited attempt
--      writes nothing), per-user limit, stock;
--   5½. (fenced: lib/fence_of, decided right after not_preheated: nothing written);
--   6. the order entry (XADD) is the first write of an `ok` and checks the
--      stream's type itself; a refusal's only write is counting the attempt.
-- With the item's waiting room on (meta `waiting_room` = 1, or `ticket`,
-- written by preheat), the admission is read with the other keys (4.) and decided after
-- the window (5.), before the rate limit: a refused admission writes
-- nothing. Off, not one more command runs, and the room's helpers are not
-- even defined (the script's `room_gate`).

-- The attempt: returns outcome, order_id, stock_left, deadline_ms,
-- reservation_state, and meta's `sold_out` (the bucket proof, checked only
-- with `bucket`). `stock_seen`: the stock key's reply lib/sold_out_early
-- already read in this call (a string, or false for no key), nil to read it
-- here. `room_gate(user, kind, now)`: the script's waiting room, called only
-- when meta says it is on (kind: 'exact' or 'ticket', lib/room_kind_of; now:
-- the attempt's Redis time); it reads (nothing written) and returns the gate:
-- gate.refused (nil when admitted) and gate.detail, and gate.spent(), the
-- ok's last write (lib/plain_room_gate, lib/bucket_room_gate).
-- `bucket` is nil for a plain item, else what bucket_buy.lua adds:
--   counting   count this attempt against the rate limit (its first call)
--   crediting  a transfer is credited first (`check` and `credit` below)
--   check(stock, qty)  type-check and read the bucket's own keys, given the
--              stock read and the qty asked; nothing written
--   credit(stock, expire_at_ms)  the credit, the attempt's first write,
--              after every read; returns the stock after it
-- `node`: the run_id of the Redis process, as the client read it on this
-- call's connection (lib/fence_of; anything else: read here).
-- `seats` is nil but for a seat item's section (lua/seat_buy.lua):
--   pick()     the seats (lib/seat_pick), read and chosen before any write;
--              its refusal (seat_taken, no_block) comes after duplicate and
--              sold_out, its detail where a refusal names its order; an ok
--              writes them held (a reservation) or sold, and names them in
--              the order entry (`seats`). The pick is the 7th value returned.
-- Keys are named by their place, KEYS[n] as the scripts' headers list them:
-- `seckill acl --apply` dry-runs every `'CMD', KEYS[n]` call it reads here.
local function purchase(bucket, stock_seen, room_gate, node, seats)
  local user, request_id, order_id = ARGV[1], ARGV[3], ARGV[4]
  local qty = tonumber(ARGV[2])
  local timeout = strict_int(ARGV[7]) or 0
  local crediting = bucket and bucket.crediting
  local stock_value = stock_seen
  if stock_value == nil then
    stock_value = read(KEYS[2], 'GET', KEYS[2])
  end
  local stock = stock_value and int_of(KEYS[2], 'stock', stock_value)
  local request_field, replay = false, nil
  if request_id ~= '' then
    request_field = #user .. ':' .. user .. ':' .. request_id
    local remembered = read(KEYS[5], 'HGET', KEYS[5], request_field)
    if remembered then
      local outcome, id, deadline, state = replayed(request_field, remembered, qty, timeout)
      if not crediting then
        return outcome, id, stock or -1, deadline, state
      end
      -- A credit call answers it after the credit (the units landed here).
      replay = {outcome, id, deadline, state}
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

  local initial_stock, starts_at_ms, ends_at_ms, per_user_limit, rate_window_ms, rate_max,
    price_cents, expire_at_ms, validated, closed, waiting_room, sold_out, master_run_id,
    fenced_flag =
    unpack(read(KEYS[1], 'HMGET', KEYS[1], 'initial_stock', 'starts_at_ms', 'ends_at_ms',
      'per_user_limit', 'rate_window_ms', 'rate_max', 'price_cents', 'expire_at_ms', 'validated',
      'closed', 'waiting_room', 'sold_out', 'master_run_id', 'fenced'))
  local preheated = initial_stock and stock
  local fenced, seen_run_id = false, nil
  if preheated then
    fenced, seen_run_id = fence_of(KEYS[1], master_run_id, fenced_flag, node)
  end
  local starts_at, ends_at, limit, attempts_max, expires
  if preheated then
    starts_at, ends_at, limit, attempts_max, expires = terms_of(KEYS[1], initial_stock,
      starts_at_ms, ends_at_ms, per_user_limit, rate_window_ms, rate_max, price_cents,
      expire_at_ms, validated)
    flag_of(KEYS[1], 'closed', closed)
    if bucket then
      flag_of(KEYS[1], 'sold_out', sold_out)
    end
  end
  local proven = bucket and sold_out == '1'
  local previous_order = read(KEYS[4], 'HGET', KEYS[4], user)
  -- A duplicate names the user's order with its reservation's deadline and
  -- state (a shop tells "pay the order you hold" from "bought"): read and
  -- checked now, before any write.
  local previous
  if timeout > 0 and previous_order and limit and bought + qty > limit then
    previous = record_of(KEYS[8], previous_order,
      read(KEYS[8], 'HGET', KEYS[8], previous_order))
  end
  if timeout > 0 then
    read(KEYS[8], 'HLEN', KEYS[8])
    read(KEYS[9], 'ZCARD', KEYS[9])
    -- The counters this ok moves, as strictly as HINCRBY takes them: absent
    -- is 0, anything else (an empty string too) a strict integer.
    local reserved_orders, reserved_units =
      unpack(read(KEYS[10], 'HMGET', KEYS[10], 'reserved_orders', 'reserved_units'))
    if reserved_orders then
      int_of(KEYS[10], 'reserved_orders', reserved_orders)
    end
    if reserved_units then
      int_of(KEYS[10], 'reserved_units', reserved_units)
    end
  end
  local counting = attempts_max and attempts_max > 0 and (not bucket or bucket.counting)
  local attempts
  if counting then
    attempts = read(KEYS[7], 'GET', KEYS[7])
    if attempts then
      attempts = int_of(KEYS[7], 'attempts', attempts)
    end
  end
  -- One clock read for the window and the room alike.
  local now = preheated and now_ms()
  local room_kind = preheated and room_kind_of(KEYS[1], waiting_room)
  local gate = room_kind and room_gate(user, room_kind, now)
  if bucket then
    bucket.check(stock, qty)
  end
  local pick = seats and preheated and not fenced and seats.pick()
  -- Nothing is written before this point.
  if crediting and preheated and not fenced then
    stock = bucket.credit(stock, expire_at_ms)
  end
  if replay then
    return replay[1], replay[2], stock or -1, replay[3], replay[4]
  end
  if not preheated then
    return 'not_preheated', '', -1, 0, '', false
  end
  if fenced then
    -- Which process preheat recorded and which one answered, for the
    -- client to mark the fence (lua/fence.lua) and the operator to read.
    return 'fenced', (master_run_id or '') .. ' ' .. (seen_run_id or ''), stock, 0, '', proven
  end
  if closed == '1' then
    return 'closed', '', stock, 0, '', proven
  end
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
  if counting and attempts and attempts >= attempts_max then
    return 'rate_limited', '', stock, 0, '', proven
  end
  local outcome
  if bought + qty > limit then
    outcome = 'duplicate'
  elseif stock < qty and not (pick and stock > 0) then
    -- A seat item's section with some free seats, fewer than asked, is
    -- the pick's no_block or seat_taken (it names what is free), not sold out.
    outcome = 'sold_out'
  elseif pick and pick.refused then
    outcome = pick.refused
  end

  local deadline = timeout > 0 and string.format('%d', now + timeout) or ''
  local entry_id
  if not outcome then
    -- The first write, and its own type check: nothing is written when the
    -- stream is not one. Validated values are written as the strings read.
    if pick then
      entry_id = read(KEYS[6], 'XADD', KEYS[6], '*',
        'order_id', order_id, 'campaign', ARGV[5], 'item_id', ARGV[6], 'user_id', user,
        'qty', ARGV[2], 'price_cents', price_cents or '0', 'bought_at_ms', now,
        'request_id', request_id, 'deadline_ms', deadline, 'seats', pick.text)
    else
      entry_id = read(KEYS[6], 'XADD', KEYS[6], '*',
        'order_id', order_id, 'campaign', ARGV[5], 'item_id', ARGV[6], 'user_id', user,
        'qty', ARGV[2], 'price_cents', price_cents or '0', 'bought_at_ms', now,
        'request_id', request_id, 'deadline_ms', deadline)
    end
  end
  if counting then
    if attempts then
      redis.call('INCR', KEYS[7])
    else
      redis.call('SET', KEYS[7], '1', 'PX', rate_window_ms)
    end
  end
  if outcome == 'duplicate' then
    return outcome, previous_order or '', stock, previous and tonumber(previous.deadline) or 0,
      previous and previous.state or '', proven
  elseif outcome then
    return outcome, (pick and pick.refused == outcome and pick.detail) or '', stock, 0, '',
      proven, pick
  end

  if timeout > 0 then
    local bought_at = string.format('%d', now)
    redis.call('HSET', KEYS[8], order_id, record_text('reserved', ARGV[2], price_cents or '0',
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
  if pick then
    pick.take(order_id, timeout > 0 and 'h' or 's', expires and expire_at_ms)
  end
  if expires then
    -- The order stream never expires: it holds promises not yet in the database.
    redis.call('PEXPIREAT', KEYS[3], expire_at_ms)
    redis.call('PEXPIREAT', KEYS[4], expire_at_ms)
    if request_field then
      redis.call('PEXPIREAT', KEYS[5], expire_at_ms)
    end
    if timeout > 0 then
      redis.call('PEXPIREAT', KEYS[8], expire_at_ms)
      redis.call('PEXPIREAT', KEYS[9], expire_at_ms)
      redis.call('PEXPIREAT', KEYS[10], expire_at_ms)
    end
  end
  if left <= 0 and not bucket then
    -- The unit that emptied a plain item's stock: every `serve` instance
    -- learns the sell-out now, not at its next recheck (docs/serve.md, "The
    -- cache"). The stock key's name is the channel (its slot, its master);
    -- pcall: a role without the channel right loses only the broadcast.
    redis.pcall('SPUBLISH', KEYS[2], 'sold_out')
  end
  return 'ok', order_id, left, timeout > 0 and tonumber(deadline) or 0,
    timeout > 0 and 'reserved' or '', proven, pick
end
