//! `lua/dead_letter.lua`: move one pending order entry to the dead-letter
//! stream and ack it, atomically. Its call and reply.

use anyhow::{Result, bail};
use redis::Value;

super::script_call! {
    /// Dead-letter one pending entry: KEYS then ARGV of `lua/dead_letter.lua`.
    DeadLetter = "dead_letter.lua", Sale;
    roles { consumer, operator }
    keys { orders, dead }
    argv { group, stream_id, reason, deliveries, consumer }
}

/// True when the entry was dead-lettered and acked, false when it was no
/// longer pending (someone else settled it; nothing was written).
pub(crate) fn parse_reply(reply: Value) -> Result<bool> {
    match super::int_reply(reply, "dead-letter")? {
        1 => Ok(true),
        0 => Ok(false),
        other => bail!("the dead-letter script answered {other}"),
    }
}
