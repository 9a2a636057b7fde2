#!lua flags=no-writes
-- acl_probe.lua — may the caller run these commands on these keys? Each is
-- asked of Redis's own ACL (`redis.acl_check_cmd`: the check the command
-- itself would meet, with its key); nothing runs, nothing is written.
-- `serve` proves with it, before it takes a request, that the credential of
-- its operator endpoints can run lua/pay.lua and lua/release.lua.
--
-- KEYS[1] reservations  the keys of lua/release.lua for one slot (a user that
-- KEYS[2] deadlines     may not touch one of them is refused this call
-- KEYS[3] meta          itself: NOPERM, as it would be refused the scripts')
-- KEYS[4] stock
-- KEYS[5] buyers
-- KEYS[6] buyer_orders
-- KEYS[7] orders
-- KEYS[8] reservation_counts
-- ARGV[1..n] checks     one command each, its words separated by spaces,
--                       `KEYS[i]` standing for the i-th key (`ZREM KEYS[2] o`)
--
-- Returns the checks the caller may not run, as given (empty: all allowed);
-- a command Redis does not know counts as not allowed. Besides ARGV's, it
-- always checks the order lookup every pay and cancel starts with, outside
-- the scripts: `HEXISTS` on KEYS[1], refused as "HEXISTS KEYS[1]".

local refused = {}
if not redis.acl_check_cmd('HEXISTS', KEYS[1], 'order') then
  table.insert(refused, 'HEXISTS KEYS[1]')
end
for _, check in ipairs(ARGV) do
  local words = {}
  for word in string.gmatch(check, '%S+') do
    local index = string.match(word, '^KEYS%[(%d+)%]$')
    if index then
      word = KEYS[tonumber(index)]
    end
    table.insert(words, word)
  end
  local ok, allowed = pcall(redis.acl_check_cmd, unpack(words))
  if not (ok and allowed) then
    table.insert(refused, check)
  end
end
return refused
