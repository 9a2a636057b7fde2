//! `lua/queue_clock.lua`: pause or resume an item's waiting room (for the
//! operator or the kill switch), and the admitter's heartbeat. Its call and reply.

use anyhow::Result;
use redis::Value;

super::script_call! {
    /// Pause, resume or beat: KEYS then ARGV of `lua/queue_clock.lua`.
    QueueClock = "queue_clock.lua", Sale;
    roles { operator }
    keys { room }
    argv { action, every_ms }
}

/// `{status, paused_ms, now_ms, paused_by}`: the status (paused |
/// already_paused | resumed | still_paused | not_paused | beat | no_room),
/// the room's pauses in total, the Redis time, who holds it paused after the
/// call ("", `operator`, `switch`, `operator switch`).
pub(crate) fn parse_reply(reply: Value) -> Result<(String, i64, i64, String)> {
    Ok(redis::from_redis_value(reply)?)
}
