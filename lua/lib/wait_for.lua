--- @include "lib/room_elapsed"
--- @include "lib/rate_reached"

-- lib/wait_for — milliseconds from `now` until position p's turn in room
-- `r` as best known. Rate: the clock; before the clock opens, the
-- pre-queue's start plus the clock. Max_active: the admissions so far per
-- time since the opening, never more than one admission ttl per max_active
-- places ahead, the slowest a full active set can turn over.
local function wait_for(r, p, now)
  if r.mode == 'max_active' then
    local ahead = math.max(p - r.serving, 1)
    local slowest = math.ceil(ahead / r.max_active) * r.ttl
    if r.admitted_total > 0 and r.opened_at and now > r.opened_at then
      return math.min(slowest, math.ceil(ahead * (now - r.opened_at) / r.admitted_total))
    end
    return slowest
  end
  local elapsed = room_elapsed(r, now)
  if not elapsed then
    return math.max(0, (r.starts_at or now) - now) + rate_reached(r, p)
  end
  return math.max(rate_reached(r, p) - elapsed, 0)
end
