//! `lua/bucket_admit.lua`: grant admissions in a bucket (each user once) or
//! revoke one. Its call and reply.

use anyhow::Result;
use redis::Value;

super::script_call! {
    /// Grant or revoke: KEYS then ARGV of `lua/bucket_admit.lua`.
    BucketAdmit = "bucket_admit.lua", Sale;
    roles { operator }
    keys { admissions, admission_count }
    argv { mode, expire_at_ms }
    rest { entry }
}

/// Parse `{changed, admission_count}`.
pub(crate) fn parse_reply(reply: Value) -> Result<(i64, i64)> {
    Ok(redis::from_redis_value(reply)?)
}
