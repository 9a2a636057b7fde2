#!lua
-- queue_fanout.lua — the item's side of a bucketed item's admission fan-out
-- (docs/waiting-room.md): which admissions to carry to each user's home
-- bucket next, and the cursor that says how far they were carried. A
-- crashed fan-out only repeats work: the buckets grant each user once
-- (bucket_admit.lua), and the cursor moves only from where it was read.
--
-- KEYS[1] room        hash   the room (lib/room_of): fanned is the cursor
-- KEYS[2] queue       hash   user -> "<position> <joined at ms> [<paused ms>]"
-- KEYS[3] line        list   users in position order
-- KEYS[4] risk        hash   user -> "block" | "delay <ms> <set at ms>"
-- KEYS[5] admitted    hash   user -> admission start ms (max_active mode)
-- KEYS[6] shuffled    zset   user -> final position of a shuffled pre-queue
-- ARGV[1] mode        read | advance
-- ARGV[2] batch       read: most positions returned; advance: the cursor as read
-- ARGV[3] to          advance: the last position carried
--
-- Returns, mode read: {fanned, serving, now_ms, user, from_ms, to_ms, ...}: the
--   admissions of positions fanned+1 .. min(serving, fanned+batch) in position
--   order, one triple each (from_ms -1: no admission, passed over: a blocked user,
--   or one who joined again since and is carried at the new position), up to the
--   first position not admitted yet (a paused room); nothing written
-- mode advance: {moved (1: the cursor was at `batch` and is now `to`; 0: another
--   fan-out moved it, nothing written), fanned}

--- @include "lib/guarded"
--- @include "lib/strict_int"
--- @include "lib/shown"
--- @include "lib/now_ms"
--- @include "lib/room_of"
--- @include "lib/read"
--- @include "lib/corrupt"
--- @include "lib/serving_at"
--- @include "lib/entry_of"
--- @include "lib/admission_of"

return guarded(function()
  local mode = ARGV[1]
  local number = strict_int(ARGV[2])
  if (mode ~= 'read' and mode ~= 'advance') or not number or number < 0 then
    error({err = 'ERR queue_fanout: expected read BATCH or advance FROM TO, got '
      .. shown(mode) .. ' ' .. shown(ARGV[2])})
  end
  local r = room_of(KEYS[1])
  if not r then
    return mode == 'read' and {0, 0, now_ms()} or {0, 0}
  end
  if mode == 'advance' then
    local to = strict_int(ARGV[3])
    if not to or to < number or to > r.joined then
      error({err = 'ERR queue_fanout: advance to ' .. shown(ARGV[3]) .. ' is not within '
        .. number .. '..' .. r.joined})
    end
    if r.fanned ~= number then
      return {0, r.fanned}
    end
    redis.call('HSET', KEYS[1], 'fanned', string.format('%d', to))
    return {1, to}
  end
  local now = now_ms()
  local serving = serving_at(r, now)
  local reply = {r.fanned, serving, now}
  if r.prequeue and not r.shuffled then
    return reply
  end
  local last = math.min(serving, r.fanned + number)
  local keys = {risk = KEYS[4], admitted = KEYS[5]}
  local users = {}
  if last > r.fanned then
    local first_plain = math.max(r.fanned + 1, r.prequeue and r.prequeue_last + 1 or 1)
    if r.prequeue and r.fanned < r.prequeue_last then
      for _, user in ipairs(read(KEYS[6], 'ZRANGE', KEYS[6], r.fanned + 1,
          math.min(last, r.prequeue_last), 'BYSCORE')) do
        users[#users + 1] = user
      end
    end
    if last >= first_plain then
      for _, user in ipairs(read(KEYS[3], 'LRANGE', KEYS[3], first_plain - 1, last - 1)) do
        users[#users + 1] = user
      end
    end
  end
  if #users ~= math.max(last - r.fanned, 0) then
    corrupt(KEYS[3], 'positions ' .. (r.fanned + 1) .. '..' .. last .. ' have ' .. #users
      .. ' users')
  end
  for i, user in ipairs(users) do
    local p = r.fanned + i
    local entry_p, joined_at, paused_at = entry_of(KEYS[2], user)
    if not joined_at then
      corrupt(KEYS[2], 'user ' .. shown(user) .. ' at position ' .. p .. ' has no queue entry')
    end
    -- The user joined again since this position (its admission ran out): the
    -- new position carries the new admission; this one is passed over.
    local moved_on
    if r.prequeue and p <= r.prequeue_last then
      moved_on = entry_p > r.prequeue_last
    else
      moved_on = entry_p ~= p
    end
    local from, blocked
    if not moved_on then
      from, blocked = admission_of(keys, r, user, p, joined_at, paused_at, now)
      if not from and not blocked and r.mode == 'rate' then
        -- Not admitted yet (a paused rate room): this position and the next
        -- wait. (max_active: the admitter passed it over, as it does a block.)
        break
      end
    end
    reply[#reply + 1] = user
    reply[#reply + 1] = from or -1
    reply[#reply + 1] = from and from + r.ttl or -1
  end
  return reply
end)
