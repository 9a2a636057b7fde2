#!lua
-- region_credit.lua — the destination's half of a transfer between regions
-- (docs/regions.md, "The protocol"): credit what the source proved it sent.
-- Idempotent: the source's cumulative count V is compared with what was
-- credited from it; only the difference is added, so a credit repeated,
-- duplicated or arriving out of order changes nothing.
--
-- KEYS[1] meta   hash   initial_stock (moves with the stock: lib/restock),
--                       validated, the fence, in:<peer> (units ever credited
--                       from peer), in_at_ms:<peer>
-- KEYS[2] stock  string units left in this region
-- ARGV[1] peer   the region the units come from
-- ARGV[2] sent   the source's out:<this region>, read after WAIT proved it
--                on every replica of the source
-- ARGV[3] node   the run_id of this process as the client read it (lib/fence_of)
--
-- Returns {status, credited now, in:<peer> after, stock_after}:
--   credited       sent − in:<peer> > 0 units added
--   stale          sent ≤ in:<peer>: nothing written
--   fenced         a fenced slot: nothing written (the units stay in transit)
--   not_preheated  no initial_stock or stock: nothing written
--   {'corrupt_state', "<key>: <what is wrong>"}: a stored value is malformed;
--                  nothing written (two fields, as every script's corrupt_state)
-- A bad ARGV is an error (ERR region_credit: ...) before any read.

--- @include "lib/guarded"
--- @include "lib/argument"
--- @include "lib/now_ms"
--- @include "lib/region_slot"
--- @include "lib/restock"

return guarded(function()
  local sent = argument('region_credit', 2, 'sent', 0)
  local field = 'in:' .. ARGV[1]
  local slot = region_slot(field, ARGV[3])
  if not slot then
    return {'not_preheated', 0, 0, -1}
  end
  if slot.fenced then
    return {'fenced', 0, slot.counter, slot.stock}
  end
  local delta = sent - slot.counter
  if delta <= 0 then
    return {'stale', 0, slot.counter, slot.stock}
  end
  local stock = restock(slot, delta)
  redis.call('HSET', KEYS[1], field, string.format('%d', sent),
    'in_at_ms:' .. ARGV[1], string.format('%d', now_ms()))
  return {'credited', delta, sent, stock}
end, function(problem)
  return {'corrupt_state', problem}
end)
