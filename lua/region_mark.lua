#!lua
-- region_mark.lua — mark one region's slot of an item sold out everywhere,
-- or clear the mark (docs/regions.md, "Sold out everywhere"). The scheduler
-- marks every region once each is at 0 with nothing in transit; `serve`
-- then answers `sold_out` from memory in every region. A regional zero alone
-- is never a sell-out: a credit may land any moment.
--
-- KEYS[1] meta   hash   sold_out_everywhere ("1" while marked)
-- KEYS[2] stock  string units left in this region; a change of the mark
--                       publishes `changed` on the shard channel of its name
--                       (SPUBLISH: every `serve` instance re-reads the item)
-- ARGV[1] mark   "1" mark, "0" clear
--
-- Returns {status}:
--   marked / cleared   written now
--   unchanged          the mark was already so: nothing written
--   has_stock          mark "1" but this region holds units: nothing written
--   not_preheated      no initial_stock or stock: nothing written
-- A malformed stock or initial_stock is the error CORRUPT <key>: <what>,
-- nothing written.

--- @include "lib/guarded"
--- @include "lib/read"
--- @include "lib/int_of"
--- @include "lib/shown"

local mark = ARGV[1]
if mark ~= '1' and mark ~= '0' then
  return redis.error_reply('ERR region_mark: mark ' .. shown(mark) .. ' is not "1" or "0"')
end

return guarded(function()
  local initial, marked = unpack(read(KEYS[1], 'HMGET', KEYS[1], 'initial_stock',
    'sold_out_everywhere'))
  local stock = read(KEYS[2], 'GET', KEYS[2])
  if not initial or not stock then
    return {'not_preheated'}
  end
  int_of(KEYS[1], 'initial_stock', initial)
  local left = int_of(KEYS[2], 'stock', stock)
  if mark == '1' then
    if marked == '1' then
      return {'unchanged'}
    end
    if left > 0 then
      return {'has_stock'}
    end
    redis.call('HSET', KEYS[1], 'sold_out_everywhere', '1')
    redis.pcall('SPUBLISH', KEYS[2], 'changed')
    return {'marked'}
  end
  if not marked then
    return {'unchanged'}
  end
  redis.call('HDEL', KEYS[1], 'sold_out_everywhere')
  redis.pcall('SPUBLISH', KEYS[2], 'changed')
  return {'cleared'}
end)
