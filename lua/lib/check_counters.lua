--- @include "lib/read"
--- @include "lib/int_of"

-- lib/check_counters — the reservation counters of one slot,
-- `…:reservation_counts` (not in meta: the buyer role must never write meta,
-- docs/security.md): reserved_, paid_, expired_, cancelled_ orders and units,
-- moved by every state change in the same step as the record. Every counter
-- is checked (absent is 0) before a script's first write.
local function check_counters(key)
  local names = {'reserved_orders', 'reserved_units', 'paid_orders', 'paid_units',
    'expired_orders', 'expired_units', 'cancelled_orders', 'cancelled_units'}
  local values = read(key, 'HMGET', key, unpack(names))
  for i, name in ipairs(names) do
    if values[i] then
      int_of(key, name, values[i])
    end
  end
end
