//! `lua/bucket_copy.lua`: an operator's change to a ticket room (a risk
//! entry, a revoked key) copied to one bucket of a bucketed item, with the
//! bucket room's counter that makes its buy read it. Its call and reply.

use anyhow::Result;
use redis::Value;

super::script_call! {
    /// Copy a risk entry or a revoked key: KEYS then ARGV of `lua/bucket_copy.lua`.
    BucketCopy = "bucket_copy.lua", Sale;
    roles { operator }
    keys { room, risk, revoked }
    argv { action, subject, entry, expire_at_ms }
}

/// Parse `{status, count}`: written | cleared | revoked | already_revoked,
/// and the bucket room's counter after the call.
pub(crate) fn parse_reply(reply: Value) -> Result<(String, i64)> {
    Ok(redis::from_redis_value(reply)?)
}
