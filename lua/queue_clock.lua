#!lua
-- queue_clock.lua — pause or resume an item's waiting room, and the
-- admitter's heartbeat (docs/waiting-room.md). A pause stops the rate clock
-- at once: nobody who was not admitted when it began is admitted until the
-- resume, however many turns the clock had banked (an admission running when
-- it began has its remaining time kept); it stops max_active's admitter too.
-- Two holders may hold a room paused, each on its own: the operator
-- (`queue pause`) and the kill switch (`shutdown-switch on`); the room
-- resumes when the last lets go.
--
-- KEYS[1] room        hash   the room (lib/room_of): paused_ms, paused_since_ms,
--                            paused_joined, paused_by; admitter_at_ms, admitter_every_ms
-- ARGV[1] action      pause | resume (the operator's) | switch_on | switch_off (the
--                     kill switch's) | beat (a pass of `seckill queue admit`)
-- ARGV[2] every_ms    beat: the admitter's interval, ms (>= 0); "" otherwise
--
-- Returns {status, paused_ms, now_ms, paused_by}:
--   status     paused | already_paused (this holder holds it already) | resumed |
--              still_paused (this holder let go, the other holds it) | not_paused
--              (this holder did not hold it) | beat | no_room
--   paused_ms  the room's pauses in total so far (the current one included)
--   paused_by  who holds it paused after the call: "" | operator | switch |
--              "operator switch"
-- A pause records the positions handed out when it began (paused_joined); a
-- resume adds the pause to paused_ms, counted from the later of its start and
-- the room's opening (a room paused before it opened loses no time). A beat
-- writes the Redis time into admitter_at_ms: how long ago a `queue admit`
-- last finished a pass, which `preheat`, the buy's answer and `status` read.
-- Every value is read and checked before the first write.

--- @include "lib/guarded"
--- @include "lib/shown"
--- @include "lib/argument"
--- @include "lib/now_ms"
--- @include "lib/room_of"
--- @include "lib/read"
--- @include "lib/corrupt"
--- @include "lib/paused_ms"

-- Who may hold a room paused, in the order paused_by lists them.
local HOLDERS = {'operator', 'switch'}
local HOLDER_OF = {pause = 'operator', resume = 'operator', switch_on = 'switch',
  switch_off = 'switch'}

-- The holders of room `r` as a set; paused_by as an older seckill left it
-- (none while paused) is the operator's.
local function holders_of(key, r)
  local text = read(key, 'HGET', key, 'paused_by')
  local held = {}
  if not r.paused_since then
    return held
  end
  if not text or text == '' then
    held.operator = true
    return held
  end
  for word in string.gmatch(text, '%S+') do
    if word ~= 'operator' and word ~= 'switch' then
      corrupt(key, 'paused_by holds ' .. shown(text) .. ', not "operator" and/or "switch"')
    end
    held[word] = true
  end
  return held
end

local function text_of(held)
  local words = {}
  for _, holder in ipairs(HOLDERS) do
    if held[holder] then
      words[#words + 1] = holder
    end
  end
  return table.concat(words, ' ')
end

return guarded(function()
  local action = ARGV[1]
  local holder = HOLDER_OF[action]
  if not holder and action ~= 'beat' then
    error({err = 'ERR queue_clock: action ' .. shown(action)
      .. ' is not pause, resume, switch_on, switch_off or beat'})
  end
  local every = action == 'beat' and argument('queue_clock', 2, 'every_ms', 0)
  local now = now_ms()
  local r = room_of(KEYS[1])
  if not r then
    return {'no_room', 0, now, ''}
  end
  local total = paused_ms(r, now)
  local held = holders_of(KEYS[1], r)
  if action == 'beat' then
    redis.call('HSET', KEYS[1], 'admitter_at_ms', string.format('%d', now),
      'admitter_every_ms', string.format('%d', every))
    return {'beat', total, now, text_of(held)}
  end
  if action == 'pause' or action == 'switch_on' then
    if held[holder] then
      return {'already_paused', total, now, text_of(held)}
    end
    held[holder] = true
    if not r.paused_since then
      redis.call('HSET', KEYS[1], 'paused_since_ms', string.format('%d', now),
        'paused_joined', string.format('%d', r.joined))
    end
    redis.call('HSET', KEYS[1], 'paused_by', text_of(held))
    return {'paused', total, now, text_of(held)}
  end
  if not held[holder] then
    return {'not_paused', total, now, text_of(held)}
  end
  held[holder] = nil
  if next(held) then
    redis.call('HSET', KEYS[1], 'paused_by', text_of(held))
    return {'still_paused', total, now, text_of(held)}
  end
  redis.call('HSET', KEYS[1], 'paused_ms', string.format('%d', total))
  redis.call('HDEL', KEYS[1], 'paused_since_ms', 'paused_joined', 'paused_by')
  return {'resumed', total, now, ''}
end)
