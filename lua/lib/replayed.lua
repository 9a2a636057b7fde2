--- @include "lib/read"
--- @include "lib/record"

-- lib/replayed — the answer of the purchase to a retried request id: its
-- order, or request_id_reused when the retry asks another qty; with a
-- reservation (`timeout` > 0), the order's deadline and state from its
-- record (the purchase's reservations hash is KEYS[8]).

-- `remembered` is the request id's value: "<order id>:<qty>", or "<order id>"
-- alone as versions before the qty was kept wrote it.
local function replayed(remembered, qty, stock, timeout)
  local order_id, bought_qty = string.match(remembered, '^([^:]*):(%d+)$')
  if not order_id then
    order_id = remembered
  elseif tonumber(bought_qty) ~= qty then
    return 'request_id_reused', order_id, stock or -1, 0, ''
  end
  if timeout > 0 then
    local r = record_of(KEYS[8], order_id, read(KEYS[8], 'HGET', KEYS[8], order_id))
    if r then
      return 'ok', order_id, stock or -1, tonumber(r.deadline), r.state
    end
  end
  return 'ok', order_id, stock or -1, 0, ''
end
