//! `lua/lock_release.lua`: compare-and-delete release of the
//! `loadtest --variant lock` lock. Its call and reply.

use anyhow::{Result, bail};
use redis::Value;

super::script_call! {
    /// Release the lock if still ours: KEYS then ARGV of `lua/lock_release.lua`.
    LockRelease = "lock_release.lua", LoadTest;
    roles { operator }
    keys { lock }
    argv { token }
}

/// True when the lock was ours and is deleted, false when it was not ours.
pub(crate) fn parse_reply(reply: Value) -> Result<bool> {
    match super::int_reply(reply, "lock release")? {
        1 => Ok(true),
        0 => Ok(false),
        other => bail!("lock release script answered {other}"),
    }
}
