//! One purchase attempt on a bucketed item (`docs/buckets.md`, "The buy path"):
//! the home bucket first (one round trip, the common case); when it is short,
//! a sweep over every bucket — the home bucket's visit first — that takes
//! stock by logged transfers, and answers `sold_out` only after two
//! consecutive quiet sweeps.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use redis::ConnectionLike;
use serde::Serialize;

use super::scripts::{self, Credited, HomeReply, HomeRoom, Transfer};
use crate::domain::slot::{BuyReply, BuyRequest, Outcome, new_order_id};
use crate::model::layout::{BucketKeys, Layout};
use crate::redis_client::scripts::CorruptState;

/// A pending transfer older than this is taken for dead and settled by the
/// sweep that meets it (settling a live one is harmless: credits are idempotent).
pub(crate) const STALE_MS: u64 = 1000;
/// Pause before sweeping again when a fresh pending transfer was seen.
pub(crate) const SWEEP_PAUSE: Duration = Duration::from_millis(5);
/// A sweep that cannot prove the item sold out within this long gives up
/// with an error (nothing bought) rather than guess.
pub(crate) const GIVE_UP: Duration = Duration::from_secs(5);

/// What one attempt cost: the figures `loadtest --buckets` reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct BuyCost {
    /// Script calls and acks sent, this attempt.
    pub round_trips: u32,
    /// Transfers this attempt took (debited and credited).
    pub(crate) transfers: u32,
    /// Stale transfers of others this attempt settled.
    pub(crate) settled: u32,
    /// Full sweeps over the buckets.
    pub(crate) sweeps: u32,
}

/// One attempt; with `payment_timeout_ms` > 0 an `ok` is a reservation recorded
/// in the home bucket, whose stock the units came from (`reservations`).
/// `queued`: the item's waiting room, which every call of the home bucket
/// checks (the item layer refines an exact room's refusals).
pub(crate) fn reserve<C: ConnectionLike>(
    conn: &mut C,
    layout: &Layout,
    request: &BuyRequest,
    payment_timeout_ms: u64,
    queued: HomeRoom,
) -> Result<(BuyReply, BuyCost)> {
    let home = layout.home(request.user);
    let order_id = new_order_id();
    let mut cost = BuyCost {
        round_trips: 1,
        ..BuyCost::default()
    };
    let first = scripts::home_buy(
        conn,
        &home,
        request,
        &order_id,
        true,
        None,
        payment_timeout_ms,
        queued,
    )?;
    if home_answer_is_final(&first) {
        return Ok((first.reply, cost));
    }
    let reply = after_short_home(
        conn,
        layout,
        request,
        (&order_id, payment_timeout_ms, queued),
        &mut cost,
    )?;
    Ok((reply, cost))
}

/// Whether the home bucket's first answer is the attempt's answer: anything
/// but a `sold_out` the item has not proven yet.
fn home_answer_is_final(first: &HomeReply) -> bool {
    first.reply.outcome != Outcome::SoldOut || first.proven
}

/// The rest of an attempt whose home bucket was short (its first call,
/// with `order_id`, answered an unproven `sold_out`): the sweep.
/// `attempt`: the order id, the payment timeout and whether the item has a
/// waiting room.
fn after_short_home<C: ConnectionLike>(
    conn: &mut C,
    layout: &Layout,
    request: &BuyRequest,
    (order_id, payment_timeout_ms, queued): (&str, u64, HomeRoom),
    cost: &mut BuyCost,
) -> Result<BuyReply> {
    let home = layout.home(request.user);
    let buckets = layout.all();
    let reply = match sweep(
        conn,
        &buckets,
        (&home, order_id, payment_timeout_ms, queued),
        request,
        cost,
    ) {
        // A bucket visited on the way holds a malformed value: the buy
        // script's own outcome (that bucket wrote nothing; units already
        // moved stay accounted for, in the home bucket or in transit).
        Err(error) if error.downcast_ref::<CorruptState>().is_some() => {
            let problem = error.downcast_ref::<CorruptState>().map(|c| c.0.clone());
            BuyReply {
                outcome: Outcome::CorruptState,
                order_id: None,
                stock_left: None,
                problem,
                reservation: None,
                waiting: None,
                seats: None,
            }
        }
        other => other?,
    };
    Ok(reply)
}

/// `target`: the home bucket, the order id, the payment timeout of the
/// attempt and whether the item has a waiting room.
fn sweep<C: ConnectionLike>(
    conn: &mut C,
    buckets: &[BucketKeys],
    (home, order_id, payment_timeout_ms, queued): (&BucketKeys, &str, u64, HomeRoom),
    request: &BuyRequest,
    cost: &mut BuyCost,
) -> Result<BuyReply> {
    let n = buckets.len() as u32;
    let start = rand::random_range(0..n);
    // The home bucket first, then the others from a random one: the home's
    // visit reads its transfer logs before any other bucket gives a unit,
    // so a home bucket the attempt would refuse (a wrong-typed log) refuses
    // before a transfer starts, wherever the sweep would have begun (issue
    // 25 item 38). Its first call already checked every other key it keeps.
    let order: Vec<u32> = std::iter::once(home.bucket)
        .chain(
            (0..n)
                .map(|i| (start + i) % n)
                .filter(|b| *b != home.bucket),
        )
        .collect();
    let deadline = Instant::now() + GIVE_UP;
    // In-counts seen by the last quiet sweep: two quiet sweeps in a row with
    // the same in-counts prove the item sold out (docs/buckets.md, property 3).
    let mut quiet_before: Option<Vec<i64>> = None;
    loop {
        cost.sweeps += 1;
        let mut quiet = true;
        let mut fresh_pending = false;
        let mut in_counts = vec![0; buckets.len()];
        let mut home_stock = 0;
        for &b in &order {
            let bucket = &buckets[b as usize];
            let is_home = b == home.bucket;
            let transfer_id = new_order_id();
            let want = if is_home { 0 } else { request.qty };
            cost.round_trips += 1;
            let seen = scripts::take(conn, bucket, want, &transfer_id, home.bucket, STALE_MS)?;
            if seen.fenced {
                // Units must not leave a bucket whose Redis may have lost
                // sales: the attempt is refused whole (docs/failover.md).
                return Ok(BuyReply {
                    outcome: Outcome::Fenced,
                    order_id: None,
                    stock_left: None,
                    problem: Some(format!(
                        "fenced: bucket {b} of item {} is held by another Redis process than \
                         the one preheat loaded it on; run `seckill reconcile --fence`",
                        request.item
                    )),
                    reservation: None,
                    waiting: None,
                    seats: None,
                });
            }
            if !seen.preheated {
                bail!(
                    "bucket {b} of item {} is not preheated (expired or deleted?): run `seckill preheat`",
                    request.item
                );
            }
            in_counts[b as usize] = seen.in_count;
            for stale in &seen.stale {
                settle(conn, buckets, stale, cost)?;
                quiet = false;
            }
            if seen.pending > seen.stale.len() as i64 {
                quiet = false;
                fresh_pending = true;
            }
            let reply = if is_home {
                home_stock = seen.stock_after;
                if seen.stock_after < i64::from(request.qty) {
                    continue;
                }
                cost.round_trips += 1;
                let home_buy = scripts::home_buy(
                    conn,
                    home,
                    request,
                    order_id,
                    false,
                    None,
                    payment_timeout_ms,
                    queued,
                );
                home_buy?.reply
            } else if seen.taken > 0 {
                let transfer = Transfer {
                    id: transfer_id,
                    source: b,
                    dest: home.bucket,
                    units: seen.taken,
                };
                cost.transfers += 1;
                cost.round_trips += 2;
                let credit = Some(&transfer);
                let reply = scripts::home_buy(
                    conn,
                    home,
                    request,
                    order_id,
                    false,
                    credit,
                    payment_timeout_ms,
                    queued,
                )?
                .reply;
                if matches!(reply.outcome, Outcome::CorruptState | Outcome::NotPreheated) {
                    // Not credited: the debit stays pending (in transit) for
                    // `reconcile --repair` once the home bucket is fixed.
                    return Ok(reply);
                }
                scripts::ack(conn, bucket, &transfer.id)?;
                home_stock = reply.stock_left.unwrap_or(0);
                reply
            } else {
                continue;
            };
            quiet = false;
            if reply.outcome != Outcome::SoldOut {
                return Ok(reply);
            }
        }
        if quiet && quiet_before.as_ref() == Some(&in_counts) {
            if home_stock == 0 {
                // Every bucket empty, nothing in transit: true for good.
                // Later attempts learn it from their home bucket in one round trip.
                for bucket in buckets {
                    cost.round_trips += 1;
                    scripts::mark_sold_out(conn, bucket)?;
                }
                if let Some(last) = buckets.last() {
                    cost.round_trips += 1;
                    scripts::announce_sold_out(conn, last);
                }
            }
            return Ok(BuyReply {
                outcome: Outcome::SoldOut,
                order_id: None,
                stock_left: Some(home_stock),
                problem: None,
                reservation: None,
                waiting: None,
                seats: None,
            });
        }
        quiet_before = quiet.then_some(in_counts);
        if Instant::now() > deadline {
            bail!(
                "item {}: stock kept moving between buckets for {GIVE_UP:?}; nothing was bought, retry",
                request.item
            );
        }
        if fresh_pending {
            std::thread::sleep(SWEEP_PAUSE);
        }
    }
}

/// Credit a stale transfer to its destination (a no-op when its taker already
/// did), then forget it in its source.
pub(crate) fn settle<C: ConnectionLike>(
    conn: &mut C,
    buckets: &[BucketKeys],
    transfer: &Transfer,
    cost: &mut BuyCost,
) -> Result<Credited> {
    let Some(dest) = buckets.get(transfer.dest as usize) else {
        bail!(
            "transfer {} names bucket {} but the item has {} buckets",
            transfer.id,
            transfer.dest,
            buckets.len()
        );
    };
    cost.round_trips += 1;
    let credited = scripts::credit(conn, dest, transfer)?;
    if credited.landed() {
        cost.round_trips += 1;
        scripts::ack(conn, &buckets[transfer.source as usize], &transfer.id)?;
        cost.settled += 1;
    }
    Ok(credited)
}
