//! Reconcile after Redis lost its data (`docs/orders.md`, "When Redis lost
//! its data").
//!
//! Before the recovery: an item Redis holds nothing of — no stock key and
//! no order stream, which never expires — while the order database holds
//! orders of it that are in no stream is drift, not "could not check": the
//! orders' stream entries are provably gone, and with them every order
//! acknowledged but not yet stored. The orders are named and the next step
//! is `preheat --recover`.
//!
//! After it: the recovery's records (`seckill_recoveries`) and the rows it
//! marked carried over (`orders.recovered_at`) are the baseline. They are
//! balanced against — `initial = carried over + the new stream's orders +
//! left` — and shown as a known loss on every run, not paged on. The
//! baseline itself is checked: the carried rows in the database must be
//! exactly those the recoveries recorded (rows and units), so a carried
//! order deleted or changed later is drift again.

use anyhow::Result;
use redis::ConnectionLike;
use serde::Serialize;

use super::ItemReport;
use super::streams::check_database_against_streams;
use crate::domain::item::SaleItem;
use crate::domain::item::Snapshot;
use crate::domain::orders::entry::stream_id_key;
use crate::domain::orders::{ItemTotals, OrderStore, Recovery};

/// The recoveries of one item and whether the rows they carried are intact.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct KnownLoss {
    /// Each `preheat --recover` of the item, oldest first.
    pub(crate) recoveries: Vec<Recovery>,
    /// Orders the recoveries carried over (their stream entries were lost).
    pub(crate) rows_carried: i64,
    /// Their units: part of the equation.
    pub(crate) units_carried: i64,
    /// Rows the database marks carried over now.
    pub(crate) database_rows: i64,
    /// Their units now.
    pub(crate) database_units: i64,
    /// The database's carried rows are exactly what the recoveries recorded.
    pub(crate) intact: bool,
}

/// The item's known loss, `None` when it was never recovered (and no row
/// claims it was).
pub(crate) fn known_loss(recoveries: &[Recovery], database: &ItemTotals) -> Option<KnownLoss> {
    if recoveries.is_empty() && database.carried_rows == 0 {
        return None;
    }
    let rows_carried = recoveries.iter().map(|r| r.rows_carried).sum();
    let units_carried = recoveries.iter().map(|r| r.units_carried).sum();
    Some(KnownLoss {
        recoveries: recoveries.to_vec(),
        rows_carried,
        units_carried,
        database_rows: database.carried_rows,
        database_units: database.carried_units,
        intact: (rows_carried, units_carried) == (database.carried_rows, database.carried_units),
    })
}

/// An item with a slot whose stock key is missing: drift when Redis lost
/// its data under stored orders, else "could not check" (never preheated,
/// or its keys expired: the stream outlives them).
pub(crate) fn without_stock<C: ConnectionLike>(
    conn: &mut C,
    store: &mut dyn OrderStore,
    sale: &SaleItem,
    snapshots: &[Snapshot],
    recoveries: &[Recovery],
    report: &mut ItemReport,
) -> Result<()> {
    let (campaign, item) = (sale.campaign, sale.item);
    let slots = sale.slots();
    let stockless: Vec<usize> = (0..snapshots.len())
        .filter(|&i| snapshots[i].stock.is_none())
        .collect();
    let streams_gone = stockless.iter().all(|&i| snapshots[i].stream_len == 0);
    let database = store.item_totals(&campaign.id, &item.id)?;
    if streams_gone && database.rows > database.carried_rows {
        let ends: Vec<Option<(u64, u64)>> = snapshots
            .iter()
            .map(|s| stream_id_key(&s.last_order_id))
            .collect();
        check_database_against_streams(conn, store, &slots, &ends, campaign, item, report)?;
    }
    report.known_loss = known_loss(recoveries, &database);
    report.database = database;
    if report.not_in_redis.count > 0 {
        let every_slot = stockless.len() == slots.len();
        report.checked = true;
        report.redis_lost_data = true;
        let holds = match sale.bucket_of(&slots[stockless[0]]) {
            Some(_) => format!(
                "{} of the {} buckets of item {}",
                stockless.len(),
                slots.len(),
                item.id
            ),
            None => format!("item {}", item.id),
        };
        report.problem = Some(format!(
            "Redis holds nothing of {holds} (no stock key, no order stream) but the order \
             database holds {} order(s) of it that are in no stream: Redis lost its data (a \
             restart without persistence, a failover to an empty replica, a flush), or this is \
             not the Redis the sale ran on (check --redis). The order stream never expires, so \
             their entries are gone, and with them every order acknowledged but not yet stored",
            report.not_in_redis.count
        ));
        let file = campaign.path.display();
        report.next_step = Some(match every_slot {
            true => format!(
                "seckill -c {file} preheat --recover: it loads what is left (the stock less every \
                 unit stored), restores the buyers and records these orders as carried over, and \
                 reconcile balances against them from then on"
            ),
            false => format!(
                "seckill -c {file} shutdown-switch on --item {}: close the item, let `consume` \
                 store what the surviving buckets hold, then follow docs/buckets.md, \"Recovery \
                 after data loss\" (`--recover` refuses a partial loss)",
                item.id
            ),
        });
        return Ok(());
    }
    let slot = &slots[stockless[0]];
    let carried = match report.known_loss.as_ref() {
        Some(loss) => format!(
            "; the order database holds only the {} order(s) earlier recoveries carried over: \
             if Redis lost its data again, `seckill preheat --recover` loads the item again",
            loss.database_rows
        ),
        None => String::new(),
    };
    report.problem = Some(match sale.bucket_of(slot) {
        Some(b) => format!(
            "bucket {b} of item {} is not preheated or its keys expired (no {}): nothing to check against{carried}",
            item.id, slot.keys.stock
        ),
        None => format!(
            "item {} is not preheated or its keys expired (no {}): nothing to check against{carried}",
            item.id, slot.keys.stock
        ),
    });
    Ok(())
}
