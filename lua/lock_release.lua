-- lock_release.lua — release a lock only if we still hold it (compare-and-delete).
--
-- Used by `seckill loadtest --variant lock`. A plain DEL could free a lock that
-- expired and was taken by another client meanwhile; comparing the token
-- first makes the release atomic and safe.
--
-- KEYS[1] lock   string the lock, holding the owner's random token
-- ARGV[1] token  the value our SET NX PX wrote
--
-- Returns 1 when the lock was ours and is now deleted, 0 when it was not ours
-- (expired, or taken over): the caller counts that as a lock failure.
-- A key of the wrong type is an error "CORRUPT <key>: ..." before the DEL.

--- @include "lib/guarded"
--- @include "lib/read"

return guarded(function()
  if read(KEYS[1], 'GET', KEYS[1]) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
  end
  return 0
end)
