//! Walking an item's order streams against the order database: every
//! entry classified once (stored, in flight, dead-lettered, missing), every
//! database row found in a stream, the buyers summed.
//!
//! The walk is two threads: a reader on a connection of its own fetches
//! each page (XRANGE, then XPENDING over the page's ids), parses it and
//! hands it over, and meanwhile the calling thread looks the page before it
//! up in the database. Reading the pending list of a page before the
//! database looks at it is what makes the classification exact while a
//! `consume` commits (see the module above); the hand-over keeps that order
//! and the channel bounds how far the reader runs ahead, so memory stays
//! flat however long the stream.

use std::collections::{HashMap, HashSet};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use anyhow::{Context, Result, anyhow};
use redis::ConnectionLike;

use super::reservations::{WalkPosition, compare_states};
use super::{ItemReport, PAGE, Run};
use crate::domain::orders::entry::{Order, RawEntry, StreamEntry, parse_entry, stream_id_key};
use crate::domain::orders::wire::ReadConn;
use crate::domain::orders::{OrderStore, StoredContent, now_ms, stream};
use crate::model::campaign::{Campaign, Item};
use crate::model::keys::ItemKeys;
use crate::model::layout::BucketKeys;
use crate::redis_client::conn::Conn;

/// Pages the reader may hold ready ahead of the database look-ups.
const READ_AHEAD: usize = 2;

/// Stream entries per page of the walk (each page is one round trip for the
/// entries and their pending ids, and one database look-up): a few MB of
/// memory per page in flight, whatever the stream's length.
const WALK_PAGE: usize = 2000;

/// Sum of the units in a slot's buyers hash, by HSCAN pages.
pub(crate) fn sum_buyers<C: ConnectionLike>(conn: &mut C, keys: &ItemKeys) -> Result<i64> {
    let mut cursor: u64 = 0;
    let mut total = 0i64;
    loop {
        let (next, pairs): (u64, Vec<(redis::Value, i64)>) = redis::cmd("HSCAN")
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

/// One slot's stream as the walk sees it.
pub(crate) struct SlotWalk<'a> {
    pub(crate) keys: &'a ItemKeys,
    /// The group's last-delivered id, read before the walk.
    pub(crate) last_delivered: (u64, u64),
    /// The snapshot's last stream id: the walk stops there.
    pub(crate) snapshot_end: &'a str,
    /// Original ids of the dead-lettered entries, read before the walk.
    pub(crate) dead_ids: HashSet<String>,
    /// The run's bar and stop flag.
    pub(crate) run: Run<'a>,
}

/// One page, read and parsed by the reader before the database sees it.
struct Page {
    entries: Vec<RawEntry>,
    parsed: Vec<std::result::Result<StreamEntry, String>>,
    /// Ids of the page pending in the consumer group, read after the page.
    pending: HashSet<String>,
}

/// Walk one slot's stream up to its snapshot end, classifying every entry
/// into `report`; returns the units of the slot's buyers hash (summed by
/// the reader once its pages are read). `reader` is a second connection to
/// the same Redis.
#[allow(clippy::too_many_arguments)]
pub(crate) fn walk_stream(
    conn: &mut Conn,
    reader: &mut ReadConn,
    store: &mut dyn OrderStore,
    campaign: &Campaign,
    item: &Item,
    repair: bool,
    slot: &mut SlotWalk,
    report: &mut ItemReport,
) -> Result<i64> {
    let (keys, end) = (slot.keys, slot.snapshot_end);
    std::thread::scope(|scope| {
        let (pages, received) = sync_channel(READ_AHEAD);
        let reading = scope.spawn(move || read_pages(reader, keys, campaign, item, end, &pages));
        let walked = classify_pages(conn, store, repair, slot, &received, report);
        // A failed look-up ends the walk: the reader stops at its next hand-over.
        drop(received);
        let buyers = reading
            .join()
            .map_err(|_| anyhow!("the stream reader of {} panicked", keys.orders))?;
        walked?;
        buyers
    })
}

/// The reader thread: pages of `keys.orders` up to `end`, each with its
/// pending ids, then the buyers sum. Stops early when the receiver is gone.
fn read_pages(
    conn: &mut ReadConn,
    keys: &ItemKeys,
    campaign: &Campaign,
    item: &Item,
    end: &str,
    pages: &SyncSender<Result<Page>>,
) -> Result<i64> {
    let mut after = "-".to_string();
    loop {
        let page = stream::page_with_pending(conn, &keys.orders, &after, end, WALK_PAGE).map(
            |(entries, pending)| {
                let last = entries.last()?.id.clone();
                after = last;
                let parsed = entries
                    .iter()
                    .map(|e| parse_entry(e, &campaign.id, &item.id))
                    .collect();
                Some(Page {
                    entries,
                    parsed,
                    pending,
                })
            },
        );
        match page {
            Ok(Some(page)) => {
                if pages.send(Ok(page)).is_err() {
                    return Ok(0);
                }
            }
            Ok(None) => break,
            Err(error) => {
                let _ = pages.send(Err(error));
                return Ok(0);
            }
        }
    }
    sum_buyers(conn, keys)
}

/// The calling thread: each page classified against the database.
fn classify_pages(
    conn: &mut Conn,
    store: &mut dyn OrderStore,
    repair: bool,
    slot: &mut SlotWalk,
    pages: &Receiver<Result<Page>>,
    report: &mut ItemReport,
) -> Result<()> {
    for page in pages {
        slot.run.check_stop()?;
        classify_page(conn, store, repair, slot, page?, report)?;
    }
    Ok(())
}

fn classify_page(
    conn: &mut Conn,
    store: &mut dyn OrderStore,
    repair: bool,
    slot: &mut SlotWalk,
    page: Page,
    report: &mut ItemReport,
) -> Result<()> {
    let last_delivered = slot.last_delivered;
    let in_flight = |id: &str| {
        stream_id_key(id).is_some_and(|id| id > last_delivered) || page.pending.contains(id)
    };
    // State changes are counted apart: their units are not sold again.
    let mut orders: Vec<(&RawEntry, Option<Order>)> = Vec::with_capacity(page.entries.len());
    slot.run.progress.advance(page.entries.len() as u64);
    for (entry, parsed) in page.entries.iter().zip(page.parsed) {
        report.stream_entries += 1;
        match parsed {
            Ok(StreamEntry::Change(change)) => {
                report
                    .reservations
                    .add_change(&change, in_flight(&entry.id));
            }
            Ok(StreamEntry::Order(order)) => {
                report.reservations.add_order(&order);
                orders.push((entry, Some(order)));
            }
            Err(_) => orders.push((entry, None)),
        }
    }
    let ids: Vec<&str> = orders
        .iter()
        .filter_map(|(_, o)| o.as_ref().map(|o| o.order_id.as_str()))
        .collect();
    let stored = store.stored_contents(&ids)?;
    let mut unaccounted = Vec::new();
    let mut stored_orders = Vec::new();
    for (entry, order) in &orders {
        let row = order.as_ref().and_then(|o| stored.get(&o.order_id));
        if let (Some(order), Some(row)) = (order, row) {
            if !row_matches(order, row) {
                report.content_mismatch.push(order.order_id.clone());
            }
            report.stored.add(Some(order));
            stored_orders.push(order);
        } else if in_flight(&entry.id) {
            report.in_flight.add(order.as_ref());
            unsettled(report, order.as_ref());
        } else {
            unaccounted.push((*entry, order.as_ref()));
        }
    }
    if unaccounted
        .iter()
        .any(|(entry, _)| !slot.dead_ids.contains(&entry.id))
    {
        // Dead-lettered after the walk began: it was acked (so not pending)
        // before this page's XPENDING, so it is in the dead-letter stream now.
        slot.dead_ids = stream::dead_original_ids(conn, slot.keys)?;
    }
    let mut to_repair = Vec::new();
    for (entry, order) in unaccounted {
        if slot.dead_ids.contains(&entry.id) {
            report.dead_lettered.add(order);
            unsettled(report, order);
        } else if let (true, Some(order)) = (repair, order) {
            to_repair.push(order.clone());
        } else {
            let name = order.map_or_else(
                || format!("stream entry {}", entry.id),
                |o| o.order_id.clone(),
            );
            report.missing_from_database.push(name);
        }
    }
    let position = WalkPosition {
        last_delivered,
        snapshot_end: slot.snapshot_end,
        dead_ids: &slot.dead_ids,
    };
    compare_states(
        conn,
        store,
        slot.keys,
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
            slot.keys,
            &repaired,
            &position,
            true,
            &mut report.reservations,
        )?;
    }
    Ok(())
}

/// Keep an order not in the database as of the walk, for a seat item's
/// seat proof (other items keep no ids: `unsettled` is `None`).
fn unsettled(report: &mut ItemReport, order: Option<&Order>) {
    if let (Some(kept), Some(order)) = (&mut report.unsettled, order) {
        kept.insert(order.order_id.clone());
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

/// Database rows and the units they order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Rows {
    pub(crate) rows: i64,
    pub(crate) units: i64,
}

/// What the row-by-row check of the database found, beyond the names.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct DatabaseWalk {
    /// Rows whose stream entry is at or before its slot's snapshot end.
    pub(crate) as_of_snapshot: Rows,
    /// Rows whose stream entry came after the snapshot: stored while the
    /// check ran, not part of this check's equation.
    pub(crate) after_snapshot: Rows,
}

/// Every database order of the item that is not carried over a data loss
/// must be the entry its `stream_id` names in one of the slots' streams
/// (stream ids may repeat across buckets, so the order id must match too);
/// the others are named in `report.not_in_redis`. `snapshot_ends[i]` is slot
/// i's snapshot end, which splits the rows found into before and after it.
pub(crate) fn check_database_against_streams<C: ConnectionLike>(
    conn: &mut C,
    store: &mut dyn OrderStore,
    slots: &[BucketKeys],
    snapshot_ends: &[Option<(u64, u64)>],
    campaign: &Campaign,
    item: &Item,
    report: &mut ItemReport,
) -> Result<DatabaseWalk> {
    let mut walk = DatabaseWalk::default();
    let mut after = String::new();
    loop {
        let rows = store.item_orders_after(&campaign.id, &item.id, &after, PAGE)?;
        let Some(last) = rows.last() else {
            return Ok(walk);
        };
        after = last.order_id.clone();
        let rows: Vec<_> = rows.into_iter().filter(|r| !r.carried).collect();
        // Distinct ids: two buckets' orders may carry the same stream id.
        let mut stream_ids: Vec<&str> = rows.iter().map(|r| r.stream_id.as_str()).collect();
        stream_ids.sort_unstable();
        stream_ids.dedup();
        // Where each row was found: the snapshot end of that slot.
        let mut found: Vec<Option<Option<(u64, u64)>>> = vec![None; rows.len()];
        for (slot, end) in slots.iter().zip(snapshot_ends) {
            if stream_ids.is_empty() {
                break;
            }
            let here = stream::order_ids_at(conn, &slot.keys.orders, &stream_ids)?;
            let here: HashMap<&str, Option<String>> =
                stream_ids.iter().copied().zip(here).collect();
            for (row, found) in rows.iter().zip(found.iter_mut()) {
                let matches = here
                    .get(row.stream_id.as_str())
                    .is_some_and(|order_id| order_id.as_deref() == Some(row.order_id.as_str()));
                if matches && found.is_none() {
                    *found = Some(*end);
                }
            }
        }
        for (row, found) in rows.iter().zip(found) {
            let Some(end) = found else {
                report.not_in_redis.push(row.order_id.clone());
                continue;
            };
            let id = stream_id_key(&row.stream_id);
            let side = match (id, end) {
                (Some(id), Some(end)) if id <= end => &mut walk.as_of_snapshot,
                _ => &mut walk.after_snapshot,
            };
            side.rows += 1;
            side.units += row.qty;
        }
    }
}
