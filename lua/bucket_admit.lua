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
--           keeps the one it holds, so a fan-out that repeats a batch after a
--           crash grants nobody twice; only an admission that has ended
--           before the new one starts is replaced (the user's admission ran
--           out and the user joined the queue again); the count moves with them
--   revoke  changed = admissions removed (the count is never lowered: it
--           counts grants)
-- Every ARGV value is checked before any read; the count and the admissions
-- held by the users granted are read (strict integers) before the first write.

--- @include "lib/guarded"
--- @include "lib/strict_int"
--- @include "lib/shown"
--- @include "lib/read"
--- @include "lib/int_of"
--- @include "lib/corrupt"

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
  -- grant: which admissions to write, decided before the first write.
  local grants = {}
  if mode == 'grant' then
    local users, held = {}, {}
    for i = 3, #ARGV, 3 do
      users[#users + 1] = ARGV[i]
    end
    -- In chunks: Lua's unpack takes a few thousand values at most.
    for first = 1, #users, 1000 do
      local chunk = {unpack(users, first, math.min(first + 999, #users))}
      for n, value in ipairs(read(KEYS[1], 'HMGET', KEYS[1], unpack(chunk))) do
        held[first + n - 1] = value
      end
    end
    local seen = {}
    for n, user in ipairs(users) do
      local ends
      if held[n] then
        local _, to = string.match(held[n], '^(%d+) (%d+)$')
        ends = strict_int(to)
        if not ends then
          corrupt(KEYS[1], 'admission of user ' .. shown(user) .. ' holds ' .. shown(held[n])
            .. ', not "<start ms> <end ms>"')
        end
      end
      -- A user twice in one call: the first triple decides, as HSETNX did.
      if not seen[user] then
        seen[user] = true
        if not ends or ends <= strict_int(ARGV[3 * n + 1]) then
          grants[#grants + 1] = {user, ARGV[3 * n + 1] .. ' ' .. ARGV[3 * n + 2]}
        end
      end
    end
  end

  local changed = 0
  if mode == 'grant' then
    for _, grant in ipairs(grants) do
      redis.call('HSET', KEYS[1], grant[1], grant[2])
    end
    changed = #grants
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
