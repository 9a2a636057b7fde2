//! `lua/preheat.lua`: load one item's stock and metadata without clobbering a
//! live sale. Its call, statuses and reply.

use anyhow::{Result, bail};
use redis::Value;
use serde::Serialize;

super::script_call! {
    /// Preheat one item: KEYS then ARGV of `lua/preheat.lua`.
    Preheat = "preheat.lua", Sale;
    roles { operator }
    keys { meta, stock, buyers, orders, buyer_orders, requests }
    argv {
        mode, initial_stock, name, price_cents, starts_at_ms, ends_at_ms, per_user_limit,
        rate_window_ms, rate_max, expire_at_ms, group, dry_mode, waiting_room,
    }
}

/// What preheat did (or, in a dry run, would do) to one item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum PreheatStatus {
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
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            PreheatStatus::Loaded => "loaded",
            PreheatStatus::Kept => "kept",
            PreheatStatus::MetaUpdated => "meta_updated",
            PreheatStatus::Overwritten => "overwritten",
            PreheatStatus::HasSales => "has_sales",
            PreheatStatus::StockMissing => "stock_missing",
        }
    }

    pub(crate) fn parse(name: &str) -> Option<PreheatStatus> {
        PreheatStatus::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// True when preheat wrote stock or metadata for the item.
    pub(crate) fn writes(self) -> bool {
        matches!(
            self,
            PreheatStatus::Loaded | PreheatStatus::Overwritten | PreheatStatus::MetaUpdated
        )
    }

    /// True when preheat refused to write (the item needs a human).
    pub(crate) fn refused(self) -> bool {
        matches!(self, PreheatStatus::HasSales | PreheatStatus::StockMissing)
    }
}

/// The reply `{status, stock_in_redis_before, stock_in_redis_after}` (-1 = none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PreheatReply {
    pub(crate) status: PreheatStatus,
    pub(crate) before: Option<i64>,
    pub(crate) after: Option<i64>,
}

/// Parse the script's reply.
pub(crate) fn parse_reply(reply: Value) -> Result<PreheatReply> {
    let (status, before, after): (String, i64, i64) = redis::from_redis_value(reply)?;
    let Some(status) = PreheatStatus::parse(&status) else {
        bail!("preheat script returned unknown status {status:?}");
    };
    Ok(PreheatReply {
        status,
        before: (before >= 0).then_some(before),
        after: (after >= 0).then_some(after),
    })
}
