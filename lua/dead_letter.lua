-- dead_letter.lua — move one pending order entry to the dead-letter stream and ack it, atomically.
--
-- KEYS[1] orders  stream the entry is pending in
-- KEYS[2] dead    stream dead-letter stream of the same item (same hash tag)
-- ARGV[1] group       consumer group name
-- ARGV[2] stream_id   stream id of the entry
-- ARGV[3] reason      why it could not be stored
-- ARGV[4] deliveries  times delivered (from XPENDING)
-- ARGV[5] consumer    consumer that gave up on it
--
-- Returns 1 when the entry was dead-lettered and acked, 0 when it was no
-- longer pending in the group (another process already stored or
-- dead-lettered it): then nothing is written, so an entry is never
-- dead-lettered twice.
--
-- The dead entry is: dead_original_id, dead_reason, dead_deliveries,
-- dead_consumer, dead_at_ms, then every field of the original entry as it
-- was (read here, inside the script, so what is acked is exactly what is
-- kept). An entry already deleted from the stream is dead-lettered with
-- its id and reason only. Both writes happen in one script: the entry is
-- never acked without being kept, nor kept without being acked.
-- A key of the wrong type is an error "CORRUPT <key>: ..." before any write.

--- @include "lib/guarded"
--- @include "lib/read"
--- @include "lib/now_ms"

return guarded(function()
  local pending = read(KEYS[1], 'XPENDING', KEYS[1], ARGV[1], ARGV[2], ARGV[2], 1)
  read(KEYS[2], 'XLEN', KEYS[2])
  if #pending == 0 then
    return 0
  end

  local now = now_ms()
  local dead = {'dead_original_id', ARGV[2], 'dead_reason', ARGV[3], 'dead_deliveries', ARGV[4],
    'dead_consumer', ARGV[5], 'dead_at_ms', now}
  local original = redis.call('XRANGE', KEYS[1], ARGV[2], ARGV[2])
  if #original == 1 then
    for _, value in ipairs(original[1][2]) do
      dead[#dead + 1] = value
    end
  end
  redis.call('XADD', KEYS[2], '*', unpack(dead))
  redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
  return 1
end)
