//! `lua/stream_order_ids.lua`: the order_id field of several entries of one
//! stream in one round trip (reconcile, database → stream). Its call and reply.

use anyhow::{Result, bail};
use redis::Value;

super::script_call! {
    /// Look up entries by stream id: KEYS then the ids of `lua/stream_order_ids.lua`.
    StreamOrderIds = "stream_order_ids.lua", Sale;
    roles { operator }
    keys { orders }
    argv {}
    rest { stream_id }
}

/// One string per asked id: its order id, "" when there is no such entry.
pub(crate) fn parse_reply(reply: Value, asked: usize) -> Result<Vec<String>> {
    let found: Vec<String> = redis::from_redis_value(reply)?;
    if found.len() != asked {
        bail!(
            "the stream-order-ids script answered {} ids for {asked}",
            found.len()
        );
    }
    Ok(found)
}
