#!lua
-- room_revoke.lua — revoke a ticket room's signing key by its id
-- (docs/waiting-room.md, "Security"): every ticket signed with it is refused
-- from then on, by every `serve` instance as soon as its next tick reads the
-- list (lua/room_tick.lua returns it), and by `seckill buy --ticket`.
--
-- KEYS[1] room        hash   the room (lib/room_of); revoked_count: keys revoked so far
--                            (the buy reads the set only once it is not 0)
-- KEYS[2] revoked     set    revoked key ids (a key apart from the room: the buyer,
--                            whose beats write the room, may not write it)
-- ARGV[1] key_id      the key id to revoke: 1..64 of [A-Za-z0-9_-]
--
-- Returns {status, revoked_keys}: status revoked | already_revoked | no_room |
-- not_ticket; revoked_keys the list after the call. Nothing is written
-- unless the status is revoked.

--- @include "lib/guarded"
--- @include "lib/shown"
--- @include "lib/room_of"
--- @include "lib/read"
--- @include "lib/optional_int_of"

return guarded(function()
  local key_id = ARGV[1]
  if not string.find(key_id, '^[%w_%-]+$') or #key_id > 64 then
    error({err = 'ERR room_revoke: key id ' .. shown(key_id)
      .. ' is not 1..64 letters, digits, "_" or "-"'})
  end
  local r = room_of(KEYS[1])
  if not r then
    return {'no_room', ''}
  end
  if r.mode ~= 'ticket' then
    return {'not_ticket', ''}
  end
  local status = 'already_revoked'
  optional_int_of(KEYS[1], 'revoked_count', read(KEYS[1], 'HGET', KEYS[1], 'revoked_count'))
  if read(KEYS[2], 'SISMEMBER', KEYS[2], key_id) == 0 then
    redis.call('SADD', KEYS[2], key_id)
    redis.call('HINCRBY', KEYS[1], 'revoked_count', 1)
    if r.expire_at then
      redis.call('PEXPIREAT', KEYS[2], string.format('%d', r.expire_at))
    end
    status = 'revoked'
  end
  local list = redis.call('SMEMBERS', KEYS[2])
  table.sort(list)
  return {status, table.concat(list, ' ')}
end)
