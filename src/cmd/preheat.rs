//! `seckill preheat`: the launch-day command. Loads each item's stock,
//! metadata and sale window atomically, with TTL = ends_at + keep_after_end,
//! and never overwrites stock already in Redis unless told to.

use anyhow::Result;

use crate::context::Globals;
use crate::error::usage;
use crate::exit_codes;
use crate::keys::ItemKeys;
use crate::output::{self, Format};
use crate::state::{self, PreheatMode, PreheatStatus};

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

/// Preheat the campaign; exit 0, or 1 when Redis fails or an item was refused
/// (sales exist that a reload would double-sell).
pub fn run(globals: &Globals, args: &Args) -> Result<i32> {
    let campaign = globals.campaign()?;
    let target = globals.redis(&campaign)?;
    let mut conn = target.connect()?;
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
    match globals.format {
        Format::Json => output::print_json(&serde_json::json!({
            "campaign": campaign.id,
            "redis": target.display,
            "dry_run": args.dry_run,
            "expires_at": campaign.expire_at_ms().map(|ms| output::time_or_dash(Some(ms))),
            "items": reports,
        }))?,
        Format::Table => {
            let mut table =
                output::table(["item", "name", "stock in file", "stock in Redis", "status"]);
            for r in &reports {
                let redis_stock = r
                    .redis_stock_after
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| "-".into());
                let status = describe(r.status, args.dry_run, r.redis_stock_before, r.file_stock);
                table.add_row(vec![
                    r.item.clone(),
                    r.name.clone(),
                    r.file_stock.to_string(),
                    redis_stock,
                    status,
                ]);
            }
            println!(
                "{} campaign {} on {}{}",
                if args.dry_run {
                    "dry run:"
                } else {
                    "preheated"
                },
                campaign.id,
                target.display,
                campaign
                    .expire_at_ms()
                    .map(|ms| format!(", keys expire {}", output::time_or_dash(Some(ms))))
                    .unwrap_or_default()
            );
            println!("{table}");
        }
    }
    let refused: Vec<&str> = reports
        .iter()
        .filter(|r| r.status.refused())
        .map(|r| r.item.as_str())
        .collect();
    if refused.is_empty() {
        return Ok(exit_codes::SUCCESS);
    }
    eprintln!(
        "seckill: preheat refused item(s) {}: nothing was written for them (see status)",
        refused.join(", ")
    );
    Ok(exit_codes::RUNTIME_ERROR)
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
