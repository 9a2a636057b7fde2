--- @include "lib/corrupt"
--- @include "lib/shown"

-- lib/flag_of — a stored flag: absent, '0' or '1'; true for '1'.
local function flag_of(key, what, value)
  if value and value ~= '0' and value ~= '1' then
    corrupt(key, what .. ' holds ' .. shown(value) .. ', not 0 or 1')
  end
  return value == '1'
end
