#!lua flags=no-writes
-- reconcile_snapshot.lua — one consistent view of an item for reconcile.
--
-- The buy script changes stock and appends to the order stream in one atomic
-- step, so stock and the stream's last id read together here always agree,
-- even while the sale goes on; reconcile then walks the stream only up to
-- that id.
--
-- KEYS[1] meta    hash   (initial_stock)
-- KEYS[2] stock   string
-- KEYS[3] orders  stream
-- KEYS[4] dead    stream
-- ARGV    none
--
-- Returns {initial_stock|false, stock|false, dead_len, last_order_stream_id ("" = empty)}

local last = redis.call('XREVRANGE', KEYS[3], '+', '-', 'COUNT', 1)
local last_id = ''
if #last > 0 then last_id = last[1][1] end
return {redis.call('HGET', KEYS[1], 'initial_stock'), redis.call('GET', KEYS[2]),
  redis.call('XLEN', KEYS[4]), last_id}
