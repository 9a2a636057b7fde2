#!lua flags=no-writes
-- order_lookup.lua — a user's result for one item, read in one step:
-- `seckill serve`'s GET /v1/items/{item}/orders/{user} ("did I get it?").
-- Reads the slot the user's orders live in (a bucketed item: the home bucket).
--
-- KEYS[1] buyers        hash   user -> units bought
-- KEYS[2] buyer_orders  hash   user -> latest order id
-- KEYS[3] requests      hash   "<len(user)>:<user>:<request_id>" -> "<order id>:<qty>" (or a bare order id)
-- KEYS[4] reservations  hash   order id -> reservation record (lua/lib/record.lua)
-- ARGV[1] user          user id
-- ARGV[2] request_id    "" = none
--
-- Returns {units, latest_order_id, request_order_id, record_of_latest_order}:
-- units is the buyers hash's value as stored ("0" when none), the others
-- "" when there is none. Nothing is written; a key of the wrong type is the
-- error "CORRUPT <key>: ..." (lib/read), an ACL refusal itself.

--- @include "lib/guarded"
--- @include "lib/read"

return guarded(function()
  local user = ARGV[1]
  local units = read(KEYS[1], 'HGET', KEYS[1], user) or '0'
  local latest = read(KEYS[2], 'HGET', KEYS[2], user) or ''
  local requested = ''
  if ARGV[2] ~= '' then
    local field = string.len(user) .. ':' .. user .. ':' .. ARGV[2]
    local remembered = read(KEYS[3], 'HGET', KEYS[3], field)
    if remembered then
      requested = string.match(remembered, '^([^:]*):%d+$') or remembered
    end
  end
  local record = ''
  if latest ~= '' then
    record = read(KEYS[4], 'HGET', KEYS[4], latest) or ''
  end
  return {units, latest, requested, record}
end)
