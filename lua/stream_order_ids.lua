-- stream_order_ids.lua — the order_id field of several entries of one stream, in one round trip.
--
-- KEYS[1] orders stream
-- ARGV[1..n] stream_id   stream ids (each a valid <ms>-<seq>; the caller checks)
--
-- Returns an array of n strings: the order_id field of the entry with that
-- id, or '' when there is no such entry (or it has no order_id).
--
-- A script rather than a pipeline because a Redis Cluster connection does
-- not pipeline; one key, so it runs in that item's slot. Read-only.
-- A key of the wrong type is an error "CORRUPT <key>: ...".

--- @include "lib/guarded"
--- @include "lib/read"

return guarded(function()
  local found = {}
  for i, id in ipairs(ARGV) do
    local entry = read(KEYS[1], 'XRANGE', KEYS[1], id, id)
    local order_id = ''
    if #entry == 1 then
      local fields = entry[1][2]
      for j = 1, #fields, 2 do
        if fields[j] == 'order_id' then
          order_id = fields[j + 1]
          break
        end
      end
    end
    found[i] = order_id
  end
  return found
end)
