//! `lua/queue_penalize.lua`: the operator's risk list (delay, block, clear).
//! Its call and reply.

use anyhow::Result;
use redis::Value;

super::script_call! {
    /// Penalize: KEYS then ARGV of `lua/queue_penalize.lua`.
    QueuePenalize = "queue_penalize.lua", Sale;
    roles { operator }
    keys { room, risk, admitted, active }
    argv { user, action, delay_ms }
}

/// Parse `{status, previous, now_ms}`: delayed | blocked | cleared | no_room.
pub(crate) fn parse_reply(reply: Value) -> Result<(String, String, i64)> {
    Ok(redis::from_redis_value(reply)?)
}
