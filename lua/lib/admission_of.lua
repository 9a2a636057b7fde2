--- @include "lib/read"
--- @include "lib/int_of"
--- @include "lib/shown"
--- @include "lib/risk_of"
--- @include "lib/room_elapsed"
--- @include "lib/rate_reached"

-- lib/admission_of — the admission of position p of room `r` (the user
-- joined at `joined_at`): its start ms, or nil when there is none (yet:
-- max_active's admitter has not reached it, the rate clock has not opened;
-- or never: blocked); `blocked` says which. Rate mode: from opened_at +
-- paused + ceil(p * per / count), or from when the user joined if later; a
-- penalty delay set before that moment moves it. Max-active mode: what
-- queue_admit.lua wrote. `keys`: {risk, admitted}.
local function admission_of(keys, r, user, p, joined_at, now)
  local risk = risk_of(keys.risk, user)
  if r.mode == 'max_active' then
    local start = read(keys.admitted, 'HGET', keys.admitted, user)
    if not start then
      return nil, risk and risk.block
    end
    return int_of(keys.admitted, 'admission of user ' .. shown(user), start), false
  end
  if risk and risk.block then
    return nil, true
  end
  local elapsed = room_elapsed(r, now)
  if not elapsed then
    return nil, false
  end
  local from = math.max(now - elapsed + rate_reached(r, p), joined_at)
  if risk and risk.delay and risk.since < from then
    from = from + risk.delay
  end
  return from, false
end
