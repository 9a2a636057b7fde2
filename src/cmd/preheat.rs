//! `seckill preheat`: the launch-day command. Loads each item's stock,
//! metadata and sale window atomically, with TTL = ends_at + keep_after_end,
//! and never overwrites stock already in Redis unless told to.

use anyhow::Result;
use serde::Serialize;

use crate::buckets::state::BucketPreheat;
use crate::buckets::{self, Layout};
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
    pub items: Vec<ItemRow>,
    #[serde(skip)]
    campaign: String,
    #[serde(skip)]
    redis: String,
}

/// One item's preheat; a bucketed item (docs/buckets.md) adds its buckets.
#[derive(Debug, Serialize)]
pub struct ItemRow {
    #[serde(flatten)]
    pub report: PreheatReport,
    /// The item's bucket count (1 = one slot, the plain layout).
    pub buckets: u32,
    /// Each bucket's share and status (bucketed items only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub per_bucket: Vec<BucketPreheat>,
    /// Why the whole item was refused before any bucket was touched (a changed bucket count).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused_because: Option<String>,
}

impl PreheatSummary {
    fn refused(&self) -> Vec<&str> {
        self.items
            .iter()
            .filter(|r| r.report.status.refused())
            .map(|r| r.report.item.as_str())
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
        let stock = |s: Option<i64>| s.map_or_else(|| "-".into(), |s| s.to_string());
        for row in &self.items {
            let r = &row.report;
            table.add_row(vec![
                r.item.clone(),
                r.name.clone(),
                r.file_stock.to_string(),
                stock(r.redis_stock_after),
                match &row.refused_because {
                    Some(why) => format!("REFUSED: {why}"),
                    None => describe(r.status, self.dry_run, r.redis_stock_before, r.file_stock),
                },
            ]);
            for part in &row.per_bucket {
                let p = &part.report;
                table.add_row(vec![
                    format!("  bucket {} (slot {})", part.bucket, part.slot),
                    String::new(),
                    p.file_stock.to_string(),
                    stock(p.redis_stock_after),
                    describe(p.status, self.dry_run, p.redis_stock_before, p.file_stock),
                ]);
            }
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
        let layout = Layout::live(&campaign.id, item);
        if layout.is_bucketed() {
            let split = buckets::state::preheat_item(
                &mut conn,
                &layout,
                &campaign,
                item,
                mode,
                args.dry_run,
            )?;
            reports.push(ItemRow {
                report: split.summary,
                buckets: item.buckets,
                per_bucket: split.buckets,
                refused_because: split.refused_because,
            });
            continue;
        }
        // A plain item whose keys Redis holds bucketed is refused, nothing written.
        let keys = ItemKeys::live(&campaign.id, &item.id);
        let conflict = buckets::state::layout_conflict(&mut conn, &layout)?;
        let dry_run = args.dry_run || conflict.is_some();
        let mut report = state::preheat_item(&mut conn, &keys, &campaign, item, mode, dry_run)?;
        if conflict.is_some() {
            report.status = PreheatStatus::StockMissing;
        }
        reports.push(ItemRow {
            report,
            buckets: 1,
            per_bucket: Vec::new(),
            refused_because: conflict,
        });
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
