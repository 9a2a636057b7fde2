-- v3_decr.lua — the reference chapter's V3: check stock and take one unit, atomically.
--
-- Used only by `seckill loadtest --variant v3`, to measure the smallest safe
-- script against the full buy script. No user, no dedupe, no order stream.
--
-- KEYS[1] stock  string units left
-- ARGV   none
--
-- Returns 1 when one unit was taken, 0 when sold out (or the key is missing).
-- A stock that is not a strict integer (lib/strict_int) or a key of the
-- wrong type is an error "CORRUPT <key>: ..." and nothing is written.

--- @include "lib/guarded"
--- @include "lib/read"
--- @include "lib/int_of"

return guarded(function()
  local value = read(KEYS[1], 'GET', KEYS[1])
  if not value or int_of(KEYS[1], 'stock', value) <= 0 then
    return 0
  end
  redis.call('DECR', KEYS[1])
  return 1
end)
