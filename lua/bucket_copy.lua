#!lua
-- bucket_copy.lua — copy an operator's change to a ticket room into one
-- bucket of a bucketed item (docs/waiting-room.md, "Ticket mode"): the buy
-- runs in the user's home bucket, which cannot read the room in the item's
-- slot, so `queue penalize` copies the user's risk entry to the home bucket
-- and `queue revoke-key` the revoked key id to every bucket. The entry and
-- the bucket room's counter move in one call: the bucket's buy reads its
-- risk list (revoked set) only once risk_version (revoked_count) is not 0
-- (lib/ticket_gate), so a copy whose count is lost would never be read.
--
-- KEYS[1] room        hash   the bucket's copy of the room: mode (ticket, or absent
--                            until a cursor is copied), risk_version, revoked_count
-- KEYS[2] risk        hash   the bucket's copy of the risk list: user -> "block" |
--                            "delay <ms> <set at ms>"
-- KEYS[3] revoked     set    the bucket's copy of the revoked key ids
-- ARGV[1] action      risk | revoke
-- ARGV[2] subject     risk: the user id; revoke: the key id (1..64 of [A-Za-z0-9_-])
-- ARGV[3] entry       risk: "block", "delay <ms> <set at ms>", or "" (the entry
--                     is cleared); revoke: ""
-- ARGV[4] expire_at_ms the item's expiry ("" = never), set on each key this call creates
--
-- Returns {status, count}: written | cleared (risk), revoked |
-- already_revoked (revoke); count the bucket room's risk_version
-- (revoked_count) after the call. A malformed copy is the error "CORRUPT
-- <key>: ..."; nothing is written then, nor on a bad ARGV.

--- @include "lib/guarded"
--- @include "lib/shown"
--- @include "lib/argument"
--- @include "lib/read"
--- @include "lib/corrupt"
--- @include "lib/optional_int_of"

return guarded(function()
  local action, subject, entry = ARGV[1], ARGV[2], ARGV[3]
  if action ~= 'risk' and action ~= 'revoke' then
    error({err = 'ERR bucket_copy: action ' .. shown(action) .. ' is not risk or revoke'})
  end
  if action == 'revoke' then
    if not string.find(subject, '^[%w_%-]+$') or #subject > 64 then
      error({err = 'ERR bucket_copy: key id ' .. shown(subject)
        .. ' is not 1..64 letters, digits, "_" or "-"'})
    end
  else
    if subject == '' then
      error({err = 'ERR bucket_copy: the user id is empty'})
    end
    local ms, since = string.match(entry, '^delay (%d+) (%d+)$')
    if entry ~= '' and entry ~= 'block' and not ms then
      error({err = 'ERR bucket_copy: risk entry ' .. shown(entry)
        .. ' is not "block", "delay <ms> <set at ms>" or ""'})
    end
  end
  local expire_at = argument('bucket_copy', 4, 'expire_at_ms', 1, true)
  -- Every copy is checked before the first write, whichever the call moves.
  local mode, risk_version, revoked_count = unpack(read(KEYS[1],
    'HMGET', KEYS[1], 'mode', 'risk_version', 'revoked_count'))
  if mode and mode ~= 'ticket' then
    corrupt(KEYS[1], 'mode holds ' .. shown(mode) .. ', not ticket')
  end
  risk_version = optional_int_of(KEYS[1], 'risk_version', risk_version) or 0
  revoked_count = optional_int_of(KEYS[1], 'revoked_count', revoked_count) or 0
  read(KEYS[2], 'HLEN', KEYS[2])
  read(KEYS[3], 'SCARD', KEYS[3])
  local fresh = {}
  for i = 1, 3 do
    fresh[i] = redis.call('EXISTS', KEYS[i]) == 0
  end
  local status, count
  if action == 'revoke' then
    status, count = 'already_revoked', revoked_count
    if redis.call('SADD', KEYS[3], subject) == 1 then
      status, count = 'revoked', redis.call('HINCRBY', KEYS[1], 'revoked_count', 1)
    end
  else
    if entry == '' then
      status = 'cleared'
      redis.call('HDEL', KEYS[2], subject)
    else
      status = 'written'
      redis.call('HSET', KEYS[2], subject, entry)
    end
    -- Even a clear counts: a `serve` mirror or a buy that read the old entry reads again.
    count = redis.call('HINCRBY', KEYS[1], 'risk_version', 1)
  end
  if expire_at then
    for i = 1, 3 do
      if fresh[i] and redis.call('EXISTS', KEYS[i]) == 1 then
        redis.call('PEXPIREAT', KEYS[i], ARGV[4])
      end
    end
  end
  return {status, count}
end)
