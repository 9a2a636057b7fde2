//! `lua/consumer_delete.lua`: delete a consumer of an order stream's group
//! only while it holds no pending entry and has been idle long enough, in
//! one atomic step. Its call and reply.

use anyhow::{Result, bail};
use redis::Value;

super::script_call! {
    /// Delete one idle, empty consumer: KEYS then ARGV of `lua/consumer_delete.lua`.
    ConsumerDelete = "consumer_delete.lua", Sale;
    roles { consumer, operator }
    keys { orders }
    argv { group, consumer, min_idle_ms }
}

/// True when the consumer was deleted, false when it was kept (pending
/// entries, too recently active, or no such consumer; nothing was written).
pub(crate) fn parse_reply(reply: Value) -> Result<bool> {
    match super::int_reply(reply, "consumer-delete")? {
        1 => Ok(true),
        0 => Ok(false),
        other => bail!("the consumer-delete script answered {other}"),
    }
}
