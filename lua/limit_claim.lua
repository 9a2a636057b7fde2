#!lua
-- limit_claim.lua — count one buy's units against a limit that lives above
-- the item: a limit group's per-user count or a per-identity count
-- (docs/limits.md). The count sits in a slot of its own (a limit bucket, not
-- the item's), so the buy claims here first, then buys in the item's slot,
-- and releases the claim (lua/limit_release.lua) when the item refuses for
-- good. Atomic; idempotent per claim id; exact: a claim that would take the
-- member past the limit is refused, so the count never exceeds it.
--
-- KEYS[1] limit_counts hash   member -> units held (claimed and not released)
-- KEYS[2] limit_claims hash   claim id -> "<qty> <member>", every claim held
-- ARGV[1] member       who the limit counts: the user (a group) or the
--                      identity's digest (per_identity_limit)
-- ARGV[2] claim_id     the buy's claim id: item, user and request id, so a
--                      retry with the same request id finds its claim again
-- ARGV[3] qty          units this buy asks for (>= 1)
-- ARGV[4] limit        most units one member may hold (>= 1)
-- ARGV[5] expire_at_ms the sale's expiry (Unix ms) for both keys, "" for none
--
-- Returns {outcome, held}:
--   claimed          counted now; held is the member's units after it
--   already_claimed  this claim id was counted before (a retry): nothing written
--   claim_reused     this claim id was counted for another qty or member:
--                    nothing written (the buy answers request_id_reused)
--   limit_reached    held + qty would pass the limit: nothing written; held
--                    is what the member holds now
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

local member, claim_id = ARGV[1], ARGV[2]
local qty, limit = strict_int(ARGV[3]), strict_int(ARGV[4])
if not qty or qty < 1 then
  return redis.error_reply('ERR limit_claim.lua: qty must be an integer >= 1, got ' .. shown(ARGV[3]))
end
if not limit or limit < 1 then
  return redis.error_reply('ERR limit_claim.lua: limit must be an integer >= 1, got ' .. shown(ARGV[4]))
end
if ARGV[5] ~= '' and not strict_int(ARGV[5]) then
  return redis.error_reply('ERR limit_claim.lua: expire_at_ms must be an integer or "", got ' .. shown(ARGV[5]))
end

return guarded(function()
  read(KEYS[2], 'HLEN', KEYS[2])
  local held = int_of(KEYS[1], 'units of ' .. shown(member),
    read(KEYS[1], 'HGET', KEYS[1], member) or '0')
  if held < 0 then
    corrupt(KEYS[1], 'units of ' .. shown(member) .. ' are ' .. held .. ', below 0')
  end
  local record = read(KEYS[2], 'HGET', KEYS[2], claim_id)
  if record then
    local claimed_qty, claimed_member = string.match(record, '^(%d+) (.+)$')
    if not claimed_qty or not strict_int(claimed_qty) then
      corrupt(KEYS[2], 'claim ' .. shown(claim_id) .. ' holds ' .. shown(record)
        .. ', not "<qty> <member>"')
    end
    if claimed_member == member and tonumber(claimed_qty) == qty then
      return {'already_claimed', held}
    end
    return {'claim_reused', held}
  end
  if held + qty > limit then
    return {'limit_reached', held}
  end
  refuse_unless_allowed({{'HINCRBY', KEYS[1], member, '1'}, {'HSET', KEYS[2], claim_id, 'x'},
    {'PEXPIREAT', KEYS[1], '1'}, {'PEXPIREAT', KEYS[2], '1'}})
  held = redis.call('HINCRBY', KEYS[1], member, qty)
  redis.call('HSET', KEYS[2], claim_id, qty .. ' ' .. member)
  if ARGV[5] ~= '' then
    redis.call('PEXPIREAT', KEYS[1], ARGV[5])
    redis.call('PEXPIREAT', KEYS[2], ARGV[5])
  end
  return {'claimed', held}
end, function(problem)
  return {'corrupt_state', problem}
end)
