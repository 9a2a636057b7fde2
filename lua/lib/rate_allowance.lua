-- lib/rate_allowance — positions the rate clock of room `r` has admitted
-- after `elapsed` ms (lib/room_elapsed): floor(elapsed * count / per), split
-- so no product leaves a double's exact integers.
local function rate_allowance(r, elapsed)
  if not elapsed or elapsed <= 0 then
    return 0
  end
  local whole = math.floor(elapsed / r.per)
  return whole * r.count + math.floor((elapsed - whole * r.per) * r.count / r.per)
end
