--- @include "lib/wait_for"

-- lib/at_tail — the standing of a blocked user in room `r`: like someone who
-- just joined, at the tail, waiting (a block never admits).
local function at_tail(r, now, serving)
  local tail = math.max(r.joined, serving + 1)
  return {state = 'waiting', position = tail, serving = serving,
    eta = math.max(wait_for(r, tail, now), 1000)}
end
