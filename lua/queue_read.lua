#!lua
-- queue_read.lua — an item's waiting room at one instant, read only
-- (docs/waiting-room.md): the room's figures, and where each given user stands.
--
-- KEYS[1] room        hash   the room (lib/room_of)
-- KEYS[2] queue       hash   user -> "<position> <joined at ms> [<paused ms>]"
-- KEYS[3] registered  hash   user -> registration
-- KEYS[4] risk        hash   user -> "block" | "delay <ms> <set at ms>"
-- KEYS[5] admitted    hash   user -> admission start ms (max_active mode)
-- KEYS[6] shuffled    zset   user -> final position of a shuffled pre-queue
-- KEYS[7] active      zset   user -> admission end ms (max_active mode)
-- ARGV[1..n] user     the users whose standing to read (none: the room only)
--
-- Returns {room, standing...}:
--   room = {now_ms, present (0/1), mode, joined, serving, active, opened_at_ms (-1 none),
--           paused_ms, paused (0/1), prequeue_last, shuffled (0/1), fanned, tail_eta_ms,
--           seed_sha256, seed (only once shuffled, else ""), config, registered,
--           paused_by, admitter_at_ms (-1 none), admitter_every_ms}
--     active: max_active's admitted places not yet given back; tail_eta_ms: the
--     wait of a user joining now; paused_by: who holds the room paused ("", operator,
--     switch, "operator switch"; queue_clock.lua); admitter_at_ms: the Redis time of
--     the last pass of a `seckill queue admit`, admitter_every_ms its interval
--   standing = {user, state, position, serving, eta_ms, from_ms, to_ms}, state as
--     lib/standing's (not_registered | not_queued | prequeue | waiting |
--     admitted | expired)
-- Nothing is written; a malformed value is "CORRUPT <key>: ...".

--- @include "lib/guarded"
--- @include "lib/now_ms"
--- @include "lib/room_of"
--- @include "lib/read"
--- @include "lib/serving_at"
--- @include "lib/paused_ms"
--- @include "lib/wait_for"
--- @include "lib/standing"

return guarded(function()
  local now = now_ms()
  local r = room_of(KEYS[1])
  local keys = {queue = KEYS[2], registered = KEYS[3], risk = KEYS[4], admitted = KEYS[5],
    shuffled = KEYS[6]}
  local room
  if not r then
    room = {now, 0, '', 0, 0, 0, -1, 0, 0, 0, 0, 0, 0, '', '', '', 0, '', -1, 0}
  else
    local serving = serving_at(r, now)
    local active = 0
    if r.mode == 'max_active' then
      active = read(KEYS[7], 'ZCOUNT', KEYS[7], '(' .. now, '+inf')
    end
    local seed_sha256, seed, config, paused_by =
      unpack(read(KEYS[1], 'HMGET', KEYS[1], 'seed_sha256', 'seed', 'config', 'paused_by'))
    if not r.paused_since then
      paused_by = ''
    elseif not paused_by or paused_by == '' then
      -- Paused by an older seckill, which had only the operator's pause.
      paused_by = 'operator'
    end
    room = {now, 1, r.mode, r.joined, serving, active, r.opened_at or -1, paused_ms(r, now),
      r.paused_since and 1 or 0, r.prequeue_last, r.shuffled and 1 or 0, r.fanned,
      wait_for(r, r.joined + 1, now), seed_sha256 or '',
      r.shuffled and seed or '', config or '', read(KEYS[3], 'HLEN', KEYS[3]),
      paused_by, r.admitter_at or -1, r.admitter_every}
  end
  local replies = {room}
  for i = 1, #ARGV do
    local s = standing(keys, r, ARGV[i], now)
    replies[#replies + 1] = {ARGV[i], s.state, s.position, s.serving, s.eta or 0, s.from or 0,
      s.to or 0}
  end
  return replies
end)
