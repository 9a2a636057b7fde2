//! `seckill init`: reset a campaign's Redis state to the file's values, for
//! rehearsals and load tests. Deletes stock, buyers, order and dead-letter
//! streams, request ids, the kill switch and rate-limit keys, then loads the
//! file's stock as `preheat` would.
//!
//! The order database is not touched: clear it yourself between rehearsals,
//! or `reconcile` will report the old rows as drift.

use anyhow::Result;
use serde::Serialize;

use crate::buckets::{self, Layout};
use crate::context::{Context, Opened};
use crate::error::usage;
use crate::keys::ItemKeys;
use crate::output;
use crate::report::Report;
use crate::state::{self, PreheatMode};

/// Flags of `seckill init`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Reset even when the campaign already has sales (their Redis record is deleted).
    #[arg(long)]
    pub yes: bool,
}

/// `seckill init`'s report: what was reset.
#[derive(Debug, Serialize)]
pub struct InitReport {
    /// One entry per item of the campaign.
    pub items: Vec<InitRow>,
    #[serde(skip)]
    campaign: String,
    #[serde(skip)]
    redis: String,
}

/// One item's reset.
#[derive(Debug, Serialize)]
pub struct InitRow {
    /// The item id.
    pub item: String,
    /// Redis keys deleted (stock, buyers, streams, request ids, switch, rate limits).
    pub keys_deleted: u64,
    /// Stock loaded afterwards, from the file.
    pub stock: Option<i64>,
}

impl Report for InitReport {
    fn render(&self) -> String {
        let rows = self.items.iter().map(|row| {
            vec![
                row.item.clone(),
                row.keys_deleted.to_string(),
                row.stock.map_or_else(|| "-".into(), |s| s.to_string()),
            ]
        });
        format!(
            "reset campaign {} on {}\n{}",
            self.campaign,
            self.redis,
            output::grid(&["item", "keys deleted", "stock"], rows.collect(), &[])
        )
    }
}

/// Reset every item of the campaign.
pub fn run(ctx: &Context, args: &Args) -> Result<InitReport> {
    let Opened {
        campaign,
        target,
        mut conn,
    } = ctx.open()?;
    let all_keys: Vec<ItemKeys> = campaign
        .items
        .iter()
        .map(|item| ItemKeys::live(&campaign.id, &item.id))
        .collect();
    if !args.yes {
        let mut sold = Vec::new();
        for (item, keys) in campaign.items.iter().zip(&all_keys) {
            let layout = Layout::live(&campaign.id, item);
            let s = if layout.is_bucketed() {
                buckets::state::item_state(&mut conn, &layout)?
            } else {
                state::item_state(&mut conn, keys)?
            };
            if s.has_sales() {
                sold.push(format!(
                    "{} ({} buyers, {} orders)",
                    item.id, s.buyers, s.stream_len
                ));
            }
        }
        if !sold.is_empty() {
            return Err(usage(format!(
                "campaign {} already has sales on {}: pass --yes to delete them from Redis",
                campaign.id,
                sold.join(", ")
            )));
        }
    }
    // SCAN visits one node; on a cluster the per-user rate keys expire by themselves within one window.
    let scan_too = !conn.is_cluster();
    let mut rows = Vec::new();
    for (item, keys) in campaign.items.iter().zip(&all_keys) {
        // Both layouts go (docs/buckets.md): a file whose bucket count changed starts clean.
        let layout = Layout::live(&campaign.id, item);
        let mut deleted = state::delete_item(&mut conn, keys, scan_too)?;
        deleted += buckets::state::delete_item(&mut conn, &layout, scan_too)?;
        let stock = if layout.is_bucketed() {
            let mode = PreheatMode::Load;
            buckets::state::preheat_item(&mut conn, &layout, &campaign, item, mode, false)?
                .summary
                .redis_stock_after
        } else {
            state::preheat_item(&mut conn, keys, &campaign, item, PreheatMode::Load, false)?
                .redis_stock_after
        };
        rows.push(InitRow {
            item: item.id.clone(),
            keys_deleted: deleted,
            stock,
        });
    }
    Ok(InitReport {
        items: rows,
        campaign: campaign.id,
        redis: target.display,
    })
}
