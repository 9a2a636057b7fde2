--- @include "lib/strict_int"
--- @include "lib/corrupt"
--- @include "lib/shown"
--- @include "lib/read"
--- @include "lib/record"

-- lib/replayed — the answer of the purchase to a retried request id: its
-- order, or request_id_reused when the retry asks another qty; with a
-- reservation (`timeout` > 0), the order's deadline and state from its
-- record (the purchase's requests hash is KEYS[5], its reservations KEYS[8]).
-- Reads only, every value checked (`corrupt` otherwise): a bucket's credit
-- call asks it before its first write.

-- `remembered` is the value of `field` in the requests hash: "<order id>:<qty>",
-- or "<order id>" alone as versions before the qty was kept wrote it; the
-- order id is a ULID (26 characters of Crockford's base 32: every order id
-- seckill makes), the qty a strict integer >= 1. Anything else is corrupt: an
-- answer `ok` would hand the shopper the garbage as an order id.
-- Returns outcome, order_id, deadline_ms, reservation_state.
local function replayed(field, remembered, qty, timeout)
  local order_id, bought = string.match(remembered, '^([^:]*):([^:]*)$')
  order_id = order_id or remembered
  local bought_qty = bought and strict_int(bought)
  if #order_id ~= 26 or not string.find(order_id, '^[0-9A-HJKMNP-TV-Z]+$')
      or (bought and not (bought_qty and bought_qty >= 1)) then
    corrupt(KEYS[5], 'request ' .. shown(field) .. ' holds ' .. shown(remembered)
      .. ', not "<order id>:<qty>"')
  end
  if bought_qty and bought_qty ~= qty then
    return 'request_id_reused', order_id, 0, ''
  end
  if timeout > 0 then
    local r = record_of(KEYS[8], order_id, read(KEYS[8], 'HGET', KEYS[8], order_id))
    if r then
      return 'ok', order_id, tonumber(r.deadline), r.state
    end
  end
  return 'ok', order_id, 0, ''
end
