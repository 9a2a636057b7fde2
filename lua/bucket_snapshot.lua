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
-- or initial_stock, stock or closed is malformed (validated as lua/buy.lua does).

-- A corrupt value aborts the script through error(): its body runs under
-- pcall, and only this marker becomes the corrupt_state outcome.
local CORRUPT = {}
local function corrupt(key, what)
  error({[CORRUPT] = key .. ': ' .. what})
end

local function shown(value)
  if type(value) ~= 'string' then
    return tostring(value)
  end
  if #value > 40 then
    value = string.sub(value, 1, 40) .. '...'
  end
  return string.format('%q', value)
end

-- Redis's own integer syntax (string2ll), narrowed to what a double holds exactly.
local TWO_TO_53 = '9007199254740992'
local function strict_int(value)
  if value == '0' then
    return 0
  end
  if type(value) ~= 'string' or not string.find(value, '^%-?[1-9]%d*$') then
    return nil
  end
  local digits = #value - (string.byte(value, 1) == 45 and 1 or 0)
  if digits > 16 or (digits == 16 and string.sub(value, -16) > TWO_TO_53) then
    return nil
  end
  return tonumber(value)
end

local function int_of(key, what, value)
  local n = strict_int(value)
  if not n then
    corrupt(key, what .. ' holds ' .. shown(value) .. ', not an integer')
  end
  return n
end

local function flag_of(key, what, value)
  if value and value ~= '0' and value ~= '1' then
    corrupt(key, what .. ' holds ' .. shown(value) .. ', not 0 or 1')
  end
  return value == '1'
end

-- A read whose WRONGTYPE error names its key.
local function read(key, ...)
  local reply = redis.pcall(...)
  -- A command or key the caller's ACL refuses is no damaged key: raised as
  -- itself (NOPERM; reads come before the first write).
  if type(reply) == 'table' and reply.err
      and string.find(reply.err, "The user executing the script can't", 1, true) then
    error(reply)
  end
  if type(reply) == 'table' and reply.err then
    corrupt(key, reply.err)
  end
  return reply
end


local function look()
local meta = read(KEYS[1], 'HMGET', KEYS[1], 'initial_stock', 'closed')
if meta[1] then
  int_of(KEYS[1], 'initial_stock', meta[1])
end
flag_of(KEYS[1], 'closed', meta[2])
local stock = read(KEYS[2], 'GET', KEYS[2])
if stock then
  int_of(KEYS[2], 'stock', stock)
end
local last = read(KEYS[3], 'XREVRANGE', KEYS[3], '+', '-', 'COUNT', 1)
local last_id = ''
if #last > 0 then last_id = last[1][1] end
return {meta[1], stock, read(KEYS[4], 'XLEN', KEYS[4]), last_id,
  read(KEYS[5], 'HLEN', KEYS[5]), read(KEYS[6], 'HLEN', KEYS[6]), read(KEYS[7], 'ZCARD', KEYS[7]),
  meta[2], read(KEYS[3], 'XLEN', KEYS[3]), read(KEYS[8], 'HLEN', KEYS[8])}
end

local ok, result = pcall(look)
if ok then
  return result
end
if type(result) == 'table' and result[CORRUPT] then
  return {'corrupt_state', result[CORRUPT]}
end
if type(result) == 'table' then
  return result
end
return redis.error_reply(tostring(result))
