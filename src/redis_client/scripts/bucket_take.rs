//! `lua/bucket_take.lua`: one bucket's part of a sweep — take units for a
//! transfer and log the debit, and report what the sweep must know
//! (docs/buckets.md). Its call and reply.

use anyhow::{Context, Result, bail};
use redis::Value;

super::script_call! {
    /// Visit one bucket: KEYS then ARGV of `lua/bucket_take.lua`.
    BucketTake = "bucket_take.lua", Sale;
    roles { buyer, operator }
    keys { meta, stock, xfer_out, xfer_pending, xfer_in }
    argv { qty, transfer_id, dest, stale_ms, max_stale, exact, node }
}

/// A debit to credit: its id, source and destination bucket, units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transfer {
    pub id: String,
    pub source: u32,
    pub dest: u32,
    pub units: i64,
}

/// What one bucket told a sweep.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Take {
    pub(crate) preheated: bool,
    /// The bucket is fenced (docs/failover.md): nothing was taken.
    pub(crate) fenced: bool,
    /// Units debited under the transfer id (0 = none).
    pub taken: i64,
    pub(crate) stock_after: i64,
    pub(crate) in_count: i64,
    /// Debits from this bucket not yet confirmed credited (before this one).
    pub(crate) pending: i64,
    /// Pending debits older than the stale limit, to settle.
    pub(crate) stale: Vec<Transfer>,
}

/// `<bucket> <units> <ms>` of an `xfer_out` / `xfer_in` record → (bucket, units).
pub fn parse_log_record(record: &str) -> Result<(u32, i64)> {
    let mut parts = record.split(' ');
    let (Some(bucket), Some(units)) = (parts.next(), parts.next()) else {
        bail!("expected `<bucket> <units> <ms>`");
    };
    Ok((bucket.parse()?, units.parse()?))
}

/// Parse `{status, taken, stock_after, in_count, pending, stale id, stale record, ...}`
/// of a visit to bucket `source`; a corrupt bucket is the error [`super::CorruptState`].
pub(crate) fn parse_reply(reply: Value, source: u32) -> Result<Take> {
    super::refuse_corrupt(&reply)?;
    let reply: Vec<Value> = redis::from_redis_value(reply)?;
    if reply.len() < 5 || !(reply.len() - 5).is_multiple_of(2) {
        bail!("take script returned {} values", reply.len());
    }
    let text = |v: &Value| -> Result<String> { Ok(redis::from_redis_value_ref(v)?) };
    let int = |v: &Value| -> Result<i64> { Ok(redis::from_redis_value_ref(v)?) };
    let mut take = Take {
        preheated: matches!(text(&reply[0])?.as_str(), "ok" | "fenced"),
        fenced: text(&reply[0])? == "fenced",
        taken: int(&reply[1])?,
        stock_after: int(&reply[2])?,
        in_count: int(&reply[3])?,
        pending: int(&reply[4])?,
        stale: Vec::new(),
    };
    for pair in reply[5..].chunks(2) {
        let id = text(&pair[0])?;
        let record = text(&pair[1])?;
        let (dest, units) = parse_log_record(&record)
            .with_context(|| format!("bad xfer_out record {record:?} of transfer {id}"))?;
        take.stale.push(Transfer {
            id,
            source,
            dest,
            units,
        });
    }
    Ok(take)
}
