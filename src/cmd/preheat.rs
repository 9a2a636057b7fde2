//! `seckill preheat`: the launch-day command. Loads each item's stock,
//! metadata and sale window atomically, with TTL = ends_at + keep_after_end,
//! and never overwrites stock already in Redis unless told to.

use anyhow::Result;
use serde::Serialize;

use crate::context::{Context, Opened};
use crate::error::usage;
use crate::exit_codes;
use crate::keys::ItemKeys;
use crate::output;
use crate::report::Report;
use crate::state::{self, PreheatMode, PreheatReport, PreheatStatus};

/// Flags of `seckill preheat`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Overwrite stock already in Redis (refused for items that already sold something: use `init --yes`).
    #[arg(long)]
    pub force: bool,

    /// Keep the stock in Redis but take name, price, sale window, limits and key
    /// expiry from the file (e.g. to extend `ends_at` during a sale).
    #[arg(long, conflicts_with = "force")]
    pub update_meta: bool,

    /// Show what would happen, write nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Preheat only this item (default: every item of the campaign).
    #[arg(long, value_name = "ID")]
    pub item: Option<String>,
}

/// `seckill preheat`'s report.
#[derive(Debug, Serialize)]
pub struct PreheatSummary {
    /// Nothing was written (`--dry-run`); `items` says what would have been.
    pub dry_run: bool,
    /// When the campaign's keys expire (ends_at + keep_after_end), RFC 3339; null without ends_at.
    pub expires_at: Option<String>,
    /// One entry per item preheated (or refused).
    pub items: Vec<PreheatReport>,
    #[serde(skip)]
    campaign: String,
    #[serde(skip)]
    redis: String,
}

impl PreheatSummary {
    fn refused(&self) -> Vec<&str> {
        self.items
            .iter()
            .filter(|r| r.status.refused())
            .map(|r| r.item.as_str())
            .collect()
    }
}

impl Report for PreheatSummary {
    /// 0, or 1 when an item was refused (sales exist that a reload would double-sell).
    fn exit_code(&self) -> i32 {
        if self.refused().is_empty() {
            exit_codes::SUCCESS
        } else {
            exit_codes::RUNTIME_ERROR
        }
    }

    fn failure(&self) -> Option<String> {
        let refused = self.refused();
        (!refused.is_empty()).then(|| {
            format!(
                "preheat refused item(s) {}: nothing was written for them (see status)",
                refused.join(", ")
            )
        })
    }

    fn render(&self) -> String {
        let mut table = output::table([
            "item",
            "name",
            "stock\nin file",
            "stock\nin Redis",
            "status",
        ]);
        for r in &self.items {
            table.add_row(vec![
                r.item.clone(),
                r.name.clone(),
                r.file_stock.to_string(),
                r.redis_stock_after
                    .map_or_else(|| "-".into(), |s| s.to_string()),
                describe(r.status, self.dry_run, r.redis_stock_before, r.file_stock),
            ]);
        }
        output::fit(&mut table, &[1, 4]);
        format!(
            "{} campaign {} on {}{}\n{table}\n",
            if self.dry_run {
                "dry run:"
            } else {
                "preheated"
            },
            self.campaign,
            self.redis,
            self.expires_at
                .as_ref()
                .map(|at| format!(", keys expire {at}"))
                .unwrap_or_default()
        )
    }
}

/// Preheat the campaign; exit 0, or 1 when Redis fails or an item was refused
/// (sales exist that a reload would double-sell).
pub fn run(ctx: &Context, args: &Args) -> Result<PreheatSummary> {
    let Opened {
        campaign,
        target,
        mut conn,
    } = ctx.open()?;
    let now = state::redis_now_ms(&mut conn)?;
    if let Some(expire_at) = campaign.expire_at_ms()
        && expire_at <= now
    {
        return Err(usage(format!(
            "{}: the sale ended at {} and its keys would expire at once (ends_at + keep_after_end is in the past)",
            campaign.path.display(),
            output::time_or_dash(campaign.ends_at_ms)
        )));
    }
    let mode = if args.force {
        PreheatMode::Force
    } else if args.update_meta {
        PreheatMode::UpdateMeta
    } else {
        PreheatMode::Load
    };
    let mut reports = Vec::new();
    for item in campaign.select_items(args.item.as_deref())? {
        let keys = ItemKeys::live(&campaign.id, &item.id);
        reports.push(state::preheat_item(
            &mut conn,
            &keys,
            &campaign,
            item,
            mode,
            args.dry_run,
        )?);
    }
    if !args.dry_run {
        for script in crate::scripts::sale_scripts() {
            script.load(&mut conn)?;
        }
    }
    Ok(PreheatSummary {
        dry_run: args.dry_run,
        expires_at: campaign
            .expire_at_ms()
            .map(|ms| output::time_or_dash(Some(ms))),
        items: reports,
        campaign: campaign.id,
        redis: target.display,
    })
}

fn describe(status: PreheatStatus, dry_run: bool, before: Option<i64>, file_stock: i64) -> String {
    let text = match status {
        PreheatStatus::Loaded => "loaded".to_string(),
        PreheatStatus::Kept => format!(
            "kept (Redis has {}, file says {file_stock}; --force to overwrite)",
            before.unwrap_or(0)
        ),
        PreheatStatus::MetaUpdated => format!(
            "stock kept ({}); window, limits, price and expiry updated",
            before.unwrap_or(0)
        ),
        PreheatStatus::Overwritten => format!("overwritten (was {})", before.unwrap_or(0)),
        PreheatStatus::HasSales => {
            "refused: item has sales (use `init --yes` to reset)".to_string()
        }
        PreheatStatus::StockMissing => "REFUSED: no stock key but orders exist (evicted or \
            deleted?); reloading would sell twice: restore the stock by hand, or `init --yes`"
            .to_string(),
    };
    if dry_run {
        format!("would be {text}")
    } else {
        text
    }
}
