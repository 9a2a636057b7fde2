--- @include "lib/read"
--- @include "lib/corrupt"
--- @include "lib/shown"
--- @include "lib/strict_int"
--- @include "lib/int_of"
--- @include "lib/optional_int_of"
--- @include "lib/risk_of"

-- lib/ticket_gate — a ticket room as a buy meets it (docs/waiting-room.md,
-- "Ticket mode"): the shopper's ticket was verified by the door (`serve`
-- checks its HMAC tag, user and item) and its arrival time is ARGV
-- `arrival` (a pre-queue ticket's: its rank's place); admitted once the
-- room's cursor reached that arrival, for `ttl_ms` from the moment it did
-- (the first pass at or beyond it), a risk delay added, never for a blocked
-- user. Reads only.
-- A ticket signed with a revoked key (`ticket_key` in the set
-- keys.revoked, lua/room_revoke.lua) is no ticket: not_queued.
-- When an admission ran out is known without the passes while the beats
-- keep it (lua/room_tick.lua): every arrival at or below expired_below_ms
-- ran out, none above it before expires_next_at_ms; else, and for a delayed
-- user or one that ran out (the answer names the times), the passes say.
-- `now`: the attempt's Redis time. `keys`: {room, registered, risk, passes, revoked} (a bucket's copies:
-- lua/bucket_cursor.lua; no registered, a bucketed ticket room takes no
-- registration). Returns the gate of
-- lib/purchase: refused (nil when admitted), detail ("0 0 0" for
-- not_admitted: the door knows the estimate, Redis does not; "<from> <to>"
-- for admission_expired), spent() (nothing to spend).
local function ticket_gate(keys, user, arrival, ticket_key, now)
  local gate = {spent = function() end, detail = ''}
  -- The risk list and the revoked keys are read only once they were ever
  -- written (their counters in the room): a sale without them pays one
  -- command here, the room's fields.
  local mode, cursor, expired_below, expires_next, registration, risk_version, revoked_count =
    unpack(read(keys.room, 'HMGET', keys.room, 'mode', 'cursor_ms', 'expired_below_ms',
      'expires_next_at_ms', 'registration', 'risk_version', 'revoked_count'))
  -- A bucket's copy that no beat wrote yet: nobody is admitted there yet.
  if mode ~= 'ticket' and mode ~= nil then
    corrupt(keys.room, 'mode holds ' .. shown(mode) .. ', but meta says the room takes tickets')
  end
  cursor = optional_int_of(keys.room, 'cursor_ms', cursor)
  if registration == '1' and read(keys.registered, 'HEXISTS', keys.registered, user) == 0 then
    gate.refused = 'not_registered'
    return gate
  end
  local risk = risk_version and (optional_int_of(keys.room, 'risk_version', risk_version) or 0) > 0
    and risk_of(keys.risk, user)
  local at = strict_int(arrival)
  if ticket_key ~= '' and revoked_count
      and (optional_int_of(keys.room, 'revoked_count', revoked_count) or 0) > 0
      and read(keys.revoked, 'SISMEMBER', keys.revoked, ticket_key) == 1 then
    at = nil
  end
  if not at then
    gate.refused = 'not_queued'
    return gate
  end
  if (risk and risk.block) or not cursor or at > cursor then
    gate.refused, gate.detail = 'not_admitted', '0 0 0'
    return gate
  end
  expires_next = optional_int_of(keys.room, 'expires_next_at_ms', expires_next)
  expired_below = optional_int_of(keys.room, 'expired_below_ms', expired_below)
  if not (risk and risk.delay) and expires_next and now < expires_next
      and (not expired_below or at > expired_below) then
    return gate
  end
  local ttl = int_of(keys.room, 'ttl_ms', read(keys.room, 'HGET', keys.room, 'ttl_ms'))
  local pass = read(keys.passes, 'ZRANGEBYSCORE', keys.passes, at, '+inf', 'LIMIT', 0, 1)[1]
  local from = pass and strict_int(string.match(pass, ':(%-?%d+)$'))
  if not from then
    corrupt(keys.passes, 'the cursor reached ' .. cursor .. ' but no pass at or after '
      .. at .. ' is recorded (' .. shown(pass) .. ')')
  end
  if risk and risk.delay and risk.since < from then
    from = from + risk.delay
  end
  if now < from then
    gate.refused, gate.detail = 'not_admitted', '0 0 0'
  elseif now >= from + ttl then
    gate.refused, gate.detail = 'admission_expired', string.format('%d %d', from, from + ttl)
  end
  return gate
end
