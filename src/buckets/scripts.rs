//! The Rust home of the bucket scripts (`lua/bucket_*.lua`): each function
//! owns one script's KEYS and ARGV order and parses its reply.

use std::sync::LazyLock;

use anyhow::{Context, Result, bail};
use redis::{ConnectionLike, Script, Value};

use super::BucketKeys;
use crate::buy::{BuyReply, BuyRequest, parse_reply};

/// Purchase in the home bucket, optionally crediting a transfer first.
pub const BUCKET_BUY_SOURCE: &str = include_str!("../../lua/bucket_buy.lua");
/// Take units for a transfer and log the debit; report the sweep's facts.
pub const BUCKET_TAKE_SOURCE: &str = include_str!("../../lua/bucket_take.lua");
/// Credit a transfer to its destination once (settle).
pub const BUCKET_CREDIT_SOURCE: &str = include_str!("../../lua/bucket_credit.lua");
/// One bucket's state at one instant (reconcile, status).
pub const BUCKET_SNAPSHOT_SOURCE: &str = include_str!("../../lua/bucket_snapshot.lua");

static BUCKET_BUY: LazyLock<Script> = LazyLock::new(|| Script::new(BUCKET_BUY_SOURCE));
static BUCKET_TAKE: LazyLock<Script> = LazyLock::new(|| Script::new(BUCKET_TAKE_SOURCE));
static BUCKET_CREDIT: LazyLock<Script> = LazyLock::new(|| Script::new(BUCKET_CREDIT_SOURCE));
static BUCKET_SNAPSHOT: LazyLock<Script> = LazyLock::new(|| Script::new(BUCKET_SNAPSHOT_SOURCE));

/// Every bucket script, (name, script), for `preheat` to load up front.
pub fn all() -> Vec<(&'static str, &'static Script)> {
    vec![
        ("bucket_buy", &BUCKET_BUY),
        ("bucket_take", &BUCKET_TAKE),
        ("bucket_credit", &BUCKET_CREDIT),
        ("bucket_snapshot", &BUCKET_SNAPSHOT),
    ]
}

/// A debit to credit: its id, source bucket and units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transfer {
    pub id: String,
    pub source: u32,
    pub dest: u32,
    pub units: i64,
}

/// What the home bucket said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HomeReply {
    /// `sold_out` means *this bucket* is short, unless `proven`.
    pub reply: BuyReply,
    /// Credits this bucket ever received.
    pub in_count: i64,
    /// A sweep proved the whole item sold out for good (`sold_out` in meta).
    pub proven: bool,
}

/// `lua/bucket_buy.lua` on the home bucket.
pub fn home_buy<C: ConnectionLike>(
    conn: &mut C,
    home: &BucketKeys,
    request: &BuyRequest,
    order_id: &str,
    count_attempt: bool,
    credit: Option<&Transfer>,
) -> Result<HomeReply> {
    type Reply = (Vec<u8>, String, i64, i64, i64);
    let (outcome, order_id, stock_left, in_count, proven): Reply = BUCKET_BUY
        .key(&home.keys.meta)
        .key(&home.keys.stock)
        .key(&home.keys.buyers)
        .key(&home.keys.buyer_orders)
        .key(&home.keys.requests)
        .key(&home.keys.orders)
        .key(home.keys.rate(request.user))
        .key(&home.xfer_in)
        .arg(request.user)
        .arg(request.qty)
        .arg(request.request_id.unwrap_or(""))
        .arg(order_id)
        .arg(request.campaign)
        .arg(request.item)
        .arg(if count_attempt { "1" } else { "0" })
        .arg(credit.map_or("", |t| t.id.as_str()))
        .arg(credit.map_or(0, |t| t.source))
        .arg(credit.map_or(0, |t| t.units))
        .invoke(conn)
        .with_context(|| {
            format!(
                "buy script failed in bucket {} of item {} for user {} (outcome unknown: retry with the same --request-id)",
                home.bucket, request.item, request.user
            )
        })?;
    Ok(HomeReply {
        reply: parse_reply((outcome, order_id, stock_left))?,
        in_count,
        proven: proven == 1,
    })
}

/// What one bucket told a sweep.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Take {
    pub preheated: bool,
    /// Units debited under the transfer id (0 = none).
    pub taken: i64,
    pub stock_after: i64,
    pub in_count: i64,
    /// Debits from this bucket not yet confirmed credited (before this one).
    pub pending: i64,
    /// Pending debits older than the stale limit, to settle.
    pub stale: Vec<Transfer>,
}

/// `lua/bucket_take.lua` on `source`: take at least `qty` (0 = look only) for `dest`.
pub fn take<C: ConnectionLike>(
    conn: &mut C,
    source: &BucketKeys,
    qty: u32,
    transfer_id: &str,
    dest: u32,
    stale_ms: u64,
) -> Result<Take> {
    let reply: Vec<Value> = BUCKET_TAKE
        .key(&source.keys.meta)
        .key(&source.keys.stock)
        .key(&source.xfer_out)
        .key(&source.xfer_pending)
        .key(&source.xfer_in)
        .arg(qty)
        .arg(transfer_id)
        .arg(dest)
        .arg(stale_ms)
        .arg(16)
        .invoke(conn)
        .with_context(|| format!("take script failed in bucket {}", source.bucket))?;
    let text = |v: &Value| -> Result<String> { Ok(redis::from_redis_value_ref(v)?) };
    let int = |v: &Value| -> Result<i64> { Ok(redis::from_redis_value_ref(v)?) };
    if reply.len() < 5 || (reply.len() - 5) % 2 != 0 {
        bail!("take script returned {} values", reply.len());
    }
    let status = text(&reply[0])?;
    let mut take = Take {
        preheated: status == "ok",
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
            source: source.bucket,
            dest,
            units,
        });
    }
    Ok(take)
}

/// `<bucket> <units> <ms>` of an `xfer_out` / `xfer_in` record → (bucket, units).
pub fn parse_log_record(record: &str) -> Result<(u32, i64)> {
    let mut parts = record.split(' ');
    let (Some(bucket), Some(units)) = (parts.next(), parts.next()) else {
        bail!("expected `<bucket> <units> <ms>`");
    };
    Ok((bucket.parse()?, units.parse()?))
}

/// How a settling credit went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credited {
    Now,
    Already,
    NotPreheated,
}

/// `lua/bucket_credit.lua` on `dest` (the transfer's destination).
pub fn credit<C: ConnectionLike>(
    conn: &mut C,
    dest: &BucketKeys,
    transfer: &Transfer,
) -> Result<Credited> {
    let (status, _stock): (String, i64) = BUCKET_CREDIT
        .key(&dest.keys.meta)
        .key(&dest.keys.stock)
        .key(&dest.xfer_in)
        .arg(&transfer.id)
        .arg(transfer.source)
        .arg(transfer.units)
        .invoke(conn)
        .with_context(|| {
            format!(
                "credit of transfer {} to bucket {} failed",
                transfer.id, dest.bucket
            )
        })?;
    match status.as_str() {
        "credited" => Ok(Credited::Now),
        "already_credited" => Ok(Credited::Already),
        "not_preheated" => Ok(Credited::NotPreheated),
        other => bail!("credit script returned unknown status {other:?}"),
    }
}

/// Record in `bucket` that a sweep proved the item sold out (see `lua/bucket_buy.lua`).
pub fn mark_sold_out<C: ConnectionLike>(conn: &mut C, bucket: &BucketKeys) -> Result<()> {
    let _: i64 = redis::cmd("HSET")
        .arg(&bucket.keys.meta)
        .arg("sold_out")
        .arg(1)
        .query(conn)
        .with_context(|| format!("cannot mark bucket {} sold out", bucket.bucket))?;
    Ok(())
}

/// Forget a pending debit of `source` once its credit is confirmed.
pub fn ack<C: ConnectionLike>(conn: &mut C, source: &BucketKeys, transfer_id: &str) -> Result<()> {
    let _: i64 = redis::cmd("ZREM")
        .arg(&source.xfer_pending)
        .arg(transfer_id)
        .query(conn)
        .with_context(|| {
            format!(
                "cannot ack transfer {transfer_id} in bucket {}",
                source.bucket
            )
        })?;
    Ok(())
}

/// One bucket at one instant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub initial_stock: Option<i64>,
    pub stock: Option<i64>,
    pub dead_len: u64,
    /// The order stream's last id ("" = empty).
    pub last_order_id: String,
    pub out_count: u64,
    pub in_count: u64,
    pub pending: u64,
    pub closed: bool,
    pub stream_len: u64,
    pub buyers: u64,
}

/// `lua/bucket_snapshot.lua` on one bucket.
pub fn snapshot<C: ConnectionLike>(conn: &mut C, bucket: &BucketKeys) -> Result<Snapshot> {
    type Reply = (
        Option<i64>,
        Option<i64>,
        u64,
        String,
        u64,
        u64,
        u64,
        Option<String>,
        u64,
        u64,
    );
    let (initial_stock, stock, dead_len, last, out_count, in_count, pending, closed, len, buyers): Reply =
        BUCKET_SNAPSHOT
            .key(&bucket.keys.meta)
            .key(&bucket.keys.stock)
            .key(&bucket.keys.orders)
            .key(&bucket.keys.dead)
            .key(&bucket.xfer_out)
            .key(&bucket.xfer_in)
            .key(&bucket.xfer_pending)
            .key(&bucket.keys.buyers)
            .invoke(conn)
            .with_context(|| format!("cannot read the state of bucket {}", bucket.bucket))?;
    Ok(Snapshot {
        initial_stock,
        stock,
        dead_len,
        last_order_id: last,
        out_count,
        in_count,
        pending,
        closed: closed.as_deref() == Some("1"),
        stream_len: len,
        buyers,
    })
}
