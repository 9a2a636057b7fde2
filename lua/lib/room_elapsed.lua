--- @include "lib/paused_ms"

-- lib/room_elapsed — milliseconds the rate clock of room `r` has run since
-- it opened, pauses left out, or nil before that (a pre-queue opens when its
-- shuffle is done). Rate mode needs no admitter: position p is admitted once
-- the clock has run p / rate (lib/rate_reached); the Rust mirror of the clock
-- is `domain::waiting_room::clock`.
local function room_elapsed(r, now)
  if not r.opened_at or (r.prequeue and not r.shuffled) then
    return nil
  end
  return now - r.opened_at - paused_ms(r, now)
end
