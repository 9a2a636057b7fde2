--- @include "lib/read"
--- @include "lib/int_of"
--- @include "lib/fence_of"
--- @include "lib/corrupt"

-- lib/region_slot — one region's slot of an item as the transfer scripts
-- meet it (docs/regions.md), read and validated before any write: the meta
-- is the script's first key, the stock its second. `counter` is the meta
-- field of the pair being moved (`out:<peer>` or `in:<peer>`, a grow-only
-- cumulative count, 0 when absent); `node` the run_id of this process as the client read it
-- (lib/fence_of). Returns nil when the slot is not preheated, else
-- {initial, initial_text, stock, counter, validated, fenced}.
local function region_slot(counter_field, node)
  local initial, validated, recorded, flag, counter = unpack(read(KEYS[1], 'HMGET', KEYS[1],
    'initial_stock', 'validated', 'master_run_id', 'fenced', counter_field))
  local stock = read(KEYS[2], 'GET', KEYS[2])
  if not initial or not stock then
    return nil
  end
  local slot = {
    initial = int_of(KEYS[1], 'initial_stock', initial),
    initial_text = initial,
    stock = int_of(KEYS[2], 'stock', stock),
    counter = counter and int_of(KEYS[1], counter_field, counter) or 0,
    validated = validated,
  }
  if slot.stock < 0 then
    corrupt(KEYS[2], 'stock holds ' .. stock .. ', below 0')
  end
  if slot.counter < 0 then
    corrupt(KEYS[1], counter_field .. ' holds ' .. counter .. ', below 0')
  end
  slot.fenced = fence_of(KEYS[1], recorded, flag, node)
  return slot
end
