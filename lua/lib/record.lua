--- @include "lib/corrupt"
--- @include "lib/shown"
--- @include "lib/int_of"

-- lib/record — the reservation record, the one format of an order's state in
-- `…:reservations` (order id -> record), written by the buy scripts and
-- rewritten on every state change by pay.lua and release.lua:
--   "<state> <qty> <price_cents> <bought_at_ms> <deadline_ms> <changed_at_ms> <event_stream_id> <user>"
--   state            reserved | paid | expired | cancelled
--   changed_at_ms    when the record got this state (Redis time)
--   event_stream_id  the order stream entry that announced this state
--   user             last: it may contain spaces
-- The Rust side reads it in one place too (`domain::reservations::Record`).

-- The record of one order; every argument a string (or an integer number).
local function record_text(state, qty, price, bought_at, deadline, changed_at, event_id, user)
  return table.concat({state, qty, price, bought_at, deadline, changed_at, event_id, user}, ' ')
end

-- The record `text` of `order_id` in `key`, parsed and every number checked
-- with the one integer rule; nil when there is none, `corrupt` when it is not one.
local function record_of(key, order_id, text)
  if not text then
    return nil
  end
  local r = {}
  r.state, r.qty, r.price, r.bought_at, r.deadline, r.changed_at, r.event_id, r.user =
    string.match(text, '^(%l+) (%d+) (%d+) (%d+) (%d+) (%d+) (%S+) (.*)$')
  local where = 'record of order ' .. order_id
  if not r.state then
    corrupt(key, where .. ' holds ' .. shown(text) .. ', not a reservation record')
  end
  local state = r.state
  if state ~= 'reserved' and state ~= 'paid' and state ~= 'expired' and state ~= 'cancelled' then
    corrupt(key, where .. ' has the unknown state ' .. shown(r.state))
  end
  for _, name in ipairs({'qty', 'price', 'bought_at', 'deadline', 'changed_at'}) do
    int_of(key, where .. ' (' .. name .. ')', r[name])
  end
  return r
end
