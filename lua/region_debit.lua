#!lua
-- region_debit.lua — the source's half of a transfer between regions
-- (docs/regions.md, "The protocol"): take units out of this region's stock
-- and count them, grow-only, as sent to the peer. Atomic; refuses short.
--
-- KEYS[1] meta   hash   initial_stock (moves with the stock: lib/restock),
--                       validated, the fence (master_run_id, fenced), and
--                       out:<peer> (units ever sent to peer), out_at_ms:<peer>
-- KEYS[2] stock  string units left in this region
-- ARGV[1] peer   the region the units go to
-- ARGV[2] units  "send": units to send now (0 = send nothing: a probe, whose
--                one write lets the mover WAIT for everything sent before);
--                "raise": the count out:<peer> must reach (a peer credited
--                more than this region remembers sending: a failover lost
--                the debit; `seckill reconcile --fence` takes it again)
-- ARGV[3] mode   "send" or "raise"
-- ARGV[4] node   the run_id of this process as the client read it (lib/fence_of)
--
-- Returns {status, sent (out:<peer> after), stock_after}:
--   sent           done (a probe and a raise already met write out_at_ms only)
--   short          the stock holds fewer units: nothing written
--   fenced         mode "send" on a fenced slot: nothing written ("raise" is
--                  the fence's own repair and runs fenced)
--   not_preheated  no initial_stock or stock: nothing written
--   {'corrupt_state', "<key>: <what is wrong>"}: a stored value is malformed;
--                  nothing written (two fields, as every script's corrupt_state)
-- A bad ARGV is an error (ERR region_debit: ...) before any read.

--- @include "lib/guarded"
--- @include "lib/argument"
--- @include "lib/shown"
--- @include "lib/now_ms"
--- @include "lib/region_slot"
--- @include "lib/restock"

local mode = ARGV[3]
if mode ~= 'send' and mode ~= 'raise' then
  return redis.error_reply('ERR region_debit: mode ' .. shown(mode) .. ' is not "send" or "raise"')
end

return guarded(function()
  local units = argument('region_debit', 2, 'units', 0)
  local field = 'out:' .. ARGV[1]
  local slot = region_slot(field, ARGV[4])
  if not slot then
    return {'not_preheated', 0, -1}
  end
  if slot.fenced and mode == 'send' then
    return {'fenced', slot.counter, slot.stock}
  end
  local take = units
  if mode == 'raise' then
    take = math.max(units - slot.counter, 0)
  end
  if take > slot.stock then
    return {'short', slot.counter, slot.stock}
  end
  local stock = slot.stock
  if take > 0 then
    stock = restock(slot, -take)
    redis.call('HINCRBY', KEYS[1], field, take)
  end
  -- Always one write, so WAIT after this call covers every debit before it.
  redis.call('HSET', KEYS[1], 'out_at_ms:' .. ARGV[1], string.format('%d', now_ms()))
  return {'sent', slot.counter + take, stock}
end, function(problem)
  return {'corrupt_state', problem}
end)
