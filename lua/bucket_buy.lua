#!lua
-- bucket_buy.lua — one purchase attempt in the buyer's HOME bucket of a bucketed
-- item (docs/buckets.md), optionally crediting a transfer first; one round trip, atomic.
-- The purchase is lua/buy.lua's (lib/purchase), on this bucket's keys.
--
-- KEYS[1] meta          hash   as buy.lua's, of this bucket (initial_stock = its share),
--                              and sold_out = 1 once a sweep proved the item sold out
-- KEYS[2] stock         string units left in this bucket
-- KEYS[3] buyers        hash   user -> units bought (users whose home is this bucket)
-- KEYS[4] buyer_orders  hash   user -> latest order id
-- KEYS[5] requests      hash   "<len(user)>:<user>:<request_id>" -> "<order id>:<qty>" of an ok
--                              attempt (a bare "<order id>" written by older versions is read too)
-- KEYS[6] orders        stream one entry per order sold from this bucket
-- KEYS[7] rate          string this user's attempts in the current rate-limit window
-- KEYS[8] reservations  hash   order id -> reservation record (lua/lib/record.lua)
-- KEYS[9] deadlines     zset   order id -> payment deadline ms, reserved orders only
-- KEYS[10] reservation_counts hash reservation counters of this bucket (not in meta)
-- KEYS[11] xfer_in      hash   transfer id -> "<source bucket> <units> <ms>", every credit
-- KEYS[12] admissions   hash   user -> "<start ms> <end ms>", the admissions the waiting
--                              room fanned out to this bucket; passed only for an
--                              item whose room is on (meta waiting_room = 1 or ticket)
-- KEYS[13] room         hash   a ticket room's copy in this bucket (lua/bucket_cursor.lua):
--                              mode, cursor_ms, ttl_ms; KEYS[13..16] only for a ticket room
-- KEYS[14] passes       zset   the copy of the cursor's passes, "<cursor>:<at ms>" by cursor
-- KEYS[15] risk         hash   the copy of the risk entries of users whose home this is
-- KEYS[16] revoked      set    the copy of the revoked key ids
-- ARGV[1] user id
-- ARGV[2] qty (integer >= 1)
-- ARGV[3] request_id ("" = no idempotency)
-- ARGV[4] order_id to use if this attempt succeeds
-- ARGV[5] campaign id (copied into the order entry)
-- ARGV[6] item id     (copied into the order entry)
-- ARGV[7] payment_timeout_ms  "0" = an ok is final; else a reservation, as in buy.lua,
--                             recorded in THIS bucket (where its units come from)
-- ARGV[8] count_attempt "1" on the attempt's first call (counts it against the
--         rate limit), "0" on the calls after a transfer (already counted)
-- ARGV[9] credit_id transfer id to credit first ("" = none)
-- ARGV[10] credit_source its source bucket
-- ARGV[11] credit_units its units
-- ARGV[12] arrival_ms   a ticket room: the verified ticket's arrival ("" = no ticket)
-- ARGV[13] ticket_key   the id of the key that signed it
-- ARGV[14] node         the run_id of the Redis process, as buy.lua's ARGV[10]
--
-- Returns {outcome, order_id, stock_left, deadline_ms, reservation_state, proven}:
--   outcome .. reservation_state  as buy.lua's (fenced too: no credit applied);
--              sold_out means THIS BUCKET has
--              fewer than qty units (the client then sweeps the other buckets:
--              never shown as is), unless proven = 1; corrupt_state when a
--              stored value is malformed (order_id is "<key>: <what is wrong>";
--              nothing at all is written, not even the credit: the transfer
--              stays in transit, reconcile names it)
--   proven     1 when meta has sold_out = 1: a sweep proved every bucket empty
--              with nothing in transit, which stays true for good (no unit can
--              enter a bucket without a debit from another); the client answers
--              sold_out at once
--
-- The credit comes after every read and before the purchase decides: its
-- units already left the source bucket, so they land here even when the
-- purchase is then refused — stock for the next buyer, never leaked. It is
-- applied at most once per transfer id (xfer_in). Every key this script gets
-- is checked for its type on every call (a key it will not write costs one
-- EXISTS while absent), every value it reads validated (lib/strict_int)
-- before the first write; the `#!lua` shebang makes Redis refuse the whole
-- script up front under OOM.

--- @include "lib/sold_out_early"

-- Proven sold out: answered from the stock and the proof alone. (A credit
-- brings units: never answered early.)
local early, stock_seen = nil, nil
if ARGV[9] == '' then
  early, stock_seen = sold_out_early(true)
end
if early then
  return {'sold_out', '', early, 0, '', 1}
end

--- @include "lib/purchase"
--- @include "lib/guarded"
--- @include "lib/read"
--- @include "lib/strict_int"
--- @include "lib/shown"
--- @include "lib/now_ms"

-- This bucket's admissions, the room's one key here (the header above).
local ADMISSIONS_KEY = 12

-- The item's waiting room, for lib/purchase: its helpers are built only
-- when meta says the room is on (as in buy.lua).
local function bucket_room(user, kind, now)
--- @include "lib/ticket_gate"
  if kind == 'ticket' then
    if not KEYS[16] then
      error({err = 'ERR the ticket room of this item is on, but the call lacks its '
        .. 'waiting-room keys (KEYS[12..16]): nothing was written'})
    end
    return ticket_gate({room = KEYS[13], passes = KEYS[14], risk = KEYS[15], revoked = KEYS[16]},
      user, ARGV[12], ARGV[13], now)
  end
--- @include "lib/bucket_room_gate"
  return bucket_room_gate(ADMISSIONS_KEY, user, now)
end

local crediting = ARGV[9] ~= ''
local credited_before = false
local slot = {counting = ARGV[8] == '1', crediting = crediting}

-- The keys the purchase does not read: the order stream (when a write
-- comes before its XADD, which checks it itself), the transfer log and, when
-- this attempt is no reservation, the reservation keys (absent, usually).
function slot.check(stock, qty)
  -- A credit writes before the order entry; a bucket short of `qty` sends
  -- the client sweeping, whose first transfer takes units from another
  -- bucket before the credit call comes back here. Either way the stream's
  -- type is read now, so a home bucket that would refuse the credit refuses
  -- before one unit moves (a string there used to strand half of a healthy
  -- bucket in transit at each attempt).
  if crediting or (stock and stock < qty) then
    read(KEYS[6], 'XLEN', KEYS[6])
  end
  if crediting then
    credited_before = read(KEYS[11], 'HEXISTS', KEYS[11], ARGV[9]) == 1
    if not strict_int(ARGV[11]) then
      error({err = 'ERR credit_units ' .. shown(ARGV[11]) .. ' is not an integer'})
    end
  end
  local timeout = strict_int(ARGV[7]) or 0
  local present = redis.call('EXISTS', KEYS[8], KEYS[9], KEYS[10], KEYS[11])
  if present == 0 then
    return
  end
  if not crediting and read(KEYS[11], 'HLEN', KEYS[11]) > 0 then
    present = present - 1
  end
  if timeout == 0 and present > 0 then
    read(KEYS[8], 'HLEN', KEYS[8])
    read(KEYS[9], 'ZCARD', KEYS[9])
    read(KEYS[10], 'HLEN', KEYS[10])
  end
end

-- Credit the transfer (the first write); returns the bucket's stock after it.
function slot.credit(stock, expire_at)
  if credited_before then
    return stock
  end
  local after = redis.call('INCRBY', KEYS[2], ARGV[11])
  redis.call('HSET', KEYS[11], ARGV[9],
    ARGV[10] .. ' ' .. ARGV[11] .. ' ' .. string.format('%d', now_ms()))
  if expire_at and expire_at ~= '' then
    redis.call('PEXPIREAT', KEYS[11], expire_at)
  end
  return after
end

return guarded(function()
  local outcome, order_id, stock_left, deadline_ms, state, proven =
    purchase(slot, stock_seen, bucket_room, ARGV[14])
  return {outcome, order_id, stock_left, deadline_ms, state, proven and 1 or 0}
end, function(problem)
  return {'corrupt_state', problem, -1, 0, '', 0}
end)
