--- @include "lib/read"
--- @include "lib/strict_int"
--- @include "lib/corrupt"
--- @include "lib/shown"

-- lib/granted — the admission the waiting room fanned out to a bucket for
-- `user` (`key`: the bucket's admissions, bucket_admit.lua), as a standing
-- (lib/standing): waiting (not yet, or none here), admitted, expired.
local function granted(key, user, now)
  local value = read(key, 'HGET', key, user)
  if not value then
    return {state = 'waiting', position = 0, serving = 0, eta = 0}
  end
  local from, to = string.match(value, '^(%d+) (%d+)$')
  from, to = strict_int(from), strict_int(to)
  if not from or not to then
    corrupt(key, 'admission of user ' .. shown(user) .. ' holds ' .. shown(value)
      .. ', not "<start ms> <end ms>"')
  end
  if now < from then
    return {state = 'waiting', position = 0, serving = 0, eta = from - now}
  end
  if now >= to then
    return {state = 'expired', position = 0, serving = 0, from = from, to = to}
  end
  return {state = 'admitted', position = 0, serving = 0, from = from, to = to}
end
