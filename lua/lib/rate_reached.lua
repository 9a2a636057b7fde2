-- lib/rate_reached — the rate clock's milliseconds at which position p of
-- room `r` is admitted: ceil(p * per / count), split so no product leaves a
-- double's exact integers.
local function rate_reached(r, p)
  local whole = math.floor(p / r.count)
  return whole * r.per + math.ceil((p - whole * r.count) * r.per / r.count)
end
