#!lua
-- set_switch.lua — flip one item's kill switch and keep the flip in its history.
--
-- The buy script reads `closed` from the meta hash on every call, so the
-- switch takes effect from the very next attempt. The history is a capped
-- list, newest first, that lives as long as the meta hash: the newest
-- `keep` flips are kept (`kill_switch::HISTORY_CAP`, 1000), older ones are
-- trimmed here, in the call that adds one.
--
-- KEYS[1] meta        hash   (closed, switch_reason, switched_at_ms, switched_by)
-- KEYS[2] switch_log  list   JSON flips {closed, reason, by, at_ms}, newest first
-- ARGV[1] closed        "1" (on, every buy refused) or "0" (off)
-- ARGV[2] reason        "" = none given
-- ARGV[3] by            who flipped it
-- ARGV[4] at_ms         when (Redis time, Unix ms)
-- ARGV[5] expire_at_ms  "" = none; the meta hash gets it only when it has
--                       no expiry yet (a switch flipped on a never-preheated item)
-- ARGV[6] keep          flips to keep (an integer >= 1)
--
-- Returns the number of flips kept.
-- Refuses before any read or write: `keep` not an integer >= 1
-- (`ERR set_switch: keep …`); then either key of another type (WRONGTYPE).
-- Redis has no rollback.

--- @include "lib/argument"

local keep = argument('set_switch', 6, 'keep', 1)
for i = 1, 2 do
  local t = redis.call('TYPE', KEYS[i])['ok']
  local want = i == 1 and 'hash' or 'list'
  if t ~= 'none' and t ~= want then
    return redis.error_reply('WRONGTYPE ' .. KEYS[i] .. ' is a ' .. t .. ', not a ' .. want)
  end
end
redis.call('HSET', KEYS[1], 'closed', ARGV[1], 'switch_reason', ARGV[2],
  'switched_at_ms', ARGV[4], 'switched_by', ARGV[3])
if ARGV[5] ~= '' then
  redis.call('PEXPIREAT', KEYS[1], ARGV[5], 'NX')
end
redis.call('LPUSH', KEYS[2], cjson.encode({closed = ARGV[1] == '1', reason = ARGV[2],
  by = ARGV[3], at_ms = ARGV[4]}))
redis.call('LTRIM', KEYS[2], 0, keep - 1)
local expire_at = redis.call('PEXPIRETIME', KEYS[1])
if expire_at > 0 then
  redis.call('PEXPIREAT', KEYS[2], expire_at)
else
  redis.call('PERSIST', KEYS[2])
end
return redis.call('LLEN', KEYS[2])
