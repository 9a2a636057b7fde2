-- seat_load.lua — a seat item's section in Redis (docs/seats.md): its state
-- string, one byte per seat ('.' free, 'x' blocked; 'h' held and 's' sold
-- come from buys), and its geometry in meta, read by lua/seat_buy.lua.
-- preheat runs it before the section's stock is loaded ("create") and, when
-- the stock was overwritten (`preheat --force`), again ("reset").
--
-- KEYS[1] meta          hash   seat_rows, seat_per_row, seat_section are written here
-- KEYS[2] seats         string the section's state
-- ARGV[1] rows          integer >= 1
-- ARGV[2] per_row       integer >= 1
-- ARGV[3] section       the section id (the first part of a seat's label)
-- ARGV[4] state         the initial state: rows × per_row bytes of '.' and 'x'
-- ARGV[5] expire_at_ms  the state's expiry, Unix ms; "" = none
-- ARGV[6] mode          "create" (only when there is none), "reset" (always, from
--                       ARGV state), "dry" (decide only, write nothing)
--
-- Returns {status, detail}:
--   created    the state was written (dry: would be)
--   reset      the state was written again from the file
--   kept       Redis holds this section with the same geometry: nothing written
--   refused    Redis holds the section with another geometry or length: detail
--              says which; nothing written (`init --yes` starts over)
-- A wrong-typed key is the error "CORRUPT <key>: …", nothing written.

--- @include "lib/guarded"
--- @include "lib/read"

return guarded(function()
  local rows, per_row, section, state, expire_at, mode =
    ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
  if #state ~= tonumber(rows) * tonumber(per_row) then
    return redis.error_reply('ERR the state has ' .. #state .. ' bytes, not ' .. rows .. ' x '
      .. per_row .. ': nothing was written')
  end
  local held = read(KEYS[2], 'GET', KEYS[2])
  local old_rows, old_per_row, old_section =
    unpack(read(KEYS[1], 'HMGET', KEYS[1], 'seat_rows', 'seat_per_row', 'seat_section'))
  if held and mode ~= 'reset' then
    local same = old_rows == rows and old_per_row == per_row and old_section == section
      and #held == #state
    if same then
      return {'kept', ''}
    end
    return {'refused', 'Redis holds section ' .. tostring(old_section) .. ' as '
      .. tostring(old_rows) .. ' rows of ' .. tostring(old_per_row) .. ' (' .. #held
      .. ' seats), the file says ' .. section .. ' with ' .. rows .. ' rows of ' .. per_row}
  end
  if mode == 'dry' then
    return {'created', ''}
  end
  redis.call('SET', KEYS[2], state)
  redis.call('HSET', KEYS[1], 'seat_rows', rows, 'seat_per_row', per_row, 'seat_section', section)
  if expire_at ~= '' then
    redis.call('PEXPIREAT', KEYS[2], expire_at)
  end
  if held then
    return {'reset', ''}
  end
  return {'created', ''}
end)
