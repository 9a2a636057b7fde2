--- @include "lib/read"
--- @include "lib/strict_int"
--- @include "lib/corrupt"
--- @include "lib/shown"

-- lib/entry_of — a user's entry in the queue hash `key`: position, join
-- time, and the room's pauses in total at the join ("<position> <joined at
-- ms>", with " <paused ms>" when that is not 0: lib/admission_of counts only
-- the pauses after the join); nil when not queued.
local function entry_of(key, user)
  local entry = read(key, 'HGET', key, user)
  if not entry then
    return nil
  end
  local p, joined_at, paused = string.match(entry, '^(%d+) (%d+)$')
  if not p then
    p, joined_at, paused = string.match(entry, '^(%d+) (%d+) (%d+)$')
  end
  p, joined_at, paused = strict_int(p), strict_int(joined_at), strict_int(paused or '0')
  if not p or p < 1 or not joined_at or not paused then
    corrupt(key, 'user ' .. shown(user) .. ' holds ' .. shown(entry)
      .. ', not "<position> <joined at ms> [<paused ms>]"')
  end
  return p, joined_at, paused
end
