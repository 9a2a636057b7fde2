--- @include "lib/int_of"
--- @include "lib/corrupt"
--- @include "lib/shown"

-- lib/at_least — a stored value as a strict integer of at least `least`.
local function at_least(key, what, value, least)
  local n = int_of(key, what, value)
  if n < least then
    corrupt(key, what .. ' holds ' .. shown(value) .. ', not an integer >= ' .. least)
  end
  return n
end
