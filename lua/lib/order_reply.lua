-- lib/order_reply — what pay.lua and release.lua's cancel answer about one
-- order, from its record (lib/record).

-- {outcome, state, qty, deadline_ms, changed_at_ms, user} of record `r`
-- (nil: the order is unknown).
local function order_reply(outcome, r)
  if not r then
    return {outcome, '', 0, 0, 0, ''}
  end
  return {outcome, r.state, tonumber(r.qty), tonumber(r.deadline), tonumber(r.changed_at), r.user}
end
