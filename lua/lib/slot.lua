-- lib/slot — a slot's stock as the bucket scripts meet it: meta, the first
-- key (initial_stock says preheated, expire_at_ms the slot's expiry), and
-- stock, the second, read and validated before any write.
--- @include "lib/corrupt"

-- preheated, stock (nil when absent), expire_at_ms (the text, nil when none).
local function slot_stock()
  local meta = read(KEYS[1], 'HMGET', KEYS[1], 'initial_stock', 'expire_at_ms')
  local stock_value = read(KEYS[2], 'GET', KEYS[2])
  local stock = stock_value and int_of(KEYS[2], 'stock', stock_value)
  local expire_at = nil
  if meta[1] then
    int_of(KEYS[1], 'initial_stock', meta[1])
    expire_at = expiry_of(KEYS[1], 'expire_at_ms', meta[2]) and meta[2]
  end
  return meta[1] and stock and true, stock, expire_at
end
