#!lua flags=no-writes
-- item_state.lua — read one item's state in one round trip (a script rather
-- than a pipeline because a Redis Cluster connection cannot pipeline generically).
--
-- KEYS[1] meta    hash
-- KEYS[2] stock   string
-- KEYS[3] buyers  hash
-- KEYS[4] orders  stream
-- ARGV    none
--
-- Returns {initial_stock|false, closed|false, switch_reason|false,
--          switched_at_ms|false, switched_by|false, stock|false, buyers, stream_len}

local meta = redis.call('HMGET', KEYS[1], 'initial_stock', 'closed', 'switch_reason',
  'switched_at_ms', 'switched_by')
return {meta[1], meta[2], meta[3], meta[4], meta[5], redis.call('GET', KEYS[2]),
  redis.call('HLEN', KEYS[3]), redis.call('XLEN', KEYS[4])}
