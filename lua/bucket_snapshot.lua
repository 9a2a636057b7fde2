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
--          out_count, in_count, pending_count, closed|false, stream_len, buyers},
-- or {'corrupt_state', "<key>: <what is wrong>"} when a key has the wrong type
-- or initial_stock, stock or closed is malformed (lib/strict_int).

--- @include "lib/guarded"
--- @include "lib/read"
--- @include "lib/int_of"
--- @include "lib/flag_of"

return guarded(function()
  local initial_stock, closed = unpack(read(KEYS[1], 'HMGET', KEYS[1], 'initial_stock', 'closed'))
  if initial_stock then
    int_of(KEYS[1], 'initial_stock', initial_stock)
  end
  flag_of(KEYS[1], 'closed', closed)
  local stock = read(KEYS[2], 'GET', KEYS[2])
  if stock then
    int_of(KEYS[2], 'stock', stock)
  end
  local last = read(KEYS[3], 'XREVRANGE', KEYS[3], '+', '-', 'COUNT', 1)
  local last_id = ''
  if #last > 0 then last_id = last[1][1] end
  return {initial_stock, stock, read(KEYS[4], 'XLEN', KEYS[4]), last_id,
    read(KEYS[5], 'HLEN', KEYS[5]), read(KEYS[6], 'HLEN', KEYS[6]), read(KEYS[7], 'ZCARD', KEYS[7]),
    closed, read(KEYS[3], 'XLEN', KEYS[3]), read(KEYS[8], 'HLEN', KEYS[8])}
end, function(problem)
  return {'corrupt_state', problem}
end)
