#!lua flags=no-writes
-- item_status.lua — everything `seckill status` shows about one item, read in
-- one round trip and at one instant (Redis runs a script atomically), so stock,
-- stream and group counts agree with each other and with the Redis time returned.
-- Reads only: safe to run every second during a live sale.
--
-- KEYS[1] meta    hash   (initial_stock, name, window, kill switch fields)
-- KEYS[2] stock   string
-- KEYS[3] buyers  hash   (only its length)
-- KEYS[4] orders  stream (length, entries added, consumer group, recent ids)
-- KEYS[5] dead    stream (only its length)
-- KEYS[6] reservation_counts hash (the reservation counters)
-- ARGV[1] group  consumer group name of the order stream
--
-- Returns a flat array:
--  [1] now_ms (Redis TIME)
--  [2] initial_stock|false  [3] name|false  [4] starts_at_ms|false  [5] ends_at_ms|false
--  [6] closed|false  [7] switch_reason|false  [8] switched_at_ms|false  [9] switched_by|false
--  [10] stock|false  [11] buyers (HLEN)
--  [12] order stream length  [13] entries ever added to it (0 when absent)
--  [14] group exists (1/0)  [15] group pending  [16] group lag (-1 = Redis cannot tell)
--  [17] group last-delivered-id ("" when no group)
--  [18] dead-letter stream length
--  [19] PTTL of stock  [20] PTTL of meta (-1 no expiry, -2 no key)
--  [21..28] reservation counters of KEYS[6] (false when absent): reserved_orders,
--           reserved_units, paid_orders, paid_units, expired_orders, expired_units,
--           cancelled_orders, cancelled_units
--
-- Constant work whatever the stream's size (no entry is read): the caller
-- gets the sales rate from two samples of entries-added.
-- A key of the wrong type is an error "CORRUPT <key>: ..." (values are checked by the caller).

--- @include "lib/guarded"
--- @include "lib/read"
--- @include "lib/now_ms"

return guarded(function()
  local now = now_ms()
  local initial_stock, name, starts_at_ms, ends_at_ms, closed, switch_reason, switched_at_ms,
    switched_by = unpack(read(KEYS[1], 'HMGET', KEYS[1], 'initial_stock', 'name',
      'starts_at_ms', 'ends_at_ms', 'closed', 'switch_reason', 'switched_at_ms', 'switched_by'))
  local counters = read(KEYS[6], 'HMGET', KEYS[6],
    'reserved_orders', 'reserved_units', 'paid_orders', 'paid_units',
    'expired_orders', 'expired_units', 'cancelled_orders', 'cancelled_units')

  local length, added = 0, 0
  local group_exists, pending, lag, last_delivered = 0, 0, -1, ''
  if redis.call('EXISTS', KEYS[4]) == 1 then
    local info = read(KEYS[4], 'XINFO', 'STREAM', KEYS[4])
    for i = 1, #info, 2 do
      if info[i] == 'length' then length = info[i + 1] end
      if info[i] == 'entries-added' then added = info[i + 1] end
    end
    for _, group in ipairs(read(KEYS[4], 'XINFO', 'GROUPS', KEYS[4])) do
      local fields = {}
      for i = 1, #group, 2 do fields[group[i]] = group[i + 1] end
      if fields['name'] == ARGV[1] then
        group_exists = 1
        pending = fields['pending']
        if type(fields['lag']) == 'number' then lag = fields['lag'] end
        last_delivered = fields['last-delivered-id']
      end
    end
  end

  -- The counters last, in the order they were read (the header's 21..28).
  return {now, initial_stock, name, starts_at_ms, ends_at_ms, closed, switch_reason,
    switched_at_ms, switched_by, read(KEYS[2], 'GET', KEYS[2]), read(KEYS[3], 'HLEN', KEYS[3]),
    length, added, group_exists, pending, lag, last_delivered,
    read(KEYS[5], 'XLEN', KEYS[5]), redis.call('PTTL', KEYS[2]), redis.call('PTTL', KEYS[1]),
    unpack(counters)}
end)
