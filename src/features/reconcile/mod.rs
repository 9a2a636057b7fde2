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
//! changed behind the pipeline's back is drift (`content_mismatch`). With
//! orders in flight during the check, a `consume` may commit some of them
//! after the stream walk: then the database may hold up to that many more
//! units, never fewer and never more.
//!
//! "Units in the database" are those of the stream's orders found there,
//! each entry classified once, database last: an entry is looked up in the
//! pending list first and in the database after, and a commit cannot be
//! undone, so a `consume` running during the check never makes one order
//! count twice or not at all. Database rows that are no stream entry are
//! caught by the second check and named.
//!
//! Memory stays bounded with millions of orders: the stream is read in
//! XRANGE pages and each page's order ids are looked up in the database
//! with one query; database rows are paged by order id and checked against
//! the stream with one script call per page (`lua/stream_order_ids.lua`); buyers are summed with HSCAN.
//! Only the dead-letter ids (the exceptions) and at most [`MAX_NAMED`]
//! offending order ids per list are held.

pub mod reservations;
pub mod transfers;

use std::collections::HashSet;

use anyhow::{Context, Result};
use redis::{Commands, ConnectionLike};
use serde::Serialize;

use crate::domain::orders::entry::{Order, StreamEntry, parse_entry, stream_id_key};
use crate::domain::orders::{ItemTotals, OrderStore, StoredContent, now_ms, stream};
use crate::features::reconcile::reservations::{ReservationCheck, WalkPosition, compare_states};
use crate::model::campaign::{Campaign, Item};
use crate::model::keys::ItemKeys;
use crate::redis_client::scripts::ScriptCall;
use crate::redis_client::scripts::reconcile_snapshot::{self, ReconcileSnapshot};

/// Stream entries / database rows handled per page.
pub const PAGE: usize = 1000;
/// Offending order ids listed per item and list (the count is always exact).
pub const MAX_NAMED: usize = 1000;

/// Entries and units of one category.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Tally {
    /// Stream entries.
    pub entries: u64,
    /// Units those entries ordered.
    pub units: i64,
    /// Entries whose fields are not an order (they carry no units).
    pub unparseable: u64,
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
pub struct Named {
    /// How many there are.
    pub count: u64,
    /// The first of them, by order id.
    pub ids: Vec<String>,
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
pub struct ItemReport {
    /// The item id.
    pub item: String,
    /// False when the item could not be checked (see `problem`).
    pub checked: bool,
    /// Why the item could not be checked (Redis, the database, not preheated).
    pub problem: Option<String>,
    /// The stock equation holds and the order sets agree.
    pub balanced: bool,
    /// Units at the start of the sale.
    pub initial_stock: i64,
    /// `redis` (meta initial_stock) or `file`.
    pub initial_stock_from: String,
    /// Units left in Redis.
    pub remaining: i64,
    /// Sum of the buyers hash.
    pub sold_per_redis: i64,
    /// Users in the buyers hash.
    pub buyers: u64,
    /// XLEN of the order stream.
    pub stream_entries: u64,
    /// Stream entries committed to the database.
    pub stored: Tally,
    /// Pending or never delivered, and not in the database.
    pub in_flight: Tally,
    /// Acked into the dead-letter stream, and not in the database.
    pub dead_lettered: Tally,
    /// XLEN of the dead-letter stream.
    pub dead_letter_stream_len: u64,
    /// Rows and units of this item in the database.
    pub database: ItemTotals,
    /// Orders inserted by `--repair`.
    pub repaired: u64,
    /// Orders in the stream, acked, yet neither in the database nor dead-lettered.
    pub missing_from_database: Named,
    /// Database orders whose stream entry does not exist (or is another order).
    pub not_in_redis: Named,
    /// Database rows whose campaign, item, user, qty or price differ from their order entry.
    pub content_mismatch: Named,
    /// Database units minus the units of the stored entries (0 when the rows are intact).
    pub database_units_excess: i64,
    /// The equation with numbers filled in.
    pub equation: String,
    /// Orders arrived while checking: the stock equation holds at one
    /// snapshot, but the buyers sum could not be compared.
    pub sale_in_progress: bool,
    /// Reservations (`payment_timeout`): reserved / paid / released units and
    /// orders whose Redis and database states disagree.
    pub reservations: ReservationCheck,
    /// Bucketed items only (`docs/buckets.md`): the transfers between buckets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfers: Option<crate::features::reconcile::transfers::TransferReport>,
}

/// Check one item; with `repair`, insert stream orders missing from the database on the way.
pub fn reconcile_item<C: ConnectionLike>(
    conn: &mut C,
    store: &mut dyn OrderStore,
    campaign: &Campaign,
    item: &Item,
    repair: bool,
) -> Result<ItemReport> {
    if item.buckets > 1 {
        return crate::features::reconcile::transfers::reconcile_item(
            conn, store, campaign, item, repair,
        );
    }
    let keys = ItemKeys::live(&campaign.id, &item.id);
    let mut report = ItemReport {
        item: item.id.clone(),
        ..ItemReport::default()
    };
    // One script, not a pipeline: a cluster connection does not pipeline, and
    // stock and the stream's end must be read at the same instant.
    let (initial, stock, dead_len, snapshot_end) = snapshot(conn, &keys)?;
    let Some(remaining) = stock else {
        report.problem = Some(format!(
            "item {} is not preheated or its keys expired (no {}): nothing to check against",
            item.id, keys.stock
        ));
        return Ok(report);
    };
    report.checked = true;
    report.remaining = remaining;
    (report.initial_stock, report.initial_stock_from) = match initial {
        Some(n) => (n, "redis".into()),
        None => (item.stock, "file".into()),
    };
    report.dead_letter_stream_len = dead_len;
    report.buyers = conn
        .hlen(&keys.buyers)
        .with_context(|| format!("cannot read {}", keys.buyers))?;
    report.sold_per_redis = sum_buyers(conn, &keys)?;
    // Buyers cannot be read atomically with the stock (HSCAN pages): when the
    // stream grew meanwhile, the sale is live and that comparison is skipped.
    let (_, _, _, end_after_buyers) = snapshot(conn, &keys)?;
    report.sale_in_progress = end_after_buyers != snapshot_end;

    let group = stream::group_info(conn, &keys)?.unwrap_or_default();
    let last_delivered = stream_id_key(&group.last_delivered_id).unwrap_or((0, 0));
    let dead_ids = stream::dead_original_ids(conn, &keys)?;
    if !snapshot_end.is_empty() {
        walk_stream(
            conn,
            store,
            &keys,
            campaign,
            item,
            repair,
            (last_delivered, &snapshot_end),
            &dead_ids,
            &mut report,
        )?;
    }
    report.database = store.item_totals(&campaign.id, &item.id)?;
    check_database_against_stream(conn, store, &keys, campaign, item, &mut report)?;

    // Released units are back in `left` and still in their order entries.
    let released = report.reservations.released_units;
    report.reservations.finish();
    let accounted = report.stored.units
        + report.in_flight.units
        + report.dead_lettered.units
        + report.remaining
        - released;
    let mut sides = format!(
        "{} database + {} in flight + {} dead-lettered + {} left",
        report.stored.units, report.in_flight.units, report.dead_lettered.units, report.remaining
    );
    if report.reservations.any() {
        let r = &report.reservations;
        sides = format!(
            "{} left + {} reserved + {} paid{} (order units: {} database + {} in flight + {} dead-lettered − {released} released)",
            report.remaining,
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
    // The buyers hash holds released units too when users may not buy again.
    report.reservations.buyers_keep = if campaign.rebuy_after_release {
        0
    } else {
        released
    };
    let buyers_expected = report.initial_stock - report.remaining + report.reservations.buyers_keep;
    report.database_units_excess = report.database.units - report.stored.units;
    // Entries in flight during the walk may have been committed since.
    let units_agree = (0..=report.in_flight.units).contains(&report.database_units_excess);
    report.balanced = accounted == report.initial_stock
        && (report.sale_in_progress || report.sold_per_redis == buyers_expected)
        && report.missing_from_database.count == 0
        && report.not_in_redis.count == 0
        && report.reservations.state_mismatch_count == 0
        && report.content_mismatch.count == 0
        && units_agree;
    Ok(report)
}

/// (initial stock, stock, dead-letter length, order stream's last id or ""),
/// read in one script: stock and the stream's end always agree.
fn snapshot<C: ConnectionLike>(
    conn: &mut C,
    keys: &ItemKeys,
) -> Result<(Option<i64>, Option<i64>, u64, String)> {
    let call = ReconcileSnapshot {
        meta: keys.meta.as_str(),
        stock: keys.stock.as_str(),
        orders: keys.orders.as_str(),
        dead: keys.dead.as_str(),
    };
    let snapshot = call
        .invoke(conn)
        .map_err(anyhow::Error::from)
        .and_then(reconcile_snapshot::parse_reply)
        .with_context(|| format!("cannot read the state of {}", keys.base))?;
    Ok((
        snapshot.initial_stock,
        snapshot.stock,
        snapshot.dead_len,
        snapshot.last_order_stream_id,
    ))
}

pub(crate) fn sum_buyers<C: ConnectionLike>(conn: &mut C, keys: &ItemKeys) -> Result<i64> {
    let mut cursor: u64 = 0;
    let mut total = 0i64;
    loop {
        let (next, pairs): (u64, Vec<(String, i64)>) = redis::cmd("HSCAN")
            .arg(&keys.buyers)
            .arg(cursor)
            .arg("COUNT")
            .arg(PAGE)
            .query(conn)
            .with_context(|| format!("HSCAN {} failed", keys.buyers))?;
        total += pairs.iter().map(|(_, units)| units).sum::<i64>();
        if next == 0 {
            return Ok(total);
        }
        cursor = next;
    }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn walk_stream<C: ConnectionLike>(
    conn: &mut C,
    store: &mut dyn OrderStore,
    keys: &ItemKeys,
    campaign: &Campaign,
    item: &Item,
    repair: bool,
    (last_delivered, snapshot_end): ((u64, u64), &str),
    dead_ids: &HashSet<String>,
    report: &mut ItemReport,
) -> Result<()> {
    let mut after = "-".to_string();
    loop {
        let page = stream::range_after(conn, &keys.orders, &after, snapshot_end, PAGE)?;
        let (Some(first), Some(last)) = (page.first(), page.last()) else {
            return Ok(());
        };
        let pending = stream::pending_ids_between(conn, &keys.orders, &first.id, &last.id)?;
        let undelivered = |id: &str| stream_id_key(id).is_some_and(|id| id > last_delivered);
        // State changes are counted apart: their units are not sold again.
        let mut orders: Vec<Option<Order>> = Vec::with_capacity(page.len());
        let mut entries = Vec::with_capacity(page.len());
        for entry in &page {
            match parse_entry(entry, &campaign.id, &item.id) {
                Ok(StreamEntry::Change(change)) => {
                    let in_flight = undelivered(&entry.id) || pending.contains(&entry.id);
                    report.reservations.add_change(&change, in_flight);
                    report.stream_entries += 1;
                }
                parsed => {
                    let order = match parsed {
                        Ok(StreamEntry::Order(order)) => Some(order),
                        _ => None,
                    };
                    if let Some(order) = &order {
                        report.reservations.add_order(order);
                    }
                    orders.push(order);
                    entries.push(entry);
                }
            }
        }
        let ids: Vec<&str> = orders
            .iter()
            .flatten()
            .map(|o| o.order_id.as_str())
            .collect();
        let stored = store.stored_contents(&ids)?;
        let mut to_repair = Vec::new();
        let mut stored_orders = Vec::new();
        for (entry, order) in entries.iter().zip(&orders) {
            report.stream_entries += 1;
            let row = order.as_ref().and_then(|o| stored.get(&o.order_id));
            if let (Some(order), Some(row)) = (order, row)
                && !row_matches(order, row)
            {
                report.content_mismatch.push(order.order_id.clone());
            }
            let in_database = row.is_some();
            if in_database {
                report.stored.add(order.as_ref());
                stored_orders.extend(order.as_ref());
            } else if undelivered(&entry.id) || pending.contains(&entry.id) {
                report.in_flight.add(order.as_ref());
            } else if dead_ids.contains(&entry.id) {
                report.dead_lettered.add(order.as_ref());
            } else if let (true, Some(order)) = (repair, order) {
                to_repair.push(order.clone());
            } else {
                let name = order.as_ref().map_or_else(
                    || format!("stream entry {}", entry.id),
                    |o| o.order_id.clone(),
                );
                report.missing_from_database.push(name);
            }
        }
        let position = WalkPosition {
            last_delivered,
            snapshot_end,
            dead_ids,
        };
        compare_states(
            conn,
            store,
            keys,
            &stored_orders,
            &position,
            repair,
            &mut report.reservations,
        )?;
        if !to_repair.is_empty() {
            report.repaired += store.insert_orders(&to_repair, now_ms())?;
            for order in &to_repair {
                report.stored.add(Some(order));
            }
            // A repaired reservation starts `reserved`: bring it to Redis's state.
            let repaired: Vec<&Order> = to_repair.iter().collect();
            compare_states(
                conn,
                store,
                keys,
                &repaired,
                &position,
                true,
                &mut report.reservations,
            )?;
        }
        after = last.id.clone();
    }
}

/// A row says what its order entry says.
fn row_matches(order: &Order, row: &StoredContent) -> bool {
    row.campaign == order.campaign
        && row.item_id == order.item_id
        && row.user_id == order.user_id
        && row.qty == order.qty
        && row.price_cents == order.price_cents
}

fn check_database_against_stream<C: ConnectionLike>(
    conn: &mut C,
    store: &mut dyn OrderStore,
    keys: &ItemKeys,
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
        let stream_ids: Vec<&str> = rows.iter().map(|r| r.stream_id.as_str()).collect();
        let found = stream::order_ids_at(conn, &keys.orders, &stream_ids)?;
        for (row, order_id) in rows.iter().zip(found) {
            if order_id.as_deref() != Some(row.order_id.as_str()) {
                report.not_in_redis.push(row.order_id.clone());
            }
        }
    }
}
