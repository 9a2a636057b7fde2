//! A bucketed item's transfer logs read as one (`docs/buckets.md`,
//! "reconcile"): every slot's snapshot, both logs and the pending debits,
//! read again until no transfer happened in between; and `--repair`'s
//! settling of what is in transit. A plain item's reading is its one
//! snapshot and no log. The item layer offers both (`SaleItem::read_slots`,
//! `SaleItem::settle_in_transit`).

use std::collections::HashMap;

use anyhow::{Context, Result};
use redis::ConnectionLike;

use super::buy::{BuyCost, settle};
use super::scripts::{self, Snapshot, Transfer, parse_log_record};
use crate::model::layout::BucketKeys;

/// Readings repeated at most this often while transfers keep happening.
pub(crate) const MAX_READINGS: usize = 5;

/// Hash fields read per HSCAN page.
const PAGE: usize = 1000;

/// One consistent reading of every bucket and the transfer logs.
pub(crate) struct Reading {
    pub(crate) snapshots: Vec<Snapshot>,
    /// Debits: transfer id → transfer.
    pub(crate) debits: HashMap<String, Transfer>,
    /// Credits: transfer id → (source, dest, units).
    pub(crate) credits: HashMap<String, Transfer>,
    /// Pending debits per bucket (ids).
    pub(crate) pending: Vec<Vec<String>>,
}

/// Read every slot, then (`with_logs`) both transfer logs, then every slot's
/// log sizes again; `None` when they changed in each of [`MAX_READINGS`] tries.
pub(crate) fn read_consistently<C: ConnectionLike>(
    conn: &mut C,
    buckets: &[BucketKeys],
    with_logs: bool,
) -> Result<Option<Reading>> {
    for _ in 0..MAX_READINGS {
        let snapshots = buckets
            .iter()
            .map(|b| scripts::snapshot(conn, b))
            .collect::<Result<Vec<_>>>()?;
        let mut reading = Reading {
            snapshots,
            debits: HashMap::new(),
            credits: HashMap::new(),
            pending: Vec::new(),
        };
        if !with_logs {
            return Ok(Some(reading));
        }
        for bucket in buckets {
            for (id, record) in hscan(conn, &bucket.xfer_out)? {
                let (dest, units) = parse_log_record(&record)
                    .with_context(|| format!("bad record {record:?} in {}", bucket.xfer_out))?;
                let t = Transfer {
                    id: id.clone(),
                    source: bucket.bucket,
                    dest,
                    units,
                };
                reading.debits.insert(id, t);
            }
            for (id, record) in hscan(conn, &bucket.xfer_in)? {
                let (source, units) = parse_log_record(&record)
                    .with_context(|| format!("bad record {record:?} in {}", bucket.xfer_in))?;
                let t = Transfer {
                    id: id.clone(),
                    source,
                    dest: bucket.bucket,
                    units,
                };
                reading.credits.insert(id, t);
            }
            let pending: Vec<String> = redis::cmd("ZRANGE")
                .arg(&bucket.xfer_pending)
                .arg(0)
                .arg(-1)
                .query(conn)
                .with_context(|| format!("cannot read {}", bucket.xfer_pending))?;
            reading.pending.push(pending);
        }
        let mut unchanged = true;
        for (bucket, before) in buckets.iter().zip(&reading.snapshots) {
            let after = scripts::snapshot(conn, bucket)?;
            unchanged &= (after.out_count, after.in_count) == (before.out_count, before.in_count);
        }
        if unchanged {
            return Ok(Some(reading));
        }
    }
    Ok(None)
}

/// `--repair`: credit every transfer in transit to its destination (idempotent)
/// and ack every pending debit that is credited. Returns how many were settled.
pub(crate) fn settle_all<C: ConnectionLike>(
    conn: &mut C,
    buckets: &[BucketKeys],
    reading: &Reading,
) -> Result<u64> {
    let mut cost = BuyCost::default();
    let mut settled = 0;
    for t in reading.debits.values() {
        let pending = reading.pending[t.source as usize].contains(&t.id);
        if reading.credits.contains_key(&t.id) && !pending {
            continue;
        }
        if settle(conn, buckets, t, &mut cost)?.landed() {
            settled += 1;
        }
    }
    Ok(settled)
}

/// Every field of a hash, by HSCAN pages.
fn hscan<C: ConnectionLike>(conn: &mut C, key: &str) -> Result<Vec<(String, String)>> {
    let mut cursor: u64 = 0;
    let mut all = Vec::new();
    loop {
        let (next, pairs): (u64, Vec<(String, String)>) = redis::cmd("HSCAN")
            .arg(key)
            .arg(cursor)
            .arg("COUNT")
            .arg(PAGE)
            .query(conn)
            .with_context(|| format!("HSCAN {key} failed"))?;
        all.extend(pairs);
        if next == 0 {
            return Ok(all);
        }
        cursor = next;
    }
}
