#!lua
-- bucket_cursor.lua — copy a ticket room's cursor to one bucket of a
-- bucketed item (docs/waiting-room.md, "Ticket mode"): the buy runs in the
-- user's home bucket, which cannot read the room in the item's slot, so the
-- instance that moved the cursor copies it to every bucket (N writes per
-- move, never one per user). Copies only move forward: a late or repeated
-- copy changes nothing.
--
-- KEYS[1] room        hash   the bucket's copy: mode (ticket), cursor_ms, ttl_ms,
--                            expired_below_ms, expires_next_at_ms
-- KEYS[2] passes      zset   the copy of the passes, "<cursor>:<at ms>" scored by the cursor
-- ARGV[1] cursor_ms   the room's cursor
-- ARGV[2] at_ms       Redis time the cursor got there
-- ARGV[3] ttl_ms      the room's admission_ttl (>= 1)
-- ARGV[4] expire_at_ms the item's expiry ("" = never)
-- ARGV[5] expired_below_ms   the room's: every arrival at or below it ran out ("" = none yet)
-- ARGV[6] expires_next_at_ms the room's: none above runs out before it ("" = not known)
--
-- Returns {status, cursor_ms}: copied | kept (the copy was as far or further:
-- its cursor, or the same cursor and its expired_below_ms);
-- cursor_ms the copy's cursor after the call. A malformed copy is the error
-- "CORRUPT <key>: ..."; nothing is written then, nor on a bad ARGV.

--- @include "lib/guarded"
--- @include "lib/shown"
--- @include "lib/argument"
--- @include "lib/read"
--- @include "lib/corrupt"
--- @include "lib/optional_int_of"

return guarded(function()
  local cursor = argument('bucket_cursor', 1, 'cursor_ms', -9007199254740992)
  local at = argument('bucket_cursor', 2, 'at_ms', 0)
  argument('bucket_cursor', 3, 'ttl_ms', 1)
  local expire_at = argument('bucket_cursor', 4, 'expire_at_ms', 1, true)
  local expired_below = argument('bucket_cursor', 5, 'expired_below_ms', -9007199254740992, true)
  argument('bucket_cursor', 6, 'expires_next_at_ms', -9007199254740992, true)
  local mode, held, held_below = unpack(read(KEYS[1], 'HMGET', KEYS[1], 'mode', 'cursor_ms',
    'expired_below_ms'))
  if mode and mode ~= 'ticket' then
    corrupt(KEYS[1], 'mode holds ' .. shown(mode) .. ', not ticket')
  end
  held = optional_int_of(KEYS[1], 'cursor_ms', held)
  held_below = optional_int_of(KEYS[1], 'expired_below_ms', held_below)
  read(KEYS[2], 'ZCARD', KEYS[2])
  local further = not held or cursor > held
  local same_later = held == cursor and expired_below
    and (not held_below or expired_below > held_below)
  if not further and not same_later then
    return {'kept', held}
  end
  -- "" for a value the room has not: the gate reads it as none.
  redis.call('HSET', KEYS[1], 'mode', 'ticket', 'cursor_ms', ARGV[1], 'ttl_ms', ARGV[3],
    'expired_below_ms', ARGV[5], 'expires_next_at_ms', ARGV[6])
  if further then
    redis.call('ZADD', KEYS[2], cursor, string.format('%d:%d', cursor, at))
  end
  if expire_at then
    redis.call('PEXPIREAT', KEYS[1], ARGV[4])
    redis.call('PEXPIREAT', KEYS[2], ARGV[4])
  end
  return {'copied', cursor}
end)
