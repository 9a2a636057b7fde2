--- @include "lib/read"
--- @include "lib/int_of"
--- @include "lib/shown"
--- @include "lib/risk_of"
--- @include "lib/room_elapsed"
--- @include "lib/rate_reached"

-- lib/admission_of — the admission of position p of room `r` (the user
-- joined at `joined_at`, when the room's pauses came to `paused_at` ms in
-- all, lib/entry_of): its start ms, or nil when there is none (yet:
-- max_active's admitter has not reached it, the rate clock has not opened,
-- the room is paused and the user joined after the pause began; or never:
-- blocked); `blocked` says which.
-- Rate mode, on the room's clock (pauses left out): the later of the
-- position's turn, ceil(p * per / count), and the join itself, so a user who
-- joins when the clock has banked turns starts at the join, and a pause after
-- the join moves the admission (and its end) as it moves everyone's; a
-- penalty delay set before that moment moves it. Max-active mode: what
-- queue_admit.lua wrote, unless it predates the join (an admission of an
-- earlier turn: the user joined again since). `keys`: {risk, admitted}.
local function admission_of(keys, r, user, p, joined_at, paused_at, now)
  local risk = risk_of(keys.risk, user)
  if r.mode == 'max_active' then
    local start = read(keys.admitted, 'HGET', keys.admitted, user)
    if start then
      start = int_of(keys.admitted, 'admission of user ' .. shown(user), start)
    end
    if not start or start < joined_at then
      return nil, risk and risk.block
    end
    return start, false
  end
  if risk and risk.block then
    return nil, true
  end
  local elapsed = room_elapsed(r, now)
  if not elapsed then
    return nil, false
  end
  if r.paused_since and r.paused_joined and p > r.paused_joined then
    return nil, false
  end
  local joined_on_clock = joined_at - r.opened_at - paused_at
  local from = now - elapsed + math.max(rate_reached(r, p), joined_on_clock)
  if risk and risk.delay and risk.since < from then
    from = from + risk.delay
  end
  return from, false
end
