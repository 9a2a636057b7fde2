--- @include "lib/corrupt"
--- @include "lib/shown"

-- lib/room_kind_of — meta's `waiting_room` (preheat writes it): absent or
-- '0' is no room (false), '1' an exact room (rate, max_active: a place per
-- user in Redis), 'ticket' a ticket room (signed tickets, an arrival-time
-- cursor: lib/ticket_gate).
local function room_kind_of(key, value)
  if not value or value == '0' then
    return false
  elseif value == '1' then
    return 'exact'
  elseif value == 'ticket' then
    return 'ticket'
  end
  corrupt(key, 'waiting_room holds ' .. shown(value) .. ', not 0, 1 or ticket')
end
