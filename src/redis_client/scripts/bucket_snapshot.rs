//! `lua/bucket_snapshot.lua`: one bucket at one instant — stock, the order
//! stream's end, the transfer log's sizes (reconcile, status). Its call and reply.

use anyhow::Result;
use redis::Value;

super::script_call! {
    /// Snapshot one bucket: KEYS of `lua/bucket_snapshot.lua` (no ARGV).
    BucketSnapshot = "bucket_snapshot.lua", Sale;
    roles { operator }
    keys { meta, stock, orders, dead, xfer_out, xfer_in, xfer_pending, buyers }
    argv {}
}

/// One bucket at one instant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub(crate) initial_stock: Option<i64>,
    pub stock: Option<i64>,
    pub(crate) dead_len: u64,
    /// The order stream's last id ("" = empty).
    pub(crate) last_order_id: String,
    pub out_count: u64,
    pub in_count: u64,
    pub pending: u64,
    pub(crate) closed: bool,
    pub stream_len: u64,
    pub(crate) buyers: u64,
}

/// Parse the ten fields of the reply; a corrupt bucket is the error [`super::CorruptState`].
pub(crate) fn parse_reply(reply: Value) -> Result<Snapshot> {
    super::refuse_corrupt(&reply)?;
    type Reply = (
        (Option<i64>, Option<i64>, u64, String, u64),
        (u64, u64, Option<String>, u64, u64),
    );
    let fields: Vec<Value> = redis::from_redis_value(reply)?;
    if fields.len() != 10 {
        anyhow::bail!("bucket snapshot script answered {} fields", fields.len());
    }
    let (first, second) = fields.split_at(5);
    let (
        (initial_stock, stock, dead_len, last_order_id, out_count),
        (in_count, pending, closed, stream_len, buyers),
    ): Reply = (
        redis::from_redis_value(Value::Array(first.to_vec()))?,
        redis::from_redis_value(Value::Array(second.to_vec()))?,
    );
    Ok(Snapshot {
        initial_stock,
        stock,
        dead_len,
        last_order_id,
        out_count,
        in_count,
        pending,
        closed: closed.as_deref() == Some("1"),
        stream_len,
        buyers,
    })
}
