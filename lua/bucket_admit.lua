#!lua
-- bucket_admit.lua — a bucket's side of the waiting room's fan-out
-- (docs/waiting-room.md): grant admissions to the users whose home this
-- bucket is, each at most once, or revoke one (a block).
--
-- KEYS[1] admissions       hash   user -> "<start ms> <end ms>", what bucket_buy.lua checks
-- KEYS[2] admission_count  string admissions this bucket ever granted
-- ARGV[1] mode             grant | revoke
-- ARGV[2] expire_at_ms     the item's expiry ("" = never)
-- ARGV[3..n] entry         grant: user, start_ms, end_ms triples; revoke: users
--
-- Returns {changed, admission_count}:
--   grant   changed = admissions new to this bucket; a user it already holds
--           keeps the first one (HSETNX), so a fan-out that repeats a batch
--           after a crash grants nobody twice; the count moves with them
--   revoke  changed = admissions removed (the count is never lowered: it
--           counts grants)
-- Every ARGV value is checked before any read; the count is read (a strict
-- integer) before the first write.

--- @include "lib/guarded"
--- @include "lib/strict_int"
--- @include "lib/shown"
--- @include "lib/read"
--- @include "lib/int_of"

return guarded(function()
  local mode = ARGV[1]
  local step = mode == 'grant' and 3 or 1
  if (mode ~= 'grant' and mode ~= 'revoke') or (#ARGV - 2) % step ~= 0 then
    error({err = 'ERR bucket_admit: expected grant (user start end)... or revoke user..., got '
      .. shown(mode) .. ' with ' .. (#ARGV - 2) .. ' values'})
  end
  if ARGV[2] ~= '' and not strict_int(ARGV[2]) then
    error({err = 'ERR bucket_admit: expire_at_ms ' .. shown(ARGV[2]) .. ' is not an integer'})
  end
  if mode == 'grant' then
    for i = 3, #ARGV, 3 do
      local from, to = strict_int(ARGV[i + 1]), strict_int(ARGV[i + 2])
      if not from or not to or to <= from then
        error({err = 'ERR bucket_admit: admission ' .. shown(ARGV[i + 1]) .. ' .. '
          .. shown(ARGV[i + 2]) .. ' of ' .. shown(ARGV[i]) .. ' is not two ms, start < end'})
      end
    end
  end
  local count = read(KEYS[2], 'GET', KEYS[2])
  count = count and int_of(KEYS[2], 'admission_count', count) or 0
  read(KEYS[1], 'HLEN', KEYS[1])

  local changed = 0
  if mode == 'grant' then
    for i = 3, #ARGV, 3 do
      changed = changed + redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1] .. ' ' .. ARGV[i + 2])
    end
    if changed > 0 then
      count = redis.call('INCRBY', KEYS[2], changed)
    end
  else
    for i = 3, #ARGV do
      changed = changed + redis.call('HDEL', KEYS[1], ARGV[i])
    end
  end
  if ARGV[2] ~= '' and changed > 0 then
    redis.call('PEXPIREAT', KEYS[1], ARGV[2])
    redis.call('PEXPIREAT', KEYS[2], ARGV[2])
  end
  return {changed, count}
end)
