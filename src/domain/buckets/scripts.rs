//! The bucket scripts called with one bucket's keys: the typed calls of
//! `crate::redis_client::scripts::bucket_*` (which own each script's KEYS/ARGV order and
//! reply) filled from a [`BucketKeys`], with errors that name the bucket.

use anyhow::{Context, Result};
use redis::ConnectionLike;

use crate::domain::slot::BuyRequest;
use crate::model::layout::BucketKeys;
use crate::redis_client::scripts::ScriptCall;
use crate::redis_client::scripts::bucket_buy::{self, BucketBuy};
use crate::redis_client::scripts::bucket_credit::{self, BucketCredit};
use crate::redis_client::scripts::bucket_snapshot::{self, BucketSnapshot};
use crate::redis_client::scripts::bucket_take::{self, BucketTake};

pub(crate) use crate::redis_client::scripts::bucket_buy::HomeReply;
pub use crate::redis_client::scripts::bucket_credit::Credited;
pub(crate) use crate::redis_client::scripts::bucket_snapshot::Snapshot;
pub use crate::redis_client::scripts::bucket_take::{Take, Transfer, parse_log_record};

/// `lua/bucket_buy.lua` on the home bucket; `queued`: the item has a
/// waiting room, so the bucket's admissions key goes with the call.
#[allow(clippy::too_many_arguments)] // the script's own ARGV, each a decision of the caller
pub(crate) fn home_buy<C: ConnectionLike>(
    conn: &mut C,
    home: &BucketKeys,
    request: &BuyRequest,
    order_id: &str,
    count_attempt: bool,
    credit: Option<&Transfer>,
    payment_timeout_ms: u64,
    queued: HomeRoom,
) -> Result<HomeReply> {
    home_buy_call(
        home,
        request,
        order_id,
        count_attempt,
        credit,
        payment_timeout_ms,
        queued,
    )
    .invoke(conn)
    .map_err(anyhow::Error::from)
    .and_then(bucket_buy::parse_reply)
    .with_context(|| home_buy_failed(home, request))
}

fn home_buy_failed(home: &BucketKeys, request: &BuyRequest) -> String {
    format!(
        "buy script failed in bucket {} of item {} for user {}",
        home.bucket, request.item, request.user
    )
}

/// `lua/bucket_buy.lua`'s KEYS and ARGV for one call on the home bucket.
fn home_buy_call(
    home: &BucketKeys,
    request: &BuyRequest,
    order_id: &str,
    count_attempt: bool,
    credit: Option<&Transfer>,
    payment_timeout_ms: u64,
    queued: HomeRoom,
) -> BucketBuy<String> {
    let room = home.keys.room();
    let ticket = queued == HomeRoom::Ticket;
    BucketBuy {
        meta: home.keys.meta.clone(),
        stock: home.keys.stock.clone(),
        buyers: home.keys.buyers.clone(),
        buyer_orders: home.keys.buyer_orders.clone(),
        requests: home.keys.requests.clone(),
        orders: home.keys.orders.clone(),
        rate: home.keys.rate(request.user),
        xfer_in: home.xfer_in.clone(),
        user: request.user.to_string(),
        qty: request.qty.to_string(),
        request_id: request.request_id.unwrap_or("").to_string(),
        order_id: order_id.to_string(),
        campaign: request.campaign.to_string(),
        item: request.item.to_string(),
        count_attempt: if count_attempt { "1" } else { "0" }.to_string(),
        credit_id: credit.map_or(String::new(), |t| t.id.clone()),
        credit_source: credit.map_or(0, |t| t.source).to_string(),
        credit_units: credit.map_or(0, |t| t.units).to_string(),
        reservations: home.keys.reservations.clone(),
        deadlines: home.keys.deadlines.clone(),
        reservation_counts: home.keys.reservation_counts.clone(),
        admissions: (queued != HomeRoom::None).then(|| room.admissions.clone()),
        room: ticket.then(|| room.room.clone()),
        passes: ticket.then(|| room.passes.clone()),
        risk: ticket.then(|| room.risk.clone()),
        revoked: ticket.then(|| room.revoked.clone()),
        payment_timeout_ms: payment_timeout_ms.to_string(),
        arrival_ms: request.arrival_argv(),
        ticket_key: request.ticket_key_argv(),
        // Filled in by the connection (the fence, redis_client::node).
        node: crate::redis_client::node::NODE_PLACEHOLDER.to_string(),
    }
}

/// The waiting room a home bucket checks: none, an exact room's admissions
/// fanned out to it, or a ticket room's cursor copied to it
/// (docs/waiting-room.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HomeRoom {
    None,
    Exact,
    Ticket,
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
    take_with(conn, source, qty, transfer_id, dest, stale_ms, false)
}

/// [`take`]; with `exact`, take at most `qty` (the rebalancer) instead of
/// the buyer's "at least qty, at least half".
pub fn take_with<C: ConnectionLike>(
    conn: &mut C,
    source: &BucketKeys,
    qty: u32,
    transfer_id: &str,
    dest: u32,
    stale_ms: u64,
    exact: bool,
) -> Result<Take> {
    let call = BucketTake {
        meta: source.keys.meta.clone(),
        stock: source.keys.stock.clone(),
        xfer_out: source.xfer_out.clone(),
        xfer_pending: source.xfer_pending.clone(),
        xfer_in: source.xfer_in.clone(),
        qty: qty.to_string(),
        transfer_id: transfer_id.to_string(),
        dest: dest.to_string(),
        stale_ms: stale_ms.to_string(),
        max_stale: "16".to_string(),
        exact: if exact { "1" } else { "0" }.to_string(),
        // Filled in by the connection (the fence, redis_client::node).
        node: crate::redis_client::node::NODE_PLACEHOLDER.to_string(),
    };
    call.invoke(conn)
        .map_err(anyhow::Error::from)
        .and_then(|reply| bucket_take::parse_reply(reply, source.bucket))
        .with_context(|| format!("take script failed in bucket {}", source.bucket))
}

/// `lua/bucket_credit.lua` on `dest` (the transfer's destination).
pub fn credit<C: ConnectionLike>(
    conn: &mut C,
    dest: &BucketKeys,
    transfer: &Transfer,
) -> Result<Credited> {
    let call = BucketCredit {
        meta: dest.keys.meta.clone(),
        stock: dest.keys.stock.clone(),
        xfer_in: dest.xfer_in.clone(),
        transfer_id: transfer.id.clone(),
        source: transfer.source.to_string(),
        units: transfer.units.to_string(),
        node: crate::redis_client::node::NODE_PLACEHOLDER.to_string(),
    };
    call.invoke(conn)
        .map_err(anyhow::Error::from)
        .and_then(bucket_credit::parse_reply)
        .with_context(|| {
            format!(
                "credit of transfer {} to bucket {} failed",
                transfer.id, dest.bucket
            )
        })
}

/// Record in `bucket` that a sweep proved the item sold out (see `lua/bucket_buy.lua`).
pub(crate) fn mark_sold_out<C: ConnectionLike>(conn: &mut C, bucket: &BucketKeys) -> Result<()> {
    let _: i64 = redis::cmd("HSET")
        .arg(&bucket.keys.meta)
        .arg("sold_out")
        .arg(1)
        .query(conn)
        .with_context(|| format!("cannot mark bucket {} sold out", bucket.bucket))?;
    Ok(())
}

/// Tell every `serve` instance that the item's sell-out is proven, on the
/// shard channel named like `bucket`'s stock key (docs/serve.md, "The
/// cache"): sent once per proving sweep, never per sold-out attempt. Only
/// advice (each instance's recheck is the backstop), so a refusal — a role
/// without the channel right, a Redis without sharded pub/sub — is ignored.
pub(crate) fn announce_sold_out<C: ConnectionLike>(conn: &mut C, bucket: &BucketKeys) {
    let _: redis::RedisResult<i64> = redis::cmd("SPUBLISH")
        .arg(&bucket.keys.stock)
        .arg("sold_out")
        .query(conn);
}

/// Clear a bucket's sell-out proof: units came back (see `lua/bucket_buy.lua`).
pub(crate) fn clear_sold_out<C: ConnectionLike>(conn: &mut C, bucket: &BucketKeys) -> Result<()> {
    let _: i64 = redis::cmd("HDEL")
        .arg(&bucket.keys.meta)
        .arg("sold_out")
        .query(conn)
        .with_context(|| format!("cannot clear the sell-out proof in {}", bucket.keys.meta))?;
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

/// `lua/bucket_snapshot.lua` on one bucket.
pub fn snapshot<C: ConnectionLike>(conn: &mut C, bucket: &BucketKeys) -> Result<Snapshot> {
    let keys = &bucket.keys;
    let call = BucketSnapshot {
        meta: keys.meta.clone(),
        stock: keys.stock.clone(),
        orders: keys.orders.clone(),
        dead: keys.dead.clone(),
        xfer_out: bucket.xfer_out.clone(),
        xfer_in: bucket.xfer_in.clone(),
        xfer_pending: bucket.xfer_pending.clone(),
        buyers: keys.buyers.clone(),
    };
    call.invoke(conn)
        .map_err(anyhow::Error::from)
        .and_then(bucket_snapshot::parse_reply)
        .with_context(|| format!("cannot read the state of bucket {}", bucket.bucket))
}
