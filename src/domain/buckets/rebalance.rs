//! The optional rebalancer (`seckill rebalance`, docs/buckets.md): moves stock
//! from full buckets to draining ones before they run dry, so skewed demand
//! rarely pays the transfer path, and settles stale transfers on the way.
//! Buys never depend on it: they sell out completely without it.
//!
//! Every move is the buyers' logged transfer (debit with its id in the
//! source's slot, credit at most once in the destination's, then the ack), so
//! a rebalancer killed at any point leaves units in transit that the next
//! sweep, the next pass or `reconcile --repair` settles.

use anyhow::Result;
use redis::ConnectionLike;
use serde::Serialize;

use super::buy::{BuyCost, STALE_MS, settle};
use super::scripts::{self, Credited, Transfer};
use crate::domain::slot::new_order_id;
use crate::model::layout::{BucketKeys, Layout};

/// One transfer the rebalancer made.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Move {
    pub(crate) transfer_id: String,
    pub(crate) from: u32,
    pub(crate) to: u32,
    pub(crate) units: i64,
}

/// One pass over one item.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Pass {
    pub(crate) item: String,
    pub(crate) stock_before: Vec<i64>,
    pub(crate) stock_after: Vec<i64>,
    pub(crate) moves: Vec<Move>,
    /// Stale transfers of others settled.
    pub(crate) settled: u32,
}

/// One pass: a bucket holding less than `low_water` × the mean gets stock
/// from the fullest bucket, up to the mean (never leaving the source below it).
pub(crate) fn pass<C: ConnectionLike>(
    conn: &mut C,
    layout: &Layout,
    low_water: f64,
) -> Result<Pass> {
    let buckets = layout.all();
    let mut cost = BuyCost::default();
    let mut stock = Vec::with_capacity(buckets.len());
    for bucket in &buckets {
        let seen = scripts::take(conn, bucket, 0, "", bucket.bucket, STALE_MS)?;
        for stale in &seen.stale {
            settle(conn, &buckets, stale, &mut cost)?;
        }
        stock.push(seen.stock_after.max(0));
    }
    let mut report = Pass {
        item: layout.item.clone(),
        stock_before: stock.clone(),
        stock_after: Vec::new(),
        moves: Vec::new(),
        settled: cost.settled,
    };
    let mean = stock.iter().sum::<i64>() / stock.len().max(1) as i64;
    let floor = (mean as f64 * low_water) as i64;
    loop {
        let (low, &lowest) = min_by_stock(&stock);
        let (high, &highest) = max_by_stock(&stock);
        if lowest >= floor || highest <= mean || low == high {
            break;
        }
        let want = (mean - lowest).min(highest - mean);
        let Some(moved) = transfer(conn, &buckets, high, low, want)? else {
            break;
        };
        stock[high] -= moved.units;
        stock[low] += moved.units;
        report.moves.push(moved);
    }
    report.stock_after = stock;
    Ok(report)
}

/// Move up to `units` from bucket `from` to `to`: debit, credit, ack.
fn transfer<C: ConnectionLike>(
    conn: &mut C,
    buckets: &[BucketKeys],
    from: usize,
    to: usize,
    units: i64,
) -> Result<Option<Move>> {
    let id = new_order_id();
    let (source, dest) = (&buckets[from], &buckets[to]);
    let qty = u32::try_from(units).unwrap_or(u32::MAX);
    let taken = scripts::take_with(conn, source, qty, &id, dest.bucket, STALE_MS, true)?;
    if taken.taken == 0 {
        return Ok(None);
    }
    let transfer = Transfer {
        id: id.clone(),
        source: source.bucket,
        dest: dest.bucket,
        units: taken.taken,
    };
    let credited = scripts::credit(conn, dest, &transfer)?;
    if !credited.landed() {
        anyhow::bail!(
            "bucket {} is {}: transfer {id} of {} unit(s) stays in transit",
            dest.bucket,
            if credited == Credited::Fenced {
                "fenced (`seckill reconcile --fence`)"
            } else {
                "not preheated"
            },
            taken.taken
        );
    }
    scripts::ack(conn, source, &id)?;
    Ok(Some(Move {
        transfer_id: id,
        from: source.bucket,
        to: dest.bucket,
        units: taken.taken,
    }))
}

fn min_by_stock(stock: &[i64]) -> (usize, &i64) {
    stock
        .iter()
        .enumerate()
        .min_by_key(|(_, s)| **s)
        .unwrap_or((0, &0))
}

fn max_by_stock(stock: &[i64]) -> (usize, &i64) {
    stock
        .iter()
        .enumerate()
        .max_by_key(|(_, s)| **s)
        .unwrap_or((0, &0))
}
