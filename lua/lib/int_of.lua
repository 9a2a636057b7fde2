--- @include "lib/strict_int"
--- @include "lib/corrupt"
--- @include "lib/shown"

-- lib/int_of — a stored value as a strict integer (lib/strict_int), or
-- `corrupt` naming `what` in `key`.
local function int_of(key, what, value)
  local n = strict_int(value)
  if not n then
    corrupt(key, what .. ' holds ' .. shown(value) .. ', not an integer')
  end
  return n
end
