#!lua
-- queue_admit.lua — one tick of a max_active room's admitter (docs/waiting-room.md):
-- admissions that ran out give their place back, then the next users in
-- position order fill the free places. Any number of admitters may run:
-- each tick is one atomic step.
--
-- KEYS[1] room        hash   the room (lib/room_of): serving is the last position reached,
--                            admitted_total the admissions so far (the wait estimate)
-- KEYS[2] line        list   users in position order (position p at index p - 1)
-- KEYS[3] admitted    hash   user -> admission start ms
-- KEYS[4] active      zset   user -> admission end ms: the places taken
-- KEYS[5] risk        hash   user -> "block" | "delay <ms> <set at ms>"
-- KEYS[6] shuffled    zset   user -> final position of a shuffled pre-queue
-- ARGV[1] batch       most positions passed by this call (the rest on the next)
--
-- Returns {status, admitted, serving, joined, active, freed, now_ms}:
--   status   admitted | paused | prequeue (waiting for the shuffle) | not_max_active
--            | no_room
--   admitted users admitted by this call (a blocked user is passed over, never admitted)
--   active   places taken after it; freed: admissions that ran out and gave their place back
-- A delayed user's admission starts `delay` later, holding its place
-- meanwhile. Every value is read before the first write.

--- @include "lib/guarded"
--- @include "lib/argument"
--- @include "lib/now_ms"
--- @include "lib/room_of"
--- @include "lib/read"
--- @include "lib/corrupt"
--- @include "lib/risk_of"

return guarded(function()
  local batch = argument('queue_admit', 1, 'batch', 1)
  local now = now_ms()
  local r = room_of(KEYS[1])
  if not r then
    return {'no_room', 0, 0, 0, 0, 0, now}
  end
  if r.mode ~= 'max_active' then
    return {'not_max_active', 0, 0, r.joined, 0, 0, now}
  end
  local expire_at = r.expire_at
  local taken = read(KEYS[4], 'ZCARD', KEYS[4])
  local freed = read(KEYS[4], 'ZCOUNT', KEYS[4], '-inf', now)
  read(KEYS[3], 'HLEN', KEYS[3])
  local active = taken - freed
  if r.paused_since then
    return {'paused', 0, r.serving, r.joined, active, 0, now}
  end
  if r.prequeue and not r.shuffled then
    return {'prequeue', 0, r.serving, r.joined, active, 0, now}
  end
  -- The users of the next positions, and their penalties, before any write.
  local free = r.max_active - active
  local admit = {}
  local serving = r.serving
  local steps = 0
  while free > #admit and serving < r.joined and steps < batch do
    steps = steps + 1
    local p = serving + 1
    local user
    if r.prequeue and p <= r.prequeue_last then
      user = read(KEYS[6], 'ZRANGE', KEYS[6], p, p, 'BYSCORE')[1]
    else
      user = read(KEYS[2], 'LINDEX', KEYS[2], p - 1)
    end
    if not user then
      corrupt(p <= r.prequeue_last and KEYS[6] or KEYS[2], 'position ' .. p .. ' of '
        .. r.joined .. ' has no user')
    end
    local risk = risk_of(KEYS[5], user)
    if not (risk and risk.block) then
      local start = now
      if risk and risk.delay then
        start = now + risk.delay
      end
      admit[#admit + 1] = {user, start}
    end
    serving = p
  end

  if freed > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
  end
  for _, a in ipairs(admit) do
    redis.call('HSET', KEYS[3], a[1], string.format('%d', a[2]))
    redis.call('ZADD', KEYS[4], string.format('%d', a[2] + r.ttl), a[1])
  end
  if serving ~= r.serving then
    redis.call('HSET', KEYS[1], 'serving', string.format('%d', serving))
  end
  if #admit > 0 then
    redis.call('HINCRBY', KEYS[1], 'admitted_total', #admit)
  end
  if expire_at and #admit > 0 then
    redis.call('PEXPIREAT', KEYS[3], string.format('%d', expire_at))
    redis.call('PEXPIREAT', KEYS[4], string.format('%d', expire_at))
  end
  return {'admitted', #admit, serving, r.joined, active + #admit, freed, now}
end)
