#!lua
-- seat_buy.lua — one purchase of seats in one section of a seat item
-- (docs/seats.md), one round trip, atomic: lua/buy.lua's purchase
-- (lib/purchase: kill switch, fence, window, rate limit, request id,
-- per-user limit counted in seats, stock, order entry, reservation) with the
-- seats chosen and written in the same call (lib/seat_pick).
--
-- KEYS[1] meta          hash   as buy.lua's, plus the section's seat_rows,
--                              seat_per_row and seat_section (lua/seat_load.lua)
-- KEYS[2] stock         string the section's free seats; its name is the shard channel
--                              the buy that empties it publishes `sold_out` on
-- KEYS[3] buyers        hash   user -> seats bought in this section
-- KEYS[4] buyer_orders  hash   user -> latest order id
-- KEYS[5] requests      hash   "<len(user)>:<user>:<request_id>" -> "<order id>:<qty>"
-- KEYS[6] orders        stream one entry per order, its seats in `seats`
-- KEYS[7] rate          string this user's attempts in the current rate-limit window
-- KEYS[8] reservations  hash   order id -> reservation record (lua/lib/record.lua)
-- KEYS[9] deadlines     zset   order id -> payment deadline ms, reserved orders only
-- KEYS[10] reservation_counts hash reservation counters
-- KEYS[11] seats        string one byte per seat, row after row: . free, h held, s sold, x blocked
-- KEYS[12] seat_orders  hash   order id -> "<index>,<index>,…" of its seats
-- ARGV[1] user          user id
-- ARGV[2] qty           integer >= 1: the seats asked for
-- ARGV[3] request_id    "" = no idempotency
-- ARGV[4] order_id      order id to use if this attempt succeeds
-- ARGV[5] campaign      campaign id (copied into the order entry)
-- ARGV[6] item          item id     (copied into the order entry)
-- ARGV[7] payment_timeout_ms  "0" = an ok is final (seats sold); else a hold due
--                             at now + this, paid with pay.lua, released with release.lua
-- ARGV[8] node          the run_id of the Redis process, as the client read it (lib/fence_of)
-- ARGV[9] mode          "best" (qty seats side by side in one row) or "named"
-- ARGV[10] wanted       best: "front" or "back" (the rows' order); named: the seats'
--                       indexes, "<index>,<index>,…" (0-based, row-major), qty of them
--
-- Returns {outcome, order_id, stock_left, deadline_ms, reservation_state, seats}:
--   outcome    buy.lua's outcomes (no waiting room here; sold_out only when the
--              section has no free seat at all), and
--              seat_taken  a named seat is not free: order_id names each one and
--                          why ("A-1-2 sold, A-1-3 held"); nothing written
--              no_block    no qty free seats side by side in one row: order_id
--                          says the closest ("closest is 3: A-12-5..A-12-7")
--   order_id .. reservation_state  as buy.lua's
--   seats      an ok (a retried request id's too): its seats, "A-12-7,A-12-8"; else ""
--
-- Precedence and the refusal rule are buy.lua's: nothing is written before
-- every value is read and checked, the section's state string (its type and
-- length) included; seat_taken and no_block come after duplicate and
-- sold_out and write at most the rate-limit count.

--- @include "lib/sold_out_early"

local early, stock_seen = sold_out_early(false, 1)
if early then
  return {'sold_out', '', early, 0, '', ''}
end

--- @include "lib/purchase"
--- @include "lib/guarded"
--- @include "lib/seat_pick"
--- @include "lib/read"
--- @include "lib/strict_int"

-- The seats of an order bought before (a retried request id), as labels.
local function seats_of(order_id)
  local indexes = read(KEYS[12], 'HGET', KEYS[12], order_id)
  if not indexes then
    return ''
  end
  local per_row, section = unpack(read(KEYS[1], 'HMGET', KEYS[1], 'seat_per_row', 'seat_section'))
  per_row = strict_int(per_row)
  if not per_row or per_row < 1 or not section then
    return ''
  end
  local labels = {}
  for text in string.gmatch(indexes, '[^,]+') do
    local index = strict_int(text) or 0
    labels[#labels + 1] = section .. '-' .. (math.floor(index / per_row) + 1) .. '-'
      .. (index % per_row + 1)
  end
  return table.concat(labels, ',')
end

return guarded(function()
  local seats = {}
  function seats.pick()
    return seat_pick(KEYS[11], KEYS[12], KEYS[1], ARGV[9], ARGV[10], tonumber(ARGV[2]))
  end
  local outcome, order_id, stock_left, deadline_ms, state, _, pick =
    purchase(nil, stock_seen, nil, ARGV[8], seats)
  local text = ''
  if outcome == 'ok' then
    text = pick and pick.text or seats_of(order_id)
  end
  return {outcome, order_id, stock_left, deadline_ms, state, text}
end, function(problem)
  return {'corrupt_state', problem, -1, 0, '', ''}
end)
