-- bench/buy_calls.lua — the Redis commands an `ok` of lua/buy.lua must make,
-- and nothing else: no validation, no decision, no helper. Not a product
-- path (it buys whatever it is asked); scripts/bench-script-cost.sh runs it
-- beside the textbook script to show what the data format costs by itself:
-- meta's ten fields in one HMGET, the user's units and latest order (the
-- `duplicate` answer), TIME, the order entry with the fields `consume`
-- stores, the decrement and the buyer's two records.
--
-- KEYS and ARGV: lua/buy.lua's (its header).
local meta = redis.call('HMGET', KEYS[1], 'initial_stock', 'starts_at_ms', 'ends_at_ms',
  'per_user_limit', 'rate_window_ms', 'rate_max', 'price_cents', 'expire_at_ms', 'validated',
  'closed')
redis.call('GET', KEYS[2])
redis.call('HGET', KEYS[3], ARGV[1])
redis.call('HGET', KEYS[4], ARGV[1])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('XADD', KEYS[6], '*', 'order_id', ARGV[4], 'campaign', ARGV[5], 'item_id', ARGV[6],
  'user_id', ARGV[1], 'qty', ARGV[2], 'price_cents', meta[7], 'bought_at_ms', now,
  'request_id', ARGV[3], 'deadline_ms', '')
local left = redis.call('DECRBY', KEYS[2], ARGV[2])
redis.call('HINCRBY', KEYS[3], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[4], ARGV[1], ARGV[4])
return {'ok', ARGV[4], left, 0, ''}
