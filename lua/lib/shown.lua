-- lib/shown — a stored value as a message shows it: quoted, at most 40 bytes.
local function shown(value)
  if type(value) ~= 'string' then
    return tostring(value)
  end
  if #value > 40 then
    value = string.sub(value, 1, 40) .. '...'
  end
  return string.format('%q', value)
end
