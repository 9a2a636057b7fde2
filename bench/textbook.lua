-- bench/textbook.lua — the textbook flash-sale buy script, the baseline
-- scripts/bench-script-cost.sh measures lua/buy.lua against. Not a product
-- path: no validation of stored values, no window, kill switch, rate limit,
-- request id or reservation; never loaded by seckill itself.
--
-- KEYS[1] stock   string units left
-- KEYS[2] buyers  set    users who bought
-- KEYS[3] orders  stream one entry per order
-- ARGV[1] user
-- ARGV[2] order id
--
-- Returns {outcome}: ok | duplicate | sold_out | not_preheated.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {'not_preheated'}
end
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then
  return {'duplicate'}
end
local stock = tonumber(redis.call('GET', KEYS[1]))
if stock <= 0 then
  return {'sold_out'}
end
redis.call('DECR', KEYS[1])
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('XADD', KEYS[3], '*', 'order_id', ARGV[2], 'user_id', ARGV[1])
return {'ok'}
