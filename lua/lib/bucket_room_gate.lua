--- @include "lib/granted"
--- @include "lib/refusal_of"

-- lib/bucket_room_gate — the waiting room of a bucketed item as
-- bucket_buy.lua meets it: KEYS[index] is the bucket's admissions, fanned
-- out by the room (lib/granted).

-- The gate of `user` (lib/purchase's `room_gate`), as lib/plain_room_gate's
-- but with nothing to spend: the active set lives in the item's slot.
local function bucket_room_gate(index, user, now)
  if not KEYS[index] then
    error({err = 'ERR the waiting room of this item is on, but the call lacks its '
      .. 'admissions key (KEYS[' .. index .. ']): nothing was written'})
  end
  local gate = {spent = function() end}
  gate.refused, gate.detail = refusal_of(granted(KEYS[index], user, now))
  return gate
end
