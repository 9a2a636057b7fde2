#!lua flags=no-writes
-- item_state.lua — read one item's state in one round trip (a script rather
-- than a pipeline because a Redis Cluster connection cannot pipeline generically).
--
-- KEYS[1] meta    hash
-- KEYS[2] stock   string
-- KEYS[3] buyers  hash
-- KEYS[4] orders  stream
-- ARGV    none
--
-- Returns {initial_stock|false, closed|false, switch_reason|false,
--          switched_at_ms|false, switched_by|false, stock|false, buyers, stream_len}
-- A key of the wrong type is an error "CORRUPT <key>: ..." (values are checked by the caller).

--- @include "lib/guarded"
--- @include "lib/read"

return guarded(function()
  local initial_stock, closed, switch_reason, switched_at_ms, switched_by =
    unpack(read(KEYS[1], 'HMGET', KEYS[1], 'initial_stock', 'closed', 'switch_reason',
      'switched_at_ms', 'switched_by'))
  return {initial_stock, closed, switch_reason, switched_at_ms, switched_by,
    read(KEYS[2], 'GET', KEYS[2]), read(KEYS[3], 'HLEN', KEYS[3]), read(KEYS[4], 'XLEN', KEYS[4])}
end)
