-- lib/now_ms — now, in Unix milliseconds, on the Redis server clock (`TIME`):
-- one clock for every client.
local function now_ms()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
