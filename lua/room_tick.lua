#!lua
-- room_tick.lua — one beat of a ticket room (docs/waiting-room.md, "Ticket
-- mode"), run by every `serve` instance at most every 100 ms: it flushes the
-- instance's arrival counts (10 ms buckets), its pre-queued users and its
-- watermark, and the instance holding the room's short lease moves the
-- arrival-time cursor. Nobody else moves it: there is no admitter process.
--
-- KEYS[1] room            hash   the room (queue_setup.lua's settings), and a ticket room's
--                                state: cursor_ms, budget_milli, budget_at_ms, lease_holder,
--                                lease_until_ms, arrived_total, admitted_total, late_total,
--                                prequeue_tickets, expired_below_ms, expires_next_at_ms;
--                                read: risk_version, revoked_count, seed
-- KEYS[2] arrivals        zset   buckets not yet passed: member and score the bucket's first ms
-- KEYS[3] arrival_counts  hash   bucket's first ms -> tickets counted in it
-- KEYS[4] marks           hash   instance -> "<watermark ms> <seen at ms>"
-- KEYS[5] passes          zset   "<cursor>:<at ms>" scored by the cursor: each move
-- KEYS[6] risk            hash   user -> "block" | "delay <ms> <set at ms>" (read only)
-- KEYS[7] revoked         set    revoked key ids (read only; lua/room_revoke.lua)
-- KEYS[8] prequeued       string a HyperLogLog (PFADD): the users who joined before starts_at
-- ARGV[1] instance        the instance's id
-- ARGV[2] watermark_ms    every arrival of this instance below it is flushed by now
--                         (a multiple of 10); "" = the instance counts once and keeps
--                         no mark (`seckill queue join`, a leaving instance)
-- ARGV[3] lease_ms        how long the lease lasts when this instance takes or keeps
--                         it (>= 1); 0 = never take it
-- ARGV[4] dead_after_ms   a mark not renewed for this long is dropped (>= 1)
-- ARGV[5] risk_seen       the risk_version the instance mirrors (-1: none): another
--                         one returns the risk list (KEYS[6]) whole
-- ARGV[6] revoked_seen    the revoked_count the instance mirrors (-1: none): another
--                         one returns the revoked key ids (KEYS[7])
-- ARGV[7] seed_wanted     1: return the pre-queue's seed once the sale started (0: not)
-- ARGV[8] entries         the counts flushed: "<bucket> <tickets> <bucket> <tickets> ...",
--                         each bucket's first ms (a multiple of 10), tickets in it (>= 1);
--                         "" = none (one string: parsed in one pass, a beat runs ten
--                         times a second on every instance)
-- ARGV[9..n] user         the users of pre-queue tickets handed out since the last beat
--                         (a room with a pre-queue; PFADD into KEYS[8]: three tickets of
--                         one user count once)
--
-- Returns {status, leader, cursor, paused, now, arrived_total, admitted_total,
--          late_total, live, slowest_watermark, prequeued, seed, revoked_count,
--          revoked_keys, risk_version, expired_below_ms, expires_next_at_ms, risk_sent,
--          user1, entry1, ...}:
--   status   ok | no_room | not_ticket (the room takes no tickets: nothing written)
--   leader   1 when this instance holds the lease (and moved the cursor if it could)
--   cursor   admitted <=> arrival_ms <= cursor (a pre-queue ticket's arrival is
--            its rank's place: starts_at - 2^48 + rank, docs/waiting-room.md)
--   paused   1 while the operator or the kill switch holds the room paused
--   late_total  tickets flushed at or below the cursor (their instance was
--            dropped as dead and came back): admitted without the rate's count
--   live, slowest_watermark  marks alive after this call, and their lowest (-1: none)
--   prequeued  the pre-queue's users (PFCOUNT) while its sweep runs, else -1
--   seed     the pre-queue's seed (hex) when asked for and the sale started, else ""
--   revoked_keys  the revoked key ids, space-separated, when revoked_count differs
--            from revoked_seen; else ""
--   expired_below_ms, expires_next_at_ms  as the room holds them after the call ("" none)
--   risk_sent  1 when the risk list follows (risk_version differs from risk_seen)
--
-- The cursor: never past the slowest live watermark (so no ticket of a live
-- instance is passed before it is counted), and at most admit_rate per
-- second over any window: a budget refilled at the rate, capped at one
-- tick's worth (100 ms) so idle time banks nothing, spent a whole bucket at
-- a time (it may go below zero by less than one bucket: the next refills pay
-- it back). A pause stops the cursor at once and refills nothing. A room
-- with a pre-queue first sweeps the ranks' range at the rate (the budget's
-- share of the pre-queued users), once every instance flushed past
-- starts_at; arrivals from starts_at follow.
-- The lease holder also keeps when admissions run out for the buy script
-- (lib/ticket_gate): every arrival at or below expired_below_ms was passed
-- at least admission_ttl ago, and that stays true until expires_next_at_ms.
-- Every value is read and validated before the first write: a refusal
-- writes nothing.

--- @include "lib/guarded"
--- @include "lib/shown"
--- @include "lib/argument"
--- @include "lib/now_ms"
--- @include "lib/read"
--- @include "lib/corrupt"
--- @include "lib/int_of"
--- @include "lib/at_least"
--- @include "lib/optional_int_of"
--- @include "lib/strict_int"
--- @include "lib/flag_of"

-- One tick's worth of budget: the instances beat every 100 ms.
local TICK_MS = 100
local BUCKET_MS = 10
-- Buckets the lease holder reads above the cursor per beat, at most, a few
-- at a time while the budget lasts: more than one beat passes at any rate
-- (a beat is 10 buckets of time).
local LEAD_SCAN = 64
local SCAN_STEP = 8
-- The pre-queue's ranks: 48-bit, placed just below starts_at on the cursor's line.
local RANKS = 281474976710656
-- Passes the lease holder looks at per beat to move expired_below_ms.
local EXPIRY_SCAN = 4
-- expires_next_at_ms while no pass waits to expire (2^52 ms: never).
local NEVER = 4503599627370496

-- The room's fields a beat reads, in one HMGET (not lib/room_of's 25: a
-- beat runs ten times a second on every instance).
local FIELDS = {'mode', 'rate_count', 'rate_per_ms', 'ttl_ms', 'prequeue', 'starts_at_ms',
  'paused_since_ms', 'expire_at_ms', 'cursor_ms', 'budget_milli', 'budget_at_ms', 'lease_holder',
  'lease_until_ms', 'arrived_total', 'admitted_total', 'late_total', 'prequeue_tickets',
  'expired_below_ms', 'expires_next_at_ms', 'risk_version', 'revoked_count'}

local function bucket_argument(n)
  local value = argument('room_tick', n, 'bucket', -9007199254740992)
  if value % BUCKET_MS ~= 0 then
    error({err = 'ERR room_tick: bucket ' .. shown(ARGV[n]) .. ' is not a multiple of 10'})
  end
  return value
end

-- A pass's member "<cursor>:<at ms>": the cursor it reached, and when.
local function pass_of(text)
  local cursor, at = string.match(text, '^(%-?%d+):(%-?%d+)$')
  cursor, at = strict_int(cursor), strict_int(at)
  if not cursor or not at then
    corrupt(KEYS[5], 'member ' .. shown(text) .. ' is not "<cursor>:<at ms>"')
  end
  return cursor, at
end

return guarded(function()
  local instance = ARGV[1]
  if instance == '' then
    error({err = 'ERR room_tick: instance is empty'})
  end
  local watermark = ARGV[2] ~= '' and bucket_argument(2) or nil
  local lease_ms = argument('room_tick', 3, 'lease_ms', 0)
  local dead_after = argument('room_tick', 4, 'dead_after_ms', 1)
  local risk_seen = argument('room_tick', 5, 'risk_seen', -1)
  local revoked_seen = argument('room_tick', 6, 'revoked_seen', -1)
  local seed_wanted = ARGV[7] == '1'
  if ARGV[7] ~= '0' and not seed_wanted then
    error({err = 'ERR room_tick: seed_wanted ' .. shown(ARGV[7]) .. ' is not 0 or 1'})
  end
  local entries = ARGV[8]
  if string.find(entries, '[^%d %-]') then
    error({err = 'ERR room_tick: entries ' .. shown(entries) .. ' are not "<bucket> <tickets> ..."'})
  end
  local flushed = {}
  -- Only digits and minus signs are left: tonumber reads no other form.
  for bucket, n in string.gmatch(entries, '(%S+) (%S+)') do
    local b, c = tonumber(bucket), tonumber(n)
    if not b or b % BUCKET_MS ~= 0 or #bucket > 17 or not c or c < 1 or #n > 15 then
      error({err = 'ERR room_tick: entry ' .. shown(bucket .. ' ' .. n)
        .. ' is not a bucket (a multiple of 10) and a count >= 1'})
    end
    flushed[#flushed + 1] = {b, c}
  end
  if #flushed * 2 ~= select(2, string.gsub(entries, '%S+', '')) then
    error({err = 'ERR room_tick: entries ' .. shown(entries) .. ' do not come in pairs'})
  end
  local users = #ARGV - 8

  local now = now_ms()
  local room = KEYS[1]
  local values = read(room, 'HMGET', room, unpack(FIELDS))
  local f = {}
  for i, name in ipairs(FIELDS) do
    f[name] = values[i]
  end
  if not f.mode then
    return {'no_room'}
  end
  if f.mode ~= 'ticket' then
    return {'not_ticket'}
  end
  local rate_count = at_least(room, 'rate_count', f.rate_count, 1)
  local rate_per = at_least(room, 'rate_per_ms', f.rate_per_ms, 1)
  local ttl = at_least(room, 'ttl_ms', f.ttl_ms, 1)
  local prequeue = flag_of(room, 'prequeue', f.prequeue)
  local starts_at = optional_int_of(room, 'starts_at_ms', f.starts_at_ms)
  local paused = optional_int_of(room, 'paused_since_ms', f.paused_since_ms) ~= nil
  local expire_at = optional_int_of(room, 'expire_at_ms', f.expire_at_ms)
  if expire_at and expire_at < 1 then
    corrupt(room, 'expire_at_ms holds ' .. shown(f.expire_at_ms) .. ', not a positive integer')
  end
  local cursor = optional_int_of(room, 'cursor_ms', f.cursor_ms)
  if not cursor then
    corrupt(room, 'a ticket room without cursor_ms (preheat writes it)')
  end
  local budget = optional_int_of(room, 'budget_milli', f.budget_milli)
  local budget_at = optional_int_of(room, 'budget_at_ms', f.budget_at_ms)
  local lease_until = optional_int_of(room, 'lease_until_ms', f.lease_until_ms)
  local arrived = optional_int_of(room, 'arrived_total', f.arrived_total) or 0
  local admitted = optional_int_of(room, 'admitted_total', f.admitted_total) or 0
  local late = optional_int_of(room, 'late_total', f.late_total) or 0
  local pre_tickets = optional_int_of(room, 'prequeue_tickets', f.prequeue_tickets) or 0
  local expired_below = optional_int_of(room, 'expired_below_ms', f.expired_below_ms)
  local expires_next = optional_int_of(room, 'expires_next_at_ms', f.expires_next_at_ms)
  local risk_version = optional_int_of(room, 'risk_version', f.risk_version) or 0
  local revoked_count = optional_int_of(room, 'revoked_count', f.revoked_count) or 0
  local started = not starts_at or now >= starts_at
  if users > 0 and (not prequeue or not starts_at) then
    error({err = 'ERR room_tick: ' .. users .. ' pre-queue users, but the room has no pre-queue'})
  end

  local revoked = {}
  if revoked_seen ~= revoked_count then
    revoked = read(KEYS[7], 'SMEMBERS', KEYS[7])
    table.sort(revoked)
  end
  local risk = {}
  if risk_seen ~= risk_version then
    risk = read(KEYS[6], 'HGETALL', KEYS[6])
  end

  -- The marks: alive ones bound the cursor, dead ones go.
  local marks = read(KEYS[4], 'HGETALL', KEYS[4])
  local dead, slowest, live = {}, watermark, watermark and 1 or 0
  for i = 1, #marks, 2 do
    local other, text = marks[i], marks[i + 1]
    local mark, seen = string.match(text, '^(%S+) (%S+)$')
    mark, seen = strict_int(mark), strict_int(seen)
    if not mark or not seen then
      corrupt(KEYS[4], 'instance ' .. shown(other) .. ' holds ' .. shown(text)
        .. ', not "<watermark ms> <seen at ms>"')
    end
    if other ~= instance then
      if now - seen > dead_after then
        dead[#dead + 1] = other
      else
        live = live + 1
        slowest = slowest and math.min(slowest, mark) or mark
      end
    end
  end

  -- The lease, and the budget it spends.
  local leader = lease_ms > 0 and (f.lease_holder == instance or not lease_until
    or lease_until < now)
  local cap = math.max(1000, math.floor(rate_count * TICK_MS * 1000 / rate_per))
  if leader then
    if paused or not budget_at then
      budget = budget or cap
    else
      budget = math.min((budget or cap) + math.floor((now - budget_at) * rate_count * 1000 / rate_per),
        cap)
    end
    budget_at = now
  end
  local moving = leader and not paused

  -- The pre-queue's sweep: the ranks' range at the rate, once the sale
  -- started and every live instance flushed past starts_at (so every
  -- pre-queued user is counted). Arrivals wait until it is done.
  local sweep_end = starts_at and starts_at - 1
  local sweeping = prequeue and starts_at and cursor < sweep_end
  local prequeued = -1
  if sweeping and started then
    prequeued = read(KEYS[8], 'PFCOUNT', KEYS[8])
  end
  local moved = false
  if sweeping and moving and started and slowest and slowest >= starts_at and budget > 0 then
    local step = prequeued > 0 and math.floor(budget / 1000 * RANKS / prequeued) or RANKS
    local reached = math.min(cursor + math.max(step, 1), sweep_end)
    local spent = math.ceil((reached - cursor) * math.max(prequeued, 0) / RANKS)
    budget = budget - spent * 1000
    admitted = admitted + spent
    if reached == sweep_end then
      -- Three tickets of one user are one admission: the count ends at the tickets.
      admitted = math.max(admitted, pre_tickets)
    end
    cursor, moved = reached, true
  end

  -- The flushed buckets: above the cursor they add to their counts (read
  -- in one HMGET); at or below it they came late (their instance was
  -- dropped as dead and came back).
  local late_now, counts, names = 0, {}, {}
  for _, entry in ipairs(flushed) do
    local bucket, n = entry[1], entry[2]
    arrived = arrived + n
    if bucket <= cursor then
      late_now = late_now + n
    elseif counts[bucket] then
      counts[bucket] = counts[bucket] + n
    else
      counts[bucket] = n
      names[#names + 1] = string.format('%d', bucket)
    end
  end
  if #names > 0 then
    local stored = read(KEYS[3], 'HMGET', KEYS[3], unpack(names))
    for k, text in ipairs(names) do
      if stored[k] then
        local bucket = tonumber(text)
        counts[bucket] = counts[bucket] + int_of(KEYS[3], 'bucket ' .. text, stored[k])
      end
    end
  end
  local order = {}
  for bucket in pairs(counts) do
    order[#order + 1] = bucket
  end
  table.sort(order)

  -- The move through the buckets: the lease holder reads the pending ones
  -- a few at a time (and their counts) while the budget lasts, and passes
  -- them in order, with the flushed ones, below the slowest mark. A bucket
  -- is passed only once every pending bucket below it was read.
  local passed = {}
  local had_arrivals
  if moving and not sweeping and slowest then
    had_arrivals = read(KEYS[2], 'EXISTS', KEYS[2]) == 1
    local read_up_to = had_arrivals and cursor or math.huge
    local asked, k, stop = 0, 1, false
    while true do
      while k <= #order and order[k] <= read_up_to do
        local bucket = order[k]
        if bucket + BUCKET_MS > slowest or budget <= 0 then
          stop = true
          break
        end
        budget = budget - counts[bucket] * 1000
        admitted = admitted + counts[bucket]
        cursor = bucket + BUCKET_MS - 1
        passed[#passed + 1] = bucket
        k = k + 1
        moved = true
      end
      if stop or read_up_to == math.huge or asked >= LEAD_SCAN then
        break
      end
      local batch = read(KEYS[2], 'ZRANGEBYSCORE', KEYS[2], '(' .. read_up_to, '+inf', 'LIMIT', 0,
        SCAN_STEP)
      asked = asked + SCAN_STEP
      local unknown, unknown_names = {}, {}
      for _, text in ipairs(batch) do
        local bucket = strict_int(text)
        if not bucket then
          corrupt(KEYS[2], 'member ' .. shown(text) .. ' is not a bucket (an integer)')
        end
        read_up_to = bucket
        if not counts[bucket] then
          unknown[#unknown + 1] = bucket
          unknown_names[#unknown_names + 1] = text
        end
      end
      if #batch < SCAN_STEP then
        read_up_to = math.huge
      end
      if #unknown > 0 then
        local stored = read(KEYS[3], 'HMGET', KEYS[3], unpack(unknown_names))
        for j, bucket in ipairs(unknown) do
          counts[bucket] = stored[j] and int_of(KEYS[3], 'bucket ' .. unknown_names[j], stored[j])
            or 0
          order[#order + 1] = bucket
        end
        table.sort(order)
      end
    end
    -- Nothing pending below the slowest mark: the cursor runs through the
    -- empty time up to it (no ticket there to count).
    if not stop and k > #order and read_up_to == math.huge and budget > 0
        and slowest - 1 > cursor then
      cursor = slowest - 1
      moved = true
    end
  end
  if #names > 0 and had_arrivals == nil and expire_at then
    had_arrivals = read(KEYS[2], 'EXISTS', KEYS[2]) == 1
  end

  -- When admissions run out (the lease holder): every arrival up to
  -- expired_below was passed at least ttl ago; the next pass above it
  -- expires at expires_next.
  local had_passes
  if leader then
    local scan = read(KEYS[5], 'ZRANGEBYSCORE', KEYS[5], expired_below and ('(' .. expired_below)
      or '-inf', '+inf', 'LIMIT', 0, EXPIRY_SCAN)
    had_passes = #scan > 0 or expired_below ~= nil
    expires_next = nil
    for _, text in ipairs(scan) do
      local reached, at = pass_of(text)
      if at + ttl > now then
        expires_next = at + ttl
        break
      end
      expired_below = reached
    end
    if not expires_next then
      -- More passes expired than one beat looks at: the gate reads the
      -- passes until a beat catches up. None left above: this beat's own
      -- pass, or none until the next move (a beat writes it and this too).
      expires_next = #scan == EXPIRY_SCAN and now or (moved and now + ttl or NEVER)
    end
  end
  if moved and expire_at and had_passes == nil then
    had_passes = read(KEYS[5], 'EXISTS', KEYS[5]) == 1
  end
  local prequeue_users = {}
  if users > 0 then
    for i = 9, #ARGV do
      prequeue_users[#prequeue_users + 1] = ARGV[i]
    end
    pre_tickets = pre_tickets + users
    arrived = arrived + users
  end
  local seed = ''
  if seed_wanted and prequeue and started then
    seed = read(room, 'HGET', room, 'seed') or ''
  end

  -- Nothing is written before this point.
  if #passed > 0 then
    local texts = {}
    for i, bucket in ipairs(passed) do
      texts[i] = string.format('%d', bucket)
    end
    redis.call('ZREM', KEYS[2], unpack(texts))
    redis.call('HDEL', KEYS[3], unpack(texts))
  end
  local gone = {}
  for _, bucket in ipairs(passed) do
    gone[bucket] = true
  end
  local scores, fields = {}, {}
  for _, text in ipairs(names) do
    local bucket = tonumber(text)
    if not gone[bucket] then
      scores[#scores + 1] = text
      scores[#scores + 1] = text
      fields[#fields + 1] = text
      fields[#fields + 1] = counts[bucket]
    end
  end
  if #scores > 0 then
    redis.call('ZADD', KEYS[2], unpack(scores))
    redis.call('HSET', KEYS[3], unpack(fields))
  end
  if #prequeue_users > 0 then
    redis.call('PFADD', KEYS[8], unpack(prequeue_users))
  end
  if #dead > 0 then
    redis.call('HDEL', KEYS[4], unpack(dead))
  end
  if watermark then
    redis.call('HSET', KEYS[4], instance, string.format('%d %d', watermark, now))
  elseif #marks > 0 then
    redis.call('HDEL', KEYS[4], instance)
  end
  admitted = admitted + late_now
  late = late + late_now
  local state = {'arrived_total', string.format('%d', arrived),
    'admitted_total', string.format('%d', admitted), 'late_total', string.format('%d', late)}
  if users > 0 then
    state[#state + 1] = 'prequeue_tickets'
    state[#state + 1] = string.format('%d', pre_tickets)
  end
  if leader then
    for _, v in ipairs({'lease_holder', instance, 'lease_until_ms', string.format('%d', now + lease_ms),
        'budget_milli', string.format('%d', budget), 'budget_at_ms', string.format('%d', budget_at),
        'expires_next_at_ms', string.format('%d', expires_next)}) do
      state[#state + 1] = v
    end
    if expired_below then
      state[#state + 1] = 'expired_below_ms'
      state[#state + 1] = string.format('%d', expired_below)
    end
  end
  if moved then
    state[#state + 1] = 'cursor_ms'
    state[#state + 1] = string.format('%d', cursor)
    redis.call('ZADD', KEYS[5], cursor, string.format('%d:%d', cursor, now))
  end
  redis.call('HSET', room, unpack(state))
  if expire_at then
    local at = string.format('%d', expire_at)
    if #scores > 0 and (not had_arrivals or #passed > 0) then
      redis.call('PEXPIREAT', KEYS[2], at)
      redis.call('PEXPIREAT', KEYS[3], at)
    end
    if watermark and #marks == 0 then
      redis.call('PEXPIREAT', KEYS[4], at)
    end
    if moved and not had_passes then
      redis.call('PEXPIREAT', KEYS[5], at)
    end
    if #prequeue_users > 0 then
      redis.call('PEXPIREAT', KEYS[8], at)
    end
  end

  local reply = {'ok', leader and 1 or 0, cursor, paused and 1 or 0, now, arrived, admitted, late,
    live, slowest or -1, prequeued, seed, revoked_count,
    revoked_seen ~= revoked_count and table.concat(revoked, ' ') or '', risk_version,
    expired_below and string.format('%d', expired_below) or '',
    expires_next and string.format('%d', expires_next) or ''}
  if risk_seen ~= risk_version then
    reply[#reply + 1] = 1
    for _, value in ipairs(risk) do
      reply[#reply + 1] = value
    end
  else
    reply[#reply + 1] = 0
  end
  return reply
end)
