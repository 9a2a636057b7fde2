--- @include "lib/read"
--- @include "lib/strict_int"
--- @include "lib/corrupt"
--- @include "lib/shown"
--- @include "lib/serving_at"
--- @include "lib/wait_for"
--- @include "lib/admission_of"
--- @include "lib/at_tail"

-- lib/placed — where a queued user of room `r` (position p as joined, joined
-- at `joined_at` with the room's pauses at `paused_at` ms, lib/entry_of)
-- stands at `now`: a standing (lib/standing). A pre-queue user's place is
-- the shuffled final position once the shuffle is done.
-- `keys`: {risk, admitted, shuffled}.
local function placed(keys, r, user, p, joined_at, paused_at, now)
  local serving = serving_at(r, now)
  if r.prequeue and p <= r.prequeue_last then
    if not r.shuffled then
      return {state = 'prequeue', position = p, serving = 0, eta = wait_for(r, p, now)}
    end
    local final = read(keys.shuffled, 'ZSCORE', keys.shuffled, user)
    if not strict_int(final) then
      corrupt(keys.shuffled, 'the pre-queue user ' .. shown(user) .. ' has '
        .. shown(final) .. ' as final position')
    end
    p = tonumber(final)
  end
  local from, blocked = admission_of(keys, r, user, p, joined_at, paused_at, now)
  if blocked then
    return at_tail(r, now, serving)
  end
  if not from then
    return {state = 'waiting', position = p, serving = serving, eta = wait_for(r, p, now)}
  end
  if now < from then
    return {state = 'waiting', position = p, serving = serving, eta = from - now}
  end
  if now >= from + r.ttl then
    return {state = 'expired', position = p, serving = serving, from = from, to = from + r.ttl}
  end
  return {state = 'admitted', position = p, serving = serving, from = from, to = from + r.ttl}
end
