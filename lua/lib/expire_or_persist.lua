-- lib/expire_or_persist — every key of `keys` expires at `expire_at_ms`, or
-- never when that is '' (the sale's expiry, as preheat writes it).
local function expire_or_persist(keys, expire_at_ms)
  for _, key in ipairs(keys) do
    if expire_at_ms ~= '' then
      redis.call('PEXPIREAT', key, expire_at_ms)
    else
      redis.call('PERSIST', key)
    end
  end
end
