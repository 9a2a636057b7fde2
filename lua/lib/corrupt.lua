-- lib/corrupt — abort a script body: `key` holds something the script cannot
-- use. Every script meets its stored values before its first write (Redis
-- has no rollback), so an abort writes nothing; lib/guarded turns it into
-- the script's refusal.

-- (The marker is a field name, not a table of its own: a table would be
-- built on every call.)
local function corrupt(key, what)
  error({seckill_corrupt = key .. ': ' .. what})
end
