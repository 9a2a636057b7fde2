-- lib/admission — the waiting room (docs/waiting-room.md): who is admitted
-- to buy, read in the item's slot (or, for a bucketed item, from the
-- admissions fanned out to the user's home bucket), never from a client's
-- clock. One rule for every script that answers it: the buy scripts (through
-- lib/purchase), queue_join.lua, queue_read.lua, queue_fanout.lua; the Rust
-- mirror of the clock is `domain::waiting_room::clock`.
--
-- The room hash (`…:room`) holds the settings preheat wrote (mode, rate,
-- max_active, ttl_ms, prequeue, registration, and the item's starts_at_ms,
-- ends_at_ms, expire_at_ms: a bucketed item has no meta in the item's own
-- slot, where the room is) and the state the scripts move:
-- joined (positions handed out, 1..joined), opened_at_ms (when the clock
-- started: the first join at or after starts_at, or the pre-queue's
-- shuffle), paused_ms and paused_since_ms (the pauses), serving and
-- admitted_total (max_active: the admitter's last position, its admissions
-- so far), prequeue_last (the last position joined
-- before starts_at), shuffled, fanned (a bucketed item's fan-out cursor).
--
-- Rate mode needs no admitter: position p is admitted once the clock has run
-- p / rate, i.e. from opened_at + paused + ceil(p * per / count) (or from
-- when the user joined, if later), for ttl_ms. A penalty delay set before
-- that moment moves it; a block never admits (the user is shown at the
-- tail, like anyone who just joined). Max-active mode admits what
-- queue_admit.lua wrote in `…:admitted`.
--- @include "lib/corrupt"
--- @include "lib/clock"

-- The room's fields, read by every script in one HMGET, in this order.
local ROOM_FIELDS = {'mode', 'rate_count', 'rate_per_ms', 'max_active', 'ttl_ms', 'prequeue',
  'registration', 'joined', 'opened_at_ms', 'paused_ms', 'paused_since_ms', 'serving',
  'prequeue_last', 'shuffled', 'reg_until_ms', 'per_device', 'per_ip', 'fanned',
  'starts_at_ms', 'ends_at_ms', 'expire_at_ms', 'admitted_total'}

-- `value` of `what` in `key` as an integer of at least `least`.
local function at_least(key, what, value, least)
  local n = int_of(key, what, value)
  if n < least then
    corrupt(key, what .. ' holds ' .. shown(value) .. ', not an integer >= ' .. least)
  end
  return n
end

-- The room of `key`, every field validated; nil when there is none.
local function room_of(key)
  local v = read(key, 'HMGET', key, unpack(ROOM_FIELDS))
  if not v[1] then
    return nil
  end
  local r = {key = key, mode = v[1]}
  if r.mode == 'rate' then
    r.count = at_least(key, 'rate_count', v[2], 1)
    r.per = at_least(key, 'rate_per_ms', v[3], 1)
  elseif r.mode == 'max_active' then
    r.max_active = at_least(key, 'max_active', v[4], 1)
  else
    corrupt(key, 'mode holds ' .. shown(v[1]) .. ', not rate or max_active')
  end
  r.ttl = at_least(key, 'ttl_ms', v[5], 1)
  r.prequeue = flag_of(key, 'prequeue', v[6])
  r.registration = flag_of(key, 'registration', v[7])
  r.joined = optional_int_of(key, 'joined', v[8]) or 0
  r.opened_at = optional_int_of(key, 'opened_at_ms', v[9])
  r.paused = optional_int_of(key, 'paused_ms', v[10]) or 0
  r.paused_since = optional_int_of(key, 'paused_since_ms', v[11])
  r.serving = optional_int_of(key, 'serving', v[12]) or 0
  r.prequeue_last = optional_int_of(key, 'prequeue_last', v[13]) or 0
  r.shuffled = flag_of(key, 'shuffled', v[14])
  r.reg_until = optional_int_of(key, 'reg_until_ms', v[15])
  r.per_device = optional_int_of(key, 'per_device', v[16]) or 0
  r.per_ip = optional_int_of(key, 'per_ip', v[17]) or 0
  r.fanned = optional_int_of(key, 'fanned', v[18]) or 0
  r.starts_at = optional_int_of(key, 'starts_at_ms', v[19])
  r.ends_at = optional_int_of(key, 'ends_at_ms', v[20])
  r.expire_at = expiry_of(key, 'expire_at_ms', v[21])
  r.admitted_total = optional_int_of(key, 'admitted_total', v[22]) or 0
  return r
end

-- Milliseconds the room has stood paused up to `now`; a pause that began
-- before the room opened counts from the opening.
local function paused_ms(r, now)
  local total = r.paused
  if r.paused_since and r.opened_at then
    total = total + math.max(0, now - math.max(r.paused_since, r.opened_at))
  end
  return total
end

-- Milliseconds the rate clock has run since it opened, or nil before that
-- (a pre-queue opens when its shuffle is done).
local function room_elapsed(r, now)
  if not r.opened_at or (r.prequeue and not r.shuffled) then
    return nil
  end
  return now - r.opened_at - paused_ms(r, now)
end

-- Positions the rate clock has admitted after `elapsed` ms: floor(elapsed *
-- count / per), split so no product leaves a double's exact integers.
local function rate_allowance(r, elapsed)
  if not elapsed or elapsed <= 0 then
    return 0
  end
  local whole = math.floor(elapsed / r.per)
  return whole * r.count + math.floor((elapsed - whole * r.per) * r.count / r.per)
end

-- The clock's milliseconds at which position p is admitted: ceil(p * per / count).
local function rate_reached(r, p)
  local whole = math.floor(p / r.count)
  return whole * r.per + math.ceil((p - whole * r.count) * r.per / r.count)
end

-- The last position admitted (the serving position) at `now`.
local function serving_at(r, now)
  if r.mode == 'max_active' then
    return r.serving
  end
  return math.min(r.joined, rate_allowance(r, room_elapsed(r, now)))
end

-- Milliseconds from `now` until position p's turn as best known (rate: the
-- clock; before the clock opens, the pre-queue's start plus the clock;
-- max_active: the admissions so far per time since the opening, never more
-- than one admission_ttl per max_active places ahead, the slowest a full
-- active set can turn over).
local function wait_for(r, p, now)
  if r.mode == 'max_active' then
    local ahead = math.max(p - r.serving, 1)
    local slowest = math.ceil(ahead / r.max_active) * r.ttl
    if r.admitted_total > 0 and r.opened_at and now > r.opened_at then
      return math.min(slowest, math.ceil(ahead * (now - r.opened_at) / r.admitted_total))
    end
    return slowest
  end
  local elapsed = room_elapsed(r, now)
  if not elapsed then
    return math.max(0, (r.starts_at or now) - now) + rate_reached(r, p)
  end
  return math.max(rate_reached(r, p) - elapsed, 0)
end

-- The risk entry of `user`: nil, {block = true} or {delay = ms, since = ms}.
local function risk_of(key, user)
  local entry = read(key, 'HGET', key, user)
  if not entry then
    return nil
  end
  if entry == 'block' then
    return {block = true}
  end
  local delay, since = string.match(entry, '^delay (%d+) (%d+)$')
  if not delay or not strict_int(delay) or not strict_int(since) then
    corrupt(key, 'user ' .. shown(user) .. ' holds ' .. shown(entry)
      .. ', not "block" or "delay <ms> <set at ms>"')
  end
  return {delay = tonumber(delay), since = tonumber(since)}
end

-- A blocked user looks like someone who just joined: at the tail, waiting.
local function at_tail(r, now, serving)
  local tail = math.max(r.joined, serving + 1)
  return {state = 'waiting', position = tail, serving = serving,
    eta = math.max(wait_for(r, tail, now), 1000)}
end

-- The admission of position p (joined at `joined_at`): its start ms, or nil
-- when there is none (yet: max_active's admitter has not reached it, the
-- rate clock has not opened; or never: blocked); `blocked` says which.
-- `keys`: {risk, admitted}.
local function admission_of(keys, r, user, p, joined_at, now)
  local risk = risk_of(keys.risk, user)
  if r.mode == 'max_active' then
    local start = read(keys.admitted, 'HGET', keys.admitted, user)
    if not start then
      return nil, risk and risk.block
    end
    return int_of(keys.admitted, 'admission of user ' .. shown(user), start), false
  end
  if risk and risk.block then
    return nil, true
  end
  local elapsed = room_elapsed(r, now)
  if not elapsed then
    return nil, false
  end
  local from = math.max(now - elapsed + rate_reached(r, p), joined_at)
  if risk and risk.delay and risk.since < from then
    from = from + risk.delay
  end
  return from, false
end

-- Where a queued user (position p, as joined, joined at `joined_at`)
-- stands at `now`; see `standing`. `keys`: {risk, admitted, shuffled}.
local function placed(keys, r, user, p, joined_at, now)
  local serving = serving_at(r, now)
  if r.prequeue and p <= r.prequeue_last then
    if not r.shuffled then
      return {state = 'prequeue', position = p, serving = 0, eta = wait_for(r, p, now)}
    end
    local final = read(keys.shuffled, 'ZSCORE', keys.shuffled, user)
    if not strict_int(final) then
      corrupt(keys.shuffled, 'the pre-queue user ' .. shown(user) .. ' has '
        .. shown(final) .. ' as final position')
    end
    p = tonumber(final)
  end
  local from, blocked = admission_of(keys, r, user, p, joined_at, now)
  if blocked then
    return at_tail(r, now, serving)
  end
  if not from then
    return {state = 'waiting', position = p, serving = serving, eta = wait_for(r, p, now)}
  end
  if now < from then
    return {state = 'waiting', position = p, serving = serving, eta = from - now}
  end
  if now >= from + r.ttl then
    return {state = 'expired', position = p, serving = serving, from = from, to = from + r.ttl}
  end
  return {state = 'admitted', position = p, serving = serving, from = from, to = from + r.ttl}
end

-- A user's queue entry: position and join time, or nil when not queued.
local function entry_of(key, user)
  local entry = read(key, 'HGET', key, user)
  if not entry then
    return nil
  end
  local p, joined_at = string.match(entry, '^(%d+) (%d+)$')
  p, joined_at = strict_int(p), strict_int(joined_at)
  if not p or p < 1 or not joined_at then
    corrupt(key, 'user ' .. shown(user) .. ' holds ' .. shown(entry)
      .. ', not "<position> <joined at ms>"')
  end
  return p, joined_at
end

-- Where `user` stands in the room `r` of an item's slot at `now`. `keys`:
-- {queue, registered, risk, admitted, shuffled}. Returns a table:
--   state     not_registered | not_queued | prequeue | waiting | admitted | expired
--   position  the user's place (final once a pre-queue is shuffled), serving
--             the last position admitted, eta ms until the turn (waiting, prequeue),
--   from, to  the admission (admitted, expired)
local function standing(keys, r, user, now)
  if not r then
    return {state = 'not_queued', position = 0, serving = 0, eta = 0}
  end
  if r.registration and read(keys.registered, 'HEXISTS', keys.registered, user) == 0 then
    return {state = 'not_registered', position = 0, serving = serving_at(r, now), eta = 0}
  end
  local p, joined_at = entry_of(keys.queue, user)
  if not p then
    return {state = 'not_queued', position = 0, serving = serving_at(r, now), eta = 0}
  end
  return placed(keys, r, user, p, joined_at, now)
end

-- The admission fanned out to a bucket for `user` (`key`: the bucket's
-- admissions), as a standing: waiting (not yet, or none here), admitted, expired.
local function granted(key, user, now)
  local value = read(key, 'HGET', key, user)
  if not value then
    return {state = 'waiting', position = 0, serving = 0, eta = 0}
  end
  local from, to = string.match(value, '^(%d+) (%d+)$')
  from, to = strict_int(from), strict_int(to)
  if not from or not to then
    corrupt(key, 'admission of user ' .. shown(user) .. ' holds ' .. shown(value)
      .. ', not "<start ms> <end ms>"')
  end
  if now < from then
    return {state = 'waiting', position = 0, serving = 0, eta = from - now}
  end
  if now >= to then
    return {state = 'expired', position = 0, serving = 0, from = from, to = to}
  end
  return {state = 'admitted', position = 0, serving = 0, from = from, to = to}
end

-- What the buy scripts answer for a standing: nil when admitted, else the
-- outcome and its detail (not_admitted: "<position> <serving> <eta ms>";
-- admission_expired: "<from ms> <to ms>").
local function refusal_of(s)
  if s.state == 'admitted' then
    return nil, ''
  elseif s.state == 'waiting' or s.state == 'prequeue' then
    return 'not_admitted', string.format('%d %d %d', s.position, s.serving, s.eta)
  elseif s.state == 'expired' then
    return 'admission_expired', string.format('%d %d', s.from, s.to)
  end
  return s.state, ''
end

-- The waiting room of a plain item for the buy script: KEYS[first..first+6]
-- are room, queue, registered, risk, admitted, active, shuffled.
-- `plain.read(user)` reads (nothing written) and returns the gate:
-- gate.refused (nil when admitted) and gate.detail, and gate.spent(), the
-- ok's one write here (max_active: the user leaves the active set).
local function plain_room(first)
  local plain = {}
  function plain.read(user)
    if not KEYS[first + 6] then
      error({err = 'ERR the waiting room of this item is on, but the call lacks its '
        .. 'waiting-room keys (KEYS[' .. first .. '..' .. (first + 6) .. ']): nothing was written'})
    end
    local keys = {queue = KEYS[first + 1], registered = KEYS[first + 2], risk = KEYS[first + 3],
      admitted = KEYS[first + 4], shuffled = KEYS[first + 6]}
    local r = room_of(KEYS[first])
    local gate = {}
    gate.refused, gate.detail = refusal_of(standing(keys, r, user, now_ms()))
    local active = r and r.mode == 'max_active' and not gate.refused
    if active then
      read(KEYS[first + 5], 'ZSCORE', KEYS[first + 5], user)
      -- The ok's writes end with this one: a caller whose ACL lacks it
      -- would otherwise sell and keep the user's place (no rollback).
      if not redis.acl_check_cmd('ZREM', KEYS[first + 5], user) then
        error({err = "NOPERM The user executing the script can't run this command or subcommand: "
          .. 'ZREM ' .. KEYS[first + 5] .. ' (nothing was written)'})
      end
    end
    function gate.spent()
      if active then
        redis.call('ZREM', KEYS[first + 5], user)
      end
    end
    return gate
  end
  return plain
end

-- The waiting room of a bucket for bucket_buy.lua: KEYS[index] is the
-- bucket's admissions; same gate as plain_room's (nothing to spend: the
-- active set lives in the item's slot).
local function bucket_room(index)
  local bucketed = {}
  function bucketed.read(user)
    if not KEYS[index] then
      error({err = 'ERR the waiting room of this item is on, but the call lacks its '
        .. 'admissions key (KEYS[' .. index .. ']): nothing was written'})
    end
    local gate = {spent = function() end}
    gate.refused, gate.detail = refusal_of(granted(KEYS[index], user, now_ms()))
    return gate
  end
  return bucketed
end
