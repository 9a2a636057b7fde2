#!lua
-- queue_setup.lua — write one item's waiting-room settings into its room
-- (docs/waiting-room.md); preheat calls it for an item whose room is on.
--
-- KEYS[1] room        hash   settings, clock, counters and seed (lib/room_of)
-- KEYS[2] queue       hash   user -> "<position> <joined at ms> [<paused ms>]" (only its expiry)
-- KEYS[3] line        list   users in position order (only its expiry)
-- KEYS[4] registered  hash   registrations (only its expiry)
-- KEYS[5] devices     hash   device -> accounts (only its expiry)
-- KEYS[6] ips         hash   IP prefix -> accounts (only its expiry)
-- KEYS[7] risk        hash   the risk list (only its expiry)
-- KEYS[8] admitted    hash   max_active admissions (only its expiry)
-- KEYS[9] active      zset   max_active's active set (only its expiry)
-- KEYS[10] shuffled   zset   the pre-queue's final positions (only its expiry)
-- ARGV[1] mode          "create": write the settings only when the room has none
--                       (before the stock is loaded, so an item never sells
--                       with its room on but unset); "update": take them from
--                       the file (preheat wrote the terms), state and seed kept
-- ARGV[2] room_mode     rate | max_active | ticket
-- ARGV[3] rate_count    admissions per rate_per_ms (rate and ticket modes; "" otherwise)
-- ARGV[4] rate_per_ms
-- ARGV[5] max_active    (max_active mode; "" otherwise)
-- ARGV[6] ttl_ms        how long an admission lasts
-- ARGV[7] prequeue      "1" | "0"
-- ARGV[8] registration  "1" | "0"
-- ARGV[9] reg_until_ms  registration closes ("" without registration)
-- ARGV[10] per_device   accounts per device, 0 = no cap
-- ARGV[11] per_ip       accounts per IP prefix, 0 = no cap
-- ARGV[12] config       the settings as one line (what preheat compares with the file)
-- ARGV[13] seed         the pre-queue's shuffle seed, hex (kept secret until the shuffle)
-- ARGV[14] seed_sha256  its SHA-256, hex (published before the sale)
-- ARGV[15] expire_at_ms the item's expiry ("" = never)
-- ARGV[16] starts_at_ms the item's sale window ("" = open now), copied here: the
-- ARGV[17] ends_at_ms   room's scripts run in the item's slot, which a bucketed item
--                       has no meta in ("" = no end)
--
-- Returns {status, config_before}:
--   created   the room had no settings; written (with the seed)
--   kept      mode "create" and the room has settings: nothing written
--   updated   mode "update": settings from the file, expiry of every key set
--   refused   mode "update" would change the mode or the pre-queue after users
--             joined (their positions mean something else then): nothing written
-- A ticket room gets its arrival-time cursor (cursor_ms) just before the
-- sale's start (or now, without a starts_at) while nobody holds a ticket;
-- with a pre-queue, 2^48 ms lower: below its ranks' places.
-- ARGV that break the rules is an error "ERR queue_setup: ..." before any
-- read; a malformed room is "CORRUPT <key>: ..."; nothing is written either way.

--- @include "lib/guarded"
--- @include "lib/shown"
--- @include "lib/argument"
--- @include "lib/room_of"
--- @include "lib/read"
--- @include "lib/expire_or_persist"

-- The n-th ARGV, a setting, checked as lib/argument checks (`ERR queue_setup: ...`).
local function setting(n, what, least, optional)
  return argument('queue_setup', n, what, least, optional)
end

return guarded(function()
  local mode, room_mode = ARGV[1], ARGV[2]
  if mode ~= 'create' and mode ~= 'update' then
    error({err = 'ERR queue_setup: mode ' .. shown(mode) .. ' is not create or update'})
  end
  if room_mode == 'rate' or room_mode == 'ticket' then
    setting(3, 'rate_count', 1)
    setting(4, 'rate_per_ms', 1)
  elseif room_mode == 'max_active' then
    setting(5, 'max_active', 1)
  else
    error({err = 'ERR queue_setup: room mode ' .. shown(room_mode)
      .. ' is not rate, max_active or ticket'})
  end
  setting(6, 'ttl_ms', 1)
  for n, what in pairs({[7] = 'prequeue', [8] = 'registration'}) do
    if ARGV[n] ~= '0' and ARGV[n] ~= '1' then
      error({err = 'ERR queue_setup: ' .. what .. ' ' .. shown(ARGV[n]) .. ' is not 0 or 1'})
    end
  end
  setting(9, 'reg_until_ms', -9007199254740992, ARGV[8] == '0')
  setting(10, 'per_device', 0)
  setting(11, 'per_ip', 0)
  setting(15, 'expire_at_ms', 1, true)
  local starts_at = setting(16, 'starts_at_ms', -9007199254740992, true)
  setting(17, 'ends_at_ms', -9007199254740992, true)

  if room_mode == 'ticket' and ARGV[7] == '1' and not starts_at then
    error({err = 'ERR queue_setup: the pre-queue of a ticket room needs starts_at_ms'})
  end
  local r = room_of(KEYS[1])
  local before = read(KEYS[1], 'HGET', KEYS[1], 'config') or ''
  if r and mode == 'create' then
    return {'kept', before}
  end
  local ticketed = read(KEYS[1], 'HGET', KEYS[1], 'arrived_total')
  ticketed = ticketed and ticketed ~= '0'
  if r and (r.joined > 0 or ticketed)
      and (r.mode ~= room_mode or r.prequeue ~= (ARGV[7] == '1')) then
    return {'refused', before}
  end
  redis.call('HSET', KEYS[1], 'mode', room_mode, 'rate_count', ARGV[3], 'rate_per_ms', ARGV[4],
    'max_active', ARGV[5], 'ttl_ms', ARGV[6], 'prequeue', ARGV[7], 'registration', ARGV[8],
    'reg_until_ms', ARGV[9], 'per_device', ARGV[10], 'per_ip', ARGV[11], 'config', ARGV[12],
    'starts_at_ms', ARGV[16], 'ends_at_ms', ARGV[17], 'expire_at_ms', ARGV[15])
  if not r then
    redis.call('HSET', KEYS[1], 'seed', ARGV[13], 'seed_sha256', ARGV[14])
  end
  if room_mode == 'ticket' and not ticketed then
    local time = redis.call('TIME')
    local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
    -- A pre-queue's ranks stand below starts_at (2^48 of them, room_tick.lua):
    -- the cursor starts below them.
    local cursor = (starts_at or now) - 1
    if ARGV[7] == '1' then
      cursor = cursor - 281474976710656
    end
    redis.call('HSET', KEYS[1], 'cursor_ms', string.format('%d', cursor))
  end
  expire_or_persist(KEYS, ARGV[15])
  return {r and 'updated' or 'created', before}
end)
