--- @include "lib/int_of"

-- lib/optional_int_of — an optional integer field: '' or absent is "none"
-- (nil), anything else a strict integer (lib/int_of).
local function optional_int_of(key, what, value)
  if not value or value == '' then
    return nil
  end
  return int_of(key, what, value)
end
