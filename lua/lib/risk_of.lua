--- @include "lib/read"
--- @include "lib/strict_int"
--- @include "lib/corrupt"
--- @include "lib/shown"

-- lib/risk_of — the operator's risk entry of `user` in the risk hash `key`
-- (queue_penalize.lua): nil, {block = true} or {delay = ms, since = ms}.
local function risk_of(key, user)
  local entry = read(key, 'HGET', key, user)
  if not entry then
    return nil
  end
  if entry == 'block' then
    return {block = true}
  end
  local delay, since = string.match(entry, '^delay (%d+) (%d+)$')
  if not delay or not strict_int(delay) or not strict_int(since) then
    corrupt(key, 'user ' .. shown(user) .. ' holds ' .. shown(entry)
      .. ', not "block" or "delay <ms> <set at ms>"')
  end
  return {delay = tonumber(delay), since = tonumber(since)}
end
