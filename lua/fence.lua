#!lua
-- fence.lua — close a slot's sale after a failover that may have lost writes,
-- or open it again once reconcile proved the books (docs/failover.md, "The fence").
--
-- KEYS[1] meta   hash   master_run_id (the Redis process preheat loaded the
--                       stock on), fenced (1 = closed by a fence), fenced_run_id
--                       (the process that was seen instead), fenced_at_ms
-- ARGV[1] action "read"   say the state, nothing written;
--                "fence"  mark fenced = 1 when the process running this call is
--                         not the recorded one (the buy scripts then answer
--                         `fenced` even if the recorded process comes back);
--                "reopen" record the process running this call as the slot's
--                         master and clear fenced (`seckill reconcile --fence`,
--                         after it re-applied what the order database proves)
--
-- Returns {state, recorded run_id, run_id of this process}:
--   state  open           recorded = this process, not fenced
--          fenced         fenced = 1, or recorded ≠ this process (after "fence": marked)
--          unarmed        preheated before the fence (no master_run_id): never
--                         fenced; "reopen" arms it
--          not_preheated  no initial_stock in meta: nothing written
-- The process is read here (INFO server), never taken from the caller.
-- Refuses before its first write: an unknown action (ERR), meta not a hash
-- (WRONGTYPE), initial_stock not an integer, fenced not 0/1 or master_run_id
-- not a run_id (CORRUPT).

--- @include "lib/guarded"
--- @include "lib/read"
--- @include "lib/int_of"
--- @include "lib/fence_of"
--- @include "lib/shown"

local action = ARGV[1]
if action ~= 'read' and action ~= 'fence' and action ~= 'reopen' then
  return redis.error_reply('ERR fence: action ' .. shown(action)
    .. ' is not "read", "fence" or "reopen"')
end

return guarded(function()
  local initial, recorded, flag =
    unpack(read(KEYS[1], 'HMGET', KEYS[1], 'initial_stock', 'master_run_id', 'fenced'))
  local here = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
  if not initial then
    return {'not_preheated', recorded or '', here}
  end
  -- Checks the stored values (CORRUPT) before any write.
  int_of(KEYS[1], 'initial_stock', initial)
  local fenced = fence_of(KEYS[1], recorded, flag, here)
  if action == 'reopen' then
    redis.call('HSET', KEYS[1], 'master_run_id', here)
    redis.call('HDEL', KEYS[1], 'fenced', 'fenced_run_id', 'fenced_at_ms')
    return {'open', here, here}
  end
  if not recorded then
    return {'unarmed', '', here}
  end
  if fenced and action == 'fence' and flag ~= '1' then
    local now = redis.call('TIME')
    redis.call('HSET', KEYS[1], 'fenced', '1', 'fenced_run_id', here,
      'fenced_at_ms', string.format('%d', now[1] * 1000 + math.floor(now[2] / 1000)))
  end
  return {fenced and 'fenced' or 'open', recorded, here}
end)
