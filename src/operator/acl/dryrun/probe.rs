//! A user's own answer to "may I send this?", without `@admin`: one
//! read-only script asks `redis.acl_check_cmd` (Redis 7.0+) about each
//! command. It runs with the caller's permissions and executes nothing it
//! asks about, so nothing is written and no refusal reaches `ACL LOG`;
//! `#!lua flags=no-writes` lets it run on a replica too. It needs `EVALSHA`
//! (and `SCRIPT LOAD` the first time), which every role has: a role can
//! prove its own whole path where `ACL DRYRUN` (`@admin`) is refused to it.
//!
//! The script is the operator tools' own, not one of the sale's (`lua/`):
//! no subcommand of the sale runs it and no role's line names it.

use anyhow::{Context, Result, bail};
use redis::{ConnectionLike, Script};

/// ARGV: for each command, its word count then its words. Returns one
/// reply per command: `allowed`, `refused`, or the error Redis raised
/// (an unknown command).
const SOURCE: &str = r#"#!lua flags=no-writes
local replies, i = {}, 1
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  local words = {}
  for j = 1, n do
    words[j] = ARGV[i + j]
  end
  local ran, allowed = pcall(redis.acl_check_cmd, unpack(words))
  if not ran then
    replies[#replies + 1] = 'error: ' .. tostring(allowed.err or allowed)
  elseif allowed then
    replies[#replies + 1] = 'allowed'
  else
    replies[#replies + 1] = 'refused'
  end
  i = i + n + 1
end
return replies
"#;

/// Whether the connection's own user may send each of `questions`:
/// `Ok(())` allowed, `Err(why)` refused. `Err` of the whole when the probe
/// itself could not run (no `EVALSHA`, Redis older than 7.0).
pub(crate) fn ask<C: ConnectionLike>(
    conn: &mut C,
    questions: &[&[String]],
) -> Result<Vec<std::result::Result<(), String>>> {
    let script = Script::new(SOURCE);
    let mut invocation = script.prepare_invoke();
    for words in questions {
        invocation.arg(words.len());
        for word in *words {
            invocation.arg(word);
        }
    }
    let replies: Vec<String> = invocation
        .invoke(conn)
        .context("the permission probe (a read-only script asking redis.acl_check_cmd) failed")?;
    if replies.len() != questions.len() {
        bail!(
            "the permission probe answered {} of {} questions",
            replies.len(),
            questions.len()
        );
    }
    Ok(replies
        .into_iter()
        .map(|reply| match reply.as_str() {
            "allowed" => Ok(()),
            "refused" => Err("refused".to_string()),
            other => Err(other.to_string()),
        })
        .collect())
}
