--- @include "lib/read"
--- @include "lib/room_of"
--- @include "lib/standing"
--- @include "lib/refusal_of"
--- @include "lib/refuse_unless_allowed"
--- @include "lib/admitter_silent"

-- lib/plain_room_gate — the waiting room of a plain item as buy.lua meets
-- it: the room's keys from KEYS[first] on, in the order of PLAIN_ROOM_KEYS.

-- The room's keys, as buy.lua's header lists them.
local PLAIN_ROOM_KEYS = {'room', 'queue', 'registered', 'risk', 'admitted', 'active', 'shuffled'}

-- The gate of `user` (lib/purchase's `room_gate`): read, nothing written;
-- gate.spent() is the ok's one write here (max_active: the user leaves the
-- active set). A `not_admitted` in a room that waits on an admitter none
-- runs says so: a fourth number in its detail, the ms since the last pass
-- (-1: none ever ran; lib/admitter_silent).
local function plain_room_gate(first, user, now)
  local last = first + #PLAIN_ROOM_KEYS - 1
  if not KEYS[last] then
    error({err = 'ERR the waiting room of this item is on, but the call lacks its '
      .. 'waiting-room keys (KEYS[' .. first .. '..' .. last .. ']): nothing was written'})
  end
  local keys = {}
  for i, name in ipairs(PLAIN_ROOM_KEYS) do
    keys[name] = KEYS[first + i - 1]
  end
  local r = room_of(keys.room)
  local gate = {}
  gate.refused, gate.detail = refusal_of(standing(keys, r, user, now))
  local silent = gate.refused == 'not_admitted' and admitter_silent(r, now)
  if silent then
    gate.detail = string.format('%s %d', gate.detail, silent)
  end
  local active = r and r.mode == 'max_active' and not gate.refused
  if active then
    read(keys.active, 'ZSCORE', keys.active, user)
    -- The ok's writes end with this one: a caller whose ACL lacks it
    -- would otherwise sell and keep the user's place (no rollback).
    refuse_unless_allowed({{'ZREM', keys.active, user}})
  end
  function gate.spent()
    if active then
      redis.call('ZREM', keys.active, user)
    end
  end
  return gate
end
