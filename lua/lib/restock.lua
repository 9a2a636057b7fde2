-- lib/restock — move `delta` units into (> 0) or out of (< 0) a region's
-- slot (lib/region_slot read it): the stock and `initial_stock` together, so
-- what the region sold (initial_stock − stock) stays what it was and every
-- single-region check (status, reconcile) holds as before. Preheat's
-- `validated` text, which starts with initial_stock, follows it, so the buy
-- scripts keep their one-comparison path (lib/terms_of). A credit that brings
-- the stock back from empty publishes `returned` on the stock's shard channel
-- (docs/serve.md, "Cheap refusals"). Returns the stock after.
local function restock(slot, delta)
  local stock = redis.call('INCRBY', KEYS[2], delta)
  local initial_text = string.format('%d', slot.initial + delta)
  redis.call('HSET', KEYS[1], 'initial_stock', initial_text)
  local old = slot.initial_text .. ' '
  if slot.validated and string.sub(slot.validated, 1, #old) == old then
    redis.call('HSET', KEYS[1], 'validated',
      initial_text .. ' ' .. string.sub(slot.validated, #old + 1))
  end
  if delta > 0 and stock == delta then
    -- pcall: the broadcast is only advice.
    redis.pcall('SPUBLISH', KEYS[2], 'returned')
  end
  return stock
end
