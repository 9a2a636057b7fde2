#!lua
-- limit_release.lua — undo one claim of lua/limit_claim.lua: the buy it was
-- made for was refused for good in the item's slot (sold_out, closed, ...),
-- so its units no longer count against the limit (docs/limits.md). Atomic;
-- once only: the claim's record goes with it, so a second release (a retry)
-- finds nothing and changes nothing.
--
-- KEYS[1] limit_counts hash   member -> units held
-- KEYS[2] limit_claims hash   claim id -> "<qty> <member>"
-- ARGV[1] claim_id     the claim to undo
--
-- Returns {outcome, held}:
--   released         the claim's units were given back; held is the member's
--                    units after it (the member's field goes at 0)
--   not_claimed      no such claim (never made, or released before): nothing written
--   corrupt_state    held is "<key>: <what is wrong>"; nothing written
-- Every key is type checked and every value read validated (lib/int_of)
-- before the first write; a caller whose ACL lacks a write is refused with
-- NOPERM before the first (lib/refuse_unless_allowed).

--- @include "lib/guarded"
--- @include "lib/read"
--- @include "lib/int_of"
--- @include "lib/strict_int"
--- @include "lib/corrupt"
--- @include "lib/shown"
--- @include "lib/refuse_unless_allowed"

local claim_id = ARGV[1]

return guarded(function()
  read(KEYS[1], 'HLEN', KEYS[1])
  local record = read(KEYS[2], 'HGET', KEYS[2], claim_id)
  if not record then
    return {'not_claimed', 0}
  end
  local claimed_qty, member = string.match(record, '^(%d+) (.+)$')
  local qty = claimed_qty and strict_int(claimed_qty)
  if not qty or qty < 1 then
    corrupt(KEYS[2], 'claim ' .. shown(claim_id) .. ' holds ' .. shown(record)
      .. ', not "<qty> <member>"')
  end
  local held = int_of(KEYS[1], 'units of ' .. shown(member),
    read(KEYS[1], 'HGET', KEYS[1], member) or '0')
  if held < qty then
    corrupt(KEYS[1], 'units of ' .. shown(member) .. ' are ' .. held .. ', fewer than claim '
      .. shown(claim_id) .. "'s " .. qty)
  end
  refuse_unless_allowed({{'HINCRBY', KEYS[1], member, '-1'}, {'HDEL', KEYS[1], member},
    {'HDEL', KEYS[2], claim_id}})
  held = held - qty
  if held == 0 then
    redis.call('HDEL', KEYS[1], member)
  else
    redis.call('HINCRBY', KEYS[1], member, -qty)
  end
  redis.call('HDEL', KEYS[2], claim_id)
  return {'released', held}
end, function(problem)
  return {'corrupt_state', problem}
end)
