//! `lua/reconcile_snapshot.lua`: stock and the order stream's last id read
//! together, so they always agree (reconcile). Its call and reply.

use anyhow::Result;
use redis::Value;

super::script_call! {
    /// Snapshot one item: KEYS of `lua/reconcile_snapshot.lua` (no ARGV).
    ReconcileSnapshot = "reconcile_snapshot.lua", Sale;
    keys { meta, stock, orders, dead }
    argv {}
}

/// One consistent view of an item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub initial_stock: Option<i64>,
    pub stock: Option<i64>,
    pub dead_len: u64,
    /// The order stream's last id, "" when empty.
    pub last_order_stream_id: String,
}

/// Parse the reply `{initial_stock|false, stock|false, dead_len, last id}`.
pub fn parse_reply(reply: Value) -> Result<Snapshot> {
    let (initial_stock, stock, dead_len, last_order_stream_id) = redis::from_redis_value(reply)?;
    Ok(Snapshot {
        initial_stock,
        stock,
        dead_len,
        last_order_stream_id,
    })
}
