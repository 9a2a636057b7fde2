-- lib/paused_ms — milliseconds the room `r` (lib/room_of) has stood paused
-- up to `now`; a pause that began before the room opened counts from the
-- opening.
local function paused_ms(r, now)
  local total = r.paused
  if r.paused_since and r.opened_at then
    total = total + math.max(0, now - math.max(r.paused_since, r.opened_at))
  end
  return total
end
