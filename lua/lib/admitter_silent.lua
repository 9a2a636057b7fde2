-- lib/admitter_silent — whether a plain item's room `r` (lib/room_of) waits
-- on `seckill queue admit` at `now` with none running: nil when it needs
-- none now, or one finished a pass lately; else the ms since the last pass,
-- -1 when none ever ran. A room needs one in max_active mode (only the
-- admitter admits) and while its pre-queue is not shuffled (the admitter
-- shuffles it at starts_at). Lately: within the larger of 10 s and three of
-- its intervals (`domain::waiting_room::ADMITTER_QUIET_MS`, the same rule in Rust).
local ADMITTER_QUIET_MS = 10000

local function admitter_silent(r, now)
  if r.mode ~= 'max_active' and not (r.prequeue and not r.shuffled) then
    return nil
  end
  if not r.admitter_at then
    return -1
  end
  local silent = now - r.admitter_at
  if silent <= math.max(ADMITTER_QUIET_MS, 3 * r.admitter_every) then
    return nil
  end
  return silent
end
