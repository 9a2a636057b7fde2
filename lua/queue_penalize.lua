#!lua
-- queue_penalize.lua — the operator's risk list of an item's waiting room
-- (docs/waiting-room.md): delay a suspicious user's admission, block one for
-- good, or clear the entry.
--
-- KEYS[1] room        hash   the room (lib/room_of)
-- KEYS[2] risk        hash   user -> "block" | "delay <ms> <set at ms>"
-- KEYS[3] admitted    hash   user -> admission start ms (max_active mode)
-- KEYS[4] active      zset   user -> admission end ms (max_active mode)
-- ARGV[1] user        user id
-- ARGV[2] action      delay | block | clear
-- ARGV[3] delay_ms    delay: how much later the admission starts (>= 1)
--
-- Returns {status, previous, now_ms}: status delayed | blocked | cleared |
-- no_room; previous the entry before ("" none).
-- A delay moves an admission not yet granted when it is set (rate mode:
-- the user's turn on the clock is later than now; max_active: the admitter
-- has not reached the user); a block also takes back an admission already
-- granted in this slot (max_active: the place is freed). A bucketed item's
-- fanned-out admission is taken back in its bucket by bucket_admit.lua.
-- Every change moves the room's risk_version, so `serve` instances mirroring
-- the list for a ticket room (lua/room_tick.lua returns it) read it again.

--- @include "lib/guarded"
--- @include "lib/shown"
--- @include "lib/argument"
--- @include "lib/now_ms"
--- @include "lib/room_of"
--- @include "lib/read"
--- @include "lib/optional_int_of"

return guarded(function()
  local user, action = ARGV[1], ARGV[2]
  if action ~= 'delay' and action ~= 'block' and action ~= 'clear' then
    error({err = 'ERR queue_penalize: action ' .. shown(action) .. ' is not delay, block or clear'})
  end
  local delay = action == 'delay' and argument('queue_penalize', 3, 'delay_ms', 1)
  local now = now_ms()
  local r = room_of(KEYS[1])
  if not r then
    return {'no_room', '', now}
  end
  local expire_at = r.expire_at
  local previous = read(KEYS[2], 'HGET', KEYS[2], user) or ''
  read(KEYS[3], 'HLEN', KEYS[3])
  read(KEYS[4], 'ZCARD', KEYS[4])
  optional_int_of(KEYS[1], 'risk_version', read(KEYS[1], 'HGET', KEYS[1], 'risk_version'))
  redis.call('HINCRBY', KEYS[1], 'risk_version', 1)
  if action == 'clear' then
    redis.call('HDEL', KEYS[2], user)
    return {'cleared', previous, now}
  end
  if action == 'block' then
    redis.call('HSET', KEYS[2], user, 'block')
    redis.call('HDEL', KEYS[3], user)
    redis.call('ZREM', KEYS[4], user)
  else
    redis.call('HSET', KEYS[2], user, string.format('delay %d %d', delay, now))
  end
  if expire_at then
    redis.call('PEXPIREAT', KEYS[2], string.format('%d', expire_at))
  end
  return {action == 'block' and 'blocked' or 'delayed', previous, now}
end)
