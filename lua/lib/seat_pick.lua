--- @include "lib/corrupt"
--- @include "lib/shown"
--- @include "lib/read"
--- @include "lib/strict_int"
--- @include "lib/refuse_unless_allowed"

-- lib/seat_pick — the seats of one seat purchase in one section (docs/seats.md),
-- for lib/purchase: read and chosen before any write, written after the ok.
-- The section's state is one string, one byte per seat, row after row:
-- '.' free, 'h' held (a reservation not paid yet), 's' sold, 'x' blocked.
-- Its geometry is in meta (seat_rows, seat_per_row, seat_section), written by
-- lua/seat_load.lua with the string; a string of another length is
-- corrupt_state, nothing written.
--
-- seat_pick(state_key, orders_key, meta_key, mode, wanted, qty):
--   mode 'best'  qty seats side by side in one row, rows in the section's order
--                (wanted: 'front' = row 1 first, 'back' = last row first), the
--                leftmost block of the first row that has one
--   mode 'named' wanted: the seats' indexes (0-based, row-major), "12,13"
-- A caller whose ACL lacks one of the ok's writes is refused with NOPERM
-- here, before anything is written (lib/refuse_unless_allowed).
-- returns a pick: pick.refused ('seat_taken' | 'no_block', nil when the seats
-- are free), pick.detail (what the refusal names), pick.text (the seats as
-- labels, "A-12-7,A-12-8", for the order entry), and pick.take(order_id,
-- state_byte, expire_at_ms): the ok's writes.
local function seat_pick(state_key, orders_key, meta_key, mode, wanted, qty)
  local rows_text, per_row_text, section =
    unpack(read(meta_key, 'HMGET', meta_key, 'seat_rows', 'seat_per_row', 'seat_section'))
  local rows, per_row = strict_int(rows_text), strict_int(per_row_text)
  if not rows or not per_row or rows < 1 or per_row < 1 or not section then
    corrupt(meta_key, 'the seat geometry (seat_rows, seat_per_row, seat_section) is '
      .. shown(rows_text) .. ', ' .. shown(per_row_text) .. ', ' .. shown(section))
  end
  local state = read(state_key, 'GET', state_key)
  if not state or #state ~= rows * per_row then
    corrupt(state_key, 'holds ' .. (state and (#state .. ' bytes') or 'nothing') .. ' for '
      .. rows .. ' rows of ' .. per_row .. ' seats')
  end
  read(orders_key, 'HLEN', orders_key)
  local function label(index)
    return section .. '-' .. (math.floor(index / per_row) + 1) .. '-' .. (index % per_row + 1)
  end
  local pick, chosen = {}, {}
  if mode == 'named' then
    local taken = {}
    for text in string.gmatch(wanted, '[^,]+') do
      local index = strict_int(text)
      if not index or index < 0 or index >= rows * per_row then
        taken[#taken + 1] = 'seat #' .. text .. ' is not in section ' .. section
      else
        local byte = string.sub(state, index + 1, index + 1)
        if byte ~= '.' then
          local what = ({h = 'held', s = 'sold', x = 'blocked'})[byte]
          if not what then
            corrupt(state_key, 'seat ' .. label(index) .. ' is ' .. shown(byte)
              .. ', not one of . h s x')
          end
          taken[#taken + 1] = label(index) .. ' ' .. what
        end
        chosen[#chosen + 1] = index
      end
    end
    if #taken > 0 then
      pick.refused, pick.detail = 'seat_taken', table.concat(taken, ', ')
    end
  else
    -- The first run of n free seats inside one row, rows front to back, in
    -- one pass of plain finds: a run that would cross into the next row
    -- restarts the search at that row's first seat. Nil when none.
    local function first_run(n)
      local needle, from = string.rep('.', n), 1
      while true do
        local at = string.find(state, needle, from, true)
        if not at then
          return nil
        end
        local row = math.floor((at - 1) / per_row)
        if at - 1 + n - 1 < (row + 1) * per_row then
          return at - 1
        end
        from = (row + 1) * per_row + 1
      end
    end
    local found
    if wanted == 'back' then
      local needle = string.rep('.', qty)
      for row = rows - 1, 0, -1 do
        local at = string.find(string.sub(state, row * per_row + 1, (row + 1) * per_row), needle, 1, true)
        if at then
          found = row * per_row + at - 1
          break
        end
      end
    else
      found = first_run(qty)
    end
    if found then
      for index = found, found + qty - 1 do
        chosen[#chosen + 1] = index
      end
    else
      -- Only on a refusal: the longest free run in a row, for "closest is …"
      -- (the first of that length, rows front to back). No run of qty
      -- exists, so the first length from qty - 1 down that has a run is the
      -- longest: a few plain finds, not a pattern match over every run.
      local best_len, best_at = 0, nil
      for n = math.min(qty - 1, per_row), 1, -1 do
        best_at = first_run(n)
        if best_at then
          best_len = n
          break
        end
      end
      pick.refused = 'no_block'
      if best_at then
        pick.detail = 'no ' .. qty .. ' seats side by side in section ' .. section
          .. '; closest is ' .. best_len .. ': ' .. label(best_at) .. '..'
          .. label(best_at + best_len - 1)
      else
        pick.detail = 'no free seat in section ' .. section
      end
    end
  end
  local labels, indexes = {}, {}
  for i, index in ipairs(chosen) do
    labels[i], indexes[i] = label(index), string.format('%d', index)
  end
  pick.text = table.concat(labels, ',')
  -- The seat writes come after the order entry and the stock: a role one
  -- of them short (an ACL from before seat items) must be refused before
  -- the purchase's first write, not half-way through it.
  if not pick.refused then
    refuse_unless_allowed({{'SETRANGE', state_key, '0', 's'},
      {'HSET', orders_key, 'o', 'i'}, {'PEXPIREAT', orders_key, '1'}})
  end
  function pick.take(order_id, byte, expire_at_ms)
    if mode == 'best' then
      redis.call('SETRANGE', state_key, chosen[1], string.rep(byte, #chosen))
    else
      -- Seats named side by side (the usual ask) are one SETRANGE per run.
      local start, count = chosen[1], 0
      for i, index in ipairs(chosen) do
        count = count + 1
        if chosen[i + 1] ~= index + 1 then
          redis.call('SETRANGE', state_key, start, string.rep(byte, count))
          start, count = chosen[i + 1], 0
        end
      end
    end
    redis.call('HSET', orders_key, order_id, table.concat(indexes, ','))
    if expire_at_ms then
      redis.call('PEXPIREAT', orders_key, expire_at_ms)
    end
  end
  return pick
end
