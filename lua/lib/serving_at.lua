--- @include "lib/rate_allowance"
--- @include "lib/room_elapsed"

-- lib/serving_at — the last position room `r` has admitted (its serving
-- position) at `now`: max_active's admitter's, or the rate clock's. While a
-- rate room is paused nobody who joined after the pause began is admitted,
-- however much the clock had banked (paused_joined, lib/admission_of).
local function serving_at(r, now)
  if r.mode == 'max_active' then
    return r.serving
  end
  local serving = math.min(r.joined, rate_allowance(r, room_elapsed(r, now)))
  if r.paused_since and r.paused_joined then
    serving = math.min(serving, r.paused_joined)
  end
  return serving
end
