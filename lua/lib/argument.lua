--- @include "lib/strict_int"
--- @include "lib/shown"

-- lib/argument — a script's n-th ARGV, `what`, as a strict integer of at
-- least `least` ("" is none, nil, when `optional`); else the error reply
-- `ERR <script>: <what> <value> is not an integer >= <least>`, raised before
-- any read: a caller's mistake, not damaged data.
local function argument(script, n, what, least, optional)
  local value = ARGV[n]
  if optional and value == '' then
    return nil
  end
  local number = strict_int(value)
  if not number or number < least then
    error({err = 'ERR ' .. script .. ': ' .. what .. ' ' .. shown(value)
      .. ' is not an integer >= ' .. least})
  end
  return number
end
