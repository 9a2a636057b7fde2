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
-- A key of the wrong type is an error "CORRUPT <key>: ..." (values are checked by the caller).

-- A read whose WRONGTYPE error names its key (error code CORRUPT).
local function read(key, ...)
  local reply = redis.pcall(...)
  -- A command or key the caller's ACL refuses is no damaged key: raised as
  -- itself (NOPERM; reads come before the first write).
  if type(reply) == 'table' and reply.err
      and string.find(reply.err, "The user executing the script can't", 1, true) then
    error(reply)
  end
  if type(reply) == 'table' and reply.err then
    error({err = 'CORRUPT ' .. key .. ': ' .. reply.err})
  end
  return reply
end

local last = read(KEYS[3], 'XREVRANGE', KEYS[3], '+', '-', 'COUNT', 1)
local last_id = ''
if #last > 0 then last_id = last[1][1] end
return {read(KEYS[1], 'HGET', KEYS[1], 'initial_stock'), read(KEYS[2], 'GET', KEYS[2]),
  read(KEYS[4], 'XLEN', KEYS[4]), last_id}
