--- @include "lib/optional_int_of"
--- @include "lib/corrupt"
--- @include "lib/shown"

-- lib/expiry_of — an optional time in the future of the epoch
-- (expire_at_ms): '' or absent is none (nil); else a strict integer >= 1.
local function expiry_of(key, what, value)
  local n = optional_int_of(key, what, value)
  if n and n < 1 then
    corrupt(key, what .. ' holds ' .. shown(value) .. ', not a positive integer')
  end
  return n
end
