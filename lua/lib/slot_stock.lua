--- @include "lib/read"
--- @include "lib/int_of"
--- @include "lib/expiry_of"

-- lib/slot_stock — a slot's stock as the bucket transfer scripts meet it,
-- read and validated before any write: its meta, their first key
-- (initial_stock says preheated, expire_at_ms the slot's expiry), and its
-- stock, the second.

-- preheated, stock (nil when absent), expire_at_ms (the text, nil when none).
local function slot_stock()
  local initial_stock, expire_at_ms =
    unpack(read(KEYS[1], 'HMGET', KEYS[1], 'initial_stock', 'expire_at_ms'))
  local stock_value = read(KEYS[2], 'GET', KEYS[2])
  local stock = stock_value and int_of(KEYS[2], 'stock', stock_value)
  local expire_at = nil
  if initial_stock then
    int_of(KEYS[1], 'initial_stock', initial_stock)
    expire_at = expiry_of(KEYS[1], 'expire_at_ms', expire_at_ms) and expire_at_ms
  end
  return initial_stock and stock and true, stock, expire_at
end
