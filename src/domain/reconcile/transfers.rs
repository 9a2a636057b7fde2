//! The transfer side of a bucketed item's reconcile (`docs/buckets.md`,
//! "reconcile"): a debit (`xfer_out`) whose id is in no `xfer_in` of its
//! destination is in transit; a credit without its debit is drift (units
//! from nowhere), and so is a credit whose units or source disagree with its
//! debit. Slots are read one after another, so the transfer counts are read
//! again at the end and the whole reading repeated when a transfer happened
//! meanwhile. An item whose stock never moves between slots (a plain item)
//! reads its one snapshot and no log.

use std::collections::HashMap;

use anyhow::{Context, Result};
use redis::ConnectionLike;
use serde::Serialize;

use super::{Named, PAGE};
use crate::domain::buckets::buy::{BuyCost, settle};
use crate::domain::buckets::scripts::{self, Credited, Snapshot, Transfer, parse_log_record};
use crate::model::layout::BucketKeys;

/// Readings repeated at most this often while transfers keep happening.
pub(crate) const MAX_READINGS: usize = 5;

/// The transfer side of a bucketed item's reconcile.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct TransferReport {
    pub(crate) buckets: u32,
    /// Transfers ever made (debits logged).
    pub(crate) transfers: u64,
    /// Units debited and not (yet) credited.
    pub(crate) in_transit_units: i64,
    /// Their transfer ids.
    pub(crate) in_transit: Named,
    /// Credits with no matching debit (units from nowhere): drift.
    pub(crate) unmatched_credits: Named,
    /// Transfers `--repair` settled (credited now, or only acked).
    pub(crate) settled: u64,
    pub(crate) per_bucket: Vec<BucketLine>,
}

/// One bucket's numbers.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct BucketLine {
    pub(crate) bucket: u32,
    pub(crate) initial_stock: i64,
    pub(crate) left: i64,
    pub(crate) stream_entries: u64,
    pub(crate) units_out: i64,
    pub(crate) units_in: i64,
}

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
        if settle(conn, buckets, t, &mut cost)? != Credited::NotPreheated {
            settled += 1;
        }
    }
    Ok(settled)
}

/// Compare the debits and credits of a reading: what is in transit, what
/// was credited without its debit.
pub(crate) fn check(reading: &Reading, transfers: &mut TransferReport) {
    transfers.transfers = reading.debits.len() as u64;
    let mut in_transit: Vec<&Transfer> = reading
        .debits
        .values()
        .filter(|t| !reading.credits.contains_key(&t.id))
        .collect();
    in_transit.sort_by(|a, b| a.id.cmp(&b.id));
    for t in in_transit {
        transfers.in_transit_units += t.units;
        transfers.in_transit.push(format!(
            "{} ({} unit(s), bucket {} → {})",
            t.id, t.units, t.source, t.dest
        ));
    }
    let mut unmatched: Vec<&Transfer> = reading
        .credits
        .values()
        .filter(|c| reading.debits.get(&c.id) != Some(*c))
        .collect();
    unmatched.sort_by(|a, b| a.id.cmp(&b.id));
    for c in unmatched {
        transfers.unmatched_credits.push(format!(
            "{} ({} unit(s) credited to bucket {} from {})",
            c.id, c.units, c.dest, c.source
        ));
    }
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
