#!lua
-- region_state.lua — one region's slot of an item, as `seckill regions
-- status`, the mover and `reconcile --regions` read it (docs/regions.md).
-- Reads only.
--
-- KEYS[1] meta   hash   initial_stock, fenced, master_run_id, sold_out_everywhere,
--                       out:<peer>, in:<peer>, out_at_ms:<peer>, in_at_ms:<peer>
-- KEYS[2] stock  string units left in this region
-- ARGV[1] node   the run_id of this process as the client read it (lib/fence_of)
--
-- Returns {initial_stock|-1, stock|-1, fenced (0/1), sold_out_everywhere (0/1),
--          {field, value, ...} of every out:, in:, out_at_ms:, in_at_ms: field}
-- (-1: not preheated). A malformed value is the error CORRUPT <key>: <what>.

--- @include "lib/guarded"
--- @include "lib/read"
--- @include "lib/int_of"
--- @include "lib/fence_of"

return guarded(function()
  local fields = read(KEYS[1], 'HGETALL', KEYS[1])
  local stock = read(KEYS[2], 'GET', KEYS[2])
  local meta = {}
  local pairs_out = {}
  for i = 1, #fields, 2 do
    local name, value = fields[i], fields[i + 1]
    meta[name] = value
    if string.match(name, '^out:') or string.match(name, '^in:')
        or string.match(name, '^out_at_ms:') or string.match(name, '^in_at_ms:') then
      int_of(KEYS[1], name, value)
      table.insert(pairs_out, name)
      table.insert(pairs_out, value)
    end
  end
  if not meta['initial_stock'] or not stock then
    return {-1, -1, 0, 0, pairs_out}
  end
  local initial = int_of(KEYS[1], 'initial_stock', meta['initial_stock'])
  local left = int_of(KEYS[2], 'stock', stock)
  local fenced = fence_of(KEYS[1], meta['master_run_id'], meta['fenced'], ARGV[1])
  return {initial, left, fenced and 1 or 0, meta['sold_out_everywhere'] == '1' and 1 or 0,
    pairs_out}
end)
