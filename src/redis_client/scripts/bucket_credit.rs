//! `lua/bucket_credit.lua`: settle a transfer — credit its destination once
//! (docs/buckets.md). Its call and reply.

use anyhow::{Result, bail};
use redis::Value;

super::script_call! {
    /// Credit one transfer: KEYS then ARGV of `lua/bucket_credit.lua`.
    BucketCredit = "bucket_credit.lua", Sale;
    roles { buyer, operator }
    keys { meta, stock, xfer_in }
    argv { transfer_id, source, units, node }
}

/// How a settling credit went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credited {
    Now,
    Already,
    NotPreheated,
    /// The destination bucket is fenced after a failover: nothing written,
    /// the transfer stays in transit until `reconcile --fence` reopens it.
    Fenced,
}

impl Credited {
    /// The units are in the destination (now or before).
    pub fn landed(self) -> bool {
        matches!(self, Credited::Now | Credited::Already)
    }
}

/// Parse `{status, stock_after}`; a corrupt bucket is the error [`super::CorruptState`].
pub(crate) fn parse_reply(reply: Value) -> Result<Credited> {
    super::refuse_corrupt(&reply)?;
    let (status, _stock): (String, i64) = redis::from_redis_value(reply)?;
    match status.as_str() {
        "credited" => Ok(Credited::Now),
        "already_credited" => Ok(Credited::Already),
        "not_preheated" => Ok(Credited::NotPreheated),
        "fenced" => Ok(Credited::Fenced),
        other => bail!("credit script returned unknown status {other:?}"),
    }
}
