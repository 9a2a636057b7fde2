--- @include "lib/read"
--- @include "lib/serving_at"
--- @include "lib/entry_of"
--- @include "lib/placed"

-- lib/standing — where `user` stands in room `r` (lib/room_of; nil: no room)
-- of an item's slot at `now`. `keys`: {queue, registered, risk, admitted,
-- shuffled}. Returns a table:
--   state     not_registered | not_queued | prequeue | waiting | admitted | expired
--   position  the user's place (final once a pre-queue is shuffled), serving
--             the last position admitted, eta ms until the turn (waiting, prequeue),
--   from, to  the admission (admitted, expired)
local function standing(keys, r, user, now)
  if not r then
    return {state = 'not_queued', position = 0, serving = 0, eta = 0}
  end
  if r.registration and read(keys.registered, 'HEXISTS', keys.registered, user) == 0 then
    return {state = 'not_registered', position = 0, serving = serving_at(r, now), eta = 0}
  end
  local p, joined_at, paused_at = entry_of(keys.queue, user)
  if not p then
    return {state = 'not_queued', position = 0, serving = serving_at(r, now), eta = 0}
  end
  return placed(keys, r, user, p, joined_at, paused_at, now)
end
