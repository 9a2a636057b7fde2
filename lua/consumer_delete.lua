-- consumer_delete.lua — delete one consumer of an order stream's group, only
-- while it holds no pending entry and has been idle long enough; atomically.
--
-- KEYS[1] orders  stream whose group the consumer belongs to
-- ARGV[1] group        consumer group name
-- ARGV[2] consumer     the consumer to delete
-- ARGV[3] min_idle_ms  delete it only when idle at least this long
--
-- Returns 1 when the consumer was deleted, 0 when it was kept: it holds
-- pending entries (XGROUP DELCONSUMER would drop them from the group's
-- pending list, where nobody could claim or store them again), it read or
-- claimed too recently, or there is no such stream, group or consumer.
-- The check and the delete are one atomic step: a consumer that reads
-- between a separate look and the delete would lose what it just read.
-- A key of the wrong type is an error "CORRUPT <key>: ..." before any write.

local reply = redis.pcall('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])
if type(reply) == 'table' and reply.err then
  -- A command or key the caller's ACL refuses is no damaged key: raised as itself.
  if string.find(reply.err, "The user executing the script can't", 1, true) then
    error(reply)
  end
  -- No stream yet, or no group on it: nothing to delete.
  if string.find(reply.err, 'no such key', 1, true) or string.sub(reply.err, 1, 7) == 'NOGROUP' then
    return 0
  end
  error({err = 'CORRUPT ' .. KEYS[1] .. ': ' .. reply.err})
end

local min_idle = tonumber(ARGV[3])
for _, consumer in ipairs(reply) do
  local fields = {}
  for i = 1, #consumer, 2 do
    fields[consumer[i]] = consumer[i + 1]
  end
  if fields['name'] == ARGV[2] then
    if fields['pending'] ~= 0 or fields['idle'] < min_idle then
      return 0
    end
    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2])
    return 1
  end
end
return 0
