--- @include "lib/read"
--- @include "lib/strict_int"
--- @include "lib/corrupt"
--- @include "lib/shown"

-- lib/entry_of — a user's entry in the queue hash `key`: position and join
-- time ("<position> <joined at ms>"), or nil when not queued.
local function entry_of(key, user)
  local entry = read(key, 'HGET', key, user)
  if not entry then
    return nil
  end
  local p, joined_at = string.match(entry, '^(%d+) (%d+)$')
  p, joined_at = strict_int(p), strict_int(joined_at)
  if not p or p < 1 or not joined_at then
    corrupt(key, 'user ' .. shown(user) .. ' holds ' .. shown(entry)
      .. ', not "<position> <joined at ms>"')
  end
  return p, joined_at
end
