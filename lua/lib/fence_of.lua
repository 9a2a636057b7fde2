--- @include "lib/corrupt"
--- @include "lib/shown"
--- @include "lib/flag_of"

-- lib/fence_of — is this slot's sale fenced (docs/failover.md, "The fence")?
-- Preheat recorded in meta `master_run_id` the run_id of the Redis process
-- that loaded the stock. Another process now answering for the slot (a
-- promoted replica, a restart, a restore) may hold a stock that went back up:
-- its sale stays closed until `seckill reconcile --fence` re-applies what the
-- order database proves was sold and records the new process. Meta `fenced` =
-- 1 (lua/fence.lua) keeps it closed even if the old process comes back.
--
-- `seen` is the run_id of the process running this call as the client read
-- it (`INFO server`) on the very connection the call came on (a TCP
-- connection never changes process), so comparing costs nothing; anything
-- that is not 40 hex digits (a caller that did not read it) makes the script
-- read INFO itself (~3 µs). A slot preheated before the fence (no
-- `master_run_id`) is not fenced. Reads only: returns true when fenced,
-- and the run_id compared with the recorded one.
local function fence_of(key, recorded, flag, seen)
  -- The hot path is one comparison: an open slot, the client's run_id equal
  -- to the recorded one (the client read it with INFO, so equal means both
  -- are a run_id). Anything else is checked in full.
  if recorded == seen and (not flag or flag == '0') then
    return false, seen
  end
  if flag_of(key, 'fenced', flag) then
    return true, seen
  end
  if not recorded then
    return false, seen
  end
  if not string.match(recorded, '^%x+$') or #recorded ~= 40 then
    corrupt(key, 'master_run_id holds ' .. shown(recorded) .. ', not a Redis run_id')
  end
  if not seen or #seen ~= 40 or not string.match(seen, '^%x+$') then
    seen = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
  end
  return seen ~= recorded, seen
end
