#!lua
-- queue_join.lua — a shopper joins an item's waiting room (docs/waiting-room.md):
-- the next position, from the room's counter, at Redis TIME; a repeat join
-- returns the same position and writes nothing.
--
-- KEYS[1] room        hash   the room (lib/room_of): joined is the counter; the item's
--                            window and expiry, as preheat copied them
-- KEYS[2] queue       hash   user -> "<position> <joined at ms> [<paused ms>]"
-- KEYS[3] line        list   users in position order (position p at index p - 1)
-- KEYS[4] registered  hash   user -> registration (a room with registration)
-- KEYS[5] risk        hash   user -> "block" | "delay <ms> <set at ms>"
-- KEYS[6] admitted    hash   user -> admission start ms (max_active mode)
-- KEYS[7] shuffled    zset   user -> final position of a shuffled pre-queue
-- ARGV[1] user        user id
--
-- Returns {outcome, state, position, serving, eta_ms, from_ms, to_ms, now_ms, joined}:
--   outcome   joined (a new position) | queued (already in the queue: the same
--             position, nothing written) | not_registered | not_started (before
--             starts_at, and the room has no pre-queue) | ended | not_preheated
--             (no room: the item's room was never preheated, or its keys expired)
--   state .. to_ms  where the user stands now (lib/standing:
--             prequeue | waiting | admitted | expired; position 0 when refused)
--   now_ms    Redis time of the join; joined: positions handed out so far
-- Joins before starts_at go to the pre-queue (prequeue_last); the first
-- join at or after starts_at without a pre-queue starts the room's clock
-- (opened_at_ms). A user whose admission ran out joins again at the tail: a
-- new position (`joined`), the old one stays behind, served. The entry
-- carries the room's pauses so far when there were any (lib/entry_of). Every
-- key is read (its type and value checked) before the first write; the
-- counter moves only for a new position, so positions are 1..joined with no
-- hole and no duplicate.

--- @include "lib/guarded"
--- @include "lib/now_ms"
--- @include "lib/room_of"
--- @include "lib/read"
--- @include "lib/standing"
--- @include "lib/placed"
--- @include "lib/paused_ms"

local function reply(outcome, s, now, joined)
  return {outcome, s.state, s.position, s.serving, s.eta or 0, s.from or 0, s.to or 0, now, joined}
end

return guarded(function()
  local user = ARGV[1]
  local now = now_ms()
  local r = room_of(KEYS[1])
  if not r then
    return reply('not_preheated', {state = '', position = 0, serving = 0}, now, 0)
  end
  local keys = {queue = KEYS[2], registered = KEYS[4], risk = KEYS[5], admitted = KEYS[6],
    shuffled = KEYS[7]}
  local s = standing(keys, r, user, now)
  if s.state ~= 'not_queued' and s.state ~= 'expired' then
    return reply(s.state == 'not_registered' and 'not_registered' or 'queued', s, now, r.joined)
  end
  if r.ends_at and now >= r.ends_at then
    return reply('ended', s, now, r.joined)
  end
  local early = r.starts_at and now < r.starts_at
  if early and not r.prequeue then
    return reply('not_started', s, now, r.joined)
  end
  read(KEYS[3], 'LLEN', KEYS[3])
  -- The state after the join, read before the first write.
  local p = r.joined + 1
  r.joined = p
  -- Nobody joined before the start: there is nothing to shuffle.
  local nothing_to_shuffle = not early and r.prequeue and r.prequeue_last == 0 and not r.shuffled
  if early then
    r.prequeue_last = p
  elseif nothing_to_shuffle then
    r.shuffled = true
  end
  local opens = not r.opened_at and (not r.prequeue or r.shuffled)
  if opens then
    r.opened_at = now
  end
  local paused = paused_ms(r, now)
  s = placed(keys, r, user, p, now, paused, now)
  local entry = string.format('%d %d', p, now)
  if paused > 0 then
    entry = string.format('%s %d', entry, paused)
  end

  redis.call('HINCRBY', KEYS[1], 'joined', 1)
  redis.call('HSET', KEYS[2], user, entry)
  redis.call('RPUSH', KEYS[3], user)
  if early then
    redis.call('HSET', KEYS[1], 'prequeue_last', string.format('%d', p))
  elseif nothing_to_shuffle then
    redis.call('HSET', KEYS[1], 'shuffled', '1', 'shuffled_at_ms', string.format('%d', now))
  end
  if opens then
    redis.call('HSET', KEYS[1], 'opened_at_ms', string.format('%d', now))
  end
  if p == 1 and r.expire_at then
    redis.call('PEXPIREAT', KEYS[2], string.format('%d', r.expire_at))
    redis.call('PEXPIREAT', KEYS[3], string.format('%d', r.expire_at))
  end
  return reply('joined', s, now, p)
end)
