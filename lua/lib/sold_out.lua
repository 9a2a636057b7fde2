-- lib/sold_out — the headline's answer first: for 5 million shoppers and
-- 1,000 bottles, 99.98 % of attempts meet an empty stock. `sold_out_early`
-- runs before the rest of a buy script defines anything (each helper a
-- script defines is built again on every call), reads the stock, a retried
-- request id and the user's units, and says whether the attempt is answered
-- `sold_out` right there: the stock is a valid integer below qty, the
-- request id (if any) bought nothing, the user holds nothing, and — in a
-- bucket — a sweep proved the whole item sold out. Anything else, a reply
-- it cannot take at face value included, is left to the whole purchase
-- (lib/purchase), which reads everything again and answers with the usual
-- precedence. Reads only: nothing is written, nothing counted.
--- @include "lib/strict_int"

-- The stock to answer `sold_out` with (nil to go on), and the stock key's
-- reply when it was a plain string or no key (false), for the purchase to
-- reuse rather than read again. Same KEYS and ARGV as lib/purchase (stock,
-- buyers, requests, meta; user, qty, request id).
local function sold_out_early(bucket)
  local reply = redis.pcall('GET', KEYS[2])
  local seen = nil
  if type(reply) ~= 'table' then
    seen = reply
  end
  local stock = strict_int(reply)
  if not stock or stock >= tonumber(ARGV[2]) then
    return nil, seen
  end
  local user, request_id = ARGV[1], ARGV[3]
  if request_id ~= ''
      and redis.pcall('HGET', KEYS[5], #user .. ':' .. user .. ':' .. request_id) ~= false then
    return nil, seen
  end
  if redis.pcall('HGET', KEYS[3], user) ~= false then
    return nil, seen
  end
  if bucket and redis.pcall('HGET', KEYS[1], 'sold_out') ~= '1' then
    return nil, seen
  end
  return stock, seen
end
