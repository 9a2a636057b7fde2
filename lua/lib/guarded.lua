-- lib/guarded — run a script's body: a `corrupt` inside (lib/corrupt)
-- becomes `answer(problem)` for the scripts whose callers expect an outcome
-- (`corrupt_state`), or without `answer` the error reply `CORRUPT <key>:
-- <what is wrong>`. Any other error (NOPERM of a role one command short, OOM
-- of a write) is raised as itself.
local function guarded(body, answer)
  local ok, result = pcall(body)
  if ok then
    return result
  end
  if type(result) == 'table' and result.seckill_corrupt then
    if answer then
      return answer(result.seckill_corrupt)
    end
    return redis.error_reply('CORRUPT ' .. result.seckill_corrupt)
  end
  if type(result) == 'table' then
    return result
  end
  return redis.error_reply(tostring(result))
end
