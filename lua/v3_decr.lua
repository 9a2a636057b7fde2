-- v3_decr.lua — the reference chapter's V3: check stock and take one unit, atomically.
--
-- Used only by `seckill loadtest --variant v3`, to measure the smallest safe
-- script against the full buy script. No user, no dedupe, no order stream.
--
-- KEYS[1] stock  string units left
-- ARGV   none
--
-- Returns 1 when one unit was taken, 0 when sold out (or the key is missing).

local stock = tonumber(redis.call('GET', KEYS[1]))
if not stock or stock <= 0 then
  return 0
end
redis.call('DECR', KEYS[1])
return 1
