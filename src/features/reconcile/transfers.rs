//! The nightly proof for a bucketed item (`docs/buckets.md`, "reconcile"):
//!
//! ```text
//! initial = Σ over buckets (database + in flight + dead-lettered + left) + in transit
//! ```
//!
//! Each bucket's order stream is walked exactly as a plain item's stream
//! (`orders::reconcile::walk_stream`). The transfer logs are compared: a
//! debit (`xfer_out`) whose id is in no `xfer_in` of its destination is in
//! transit; a credit without its debit is drift (units from nowhere), and so
//! is a credit whose units or source disagree with its debit. Buckets are
//! read one after another, so the transfer counts are read again at the end
//! and the whole reading is repeated when a transfer happened meanwhile.

use std::collections::HashMap;

use anyhow::{Context, Result};
use redis::ConnectionLike;
use serde::Serialize;

use crate::domain::buckets::buy::{BuyCost, settle};
use crate::domain::buckets::scripts::{self, Credited, Snapshot, Transfer, parse_log_record};
use crate::domain::buckets::{BucketKeys, Layout};
use crate::domain::orders::entry::stream_id_key;
use crate::domain::orders::{OrderStore, stream};
use crate::features::reconcile::{ItemReport, Named, PAGE, sum_buyers, walk_stream};
use crate::model::campaign::{Campaign, Item};

/// Readings repeated at most this often while transfers keep happening.
pub const MAX_READINGS: usize = 5;

/// The transfer side of a bucketed item's reconcile.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TransferReport {
    pub buckets: u32,
    /// Transfers ever made (debits logged).
    pub transfers: u64,
    /// Units debited and not (yet) credited.
    pub in_transit_units: i64,
    /// Their transfer ids.
    pub in_transit: Named,
    /// Credits with no matching debit (units from nowhere): drift.
    pub unmatched_credits: Named,
    /// Transfers `--repair` settled (credited now, or only acked).
    pub settled: u64,
    pub per_bucket: Vec<BucketLine>,
}

/// One bucket's numbers.
#[derive(Debug, Clone, Default, Serialize)]
pub struct BucketLine {
    pub bucket: u32,
    pub initial_stock: i64,
    pub left: i64,
    pub stream_entries: u64,
    pub units_out: i64,
    pub units_in: i64,
}

/// One consistent reading of every bucket and the transfer logs.
struct Reading {
    snapshots: Vec<Snapshot>,
    /// Debits: transfer id → transfer.
    debits: HashMap<String, Transfer>,
    /// Credits: transfer id → (source, dest, units).
    credits: HashMap<String, Transfer>,
    /// Pending debits per bucket (ids).
    pending: Vec<Vec<String>>,
}

/// Check a bucketed item; with `repair`, settle transfers in transit and
/// insert stream orders missing from the database.
pub fn reconcile_item<C: ConnectionLike>(
    conn: &mut C,
    store: &mut dyn OrderStore,
    campaign: &Campaign,
    item: &Item,
    repair: bool,
) -> Result<ItemReport> {
    let layout = Layout::live(&campaign.id, item);
    let buckets = layout.all();
    let mut report = ItemReport {
        item: item.id.clone(),
        ..ItemReport::default()
    };
    let mut transfers = TransferReport {
        buckets: layout.buckets,
        ..TransferReport::default()
    };
    let Some(mut reading) = read_consistently(conn, &buckets)? else {
        report.problem = Some(format!(
            "transfers between the buckets of item {} kept happening through {MAX_READINGS} readings: \
             run reconcile again when the sale is quieter",
            item.id
        ));
        return Ok(report);
    };
    if let Some(missing) = reading.snapshots.iter().position(|s| s.stock.is_none()) {
        report.problem = Some(format!(
            "bucket {missing} of item {} is not preheated or its keys expired (no {}): nothing to check against",
            item.id, buckets[missing].keys.stock
        ));
        return Ok(report);
    }
    if repair {
        transfers.settled = settle_all(conn, &buckets, &reading)?;
        if transfers.settled > 0 {
            let Some(again) = read_consistently(conn, &buckets)? else {
                report.problem = Some("transfers kept happening after --repair".into());
                return Ok(report);
            };
            reading = again;
        }
    }
    report.checked = true;
    report.initial_stock_from = "redis".into();
    for (bucket, snap) in buckets.iter().zip(&reading.snapshots) {
        let initial = snap.initial_stock.unwrap_or(0);
        let left = snap.stock.unwrap_or(0);
        report.initial_stock += initial;
        report.remaining += left;
        report.dead_letter_stream_len += snap.dead_len;
        report.buyers += snap.buyers;
        report.sold_per_redis += sum_buyers(conn, &bucket.keys)?;
        let units = |log: &HashMap<String, Transfer>, of: fn(&Transfer) -> u32| {
            log.values()
                .filter(|t| of(t) == bucket.bucket)
                .map(|t| t.units)
                .sum()
        };
        transfers.per_bucket.push(BucketLine {
            bucket: bucket.bucket,
            initial_stock: initial,
            left,
            stream_entries: snap.stream_len,
            units_out: units(&reading.debits, |t| t.source),
            units_in: units(&reading.credits, |t| t.dest),
        });
        walk_bucket(
            conn,
            store,
            bucket,
            campaign,
            item,
            repair,
            snap,
            &mut report,
        )?;
    }
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
    // The streams' ends again: when any moved, the sale is live and the
    // buyers sum (read by HSCAN pages) cannot be compared.
    for (bucket, snap) in buckets.iter().zip(&reading.snapshots) {
        if scripts::snapshot(conn, bucket)?.last_order_id != snap.last_order_id {
            report.sale_in_progress = true;
        }
    }
    report.database = store.item_totals(&campaign.id, &item.id)?;
    check_database_against_streams(conn, store, &buckets, campaign, item, &mut report)?;

    let transit = transfers.in_transit_units;
    // Reservations (`reservations::reconcile`): released units are back in
    // `left` of the bucket they came from and still in their order entries.
    let released = report.reservations.released_units;
    report.reservations.finish();
    report.reservations.buyers_keep = if campaign.rebuy_after_release {
        0
    } else {
        released
    };
    let accounted = report.stored.units
        + report.in_flight.units
        + report.dead_lettered.units
        + report.remaining
        + transit
        - released;
    let mut sides = format!(
        "{} database + {} in flight + {} dead-lettered + {} left in {} buckets + {transit} in transit",
        report.stored.units,
        report.in_flight.units,
        report.dead_lettered.units,
        report.remaining,
        layout.buckets
    );
    if report.reservations.any() {
        let r = &report.reservations;
        sides = format!(
            "{} left in {} buckets + {transit} in transit + {} reserved + {} paid (order units: {} database + {} in flight + {} dead-lettered − {released} released)",
            report.remaining,
            layout.buckets,
            r.reserved_units,
            r.paid_units,
            report.stored.units,
            report.in_flight.units,
            report.dead_lettered.units
        );
    }
    report.equation = if accounted == report.initial_stock {
        format!("{} = {sides}", report.initial_stock)
    } else {
        format!("{} ≠ {accounted} = {sides}", report.initial_stock)
    };
    report.balanced = accounted == report.initial_stock
        && (report.sale_in_progress
            || report.sold_per_redis
                == report.initial_stock - report.remaining - transit
                    + report.reservations.buyers_keep)
        && report.missing_from_database.count == 0
        && report.not_in_redis.count == 0
        && report.reservations.state_mismatch_count == 0
        && transfers.unmatched_credits.count == 0;
    report.transfers = Some(transfers);
    Ok(report)
}

/// Read every bucket, then both transfer logs, then every bucket's log sizes
/// again; `None` when they changed in each of [`MAX_READINGS`] tries.
fn read_consistently<C: ConnectionLike>(
    conn: &mut C,
    buckets: &[BucketKeys],
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
fn settle_all<C: ConnectionLike>(
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

#[allow(clippy::too_many_arguments)]
fn walk_bucket<C: ConnectionLike>(
    conn: &mut C,
    store: &mut dyn OrderStore,
    bucket: &BucketKeys,
    campaign: &Campaign,
    item: &Item,
    repair: bool,
    snap: &Snapshot,
    report: &mut ItemReport,
) -> Result<()> {
    if snap.last_order_id.is_empty() {
        return Ok(());
    }
    let group = stream::group_info(conn, &bucket.keys)?.unwrap_or_default();
    let last_delivered = stream_id_key(&group.last_delivered_id).unwrap_or((0, 0));
    let dead_ids = stream::dead_original_ids(conn, &bucket.keys)?;
    walk_stream(
        conn,
        store,
        &bucket.keys,
        campaign,
        item,
        repair,
        (last_delivered, &snap.last_order_id),
        &dead_ids,
        report,
    )
}

/// Every database order of the item must be the entry its `stream_id` names
/// in one of the buckets' streams (stream ids may repeat across buckets, so
/// the order id must match too).
fn check_database_against_streams<C: ConnectionLike>(
    conn: &mut C,
    store: &mut dyn OrderStore,
    buckets: &[BucketKeys],
    campaign: &Campaign,
    item: &Item,
    report: &mut ItemReport,
) -> Result<()> {
    let mut after = String::new();
    loop {
        let rows = store.item_orders_after(&campaign.id, &item.id, &after, PAGE)?;
        let Some(last) = rows.last() else {
            return Ok(());
        };
        after = last.order_id.clone();
        // Distinct ids: two buckets' orders may carry the same stream id.
        let mut stream_ids: Vec<&str> = rows.iter().map(|r| r.stream_id.as_str()).collect();
        stream_ids.sort_unstable();
        stream_ids.dedup();
        let mut found = vec![false; rows.len()];
        for bucket in buckets {
            let here = stream::order_ids_at(conn, &bucket.keys.orders, &stream_ids)?;
            let here: HashMap<&str, Option<String>> =
                stream_ids.iter().copied().zip(here).collect();
            for (row, found) in rows.iter().zip(found.iter_mut()) {
                *found |= here
                    .get(row.stream_id.as_str())
                    .is_some_and(|order_id| order_id.as_deref() == Some(row.order_id.as_str()));
            }
        }
        for (row, found) in rows.iter().zip(found) {
            if !found {
                report.not_in_redis.push(row.order_id.clone());
            }
        }
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
