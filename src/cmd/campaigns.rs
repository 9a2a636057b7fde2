//! `seckill campaigns`: the sales live on a Redis, as `preheat` recorded
//! them (`domain::registry`): which campaign, which items, its window, when
//! its keys expire, which file and who. Runs with `--redis URL` alone, or on
//! the Redis of `-c FILE`.
//!
//! `seckill campaigns drop ID` removes one campaign from a Redis — a typo'd
//! id, a finished sale: every key of its items (each item's hash tag, each
//! bucket's, the room's) and its registry entry. It refuses as `init`
//! refuses: without `--yes` a campaign with sales or a kill switch ON; with
//! `--yes` still a sale that is selling or whose acknowledged orders are
//! not in the order database yet, unless `--force`. The items come from the
//! campaign's file (`-c FILE`, else the file its registry entry names) or,
//! when that file is gone or now says another id, from the entry itself
//! (item ids) and Redis (each item's recorded bucket count).

use std::time::Duration;

use anyhow::Result;
use redis::Commands;
use serde::Serialize;

use crate::cmd::init::{Unstored, existing_keys, selling_items, unstored_orders};
use crate::domain::item::SaleItem;
use crate::domain::orders::{StoreArgs, StoreLocation};
use crate::domain::registry::{self, Entry};
use crate::domain::slot;
use crate::invocation::context::Context;
use crate::invocation::report::Report;
use crate::model::campaign::{Campaign, Item};
use crate::model::error::usage;
use crate::model::keys::LIVE_PREFIX;
use crate::model::layout::Layout;
use crate::util::output;
use crate::util::text::minutes_or_dash;

/// Flags of `seckill campaigns` (`--redis URL` or `-c FILE`), and `drop`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    pub(crate) action: Option<Action>,
}

/// What to do besides listing.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Action {
    /// Remove a campaign from this Redis (a typo'd id, a finished sale): its
    /// keys and its registry entry; refused like `init` for a sale with sales,
    /// a kill switch ON, one selling or with orders not stored yet.
    Drop(DropArgs),
}

/// Flags of `seckill campaigns drop`.
#[derive(Debug, clap::Args)]
pub(crate) struct DropArgs {
    /// The campaign id, as `seckill campaigns` lists it.
    #[arg(value_name = "ID")]
    pub(crate) id: String,

    /// Drop a campaign that has sales (their Redis record is deleted; the
    /// order database keeps its rows) or a kill switch ON.
    #[arg(long)]
    pub(crate) yes: bool,

    /// With --yes: drop even a sale that is selling (window open, switch off,
    /// orders in the last minute) or whose acknowledged orders are not in the
    /// order database yet (they are deleted for good).
    #[arg(long, requires = "yes")]
    pub(crate) force: bool,

    /// List what would be deleted (and what would refuse it); delete nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,

    /// The order database that must hold the acknowledged orders before a drop.
    #[command(flatten)]
    pub(crate) store: StoreArgs,
}

/// `seckill campaigns`'s report.
#[derive(Debug, Serialize)]
pub(crate) struct CampaignsReport {
    /// Every campaign whose keys are on this Redis, by id.
    pub(crate) live: Vec<Listed>,
}

/// One campaign and where its sale stands now (Redis clock).
#[derive(Debug, Serialize)]
pub(crate) struct Listed {
    #[serde(flatten)]
    pub(crate) entry: Entry,
    /// `not_started`, `selling` (inside its window) or `ended` (its keys stay
    /// until `keys expire` for the nightly reconcile).
    pub(crate) state: &'static str,
}

/// Where a sale with `entry`'s window stands at `now_ms`.
fn state_of(entry: &Entry, now_ms: i64) -> &'static str {
    match (entry.starts_at_ms, entry.ends_at_ms) {
        (Some(start), _) if now_ms < start => "not_started",
        (_, Some(end)) if now_ms >= end => "ended",
        _ => "selling",
    }
}

impl Report for CampaignsReport {
    fn render(&self) -> String {
        if self.live.is_empty() {
            return "no live campaign on this Redis (none preheated, or every one's keys expired)\n"
                .to_string();
        }
        let when = |ms: Option<i64>| match ms {
            Some(ms) => minutes_or_dash(Some(ms)),
            None => "-".to_string(),
        };
        let rows = self
            .live
            .iter()
            .map(|listed| {
                let e = &listed.entry;
                vec![
                    e.campaign.clone(),
                    listed.state.replace('_', " "),
                    e.items.join(" "),
                    format!("{}\n{}", when(e.starts_at_ms), when(e.ends_at_ms)),
                    format!(
                        "keys until {}; from {} by {}",
                        e.expire_at_ms
                            .map_or_else(|| "never".to_string(), |ms| when(Some(ms))),
                        e.file,
                        e.by
                    ),
                ]
            })
            .collect();
        output::grid(
            &["campaign", "state", "items", "opens\ncloses", "keys, file"],
            rows,
            &[2, 4],
        )
    }
}

/// List the live campaigns.
pub(crate) fn run(ctx: &Context, _args: &Args) -> Result<CampaignsReport> {
    let campaign = match &ctx.campaign_file {
        Some(_) => Some(ctx.campaign()?),
        None => None,
    };
    let target = ctx.redis_of(campaign.as_ref())?;
    let mut conn = target.connect()?;
    let now = slot::redis_now_ms(&mut conn)?;
    let live = registry::live(&mut conn, now)?
        .into_iter()
        .map(|entry| Listed {
            state: state_of(&entry, now),
            entry,
        })
        .collect();
    Ok(CampaignsReport { live })
}

/// `seckill campaigns drop`'s report.
#[derive(Debug, Serialize)]
pub(crate) struct DropReport {
    /// Nothing was deleted (`--dry-run`): `items` lists what would be.
    pub(crate) dry_run: bool,
    /// The campaign id dropped.
    pub(crate) dropped: String,
    /// Per item, the keys deleted (in a dry run: that exist and would be).
    pub(crate) items: Vec<DropRow>,
    /// The campaign had a registry entry (removed unless a dry run).
    pub(crate) registry_entry: bool,
    /// Where the items came from: `file` or `registry`.
    pub(crate) items_from: &'static str,
    /// Acknowledged orders not in the order database (deleted with the streams).
    pub(crate) unstored_orders: Unstored,
    /// Dry run: why the drop itself would be refused with these flags.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) would_refuse: Option<String>,
    #[serde(skip)]
    redis: String,
}

/// One item's keys.
#[derive(Debug, Serialize)]
pub(crate) struct DropRow {
    pub(crate) item: String,
    /// How many keys.
    pub(crate) keys_deleted: u64,
    /// Their names (a dry run: every one; a drop: those that existed just before).
    pub(crate) keys: Vec<String>,
}

impl Report for DropReport {
    fn render(&self) -> String {
        let rows = self
            .items
            .iter()
            .map(|row| {
                let mut tags: Vec<String> = row
                    .keys
                    .iter()
                    .filter_map(|k| Some(k[..=k.find('}')?].to_string() + "…"))
                    .collect();
                tags.dedup();
                vec![
                    row.item.clone(),
                    row.keys_deleted.to_string(),
                    tags.join(" "),
                ]
            })
            .collect();
        let mut text = format!(
            "{} campaign {} on {}\n{}",
            if self.dry_run {
                "dry run (nothing deleted): would drop"
            } else {
                "dropped"
            },
            self.dropped,
            self.redis,
            output::grid(
                &[
                    "item",
                    if self.dry_run {
                        "keys to delete"
                    } else {
                        "keys deleted"
                    },
                    "under",
                ],
                rows,
                &[2]
            )
        );
        text.push_str(&output::paragraph(&format!(
            "registry entry {}{}",
            match (self.registry_entry, self.dry_run) {
                (true, true) => "would be removed",
                (true, false) => "removed",
                (false, _) => "none (the campaign was not in the registry)",
            },
            if self.items_from == "registry" {
                "; the items came from the registry entry (its file is gone or names another id)"
            } else {
                ""
            }
        )));
        if self.unstored_orders.count > 0 {
            text.push_str(&output::paragraph(&format!(
                "{} {} acknowledged order(s) not in the order database: {}",
                if self.dry_run {
                    "would delete"
                } else {
                    "deleted"
                },
                self.unstored_orders.count,
                self.unstored_orders.ids.join(" ")
            )));
        }
        if let Some(why) = &self.would_refuse {
            text.push_str(&output::paragraph(&format!("would be refused: {why}")));
        }
        text
    }
}

/// Drop one campaign (see the module docs).
pub(crate) fn drop(ctx: &Context, args: &DropArgs) -> Result<DropReport> {
    let from_file = match &ctx.campaign_file {
        Some(_) => Some(ctx.campaign()?),
        None => None,
    };
    if let Some(file) = &from_file
        && file.id != args.id
    {
        return Err(usage(format!(
            "{} is campaign {}, not {}: drop names the campaign to remove; pass its own file, or \
             none (the registry says which items it has)",
            file.path.display(),
            file.id,
            args.id
        )));
    }
    let target = ctx.redis_of(from_file.as_ref())?;
    let mut conn = target.connect()?;
    let now = slot::redis_now_ms(&mut conn)?;
    let entry = registry::entry(&mut conn, &args.id)?;
    let (campaign, items_from) = match (from_file, &entry) {
        (Some(file), _) => (file, "file"),
        (None, Some(entry)) => match Campaign::load(std::path::Path::new(&entry.file)) {
            Ok(file) if file.id == args.id => (file, "file"),
            _ => (from_entry(&mut conn, entry)?, "registry"),
        },
        (None, None) => {
            let live = registry::live(&mut conn, now)?;
            return Err(usage(format!(
                "campaign {} is not in the registry of {} (live there: {}); pass its file \
                 (`-c FILE campaigns drop {}`) to drop its keys",
                args.id,
                target.display,
                registry::describe(&live),
                args.id
            )));
        }
    };
    let items = SaleItem::select(&campaign, None)?;
    let location = StoreLocation::resolve(&args.store, &campaign)?;
    let mut store = match location.require_existing() {
        Ok(()) => Some(location.open_existing()?),
        Err(_) => None,
    };
    let unstored = unstored_orders(&mut conn, &items, store.as_deref_mut())?;
    let refusal = refusal(&mut conn, &campaign, &items, &unstored, args, &location)?;
    let mut rows = Vec::new();
    for item in &items {
        let keys = existing_keys(&mut conn, item)?;
        rows.push(DropRow {
            item: item.id().to_string(),
            keys_deleted: keys.len() as u64,
            keys,
        });
    }
    if args.dry_run {
        return Ok(DropReport {
            dry_run: true,
            dropped: campaign.id.clone(),
            items: rows,
            registry_entry: entry.is_some(),
            items_from,
            unstored_orders: unstored,
            would_refuse: refusal,
            redis: target.display,
        });
    }
    if let Some(why) = refusal {
        return Err(usage(why));
    }
    // SCAN visits one node; on a cluster the per-user rate keys expire by themselves within one window.
    let scan_too = !conn.is_cluster();
    for (item, row) in items.iter().zip(&mut rows) {
        row.keys_deleted = item.delete(&mut conn, scan_too)?;
    }
    let registry_entry = registry::remove(&mut conn, &campaign.id)?;
    Ok(DropReport {
        dry_run: false,
        dropped: campaign.id.clone(),
        items: rows,
        registry_entry,
        items_from,
        unstored_orders: unstored,
        would_refuse: None,
        redis: target.display,
    })
}

/// Why a drop with these flags is refused, if it is (init's rules).
fn refusal(
    conn: &mut crate::redis_client::conn::Conn,
    campaign: &Campaign,
    items: &[SaleItem],
    unstored: &Unstored,
    args: &DropArgs,
    location: &StoreLocation,
) -> Result<Option<String>> {
    if !args.yes {
        let mut why = Vec::new();
        for item in items {
            let state = item.state(conn)?;
            if state.has_sales() {
                why.push(format!(
                    "item {} has sales ({} buyers, {} orders)",
                    item.id(),
                    state.buyers,
                    state.stream_len
                ));
            }
            if state.closed {
                why.push(format!("item {}'s kill switch is ON", item.id()));
            }
        }
        if !why.is_empty() {
            return Ok(Some(format!(
                "campaign {}: {}; pass --yes to delete its Redis record (the order database \
                 keeps its rows){}",
                campaign.id,
                why.join(", "),
                unstored.warning()
            )));
        }
    }
    if args.force {
        return Ok(None);
    }
    let selling = selling_items(conn, items, unstored)?;
    if !selling.is_empty() && unstored.count == 0 {
        return Ok(Some(format!(
            "campaign {} is selling: the window of item(s) {} is open, the kill switch off, and \
             orders flow. Close it first (`shutdown-switch on`), or pass --force",
            campaign.id,
            selling.join(", ")
        )));
    }
    if unstored.count > 0 {
        return Ok(Some(format!(
            "campaign {}: {} acknowledged order(s) are not in the order database {} yet: {}; a \
             drop deletes them for good. Store them first (`seckill consume --drain`), or pass \
             --force",
            campaign.id,
            unstored.count,
            location.display(),
            unstored.ids.join(" ")
        )));
    }
    Ok(None)
}

/// The campaign as its registry entry knows it: its item ids, each with the
/// bucket count Redis recorded at preheat (1 without a record). Enough to
/// name every key; nothing else of it is used.
fn from_entry(conn: &mut crate::redis_client::conn::Conn, entry: &Entry) -> Result<Campaign> {
    let mut items = Vec::new();
    for id in &entry.items {
        let marker = Layout::new(LIVE_PREFIX, &entry.campaign, id, 1).marker();
        let recorded: Option<u32> = conn
            .get(&marker)
            .map_err(|e| anyhow::anyhow!("cannot read {marker}: {e}"))?;
        let buckets = recorded.filter(|n| (1..=256).contains(n)).unwrap_or(1);
        items.push(Item {
            id: id.clone(),
            name: id.clone(),
            price_cents: 0,
            stock: i64::from(buckets),
            buckets,
            waiting_room: None,
            region_stock: Vec::new(),
            seating: None,
            per_identity_limit: None,
        });
    }
    Ok(Campaign {
        path: std::path::PathBuf::from(&entry.file),
        id: entry.campaign.clone(),
        redis_url: None,
        starts_at_ms: entry.starts_at_ms,
        ends_at_ms: entry.ends_at_ms,
        keep_after_end: Duration::ZERO,
        per_user_limit: 1,
        rate_limit: None,
        items,
        orders_store: None,
        payment_timeout: None,
        rebuy_after_release: true,
        utc_offset_s: None,
        regions: Vec::new(),
        region: None,
        region_cluster: false,
        limit_groups: Vec::new(),
    })
}
