#!lua
-- queue_shuffle.lua — the pre-queue's shuffle at the start (docs/waiting-room.md).
-- The permutation is computed outside Redis (a seeded Fisher–Yates in
-- `domain::waiting_room::shuffle`, reproducible by anyone from the seed this
-- script reveals once it is done); this script hands out the seed, stores the
-- final positions, and opens the room when every pre-queue user has one.
--
-- KEYS[1] room        hash   the room (lib/room_of): prequeue_last, shuffled, seed, and
--                            the item's starts_at_ms and expire_at_ms
-- KEYS[2] shuffled    zset   user -> final position (1..prequeue_last)
-- ARGV[1] mode        prepare | stage | commit
-- ARGV[2..n] value    stage: position, user pairs; commit: the pre-queue's size
--
-- Returns {status, prequeue_last, seed, seed_sha256, now_ms, starts_at_ms, staged}:
--   status, every mode: not_started (Redis time is before starts_at) | done (shuffled
--     already) | no_prequeue; else
--   prepare: ready, with the seed (the caller shuffles); nothing written
--   stage:   staged (ZADD: the same pairs again are harmless)
--   commit:  committed (as many positions staged as the pre-queue has: the room
--            opens now, the seed is public from now on) | incomplete (nothing written)
--   staged: final positions stored so far
-- A stage or commit before starts_at (Redis time) is refused: a late join
-- could still enter the pre-queue. Every ARGV value is checked before the first write.

--- @include "lib/guarded"
--- @include "lib/strict_int"
--- @include "lib/shown"
--- @include "lib/now_ms"
--- @include "lib/room_of"
--- @include "lib/read"

return guarded(function()
  local mode = ARGV[1]
  if mode ~= 'prepare' and mode ~= 'stage' and mode ~= 'commit' then
    error({err = 'ERR queue_shuffle: mode ' .. shown(mode) .. ' is not prepare, stage or commit'})
  end
  local now = now_ms()
  local r = room_of(KEYS[1])
  local starts_at = r and r.starts_at
  local expire_at = r and r.expire_at
  local staged = read(KEYS[2], 'ZCARD', KEYS[2])
  local function answer(status, seed, sha)
    return {status, r and r.prequeue_last or 0, seed or '', sha or '', now, starts_at or 0, staged}
  end
  if not r or not r.prequeue then
    return answer('no_prequeue')
  end
  if r.shuffled then
    return answer('done')
  end
  if starts_at and now < starts_at then
    return answer('not_started')
  end
  if mode == 'prepare' then
    local seed, seed_sha256 = unpack(read(KEYS[1], 'HMGET', KEYS[1], 'seed', 'seed_sha256'))
    return answer('ready', seed, seed_sha256)
  end
  if mode == 'stage' then
    if (#ARGV - 1) % 2 ~= 0 then
      error({err = 'ERR queue_shuffle: stage takes position, user pairs'})
    end
    for i = 2, #ARGV, 2 do
      local p = strict_int(ARGV[i])
      if not p or p < 1 or p > r.prequeue_last then
        error({err = 'ERR queue_shuffle: position ' .. shown(ARGV[i]) .. ' is not within 1..'
          .. r.prequeue_last})
      end
    end
    for i = 2, #ARGV, 2 do
      redis.call('ZADD', KEYS[2], ARGV[i], ARGV[i + 1])
    end
    if expire_at and #ARGV > 1 then
      redis.call('PEXPIREAT', KEYS[2], string.format('%d', expire_at))
    end
    staged = redis.call('ZCARD', KEYS[2])
    return answer('staged')
  end
  if strict_int(ARGV[2]) ~= r.prequeue_last or staged ~= r.prequeue_last then
    return answer('incomplete')
  end
  redis.call('HSET', KEYS[1], 'shuffled', '1', 'shuffled_at_ms', string.format('%d', now))
  if not r.opened_at then
    redis.call('HSET', KEYS[1], 'opened_at_ms', string.format('%d', now))
  end
  return answer('committed')
end)
