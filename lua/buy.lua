#!lua
-- buy.lua — one purchase attempt, one round trip, atomic.
--
-- KEYS[1] meta          hash   initial_stock, starts_at_ms, ends_at_ms, per_user_limit,
--                              rate_window_ms, rate_max, price_cents, expire_at_ms,
--                              validated (those eight as preheat checked them), closed
-- KEYS[2] stock         string units left; its name is also the shard channel the
--                              buy that empties it publishes `sold_out` on (SPUBLISH)
-- KEYS[3] buyers        hash   user -> units bought
-- KEYS[4] buyer_orders  hash   user -> latest order id
-- KEYS[5] requests      hash   "<len(user)>:<user>:<request_id>" -> "<order id>:<qty>" of an ok
--                              attempt (a bare "<order id>" written by older versions is read too)
-- KEYS[6] orders        stream one entry per order
-- KEYS[7] rate          string this user's attempts in the current rate-limit window
-- KEYS[8] reservations  hash   order id -> reservation record (lua/lib/record.lua)
-- KEYS[9] deadlines     zset   order id -> payment deadline ms, reserved orders only
-- KEYS[10] reservation_counts hash reservation counters; not in meta, so the buyer
--                             role never needs a write on meta (docs/security.md)
-- KEYS[11] room         hash   the waiting room (lib/plain_room_gate, lib/ticket_gate);
--                              the room's keys, up to the 19th, are passed only for an
--                              item whose room is on (meta waiting_room = 1 or ticket):
--                              off, the call is the ten keys above
-- KEYS[12] queue        hash   user -> "<position> <joined at ms>"
-- KEYS[13] registered   hash   user -> registration (a room with registration)
-- KEYS[14] risk         hash   user -> "block" | "delay <ms> <set at ms>"
-- KEYS[15] admitted     hash   user -> admission start ms (max_active mode)
-- KEYS[16] active       zset   user -> admission end ms (max_active: an ok leaves it)
-- KEYS[17] shuffled     zset   user -> final position of a shuffled pre-queue
-- KEYS[18] passes       zset   a ticket room's cursor passes, "<cursor>:<at ms>" by cursor
-- KEYS[19] revoked      set    a ticket room's revoked key ids
-- ARGV[1] user          user id
-- ARGV[2] qty           integer >= 1
-- ARGV[3] request_id    "" = no idempotency
-- ARGV[4] order_id      order id to use if this attempt succeeds
-- ARGV[5] campaign      campaign id (copied into the order entry)
-- ARGV[6] item          item id     (copied into the order entry)
-- ARGV[7] payment_timeout_ms  "0" = an ok is final; else the ok is a reservation
--                             due at now + this (Redis time), recorded in KEYS[8]/KEYS[9],
--                             counted in KEYS[10] (reserved_orders, reserved_units)
-- ARGV[8] arrival_ms    a ticket room: the arrival time of the shopper's ticket, which
--                       the door verified (its HMAC tag, user and item); "" = no ticket
-- ARGV[9] ticket_key    the id of the key that signed that ticket ("" = none): a revoked
--                       one is no ticket
-- ARGV[10] node         the run_id of the Redis process this call runs on, read by the
--                       client on this call's connection (lib/fence_of); any other
--                       value: the script reads INFO itself
--
-- Returns {outcome, order_id, stock_left, deadline_ms, reservation_state}:
--   outcome    ok | sold_out | duplicate | rate_limited | closed | not_started | ended
--              | not_preheated | corrupt_state | request_id_reused
--              | not_registered | not_queued | not_admitted | admission_expired | fenced
--   order_id   the new order (ok), the remembered order (ok on a retried request id;
--              request_id_reused when that retry asks another qty: nothing is bought),
--              the user's existing order (duplicate); for corrupt_state the problem,
--              "<key>: <what is wrong>"; not_admitted "<position> <serving> <eta ms>";
--              admission_expired "<admitted from ms> <until ms>"; fenced "<run_id preheat
--              recorded> <run_id seen>"; otherwise ""
--   stock_left units left after this attempt, -1 when not preheated or corrupt
--   deadline_ms       an ok that is a reservation: its payment deadline (Unix ms,
--                     Redis clock; a retried request id: the order's); else 0
--   reservation_state that reservation's state now (reserved, or for a retried
--                     request id paid / expired / cancelled); else ""
--
-- Which answer wins when several apply: a retried request id's order; then
-- `sold_out` when the stock is short and the user holds nothing (before the
-- kill switch, window and rate limit, and not counted: nothing is left to
-- protect); then not_preheated, fenced (docs/failover.md), closed, not_started / ended, the waiting
-- room's refusals (docs/waiting-room.md), rate_limited, duplicate, sold_out
-- (docs/lua.md). Nothing is written before every value
-- the writes depend on is read and validated as strictly as the command
-- that writes it (lib/strict_int; a key of the wrong type): a corrupt one is
-- the corrupt_state outcome and nothing at all is written. A refusal writes
-- at most the rate-limit count of its attempt; an ok's first write is its
-- order entry. The `#!lua` shebang makes Redis refuse the whole script up
-- front under OOM instead of failing half-way. Only `ok` is remembered under
-- the request id: a refused attempt changed nothing, so retrying it simply
-- evaluates again.

--- @include "lib/sold_out_early"

local early, stock_seen = sold_out_early(false)
if early then
  return {'sold_out', '', early, 0, ''}
end

--- @include "lib/purchase"
--- @include "lib/guarded"

-- Where the room's keys start: after the purchase's ten (the header above).
local ROOM_KEYS_FROM = 11

-- The item's waiting room, for lib/purchase. Its helpers are pasted inside,
-- so they are built only when meta says the room is on: EVAL builds every
-- helper a script defines again on each call, and a sale without a room
-- must not pay for the room's (docs/waiting-room.md, "Cost"). A ticket
-- room's few come first and answer before the exact room's many are built.
local function item_room(user, kind, now)
--- @include "lib/ticket_gate"
  if kind == 'ticket' then
    local passes, revoked = ROOM_KEYS_FROM + 7, ROOM_KEYS_FROM + 8
    if not KEYS[revoked] then
      error({err = 'ERR the ticket room of this item is on, but the call lacks its '
        .. 'waiting-room keys (KEYS[' .. ROOM_KEYS_FROM .. '..' .. revoked .. ']): nothing was written'})
    end
    return ticket_gate({room = KEYS[ROOM_KEYS_FROM], registered = KEYS[ROOM_KEYS_FROM + 2],
      risk = KEYS[ROOM_KEYS_FROM + 3], passes = KEYS[passes], revoked = KEYS[revoked]},
      user, ARGV[8], ARGV[9], now)
  end
--- @include "lib/plain_room_gate"
  return plain_room_gate(ROOM_KEYS_FROM, user, now)
end

return guarded(function()
  local outcome, order_id, stock_left, deadline_ms, state = purchase(nil, stock_seen, item_room, ARGV[10])
  return {outcome, order_id, stock_left, deadline_ms, state}
end, function(problem)
  return {'corrupt_state', problem, -1, 0, ''}
end)
