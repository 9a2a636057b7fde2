--- @include "lib/rate_allowance"
--- @include "lib/room_elapsed"

-- lib/serving_at — the last position room `r` has admitted (its serving
-- position) at `now`: max_active's admitter's, or the rate clock's.
local function serving_at(r, now)
  if r.mode == 'max_active' then
    return r.serving
  end
  return math.min(r.joined, rate_allowance(r, room_elapsed(r, now)))
end
