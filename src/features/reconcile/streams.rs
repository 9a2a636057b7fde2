//! Walking an item's order streams against the order database: every
//! entry classified once (stored, in flight, dead-lettered, missing), every
//! database row found in a stream, the buyers summed.

use std::collections::{HashMap, HashSet};

use anyhow::{Context, Result};
use redis::ConnectionLike;

use super::reservations::{WalkPosition, compare_states};
use super::{ItemReport, PAGE};
use crate::domain::orders::entry::{Order, StreamEntry, parse_entry, stream_id_key};
use crate::domain::orders::{OrderStore, StoredContent, now_ms, stream};
use crate::model::campaign::{Campaign, Item};
use crate::model::keys::ItemKeys;
use crate::model::layout::BucketKeys;

/// Sum of the units in a slot's buyers hash, by HSCAN pages.
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

/// Every database order of the item must be the entry its `stream_id` names
/// in one of the buckets' streams (stream ids may repeat across buckets, so
/// the order id must match too).
pub(crate) fn check_database_against_streams<C: ConnectionLike>(
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
