--- @include "lib/read"
--- @include "lib/corrupt"
--- @include "lib/shown"
--- @include "lib/at_least"
--- @include "lib/optional_int_of"
--- @include "lib/expiry_of"
--- @include "lib/flag_of"

-- lib/room_of — an item's waiting room (docs/waiting-room.md), read in the
-- item's slot in one HMGET and every field validated. The room hash
-- (`…:room`) holds the settings queue_setup.lua wrote (mode, rate, max_active,
-- ttl_ms, prequeue, registration, the caps, and the item's starts_at_ms,
-- ends_at_ms, expire_at_ms: a bucketed item has no meta in the item's own
-- slot, where the room is) and the state the scripts move: joined (positions
-- handed out, 1..joined), opened_at_ms (when the clock started: the first
-- join at or after starts_at, or the pre-queue's shuffle), paused_ms and
-- paused_since_ms (the pauses), paused_joined (the positions handed out when
-- the current pause began: nobody past them is admitted until the resume),
-- serving and admitted_total (max_active: the admitter's last position, its
-- admissions so far), prequeue_last (the last position joined before
-- starts_at), shuffled, fanned (a bucketed item's fan-out cursor), and the
-- admitter's heartbeat: admitter_at_ms (Redis time of the last pass of a
-- `seckill queue admit`) and admitter_every_ms (its --interval).

-- The room's fields, read by name.
local ROOM_FIELDS = {'mode', 'rate_count', 'rate_per_ms', 'max_active', 'ttl_ms', 'prequeue',
  'registration', 'joined', 'opened_at_ms', 'paused_ms', 'paused_since_ms', 'serving',
  'prequeue_last', 'shuffled', 'reg_until_ms', 'per_device', 'per_ip', 'fanned',
  'starts_at_ms', 'ends_at_ms', 'expire_at_ms', 'admitted_total', 'paused_joined',
  'admitter_at_ms', 'admitter_every_ms'}

-- The room of `key` as a table (r.mode, r.count and r.per of a rate room,
-- r.max_active, r.ttl, ...), nil when there is none. A ticket room (mode
-- ticket, lua/room_tick.lua) has a rate too, and its own state besides.
local function room_of(key)
  local values = read(key, 'HMGET', key, unpack(ROOM_FIELDS))
  local f = {}
  for i, name in ipairs(ROOM_FIELDS) do
    f[name] = values[i]
  end
  if not f.mode then
    return nil
  end
  local r = {key = key, mode = f.mode}
  if r.mode == 'rate' or r.mode == 'ticket' then
    r.count = at_least(key, 'rate_count', f.rate_count, 1)
    r.per = at_least(key, 'rate_per_ms', f.rate_per_ms, 1)
  elseif r.mode == 'max_active' then
    r.max_active = at_least(key, 'max_active', f.max_active, 1)
  else
    corrupt(key, 'mode holds ' .. shown(f.mode) .. ', not rate, max_active or ticket')
  end
  r.ttl = at_least(key, 'ttl_ms', f.ttl_ms, 1)
  r.prequeue = flag_of(key, 'prequeue', f.prequeue)
  r.registration = flag_of(key, 'registration', f.registration)
  r.joined = optional_int_of(key, 'joined', f.joined) or 0
  r.opened_at = optional_int_of(key, 'opened_at_ms', f.opened_at_ms)
  r.paused = optional_int_of(key, 'paused_ms', f.paused_ms) or 0
  r.paused_since = optional_int_of(key, 'paused_since_ms', f.paused_since_ms)
  r.serving = optional_int_of(key, 'serving', f.serving) or 0
  r.prequeue_last = optional_int_of(key, 'prequeue_last', f.prequeue_last) or 0
  r.shuffled = flag_of(key, 'shuffled', f.shuffled)
  r.reg_until = optional_int_of(key, 'reg_until_ms', f.reg_until_ms)
  r.per_device = optional_int_of(key, 'per_device', f.per_device) or 0
  r.per_ip = optional_int_of(key, 'per_ip', f.per_ip) or 0
  r.fanned = optional_int_of(key, 'fanned', f.fanned) or 0
  r.starts_at = optional_int_of(key, 'starts_at_ms', f.starts_at_ms)
  r.ends_at = optional_int_of(key, 'ends_at_ms', f.ends_at_ms)
  r.expire_at = expiry_of(key, 'expire_at_ms', f.expire_at_ms)
  r.admitted_total = optional_int_of(key, 'admitted_total', f.admitted_total) or 0
  r.paused_joined = optional_int_of(key, 'paused_joined', f.paused_joined)
  r.admitter_at = optional_int_of(key, 'admitter_at_ms', f.admitter_at_ms)
  r.admitter_every = optional_int_of(key, 'admitter_every_ms', f.admitter_every_ms) or 0
  return r
end
