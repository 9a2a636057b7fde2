#!lua
-- queue_clock.lua — pause or resume an item's waiting room (docs/waiting-room.md):
-- a pause stops the rate clock (nobody new is admitted; an admission running
-- when it began has its remaining time kept) and stops max_active's admitter.
--
-- KEYS[1] room        hash   the room (lib/room_of): paused_ms, paused_since_ms
-- ARGV[1] action      pause | resume
--
-- Returns {status, paused_ms, now_ms}:
--   paused | already_paused | resumed | not_paused | no_room
--   paused_ms  the room's pauses in total so far (the current one included)
-- A resume adds the pause to paused_ms, counted from the later of its start
-- and the room's opening (a room paused before it opened loses no time).

--- @include "lib/guarded"
--- @include "lib/shown"
--- @include "lib/now_ms"
--- @include "lib/room_of"
--- @include "lib/paused_ms"

return guarded(function()
  local action = ARGV[1]
  if action ~= 'pause' and action ~= 'resume' then
    error({err = 'ERR queue_clock: action ' .. shown(action) .. ' is not pause or resume'})
  end
  local now = now_ms()
  local r = room_of(KEYS[1])
  if not r then
    return {'no_room', 0, now}
  end
  local total = paused_ms(r, now)
  if action == 'pause' then
    if r.paused_since then
      return {'already_paused', total, now}
    end
    redis.call('HSET', KEYS[1], 'paused_since_ms', string.format('%d', now))
    return {'paused', total, now}
  end
  if not r.paused_since then
    return {'not_paused', total, now}
  end
  redis.call('HSET', KEYS[1], 'paused_ms', string.format('%d', total))
  redis.call('HDEL', KEYS[1], 'paused_since_ms')
  return {'resumed', total, now}
end)
