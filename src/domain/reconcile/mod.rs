//! The nightly proof: for every item,
//!
//! ```text
//! initial stock = units in the database + units in flight + units dead-lettered + stock left in Redis
//! ```
//!
//! and the order sets agree: every order in the stream is in the database,
//! still in flight (pending, or not yet delivered to the group) or
//! dead-lettered; every database order of the item is the stream entry its
//! `stream_id` names. An entry already committed but not yet acked counts
//! once, as stored. The sum of the buyers hash must equal the units sold
//! (initial − left): a Redis failover that lost writes shows up there.
//!
//! The rows' content is checked too: each stored row's campaign, item, user,
//! qty and price must be those of its order entry (while the entry exists),
//! and the database's units must equal the stored entries' units — a row
//! changed behind the pipeline's back is drift (`content_mismatch`).
//!
//! Everything is checked as of one snapshot per slot (stock and the
//! stream's last id, read together by one script), so a sale still selling
//! and a `consume` still storing never make a balanced item look drifted:
//!
//! * "Units in the database" are those of the stream's orders found there,
//!   each entry classified once, database last: an entry is looked up in the
//!   pending list first and in the database after, and a commit cannot be
//!   undone, so a commit landing mid-check never makes one order count twice
//!   or not at all.
//! * The database's own totals are compared after the walk. When its rows
//!   (less those carried over a data loss) are exactly the stored entries —
//!   every night once the consumers are done — that proves every row is an
//!   entry and nothing more is read. Otherwise each row is checked against
//!   the streams ([`streams::check_database_against_streams`]): rows that are
//!   no stream entry are named (`not_in_redis`), rows whose entry came after
//!   the snapshot are set aside (`database_after_snapshot`), and the rest
//!   must hold the stored entries' units plus at most what was in flight or
//!   dead-lettered during the walk (committed, or re-driven, since).
//!
//! After a Redis data loss (`docs/orders.md`, "When Redis lost its data"):
//! an item Redis holds nothing of while the database holds orders whose
//! stream entries are gone is drift naming them, with `preheat --recover` as
//! the next step; after that recovery the carried-over orders are the
//! baseline ([`baseline`]) the equation balances against:
//!
//! ```text
//! initial = carried over + database + in flight + dead-lettered + left
//! ```
//!
//! An item of several slots (a bucketed item, docs/buckets.md) is checked
//! slot by slot, each slot's stream walked as a plain item's, and adds the
//! units in transit between its buckets (`transfers`):
//!
//! ```text
//! initial = Σ over slots (database + in flight + dead-lettered + left) + in transit
//! ```
//!
//! Memory stays bounded with millions of orders: the stream is read in
//! XRANGE pages and each page's order ids are looked up in the database
//! with one query; database rows, when they must be checked one by one, are
//! paged by order id and checked against the streams with one script call
//! per page (`lua/stream_order_ids.lua`); buyers are summed with HSCAN.
//! Only the dead-letter ids (the exceptions) and at most [`MAX_NAMED`]
//! offending order ids per list are held.
//!
//! A seat item (docs/seats.md) is also proved seat by seat ([`seats`]):
//! Redis's state of every seat against the orders Redis and the database
//! say hold it; a seat that does not add up is drift naming the seat.
//!
//! May import: domain::reservations, domain::orders, domain::item, domain::regions, domain::seats, redis_client, model, util.

pub(crate) mod baseline;
pub(crate) mod fence;
pub(crate) mod reservations;
pub(crate) mod seats;
pub(crate) mod streams;
pub(crate) mod transfers;

use std::sync::atomic::AtomicBool;

use anyhow::Result;
use serde::Serialize;

use crate::domain::item::SaleItem;
use crate::domain::item::{MAX_READINGS, Transfer};
use crate::domain::orders::entry::{Order, stream_id_key};
use crate::domain::orders::wire::{ReadConn, ReadsStreams};
use crate::domain::orders::{ItemTotals, OrderStore, stream};
use crate::model::layout::share;
use crate::redis_client::conn::{Conn, RedisTarget};
use crate::util::progress::Progress;
use baseline::KnownLoss;
use reservations::ReservationCheck;
use streams::{Rows, SlotWalk};
use transfers::TransferReport;

/// Stream entries / database rows handled per page.
pub(crate) const PAGE: usize = 1000;
/// Offending order ids listed per item and list (the count is always exact).
pub(crate) const MAX_NAMED: usize = 1000;

/// Entries and units of one category.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub(crate) struct Tally {
    /// Stream entries.
    pub(crate) entries: u64,
    /// Units those entries ordered.
    pub(crate) units: i64,
    /// Entries whose fields are not an order (they carry no units).
    pub(crate) unparseable: u64,
}

impl Tally {
    pub(crate) fn add(&mut self, order: Option<&Order>) {
        self.entries += 1;
        match order {
            Some(order) => self.units += order.qty,
            None => self.unparseable += 1,
        }
    }
}

/// A list of offending ids: exact count, the first [`MAX_NAMED`] named.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Named {
    /// How many there are.
    pub(crate) count: u64,
    /// The first of them, by order id.
    pub(crate) ids: Vec<String>,
}

impl Named {
    pub(crate) fn push(&mut self, id: String) {
        self.count += 1;
        if self.ids.len() < MAX_NAMED {
            self.ids.push(id);
        }
    }
}

/// The reconcile result of one item.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct ItemReport {
    /// The item id.
    pub(crate) item: String,
    /// False when the item could not be checked (see `problem`).
    pub(crate) checked: bool,
    /// Why the item could not be checked (Redis, the database, not preheated),
    /// or, with `redis_lost_data`, what the drift is.
    pub(crate) problem: Option<String>,
    /// The stock equation holds and the order sets agree.
    pub(crate) balanced: bool,
    /// Units at the start of the sale (with a recovery: Redis's start plus
    /// the units carried over).
    pub(crate) initial_stock: i64,
    /// `redis` (meta initial_stock), `file`, or `redis + recovery`.
    pub(crate) initial_stock_from: String,
    /// Units left in Redis.
    pub(crate) remaining: i64,
    /// Sum of the buyers hash.
    pub(crate) sold_per_redis: i64,
    /// Users in the buyers hash.
    pub(crate) buyers: u64,
    /// XLEN of the order stream.
    pub(crate) stream_entries: u64,
    /// Stream entries committed to the database.
    pub(crate) stored: Tally,
    /// Pending or never delivered, and not in the database.
    pub(crate) in_flight: Tally,
    /// Acked into the dead-letter stream, and not in the database.
    pub(crate) dead_lettered: Tally,
    /// XLEN of the dead-letter stream.
    pub(crate) dead_letter_stream_len: u64,
    /// Rows and units of this item in the database, read after the walk.
    pub(crate) database: ItemTotals,
    /// The database's rows were checked one by one against the streams
    /// (their totals did not equal the stored entries' at once).
    pub(crate) database_walked: bool,
    /// Rows whose stream entry came after the snapshot (stored while the
    /// check ran; known only when `database_walked`).
    pub(crate) database_after_snapshot: Rows,
    /// Orders inserted by `--repair`.
    pub(crate) repaired: u64,
    /// Orders in the stream, acked, yet neither in the database nor dead-lettered.
    pub(crate) missing_from_database: Named,
    /// Database orders whose stream entry does not exist (or is another
    /// order), carried-over orders excepted.
    pub(crate) not_in_redis: Named,
    /// Database rows whose campaign, item, user, qty or price differ from their order entry.
    pub(crate) content_mismatch: Named,
    /// Database units as of the snapshot minus the units of the stored
    /// entries (0 when the rows are intact and nothing was in flight).
    pub(crate) database_units_excess: i64,
    /// Redis holds nothing of the item (no stock, no order stream) while the
    /// database holds orders of it whose stream entries are gone (`not_in_redis`).
    pub(crate) redis_lost_data: bool,
    /// What to run next, when there is one thing to run.
    pub(crate) next_step: Option<String>,
    /// Recoveries after earlier data losses (`preheat --recover`): the
    /// orders carried over, balanced against, shown on every run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) known_loss: Option<KnownLoss>,
    /// `--fence`: what was re-applied, and whether the sale reopened.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) fence: Option<fence::FenceReport>,
    /// The equation with numbers filled in.
    pub(crate) equation: String,
    /// Orders arrived while checking: the stock equation holds at one
    /// snapshot, but the buyers sum could not be compared.
    pub(crate) sale_in_progress: bool,
    /// Reservations (`payment_timeout`): reserved / paid / released units and
    /// orders whose Redis and database states disagree.
    pub(crate) reservations: ReservationCheck,
    /// Bucketed items only (`docs/buckets.md`): the transfers between buckets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) transfers: Option<TransferReport>,
    /// Seat items only (docs/seats.md): the proof seat by seat.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) seats: Option<seats::SeatCheck>,
    /// Seat items only: the orders whose entry was in flight or
    /// dead-lettered during the walk (the database may not hold their seats
    /// yet). `None` for other items, whose walk keeps no order ids.
    #[serde(skip)]
    pub(crate) unsettled: Option<std::collections::HashSet<String>>,
}

/// What a whole reconcile run shares with each item's walk: the bar of
/// stream entries checked (each item's total is added once its snapshot is
/// read), and the flag SIGINT/SIGTERM set, checked between pages, so an
/// interrupted run stops at once with the bar cleared and concludes nothing.
#[derive(Clone, Copy)]
pub(crate) struct Run<'a> {
    pub(crate) progress: &'a Progress,
    pub(crate) stop: &'a AtomicBool,
}

impl Run<'_> {
    /// An error when the run was interrupted.
    pub(crate) fn check_stop(&self) -> Result<()> {
        if self.stop.load(std::sync::atomic::Ordering::SeqCst) {
            anyhow::bail!(
                "reconcile interrupted (SIGINT/SIGTERM): nothing was concluded, run it again"
            );
        }
        Ok(())
    }
}

/// Check one item; with `repair`, settle transfers in transit and insert
/// stream orders missing from the database on the way. `target` gives the
/// stream walk its second connection; `run` shows its progress and may stop it.
pub(crate) fn reconcile_item(
    conn: &mut Conn,
    target: &RedisTarget,
    store: &mut dyn OrderStore,
    sale: &SaleItem,
    repair: bool,
    run: Run,
) -> Result<ItemReport> {
    let (campaign, item) = (sale.campaign, sale.item);
    let slots = sale.slots();
    let moves = sale.moves_stock_between_slots();
    let mut report = ItemReport {
        item: item.id.clone(),
        unsettled: item.seating.is_some().then(Default::default),
        ..ItemReport::default()
    };
    let mut transfers = TransferReport {
        buckets: slots.len() as u32,
        ..TransferReport::default()
    };
    // One script per slot, not a pipeline: a cluster connection does not
    // pipeline, and a slot's stock and its stream's end must be read at the
    // same instant.
    let Some(mut reading) = sale.read_slots(conn)? else {
        report.problem = Some(format!(
            "transfers between the buckets of item {} kept happening through {MAX_READINGS} readings: \
             run reconcile again when the sale is quieter",
            item.id
        ));
        return Ok(report);
    };
    let recoveries = store.recoveries(&campaign.id, &item.id)?;
    if reading.snapshots.iter().any(|s| s.stock.is_none()) {
        baseline::without_stock(
            conn,
            store,
            sale,
            &reading.snapshots,
            &recoveries,
            &mut report,
        )?;
        return Ok(report);
    }
    if repair && moves {
        transfers.settled = sale.settle_in_transit(conn, &reading)?;
        if transfers.settled > 0 {
            let Some(again) = sale.read_slots(conn)? else {
                report.problem = Some("transfers kept happening after --repair".into());
                return Ok(report);
            };
            reading = again;
        }
    }
    report.checked = true;
    let from_file = reading.snapshots.iter().any(|s| s.initial_stock.is_none());
    report.initial_stock_from = if from_file { "file" } else { "redis" }.into();
    let mut reader = ReadConn::open(target)?;
    run.progress
        .grow(reading.snapshots.iter().map(|s| s.stream_len).sum());
    for (slot, snap) in slots.iter().zip(&reading.snapshots) {
        let initial = snap
            .initial_stock
            .unwrap_or_else(|| share(item.stock, slots.len() as u32, slot.bucket));
        let left = snap.stock.unwrap_or(0);
        report.initial_stock += initial;
        report.remaining += left;
        report.dead_letter_stream_len += snap.dead_len;
        report.buyers += snap.buyers;
        if moves {
            let units = |log: &std::collections::HashMap<String, Transfer>,
                         of: fn(&Transfer) -> u32| {
                log.values()
                    .filter(|t| of(t) == slot.bucket)
                    .map(|t| t.units)
                    .sum()
            };
            transfers.per_bucket.push(transfers::BucketLine {
                bucket: slot.bucket,
                initial_stock: initial,
                left,
                stream_entries: snap.stream_len,
                units_out: units(&reading.debits, |t| t.source),
                units_in: units(&reading.credits, |t| t.dest),
            });
        }
        if snap.last_order_id.is_empty() {
            report.sold_per_redis += streams::sum_buyers(conn, &slot.keys)?;
            continue;
        }
        let group = stream::group_info(conn, &slot.keys)?.unwrap_or_default();
        let mut walk = SlotWalk {
            keys: &slot.keys,
            last_delivered: stream_id_key(&group.last_delivered_id).unwrap_or((0, 0)),
            snapshot_end: &snap.last_order_id,
            dead_ids: stream::dead_original_ids(conn, &slot.keys)?,
            run,
        };
        report.sold_per_redis += streams::walk_stream(
            conn,
            &mut reader,
            store,
            campaign,
            item,
            repair,
            &mut walk,
            &mut report,
        )?;
    }
    if moves {
        transfers::check(&reading, &mut transfers);
    }
    // Between the snapshot and the streams' second reading: when no stream
    // moved, no seat did either (every seat change appends to its section's
    // stream), so the seats are read as of the snapshot.
    let seats_read = match &item.seating {
        Some(seating) => Some((seating, seats::read(conn, sale.layout(), seating)?)),
        None => None,
    };
    // The streams' ends again: when any moved, the sale is live and the
    // buyers sum (read by HSCAN pages) cannot be compared.
    for (slot, snap) in slots.iter().zip(&reading.snapshots) {
        if sale.snapshot(conn, slot)?.last_order_id != snap.last_order_id {
            report.sale_in_progress = true;
        }
    }
    if let Some((seating, read)) = seats_read {
        let unsettled = report.unsettled.take().unwrap_or_default();
        let walked = seats::Walked {
            unsettled: &unsettled,
            sale_in_progress: report.sale_in_progress,
            stock: reading.snapshots.iter().map(|s| s.stock).collect(),
        };
        report.seats = Some(seats::check(
            store,
            &campaign.id,
            &item.id,
            seating,
            read,
            &walked,
        )?);
    }
    report.database = store.item_totals(&campaign.id, &item.id)?;
    let loss = baseline::known_loss(&recoveries, &report.database);
    let as_of_snapshot = Rows {
        rows: report.database.rows - report.database.carried_rows,
        units: report.database.units - report.database.carried_units,
    };
    let stored_entries = Rows {
        rows: report.stored.entries as i64,
        units: report.stored.units,
    };
    report.database_units_excess = if as_of_snapshot == stored_entries {
        // Every row is a stored entry: nothing else to look at.
        0
    } else {
        report.database_walked = true;
        let ends: Vec<Option<(u64, u64)>> = reading
            .snapshots
            .iter()
            .map(|s| stream_id_key(&s.last_order_id))
            .collect();
        let walk = streams::check_database_against_streams(
            conn,
            store,
            &slots,
            &ends,
            campaign,
            item,
            &mut report,
        )?;
        report.database_after_snapshot = walk.after_snapshot;
        walk.as_of_snapshot.units - report.stored.units
    };

    let transit = transfers.in_transit_units;
    let carried = loss.as_ref().map_or(0, |l| l.units_carried);
    report.initial_stock += carried;
    if loss.is_some() {
        report.initial_stock_from = format!("{} + recovery", report.initial_stock_from);
    }
    // Reservations (`reservations`): released units are back in `left` of
    // the slot they came from and still in their order entries.
    let released = report.reservations.released_units;
    report.reservations.finish();
    report.reservations.buyers_keep = if campaign.rebuy_after_release {
        0
    } else {
        released
    };
    let accounted = carried
        + report.stored.units
        + report.in_flight.units
        + report.dead_lettered.units
        + report.remaining
        + transit
        - released;
    let left = match moves {
        true => format!(
            "{} left in {} buckets + {transit} in transit",
            report.remaining,
            slots.len()
        ),
        false => format!("{} left", report.remaining),
    };
    let carried_text = match carried {
        0 => String::new(),
        units => format!("{units} carried over + "),
    };
    let mut sides = format!(
        "{carried_text}{} database + {} in flight + {} dead-lettered + {left}",
        report.stored.units, report.in_flight.units, report.dead_lettered.units
    );
    if report.reservations.any() {
        let r = &report.reservations;
        sides = format!(
            "{carried_text}{left} + {} reserved + {} paid{} (order units: {} database + {} in flight + {} dead-lettered − {released} released)",
            r.reserved_units,
            r.paid_units,
            if r.confirmed_units > 0 {
                format!(" + {} confirmed", r.confirmed_units)
            } else {
                String::new()
            },
            report.stored.units,
            report.in_flight.units,
            report.dead_lettered.units,
        );
    }
    report.equation = if accounted == report.initial_stock {
        format!("{} = {sides}", report.initial_stock)
    } else {
        format!("{} ≠ {accounted} = {sides}", report.initial_stock)
    };
    let buyers_expected =
        report.initial_stock - report.remaining - transit + report.reservations.buyers_keep;
    // Entries in flight (or dead-lettered) during the walk may have been
    // committed (or re-driven) since; nothing else may add units.
    let committed_since = report.in_flight.units + report.dead_lettered.units;
    let units_agree = (0..=committed_since).contains(&report.database_units_excess);
    let baseline_intact = loss.as_ref().is_none_or(|l| l.intact);
    report.balanced = accounted == report.initial_stock
        && (report.sale_in_progress || report.sold_per_redis == buyers_expected)
        && report.missing_from_database.count == 0
        && report.not_in_redis.count == 0
        && report.reservations.state_mismatch_count == 0
        && report.content_mismatch.count == 0
        && transfers.unmatched_credits.count == 0
        && units_agree
        && baseline_intact
        && report.seats.as_ref().is_none_or(|s| s.drift_count == 0);
    report.known_loss = loss;
    report.transfers = moves.then_some(transfers);
    Ok(report)
}
