-- lib/strict_int — the one integer rule of every script: Redis's own syntax
-- (string2ll: digits, an optional '-', no '+', no space, no leading zero, so
-- `1.5`, ` 5`, `5e0`, `0x10`, `05`, `-0` are not integers), narrowed to
-- |n| <= 2^53 so a Lua double holds it exactly and no INCRBY/HINCRBY of a
-- sane amount can overflow. Lua's own `tonumber` accepts all of those, and
-- rounds 2^53+1 to 2^53: never use it on stored text without this check.
local TWO_TO_53 = '9007199254740992'

-- The number `value` holds, or nil when it is not a strict integer (or not a string).
local function strict_int(value)
  if value == '0' then
    return 0
  end
  -- string.find without a capture allocates nothing: this runs on the hot path.
  if type(value) ~= 'string' or not string.find(value, '^%-?[1-9]%d*$') then
    return nil
  end
  local digits = #value - (string.byte(value, 1) == 45 and 1 or 0)
  if digits > 16 or (digits == 16 and string.sub(value, -16) > TWO_TO_53) then
    return nil
  end
  return tonumber(value)
end
