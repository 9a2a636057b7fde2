#!lua flags=no-writes
-- bucket_snapshot.lua — one consistent view of one bucket for reconcile and
-- status (docs/buckets.md): stock, the order stream's end and the transfer
-- log's sizes read at one instant.
--
-- KEYS[1] meta          hash   (initial_stock = this bucket's share, closed)
-- KEYS[2] stock         string
-- KEYS[3] orders        stream
-- KEYS[4] dead          stream
-- KEYS[5] xfer_out      hash
-- KEYS[6] xfer_in       hash
-- KEYS[7] xfer_pending  zset
-- KEYS[8] buyers        hash
-- ARGV    none
--
-- Returns {initial_stock|false, stock|false, dead_len, last_order_stream_id ("" = empty),
--          out_count, in_count, pending_count, closed|false, stream_len, buyers}

local last = redis.call('XREVRANGE', KEYS[3], '+', '-', 'COUNT', 1)
local last_id = ''
if #last > 0 then last_id = last[1][1] end
local meta = redis.call('HMGET', KEYS[1], 'initial_stock', 'closed')
return {meta[1], redis.call('GET', KEYS[2]), redis.call('XLEN', KEYS[4]), last_id,
  redis.call('HLEN', KEYS[5]), redis.call('HLEN', KEYS[6]), redis.call('ZCARD', KEYS[7]),
  meta[2], redis.call('XLEN', KEYS[3]), redis.call('HLEN', KEYS[8])}
