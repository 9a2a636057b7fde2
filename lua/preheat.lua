#!lua
-- preheat.lua — load one item's stock and metadata, atomically, without clobbering a live sale.
--
-- KEYS[1] meta     hash   (see buy.lua); the kill-switch fields are never touched here
-- KEYS[2] stock    string units left; a write (stock or terms) publishes `changed`
--                         on the shard channel of its name (SPUBLISH)
-- KEYS[3] buyers   hash   user -> units bought (only read: has anyone bought?)
-- KEYS[4] orders   stream (only read, and its consumer group created when missing)
-- KEYS[5] buyer_orders hash (only its expiry, mode "meta")
-- KEYS[6] requests     hash (only its expiry, mode "meta")
-- ARGV[1]  mode            "load" (keep existing stock), "force" (overwrite unless sold),
--                          "meta" (keep stock, update everything else), "dry" (decide only)
-- ARGV[2]  initial_stock
-- ARGV[3]  name            item name
-- ARGV[4]  price_cents
-- ARGV[5]  starts_at_ms    "" = open now
-- ARGV[6]  ends_at_ms      "" = no end
-- ARGV[7]  per_user_limit
-- ARGV[8]  rate_window_ms  "" = no rate limit
-- ARGV[9]  rate_max        "0" = no rate limit
-- ARGV[10] expire_at_ms    "" = never expire
-- ARGV[11] group           consumer group name for the order stream
-- ARGV[12] dry_mode        in mode "dry": the mode the dry run stands for ("load", "force" or "meta")
-- ARGV[13] waiting_room    "1" = the item's waiting room is on (the buy scripts then check
--                          admission: docs/waiting-room.md), "ticket" = on in ticket mode,
--                          "0" = off; written with the terms
--
-- Returns {status, stock_in_redis_before (-1 = none), stock_in_redis_after (-1 = none)}:
--   loaded         no stock and no sales in Redis; loaded now
--   kept           stock already in Redis, mode "load": nothing written
--   meta_updated   stock already in Redis, mode "meta": stock untouched; name, price,
--                  window, limits and expiry (of every key but the order stream)
--                  set from the file
--   overwritten    mode "force", no sales yet: stock and metadata replaced
--   has_sales      mode "force" but orders exist: nothing written (use `init --yes`)
--   stock_missing  no stock key but orders exist (evicted? deleted? an expired
--                  campaign id reused?): loading full stock again would sell it
--                  twice, so nothing is written
-- In mode "dry" the same status is returned and nothing is written.
-- Every read (and so every type error) comes before the first write. A key
-- of the wrong type, or a stock that is not a strict integer (lib/strict_int:
-- `1.5`, ` 5`, `5e0`, `0x10` are not), is an error "CORRUPT <key>: <what>"
-- and nothing is written; terms in ARGV that break the same rules are an
-- error "ERR preheat: ..." before any read.
--
-- Preheat writes the purchase terms — initial_stock, starts_at_ms,
-- ends_at_ms, per_user_limit, rate_window_ms, rate_max, price_cents,
-- expire_at_ms — one field each, and `validated`: the eight as checked here,
-- joined by ' '. A load (loaded, overwritten) also records `master_run_id`,
-- the run_id of the Redis process that holds the stock (`INFO server`), and
-- clears a fence (docs/failover.md, "The fence"); meta_updated keeps both.
-- The buy scripts read them all in one HMGET and trust them
-- when they are exactly that text (lib/purchase); anything else is checked
-- field by field.

--- @include "lib/guarded"
--- @include "lib/argument"
--- @include "lib/shown"
--- @include "lib/read"
--- @include "lib/int_of"
--- @include "lib/expire_or_persist"

-- The n-th ARGV, a term, checked as lib/argument checks (`ERR preheat: ...`).
local function term(n, what, least, optional)
  return argument('preheat', n, what, least, optional)
end

return guarded(function()
  term(2, 'initial_stock', 0)
  term(4, 'price_cents', 0)
  term(5, 'starts_at_ms', -9007199254740992, true)
  term(6, 'ends_at_ms', -9007199254740992, true)
  term(7, 'per_user_limit', 1)
  local rate_max = term(9, 'rate_max', 0)
  if rate_max > 0 or ARGV[8] ~= '' then
    term(8, 'rate_window_ms', 1, rate_max == 0)
  end
  term(10, 'expire_at_ms', 1, true)
  if ARGV[13] ~= '0' and ARGV[13] ~= '1' and ARGV[13] ~= 'ticket' then
    error({err = 'ERR preheat: waiting_room ' .. shown(ARGV[13]) .. ' is not "1", "0" or "ticket"'})
  end
  local validated = table.concat({ARGV[2], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9],
    ARGV[4], ARGV[10]}, ' ')

  local mode = ARGV[1]
  local stands_for = mode == 'dry' and ARGV[12] or mode
  local force = stands_for == 'force'
  local before = read(KEYS[2], 'GET', KEYS[2])
  if before then
    int_of(KEYS[2], 'stock', before)
  end
  local initial = read(KEYS[1], 'HGET', KEYS[1], 'initial_stock')
  if initial then
    int_of(KEYS[1], 'initial_stock', initial)
  end
  local has_sales = read(KEYS[3], 'HLEN', KEYS[3]) > 0 or read(KEYS[4], 'XLEN', KEYS[4]) > 0
  local status
  if before then
    if stands_for == 'meta' then
      status = 'meta_updated'
    elseif not force then
      status = 'kept'
    elseif has_sales then
      status = 'has_sales'
    else
      status = 'overwritten'
    end
  elseif has_sales then
    status = 'stock_missing'
  else
    status = 'loaded'
  end
  local before_n = tonumber(before or '-1')
  local writes = status == 'loaded' or status == 'overwritten' or status == 'meta_updated'
  if mode == 'dry' or not writes then
    return {status, before_n, before_n}
  end

  if status == 'meta_updated' then
    redis.call('HSET', KEYS[1], 'name', ARGV[3], 'price_cents', ARGV[4],
      'starts_at_ms', ARGV[5], 'ends_at_ms', ARGV[6], 'per_user_limit', ARGV[7],
      'rate_window_ms', ARGV[8], 'rate_max', ARGV[9], 'expire_at_ms', ARGV[10],
      'waiting_room', ARGV[13])
    -- initial_stock stays what the load wrote (checked above): the terms'
    -- text is built with it.
    if initial then
      redis.call('HSET', KEYS[1], 'validated', table.concat({initial, ARGV[5], ARGV[6],
        ARGV[7], ARGV[8], ARGV[9], ARGV[4], ARGV[10]}, ' '))
    end
    expire_or_persist({KEYS[1], KEYS[2], KEYS[3], KEYS[5], KEYS[6]}, ARGV[10])
    -- New terms (a window moved): every `serve` instance re-reads the item
    -- now (docs/serve.md, "Cheap refusals"); pcall: the broadcast is only advice.
    redis.pcall('SPUBLISH', KEYS[2], 'changed')
    return {status, before_n, before_n}
  end

  local has_group = false
  if redis.call('EXISTS', KEYS[4]) == 1 then
    for _, group in ipairs(read(KEYS[4], 'XINFO', 'GROUPS', KEYS[4])) do
      for i = 1, #group, 2 do
        if group[i] == 'name' and group[i + 1] == ARGV[11] then
          has_group = true
        end
      end
    end
  end

  -- The process that holds the stock now: a buy on any other (a promoted
  -- replica, a restart, a restore) answers `fenced` (lib/fence_of).
  local run_id = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
  redis.call('SET', KEYS[2], ARGV[2])
  redis.call('HDEL', KEYS[1], 'fenced', 'fenced_run_id', 'fenced_at_ms')
  redis.call('HSET', KEYS[1], 'master_run_id', run_id,
    'initial_stock', ARGV[2], 'name', ARGV[3], 'price_cents', ARGV[4],
    'starts_at_ms', ARGV[5], 'ends_at_ms', ARGV[6], 'per_user_limit', ARGV[7],
    'rate_window_ms', ARGV[8], 'rate_max', ARGV[9], 'expire_at_ms', ARGV[10],
    'validated', validated, 'waiting_room', ARGV[13])
  if not has_group then
    redis.call('XGROUP', 'CREATE', KEYS[4], ARGV[11], '0', 'MKSTREAM')
  end
  if ARGV[10] ~= '' then
    redis.call('PEXPIREAT', KEYS[1], ARGV[10])
    redis.call('PEXPIREAT', KEYS[2], ARGV[10])
  end
  -- A stock (re)loaded: every `serve` instance re-reads the item now
  -- (docs/serve.md, "Cheap refusals"); pcall: the broadcast is only advice.
  redis.pcall('SPUBLISH', KEYS[2], 'changed')
  return {status, before_n, tonumber(ARGV[2])}
end)
