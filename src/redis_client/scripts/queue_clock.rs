//! `lua/queue_clock.lua`: pause or resume an item's waiting room. Its call and reply.

use anyhow::Result;
use redis::Value;

super::script_call! {
    /// Pause or resume: KEYS then ARGV of `lua/queue_clock.lua`.
    QueueClock = "queue_clock.lua", Sale;
    roles { operator }
    keys { room }
    argv { action }
}

/// Parse `{status, paused_ms, now_ms}`: paused | already_paused | resumed | not_paused | no_room.
pub(crate) fn parse_reply(reply: Value) -> Result<(String, i64, i64)> {
    Ok(redis::from_redis_value(reply)?)
}
