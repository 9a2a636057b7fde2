--- @include "lib/corrupt"
--- @include "lib/shown"
--- @include "lib/read"
--- @include "lib/strict_int"

-- lib/order_seats — the seats one order holds in a seat item's section
-- (docs/seats.md), read and checked before the caller's first write, and
-- set to their next state after it: pay turns them from held to sold, a
-- release from held to free. `state_key` nil (a slot without seats) or an
-- order without seats: nil, nothing to do. A seat the order names that is
-- not in the section, or not in the state `expected`, is corrupt_state:
-- the caller writes nothing.
local function order_seats(state_key, orders_key, order_id, expected)
  if not state_key then
    return nil
  end
  local list = read(orders_key, 'HGET', orders_key, order_id)
  if not list then
    return nil
  end
  local state = read(state_key, 'GET', state_key) or ''
  local indexes = {}
  for text in string.gmatch(list, '[^,]+') do
    local index = strict_int(text)
    if not index or index < 0 or index >= #state then
      corrupt(orders_key, 'order ' .. order_id .. ' names seat #' .. shown(text)
        .. ', not one of the ' .. #state .. ' seats of the section')
    end
    local byte = string.sub(state, index + 1, index + 1)
    if byte ~= expected then
      corrupt(state_key, 'seat #' .. text .. ' of order ' .. order_id .. ' is ' .. shown(byte)
        .. ', not ' .. shown(expected))
    end
    indexes[#indexes + 1] = index
  end
  return indexes
end

-- Write `byte` at every seat of `indexes` (order_seats' answer; nil: nothing).
local function set_seats(state_key, indexes, byte)
  for _, index in ipairs(indexes or {}) do
    redis.call('SETRANGE', state_key, index, byte)
  end
end
