//! `lua/bucket_cursor.lua`: a ticket room's cursor copied to one bucket of
//! a bucketed item. Its call and reply.

use anyhow::Result;
use redis::Value;

super::script_call! {
    /// Copy the cursor: KEYS then ARGV of `lua/bucket_cursor.lua`.
    BucketCursor = "bucket_cursor.lua", Sale;
    roles { buyer, operator }
    keys { room, passes }
    argv { cursor_ms, at_ms, ttl_ms, expire_at_ms, expired_below_ms, expires_next_at_ms }
}

/// Parse `{status, cursor_ms}`: copied | kept.
pub(crate) fn parse_reply(reply: Value) -> Result<(String, i64)> {
    Ok(redis::from_redis_value(reply)?)
}
