-- lib/refuse_unless_allowed — refuse before the first write when the caller
-- may not run all of the script: Redis runs a script's commands with the
-- caller's ACL and has no rollback, so a role one write short would otherwise
-- stop a state change half-way (an event appended, the record not moved).
-- `redis.acl_check_cmd` answers from the same ACL check the command itself
-- would meet, with the command's own arguments (its key positions decide
-- which keys are checked).

-- Raise NOPERM, in Redis's own words, unless every {command, key, args...}
-- of `writes` is allowed to the caller.
local function refuse_unless_allowed(writes)
  for _, write in ipairs(writes) do
    if not redis.acl_check_cmd(unpack(write)) then
      error({err = "NOPERM The user executing the script can't run this command or subcommand: "
        .. write[1] .. ' ' .. write[2] .. ' (nothing was written)'})
    end
  end
end
