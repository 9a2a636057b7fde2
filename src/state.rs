//! Reading and writing one campaign's state in Redis: preheat, reset, status.
//!
//! Shared by `init`, `preheat`, `shutdown-switch`, `reconcile` and `loadtest`,
//! so every command sees the same key layout and the same meta fields.

use anyhow::{Context, Result, bail};
use redis::{Commands, ConnectionLike};
use serde::Serialize;

use crate::campaign::{Campaign, Item};
use crate::keys::{ItemKeys, ORDER_GROUP};
use crate::scripts;

/// How `preheat_item` treats stock already in Redis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreheatMode {
    /// Keep existing stock (the launch-day default).
    Load,
    /// Overwrite existing stock, unless the item already has sales.
    Force,
    /// Keep existing stock; update name, price, window, limits and expiry.
    UpdateMeta,
}

/// What preheat did (or, in a dry run, would do) to one item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PreheatStatus {
    Loaded,
    Kept,
    MetaUpdated,
    Overwritten,
    HasSales,
    StockMissing,
}

impl PreheatStatus {
    const ALL: [PreheatStatus; 6] = [
        PreheatStatus::Loaded,
        PreheatStatus::Kept,
        PreheatStatus::MetaUpdated,
        PreheatStatus::Overwritten,
        PreheatStatus::HasSales,
        PreheatStatus::StockMissing,
    ];

    /// The name `lua/preheat.lua` returns and JSON shows.
    pub fn as_str(self) -> &'static str {
        match self {
            PreheatStatus::Loaded => "loaded",
            PreheatStatus::Kept => "kept",
            PreheatStatus::MetaUpdated => "meta_updated",
            PreheatStatus::Overwritten => "overwritten",
            PreheatStatus::HasSales => "has_sales",
            PreheatStatus::StockMissing => "stock_missing",
        }
    }

    fn parse(name: &str) -> Option<PreheatStatus> {
        PreheatStatus::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// True when preheat wrote stock or metadata for the item.
    pub fn writes(self) -> bool {
        matches!(
            self,
            PreheatStatus::Loaded | PreheatStatus::Overwritten | PreheatStatus::MetaUpdated
        )
    }

    /// True when preheat refused to write (the item needs a human).
    pub fn refused(self) -> bool {
        matches!(self, PreheatStatus::HasSales | PreheatStatus::StockMissing)
    }
}

/// Result of preheating one item.
#[derive(Debug, Clone, Serialize)]
pub struct PreheatReport {
    /// The item id.
    pub item: String,
    /// The item's display name.
    pub name: String,
    /// What happened: loaded, kept, meta_updated, overwritten, or refused (has_sales, stock_missing).
    pub status: PreheatStatus,
    /// Stock in the file.
    pub file_stock: i64,
    /// Stock in Redis before, `None` when there was none.
    pub redis_stock_before: Option<i64>,
    /// Stock in Redis after (equal to before in a dry run).
    pub redis_stock_after: Option<i64>,
}

/// Load (or, with `dry_run`, only decide) one item's stock and metadata.
pub fn preheat_item<C: ConnectionLike>(
    conn: &mut C,
    keys: &ItemKeys,
    campaign: &Campaign,
    item: &Item,
    mode: PreheatMode,
    dry_run: bool,
) -> Result<PreheatReport> {
    let mode_name = match mode {
        PreheatMode::Load => "load",
        PreheatMode::Force => "force",
        PreheatMode::UpdateMeta => "meta",
    };
    let opt = |v: Option<i64>| v.map(|v| v.to_string()).unwrap_or_default();
    let (status, before, after): (String, i64, i64) = scripts::PREHEAT
        .key(&keys.meta)
        .key(&keys.stock)
        .key(&keys.buyers)
        .key(&keys.orders)
        .key(&keys.buyer_orders)
        .key(&keys.requests)
        .arg(if dry_run { "dry" } else { mode_name })
        .arg(item.stock)
        .arg(&item.name)
        .arg(item.price_cents)
        .arg(opt(campaign.starts_at_ms))
        .arg(opt(campaign.ends_at_ms))
        .arg(campaign.per_user_limit)
        .arg(opt(campaign
            .rate_limit
            .map(|r| r.window.as_millis() as i64)))
        .arg(campaign.rate_limit.map(|r| r.max_requests).unwrap_or(0))
        .arg(opt(campaign.expire_at_ms()))
        .arg(ORDER_GROUP)
        .arg(mode_name)
        .invoke(conn)
        .with_context(|| format!("preheat script failed for item {}", item.id))?;
    let Some(status) = PreheatStatus::parse(&status) else {
        bail!("preheat script returned unknown status {status:?}");
    };
    Ok(PreheatReport {
        item: item.id.clone(),
        name: item.name.clone(),
        status,
        file_stock: item.stock,
        redis_stock_before: (before >= 0).then_some(before),
        redis_stock_after: (after >= 0).then_some(after),
    })
}

/// One item's live state as Redis has it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ItemState {
    /// Whether preheat has run (meta has `initial_stock`).
    pub preheated: bool,
    pub initial_stock: Option<i64>,
    pub stock: Option<i64>,
    /// Distinct users who bought.
    pub buyers: i64,
    /// Entries in the order stream.
    pub stream_len: i64,
    /// Kill switch.
    pub closed: bool,
    pub switch_reason: Option<String>,
    pub switched_at_ms: Option<i64>,
    pub switched_by: Option<String>,
}

impl ItemState {
    /// True when anything was sold (buyers recorded or orders streamed).
    pub fn has_sales(&self) -> bool {
        self.buyers > 0 || self.stream_len > 0
    }
}

/// Read one item's state in one round trip.
pub fn item_state<C: ConnectionLike>(conn: &mut C, keys: &ItemKeys) -> Result<ItemState> {
    type Reply = (
        Option<i64>,
        Option<String>,
        Option<String>,
        Option<i64>,
        Option<String>,
        Option<i64>,
        i64,
        i64,
    );
    let (initial_stock, closed, reason, at, by, stock, buyers, stream_len): Reply =
        scripts::ITEM_STATE
            .key(&keys.meta)
            .key(&keys.stock)
            .key(&keys.buyers)
            .key(&keys.orders)
            .invoke(conn)
            .with_context(|| format!("cannot read state of {}", keys.base))?;
    Ok(ItemState {
        preheated: initial_stock.is_some(),
        initial_stock,
        stock,
        buyers,
        stream_len,
        closed: closed.as_deref() == Some("1"),
        switch_reason: reason.filter(|r| !r.is_empty()),
        switched_at_ms: at,
        switched_by: by.filter(|b| !b.is_empty()),
    })
}

/// Set the kill switch of one item and record the flip in its history
/// (see [`crate::kill_switch::set`]). Takes effect on the buy script's next call.
pub fn set_switch<C: ConnectionLike>(
    conn: &mut C,
    keys: &ItemKeys,
    closed: bool,
    reason: &str,
    by: &str,
    now_ms: i64,
    expire_at_ms: Option<i64>,
) -> Result<()> {
    let flip = crate::kill_switch::Flip {
        closed,
        reason: reason.to_string(),
        by: by.to_string(),
        at_ms: now_ms,
    };
    crate::kill_switch::set(conn, keys, &flip, expire_at_ms)
}

/// Delete every key of one item: the fixed ones by name, per-user ones by SCAN
/// (never KEYS, which blocks Redis). Returns how many keys were deleted.
pub fn delete_item<C: ConnectionLike>(
    conn: &mut C,
    keys: &ItemKeys,
    scan_too: bool,
) -> Result<u64> {
    let mut deleted: u64 = conn
        .del(&keys.fixed()[..])
        .with_context(|| format!("cannot delete keys of {}", keys.base))?;
    if scan_too {
        let mut cursor: u64 = 0;
        loop {
            let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(keys.scan_pattern())
                .arg("COUNT")
                .arg(1000)
                .query(conn)
                .with_context(|| format!("cannot SCAN keys of {}", keys.base))?;
            if !batch.is_empty() {
                let n: u64 = conn.del(&batch).context("cannot delete scanned keys")?;
                deleted += n;
            }
            if next == 0 {
                break;
            }
            cursor = next;
        }
    }
    Ok(deleted)
}

/// Redis server time in Unix milliseconds (one clock for every client).
pub fn redis_now_ms<C: ConnectionLike>(conn: &mut C) -> Result<i64> {
    let (secs, micros): (i64, i64) = redis::cmd("TIME").query(conn).context("TIME failed")?;
    Ok(secs * 1000 + micros / 1000)
}

/// This machine's host name, or "unknown".
pub fn host_name() -> String {
    hostname::get()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "unknown".into())
}
