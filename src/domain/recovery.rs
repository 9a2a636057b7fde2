//! Never oversell after Redis lost data.
//!
//! Redis restarted without persistence (or FLUSHALL, or a failover to an
//! empty replica) forgets stock, buyers and the order stream, but the order
//! database still holds every order `consume` stored. Loading the campaign
//! file's stock again would sell those units a second time, so `preheat`
//! asks the database first: an item with stored orders is only loaded by
//! `preheat --recover`, with what is left (initial − units stored) and with
//! its buyers restored (so the per-user limit still holds).
//!
//! What cannot be known is said plainly: orders acknowledged but not yet
//! stored when Redis lost its data are gone with it (AOF with
//! `appendfsync always` prevents that); request ids of stored orders are
//! not in the database, so a retry of an old request id is judged by the
//! per-user limit instead; the kill switch's state before the loss is gone.
//!
//! The recovery baseline: before Redis is loaded, one database transaction
//! marks every stored order of the item as carried over (`recovered_at`;
//! their stream entries went with Redis) and records the recovery
//! (`seckill_recoveries`: when, by whom, rows and units carried, stock
//! loaded). `reconcile` balances against it — `initial = carried + the new
//! stream's orders + left` — and shows it as a known loss on every run
//! instead of paging on the same orders every night; anything the baseline
//! does not cover (a row stored after the recovery from the lost stream, a
//! carried row changed or deleted, a new loss) is still drift.
//!
//! `persistence` tells whether the Redis server keeps anything across a
//! restart, so `preheat` can warn (and `--require-durable` refuse) before the
//! sale rather than after the loss.
//!
//! May import: domain::orders, domain::item, domain::slot, domain::kill_switch, redis_client, model, util.

use anyhow::{Context, Result, bail};
use redis::ConnectionLike;
use serde::Serialize;

use crate::domain::item::SaleItem;
use crate::domain::kill_switch::Flip;
use crate::domain::orders::{ItemTotals, OrderStore, Recovery};
use crate::domain::slot::{self, PreheatMode, PreheatStatus};
use crate::model::campaign::{Campaign, Item};
use crate::model::layout::home_bucket;

/// Buyers restored per round trip.
const PAGE: usize = 1000;

/// Fields of the item's meta hash (its first slot's, for a bucketed item)
/// where `--recover` writes what every recovery of the item carried over:
/// `status` and the metrics read the sale from Redis alone, and without them
/// a recovered item reads `0 left of 0 · 0 sold` while the database holds
/// its orders. Written after the stock is loaded; `init` deletes them with
/// the meta hash.
pub(crate) const CARRIED_ORDERS_FIELD: &str = "carried_orders";
/// See [`CARRIED_ORDERS_FIELD`]: the units of those orders.
pub(crate) const CARRIED_UNITS_FIELD: &str = "carried_units";

/// What a Redis server keeps across a restart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "detail")]
pub(crate) enum Persistence {
    /// No AOF, no RDB snapshots: a restart loses everything.
    Nothing,
    /// RDB snapshots only: a crash loses every write since the last one.
    SnapshotsOnly,
    /// AOF, fsync once a second (or by the OS): a crash loses up to about a second.
    AofRelaxed(String),
    /// AOF with `appendfsync always`: an acknowledged write survives a crash.
    AofAlways,
    /// The server would not say (CONFIG refused, e.g. by an ACL).
    Unknown(String),
}

impl Persistence {
    /// Whether a restart keeps anything at all (false for `Unknown`).
    pub(crate) fn persists_something(&self) -> bool {
        !matches!(self, Persistence::Nothing | Persistence::Unknown(_))
    }

    /// A warning for the operator, `None` when acknowledged buys survive a crash.
    pub(crate) fn warning(&self, at: &str) -> Option<String> {
        match self {
            Persistence::AofAlways => None,
            Persistence::Nothing => Some(format!(
                "Redis at {at} persists nothing (no AOF, no snapshots): a restart loses every \
                 acknowledged buy not yet in the order database; set appendonly yes and \
                 appendfsync always"
            )),
            Persistence::SnapshotsOnly => Some(format!(
                "Redis at {at} keeps only RDB snapshots: a crash loses every buy since the last \
                 snapshot; set appendonly yes and appendfsync always"
            )),
            Persistence::AofRelaxed(fsync) => Some(format!(
                "Redis at {at} uses AOF with appendfsync {fsync}: a crash can lose about the last \
                 second of acknowledged buys; appendfsync always loses none"
            )),
            Persistence::Unknown(why) => Some(format!(
                "cannot tell whether Redis at {at} persists anything ({why})"
            )),
        }
    }
}

/// Ask the server (CONFIG GET) what it persists.
pub(crate) fn persistence<C: ConnectionLike>(conn: &mut C) -> Persistence {
    let mut get = |name: &str| -> std::result::Result<String, String> {
        let pair: Vec<String> = redis::cmd("CONFIG")
            .arg("GET")
            .arg(name)
            .query(conn)
            .map_err(|e| format!("CONFIG GET {name}: {e}"))?;
        pair.get(1)
            .cloned()
            .ok_or_else(|| format!("CONFIG GET {name} answered nothing"))
    };
    let settings = (get("appendonly"), get("appendfsync"), get("save"));
    match settings {
        (Ok(aof), Ok(fsync), _) if aof == "yes" && fsync == "always" => Persistence::AofAlways,
        (Ok(aof), Ok(fsync), _) if aof == "yes" => Persistence::AofRelaxed(fsync),
        (Ok(_), Ok(_), Ok(save)) if save.trim().is_empty() => Persistence::Nothing,
        (Ok(_), Ok(_), Ok(_)) => Persistence::SnapshotsOnly,
        (Err(why), _, _) | (_, Err(why), _) | (_, _, Err(why)) => Persistence::Unknown(why),
    }
}

/// The order database's view of one item, when preheat would load it from scratch.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct StoredSales {
    pub(crate) item: String,
    pub(crate) rows: i64,
    pub(crate) units: i64,
}

/// Items `preheat` would load from scratch (status `loaded` or `overwritten`
/// in a dry run) although the order database holds orders of them.
pub(crate) fn items_with_stored_orders<C: ConnectionLike>(
    conn: &mut C,
    store: &mut dyn OrderStore,
    campaign: &Campaign,
    items: &[&Item],
    mode: PreheatMode,
) -> Result<Vec<StoredSales>> {
    let mut found = Vec::new();
    for item in items {
        let status = SaleItem::live(campaign, item)
            .preheat(conn, mode, true)?
            .report
            .status;
        if !matches!(status, PreheatStatus::Loaded | PreheatStatus::Overwritten) {
            continue;
        }
        let ItemTotals { rows, units, .. } = store.item_totals(&campaign.id, &item.id)?;
        if rows > 0 {
            found.push(StoredSales {
                item: item.id.clone(),
                rows,
                units,
            });
        }
    }
    Ok(found)
}

/// What `--recover` did to one item.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Recovered {
    pub(crate) item: String,
    pub(crate) initial_stock: i64,
    pub(crate) units_stored: i64,
    pub(crate) stock_loaded: i64,
    pub(crate) buyers_restored: u64,
    /// The baseline written to the order database (`None` when an earlier,
    /// interrupted `--recover` had already carried every stored order over).
    pub(crate) baseline: Option<Recovery>,
    /// What recovery cannot know, in words.
    pub(crate) cannot_be_known: String,
}

/// Load one item with what is left after the stored orders, and restore its
/// buyers. The item is closed (kill switch) from before the stock appears
/// until every buyer is back, so no one buys against a half-restored limit;
/// if this stops half-way, the item stays closed.
pub(crate) fn recover_item<C: ConnectionLike>(
    conn: &mut C,
    store: &mut dyn OrderStore,
    sale: &SaleItem,
    // What preheat found; counted again in the baseline's transaction.
    _found: &StoredSales,
    mode: PreheatMode,
) -> Result<Recovered> {
    let (campaign, item) = (sale.campaign, sale.item);
    if sale.has_seats() {
        // Before anything is written: the database knows which seats were
        // sold, but reloading a seat map from it is not built yet.
        return Err(crate::model::error::usage(format!(
            "item {} has seats: --recover cannot rebuild a seat map from the order database \
             yet (docs/seats.md, \"Limits\"); restore Redis from its AOF or a backup, or \
             `init --yes` and preheat again",
            item.id
        )));
    }
    refuse_partial_loss(conn, sale, mode)?;
    let by = crate::domain::kill_switch::operator(None)?;
    let expire_at = campaign.expire_at_ms();
    // The baseline first: if loading Redis fails below, the next
    // `--recover` finds the rows marked already and loads the same stock.
    // What is left is counted in that transaction, after marking: a consumer
    // still storing what it read from the lost stream may have added rows
    // since `preheat` looked.
    let baseline = store.record_recovery(&Recovery {
        campaign: campaign.id.clone(),
        item_id: item.id.clone(),
        recovered_at_ms: slot::redis_now_ms(conn)?,
        recovered_by: by.clone(),
        rows_carried: 0,
        units_carried: 0,
        initial_stock: item.stock,
        stock_loaded: 0,
    })?;
    let ItemTotals {
        rows: stored_rows,
        units: stored_units,
        ..
    } = store.item_totals(&campaign.id, &item.id)?;
    let flip = |conn: &mut C, closed: bool, reason: &str| -> Result<()> {
        let flip = Flip {
            closed,
            reason: reason.to_string(),
            by: by.clone(),
            at_ms: slot::redis_now_ms(conn)?,
        };
        sale.set_switch(conn, &flip, expire_at)
    };
    // Every slot closed first.
    flip(
        conn,
        true,
        "preheat --recover: restoring after Redis lost data",
    )?;
    let left = baseline.stock_loaded;
    // A bucketed item: what is left split evenly over the buckets, as a first preheat splits.
    let status = sale.preheat_stock(conn, left, mode, false)?.report.status;
    if !matches!(status, PreheatStatus::Loaded | PreheatStatus::Overwritten) {
        bail!(
            "item {}: Redis changed while recovering ({}); it stays closed: check it, then \
             `shutdown-switch off`",
            item.id,
            status.as_str()
        );
    }
    record_carried_over(conn, store, sale)?;
    let buyers_restored = restore_buyers(conn, store, sale, expire_at)?;
    flip(conn, false, "preheat --recover: restored")?;
    let oversold = if stored_units > item.stock {
        format!(
            " The database already holds {} units more than the stock: they were sold twice.",
            stored_units - item.stock
        )
    } else {
        String::new()
    };
    Ok(Recovered {
        item: item.id.clone(),
        initial_stock: item.stock,
        units_stored: stored_units,
        stock_loaded: left,
        buyers_restored,
        baseline: (baseline.rows_carried > 0).then_some(baseline),
        cannot_be_known: format!(
            "Orders acknowledged but not yet in the order database when Redis lost its data \
             cannot be known: they were lost with Redis (AOF with appendfsync always prevents \
             that), and their units are on sale again. Request ids of stored orders are not \
             stored, so a retry of one is judged by the per-user limit. The kill switch's \
             state before the loss is gone: the item is open. The {} stored order(s) are \
             recorded in {} as carried over (their stream entries were lost): `reconcile` \
             shows them as a known loss and balances against them.{oversold}",
            stored_rows,
            store.display()
        ),
    })
}

/// A bucketed item is recovered only when every bucket lost its stock: when
/// some survived (one master of a cluster lost its data), the lost buckets'
/// units cannot be computed from the database — transfers moved units between
/// buckets, and orders not stored yet are still in the surviving streams —
/// and restoring buyers would overwrite the surviving buckets' records.
fn refuse_partial_loss<C: ConnectionLike>(
    conn: &mut C,
    sale: &SaleItem,
    mode: PreheatMode,
) -> Result<()> {
    let (item, layout) = (sale.item, sale.layout());
    let plan = sale.preheat(conn, mode, true)?;
    let survived: Vec<String> = plan
        .per_bucket
        .iter()
        .filter(|b| b.report.redis_stock_before.is_some())
        .map(|b| b.bucket.to_string())
        .collect();
    if survived.is_empty() {
        return Ok(());
    }
    Err(crate::model::error::preheat_refused(format!(
        "item {}: Redis still holds bucket(s) {} of its {} buckets but lost the others; \
         `--recover` cannot compute what the lost buckets held (units moved between buckets) \
         and would overwrite the surviving buyers: nothing was written. Close the item \
         (`seckill shutdown-switch on --item {}`), let `consume` store what the surviving \
         buckets' streams hold, and run `seckill reconcile` (docs/buckets.md, \"Recovery after data loss\")",
        item.id,
        survived.join(", "),
        layout.buckets,
        item.id
    )))
}

/// Write what every recovery of the item carried over (the database's
/// records, summed: Redis lost the earlier ones' fields with the rest) into
/// the meta hash of its first slot, beside the stock they were not loaded into.
fn record_carried_over<C: ConnectionLike>(
    conn: &mut C,
    store: &mut dyn OrderStore,
    sale: &SaleItem,
) -> Result<()> {
    let recoveries = store.recoveries(&sale.campaign.id, &sale.item.id)?;
    let orders: i64 = recoveries.iter().map(|r| r.rows_carried).sum();
    let units: i64 = recoveries.iter().map(|r| r.units_carried).sum();
    let meta = &sale.slots()[0].keys.meta;
    let _: i64 = redis::cmd("HSET")
        .arg(meta)
        .arg(CARRIED_ORDERS_FIELD)
        .arg(orders)
        .arg(CARRIED_UNITS_FIELD)
        .arg(units)
        .query(conn)
        .with_context(|| format!("cannot record the carried-over orders in {meta}"))?;
    Ok(())
}

/// Copy the item's buyers (units, latest order) from the database into Redis,
/// each into its home bucket (a plain item has one).
fn restore_buyers<C: ConnectionLike>(
    conn: &mut C,
    store: &mut dyn OrderStore,
    sale: &SaleItem,
    expire_at: Option<i64>,
) -> Result<u64> {
    let (campaign, item, layout) = (sale.campaign, sale.item, sale.layout());
    let buckets = sale.slots();
    let mut after = String::new();
    let mut restored = 0u64;
    loop {
        let page = store.item_buyers_after(&campaign.id, &item.id, &after, PAGE)?;
        let Some(last) = page.last() else {
            break;
        };
        after = last.user_id.clone();
        for bucket in &buckets {
            let homed: Vec<_> = page
                .iter()
                .filter(|buyer| home_bucket(&buyer.user_id, layout.buckets) == bucket.bucket)
                .collect();
            if homed.is_empty() {
                continue;
            }
            let keys = &bucket.keys;
            let mut units = redis::cmd("HSET");
            units.arg(&keys.buyers);
            let mut orders = redis::cmd("HSET");
            orders.arg(&keys.buyer_orders);
            for buyer in homed {
                units.arg(&buyer.user_id).arg(buyer.units);
                orders.arg(&buyer.user_id).arg(&buyer.latest_order_id);
            }
            let _: i64 = units
                .query(conn)
                .with_context(|| format!("cannot restore buyers into {}", keys.buyers))?;
            let _: i64 = orders
                .query(conn)
                .with_context(|| format!("cannot restore orders into {}", keys.buyer_orders))?;
        }
        restored += page.len() as u64;
    }
    if let Some(at) = expire_at {
        for bucket in &buckets {
            for key in [&bucket.keys.buyers, &bucket.keys.buyer_orders] {
                let _: i64 = redis::cmd("PEXPIREAT")
                    .arg(key)
                    .arg(at)
                    .query(conn)
                    .with_context(|| format!("cannot set the expiry of {key}"))?;
            }
        }
    }
    Ok(restored)
}
