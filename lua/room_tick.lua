#!lua
-- room_tick.lua — one beat of a ticket room (docs/waiting-room.md, "Ticket
-- mode"), run by every `serve` instance at most every 100 ms: it flushes the
-- instance's arrival counts (10 ms buckets) and its watermark, and the
-- instance holding the room's short lease moves the arrival-time cursor.
-- Nobody else moves it: there is no admitter process.
--
-- KEYS[1] room            hash   the room (lib/room_of), and a ticket room's state:
--                                cursor_ms, budget_milli, budget_at_ms, lease_holder,
--                                lease_until_ms, arrived_total, admitted_total,
--                                late_total, risk_version
-- KEYS[2] arrivals        zset   buckets not yet passed: member and score the bucket's first ms
-- KEYS[3] arrival_counts  hash   bucket's first ms -> tickets counted in it
-- KEYS[4] marks           hash   instance -> "<watermark ms> <seen at ms>"
-- KEYS[5] passes          zset   "<cursor>:<at ms>" scored by the cursor: each move
-- KEYS[6] risk            hash   user -> "block" | "delay <ms> <set at ms>" (read only)
-- KEYS[7] revoked         set    revoked key ids (read only; lua/room_revoke.lua)
-- ARGV[1] instance        the instance's id
-- ARGV[2] watermark_ms    every arrival of this instance below it is flushed by now
--                         (a multiple of 10); "" = the instance counts once and keeps
--                         no mark (`seckill queue join`, a leaving instance)
-- ARGV[3] lease_ms        how long the lease lasts when this instance takes or keeps
--                         it (>= 1); 0 = never take it
-- ARGV[4] dead_after_ms   a mark not renewed for this long is dropped (>= 1)
-- ARGV[5] pending_limit   how many of the buckets above the cursor to return (>= 0)
-- ARGV[6] risk_seen       the risk_version the instance mirrors (-1: none): another
--                         one returns the risk list (KEYS[6]) whole
-- ARGV[7..n] entry        pairs: bucket's first ms (a multiple of 10), tickets in it (>= 1)
--
-- Returns {status, leader, cursor, paused, now, arrived_total, admitted_total,
--          late_total, risk_version, revoked_keys, live, slowest_watermark,
--          pending_total, n, bucket1, count1, ..., bucket_n, count_n, risk_sent,
--          user1, entry1, ...}:
--   status   ok | no_room | not_ticket (the room takes no tickets: nothing written)
--   leader   1 when this instance holds the lease (and moved the cursor if it could)
--   cursor   admitted <=> arrival_ms <= cursor
--   paused   1 while the operator or the kill switch holds the room paused
--   late_total  tickets flushed at or below the cursor (their instance was
--            dropped as dead and came back): admitted without the rate's count
--   live, slowest_watermark  marks alive after this call, and their lowest (-1: none)
--   pending  tickets counted and not yet passed; then n, and the first n
--            (at most pending_limit) buckets above the cursor with their counts
--   risk_sent  1 when the risk list follows (risk_version differs from risk_seen)
--
-- The cursor: never past the slowest live watermark (so no ticket of a live
-- instance is passed before it is counted), and at most admit_rate per
-- second over any window: a budget refilled at the rate, capped at one
-- tick's worth (100 ms) so idle time banks nothing, spent a whole bucket at
-- a time (it may go below zero by less than one bucket: the next refills pay
-- it back). A pause stops the cursor at once and refills nothing. Every value
-- is read and validated before the first write: a refusal writes nothing.

--- @include "lib/guarded"
--- @include "lib/shown"
--- @include "lib/argument"
--- @include "lib/now_ms"
--- @include "lib/room_of"
--- @include "lib/read"
--- @include "lib/corrupt"
--- @include "lib/int_of"
--- @include "lib/optional_int_of"
--- @include "lib/strict_int"

-- One tick's worth of budget: the instances beat every 100 ms.
local TICK_MS = 100
local BUCKET_MS = 10
-- Buckets the lease holder reads above the cursor per beat: more than one
-- beat passes at any rate (a beat is 10 buckets of time).
local LEAD_SCAN = 64

local function bucket_argument(n, what, least)
  local value = argument('room_tick', n, what, least)
  if what == 'bucket' and value % BUCKET_MS ~= 0 then
    error({err = 'ERR room_tick: bucket ' .. shown(ARGV[n]) .. ' is not a multiple of 10'})
  end
  return value
end

return guarded(function()
  local instance = ARGV[1]
  if instance == '' then
    error({err = 'ERR room_tick: instance is empty'})
  end
  local watermark = ARGV[2] ~= '' and bucket_argument(2, 'bucket', -9007199254740992) or nil
  local lease_ms = argument('room_tick', 3, 'lease_ms', 0)
  local dead_after = argument('room_tick', 4, 'dead_after_ms', 1)
  local pending_limit = argument('room_tick', 5, 'pending_limit', 0)
  local risk_seen = argument('room_tick', 6, 'risk_seen', -1)
  if (#ARGV - 6) % 2 ~= 0 then
    error({err = 'ERR room_tick: entries come in pairs (bucket, count)'})
  end
  local flushed = {}
  for i = 7, #ARGV, 2 do
    local bucket = bucket_argument(i, 'bucket', -9007199254740992)
    flushed[#flushed + 1] = {bucket, argument('room_tick', i + 1, 'count', 1)}
  end

  local now = now_ms()
  local r = room_of(KEYS[1])
  if not r then
    return {'no_room'}
  end
  if r.mode ~= 'ticket' then
    return {'not_ticket'}
  end
  local fields = {'cursor_ms', 'budget_milli', 'budget_at_ms', 'lease_holder', 'lease_until_ms',
    'arrived_total', 'admitted_total', 'late_total', 'risk_version'}
  local values = read(KEYS[1], 'HMGET', KEYS[1], unpack(fields))
  local t = {}
  for i, name in ipairs(fields) do
    t[name] = values[i]
  end
  local cursor = optional_int_of(KEYS[1], 'cursor_ms', t.cursor_ms)
  if not cursor then
    corrupt(KEYS[1], 'a ticket room without cursor_ms (preheat writes it)')
  end
  local budget = optional_int_of(KEYS[1], 'budget_milli', t.budget_milli)
  local budget_at = optional_int_of(KEYS[1], 'budget_at_ms', t.budget_at_ms)
  local lease_until = optional_int_of(KEYS[1], 'lease_until_ms', t.lease_until_ms)
  local arrived = optional_int_of(KEYS[1], 'arrived_total', t.arrived_total) or 0
  local admitted = optional_int_of(KEYS[1], 'admitted_total', t.admitted_total) or 0
  local late = optional_int_of(KEYS[1], 'late_total', t.late_total) or 0
  local risk_version = optional_int_of(KEYS[1], 'risk_version', t.risk_version) or 0

  local revoked = read(KEYS[7], 'SMEMBERS', KEYS[7])
  table.sort(revoked)
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

  -- The lease.
  local leader = lease_ms > 0 and (t.lease_holder == instance or not lease_until
    or lease_until < now)
  local paused = r.paused_since ~= nil

  -- Buckets above the cursor: the lease holder reads as many as one beat
  -- may pass (LEAD_SCAN), a beat that asks for positions pending_limit of
  -- them, any other beat none (a backlog costs the beats nothing then);
  -- their counts, and the flushed buckets', in one HMGET.
  -- Whether each key exists: a key this beat creates gets the sale's
  -- expiry, one that exists has it already (a beat sets no expiry otherwise).
  local had_passes = read(KEYS[5], 'ZCARD', KEYS[5]) > 0
  local had_arrivals = read(KEYS[2], 'ZCARD', KEYS[2]) > 0
  local had_marks = #marks > 0
  local want = math.max((leader and not paused) and LEAD_SCAN or 0, pending_limit)
  local scanned = {}
  if want > 0 and had_arrivals then
    scanned = read(KEYS[2], 'ZRANGEBYSCORE', KEYS[2], '(' .. cursor, '+inf', 'LIMIT', 0, want)
  end
  local counts, order, fresh, names = {}, {}, {}, {}
  for _, text in ipairs(scanned) do
    local bucket = strict_int(text)
    if not bucket then
      corrupt(KEYS[2], 'member ' .. shown(text) .. ' is not a bucket (an integer)')
    end
    counts[bucket] = 0
    order[#order + 1] = bucket
    names[#names + 1] = text
  end
  -- Every pending bucket up to the last one read was read.
  local read_up_to = #scanned < want and math.huge or order[#order]
  for _, entry in ipairs(flushed) do
    local bucket = entry[1]
    if bucket > cursor and not counts[bucket] then
      counts[bucket] = 0
      order[#order + 1] = bucket
      names[#names + 1] = string.format('%d', bucket)
    end
  end
  if #names > 0 then
    local stored = read(KEYS[3], 'HMGET', KEYS[3], unpack(names))
    for i, text in ipairs(names) do
      if stored[i] then
        counts[tonumber(text)] = int_of(KEYS[3], 'bucket ' .. text, stored[i])
      end
    end
  else
    read(KEYS[3], 'HLEN', KEYS[3])
  end
  local late_now = 0
  for _, entry in ipairs(flushed) do
    local bucket, n = entry[1], entry[2]
    if bucket <= cursor then
      late_now = late_now + n
    else
      counts[bucket] = counts[bucket] + n
      fresh[bucket] = true
    end
    arrived = arrived + n
  end
  table.sort(order)

  -- The cursor's move.
  local moved = false
  local passed = {}
  local cap = math.max(1000, math.floor(r.count * TICK_MS * 1000 / r.per))
  if leader then
    if paused or not budget_at then
      budget = budget or cap
    else
      budget = math.min((budget or cap) + math.floor((now - budget_at) * r.count * 1000 / r.per),
        cap)
    end
    budget_at = now
    if not paused and slowest then
      local reached_all = true
      for _, bucket in ipairs(order) do
        if bucket + BUCKET_MS > slowest then
          break
        end
        if budget <= 0 or bucket > read_up_to then
          reached_all = false
          break
        end
        budget = budget - counts[bucket] * 1000
        admitted = admitted + counts[bucket]
        cursor = bucket + BUCKET_MS - 1
        passed[#passed + 1] = bucket
        moved = true
      end
      -- Nothing pending below the slowest mark: the cursor runs through the
      -- empty time up to it (no ticket there to count).
      if reached_all and read_up_to >= slowest - BUCKET_MS and budget > 0
          and slowest - 1 > cursor then
        cursor = slowest - 1
        moved = true
      end
    end
  end

  -- Nothing is written before this point.
  if #passed > 0 then
    local texts = {}
    for i, bucket in ipairs(passed) do
      texts[i] = string.format('%d', bucket)
      counts[bucket] = nil
      fresh[bucket] = nil
    end
    redis.call('ZREM', KEYS[2], unpack(texts))
    redis.call('HDEL', KEYS[3], unpack(texts))
  end
  local scores, fields = {}, {}
  for bucket in pairs(fresh) do
    local text = string.format('%d', bucket)
    scores[#scores + 1] = bucket
    scores[#scores + 1] = text
    fields[#fields + 1] = text
    fields[#fields + 1] = counts[bucket]
  end
  if #scores > 0 then
    redis.call('ZADD', KEYS[2], unpack(scores))
    redis.call('HSET', KEYS[3], unpack(fields))
  end
  if #dead > 0 then
    redis.call('HDEL', KEYS[4], unpack(dead))
  end
  if watermark then
    redis.call('HSET', KEYS[4], instance, string.format('%d %d', watermark, now))
  else
    redis.call('HDEL', KEYS[4], instance)
  end
  admitted = admitted + late_now
  late = late + late_now
  redis.call('HSET', KEYS[1], 'arrived_total', string.format('%d', arrived),
    'admitted_total', string.format('%d', admitted), 'late_total', string.format('%d', late))
  if leader then
    redis.call('HSET', KEYS[1], 'lease_holder', instance,
      'lease_until_ms', string.format('%d', now + lease_ms),
      'budget_milli', string.format('%d', budget), 'budget_at_ms', string.format('%d', budget_at))
  end
  if moved then
    redis.call('HSET', KEYS[1], 'cursor_ms', string.format('%d', cursor))
    redis.call('ZADD', KEYS[5], cursor, string.format('%d:%d', cursor, now))
  end
  if r.expire_at then
    local expire_at = string.format('%d', r.expire_at)
    if #scores > 0 and (not had_arrivals or #passed > 0) then
      redis.call('PEXPIREAT', KEYS[2], expire_at)
      redis.call('PEXPIREAT', KEYS[3], expire_at)
    end
    if watermark and not had_marks then
      redis.call('PEXPIREAT', KEYS[4], expire_at)
    end
    if moved and not had_passes then
      redis.call('PEXPIREAT', KEYS[5], expire_at)
    end
  end

  local reply = {'ok', leader and 1 or 0, cursor, paused and 1 or 0, now, arrived, admitted, late,
    risk_version, table.concat(revoked, ' '), live, slowest or -1, arrived - admitted, 0}
  local shown_buckets = 0
  for _, bucket in ipairs(order) do
    if shown_buckets >= pending_limit then
      break
    end
    if counts[bucket] and bucket > cursor then
      reply[#reply + 1] = bucket
      reply[#reply + 1] = counts[bucket]
      shown_buckets = shown_buckets + 1
    end
  end
  reply[14] = shown_buckets
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
