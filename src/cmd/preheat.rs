//! `seckill preheat`: the launch-day command. Loads each item's stock,
//! metadata and sale window atomically, with TTL = ends_at + keep_after_end,
//! and never overwrites stock already in Redis unless told to.

use anyhow::Result;
use serde::Serialize;

use crate::domain::item::{ItemPreheat, SaleItem};
use crate::domain::orders::{OrderStore, StoreLocation};
use crate::domain::preheat_plan::{self, FieldPlan};
use crate::domain::recovery::{self, Persistence, Recovered, StoredSales};
use crate::domain::registry;
use crate::domain::slot::{self, PreheatMode, PreheatReport, PreheatStatus};
use crate::invocation::context::{Context, Opened};
use crate::invocation::report::Report;
use crate::model::error::{preheat_refused, usage};
use crate::model::exit_codes;
use crate::operator::acl::dryrun;
use crate::redis_client::conn::Conn;
use crate::redis_client::server::{self, Eviction};
use crate::util::output;
use crate::util::text;

/// Flags of `seckill preheat`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Overwrite stock already in Redis (refused for items that already sold something: use `init --yes`).
    #[arg(long)]
    pub(crate) force: bool,

    /// Keep the stock in Redis but take name, price, sale window, limits and key
    /// expiry from the file (e.g. to extend `ends_at` during a sale).
    #[arg(long, conflicts_with = "force")]
    pub(crate) update_meta: bool,

    /// Show what would happen, write nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,

    /// Preheat only this item (default: every item of the campaign).
    #[arg(long, value_name = "ID")]
    pub(crate) item: Option<String>,

    /// After Redis lost data: for an item whose orders are already in the order
    /// database, load initial stock minus the units stored and restore its buyers
    /// (without it such an item is refused: loading the full stock would sell those
    /// units twice).
    #[arg(long, conflicts_with = "update_meta")]
    pub(crate) recover: bool,

    /// Refuse when a master persists nothing (no AOF, no snapshots) or will not say (its AOF
    /// is read from INFO persistence, which the operator role may send; on a cluster, each master).
    #[arg(long)]
    pub(crate) require_durable: bool,

    /// Preheat even though another campaign live on this Redis holds the same
    /// item ids (without it that is refused: usually a typo'd campaign id that
    /// would start a second copy of the same sale).
    #[arg(long)]
    pub(crate) allow_shared_items: bool,

    #[command(flatten)]
    pub(crate) store: crate::domain::orders::StoreArgs,
}

/// `seckill preheat`'s report.
#[derive(Debug, Serialize)]
pub(crate) struct PreheatSummary {
    /// Nothing was written (`--dry-run`); `items` says what would have been.
    pub(crate) dry_run: bool,
    /// When the campaign's keys expire (ends_at + keep_after_end), RFC 3339; null without ends_at.
    pub(crate) expires_at: Option<String>,
    /// Something was written (stock loaded or overwritten, or metadata updated);
    /// false when every item was kept or refused, or in a dry run.
    pub(crate) written: bool,
    /// One entry per item preheated (or refused).
    pub(crate) items: Vec<ItemRow>,
    /// Items kept with sales: `--force` would be refused there, so it is not offered.
    #[serde(skip)]
    sold: Vec<String>,
    /// Items `--recover` loaded after Redis lost data: what was loaded, what
    /// was restored, and what cannot be known.
    pub(crate) recovered: Vec<Recovered>,
    #[serde(skip)]
    campaign: String,
    #[serde(skip)]
    redis: String,
}

/// One item's preheat, and how the file and Redis compare.
#[derive(Debug, Serialize)]
pub(crate) struct ItemRow {
    #[serde(flatten)]
    pub(crate) preheat: ItemPreheat,
    /// The fields where the file and Redis differed before this preheat:
    /// applied when the status is `meta_updated` (or `loaded`/`overwritten`),
    /// left as Redis has them when `kept` (`--update-meta` applies them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) differences: Vec<FieldPlan>,
}

impl PreheatSummary {
    /// Items kept while the file says something else.
    fn not_applied(&self) -> Vec<&ItemRow> {
        self.items
            .iter()
            .filter(|row| {
                row.preheat.report.status == PreheatStatus::Kept && !row.differences.is_empty()
            })
            .collect()
    }

    fn refused(&self) -> Vec<&str> {
        self.items
            .iter()
            .filter(|r| r.preheat.report.status.refused())
            .map(|r| r.preheat.report.item.as_str())
            .collect()
    }
}

impl Report for PreheatSummary {
    /// 0, or 5 (`preheat_refused`) when an item was refused (sales exist that
    /// a reload would double-sell): Redis answered, unlike a runtime error (1).
    fn exit_code(&self) -> i32 {
        if self.refused().is_empty() {
            exit_codes::SUCCESS
        } else {
            exit_codes::PREHEAT_REFUSED
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
        for ItemRow { preheat: row, .. } in &self.items {
            let r = &row.report;
            table.add_row(vec![
                r.item.clone(),
                r.name.clone(),
                r.file_stock.to_string(),
                stock(r.redis_stock_after),
                match &row.refused_because {
                    Some(why) => format!("REFUSED: {why}"),
                    None => describe(r, self.dry_run, self.sold.contains(&r.item)),
                },
            ]);
            for part in &row.per_bucket {
                let p = &part.report;
                table.add_row(vec![
                    format!("  bucket {} (slot {})", part.bucket, part.slot),
                    String::new(),
                    p.file_stock.to_string(),
                    stock(p.redis_stock_after),
                    describe(p, self.dry_run, self.sold.contains(&r.item)),
                ]);
            }
        }
        output::fit(&mut table, &[1, 4]);
        let recovered: String = self
            .recovered
            .iter()
            .map(|r| {
                format!(
                    "{}: recovered after data loss: loaded {} of {} ({} unit(s) already in the \
                     order database), {} buyer(s) restored. {}\n",
                    r.item,
                    r.stock_loaded,
                    r.initial_stock,
                    r.units_stored,
                    r.buyers_restored,
                    r.cannot_be_known
                )
            })
            .collect();
        let rooms: String = self
            .items
            .iter()
            .filter_map(|row| Some((&row.preheat.report.item, row.preheat.waiting_room.as_ref()?)))
            .map(|(item, room)| {
                let need = room
                    .needs_admitter
                    .as_ref()
                    .map(|need| output::paragraph(&format!("{item}: {need}")))
                    .unwrap_or_default();
                output::paragraph(&format!(
                    "{item}: waiting room {}: {}; shuffle seed sha256 {}",
                    room.status, room.config, room.seed_sha256
                )) + &need
            })
            .collect();
        let mut differences = String::new();
        for row in self.items.iter().filter(|row| !row.differences.is_empty()) {
            let status = row.preheat.report.status;
            let applied = status != PreheatStatus::Kept && !status.refused();
            let verb = match (self.dry_run, applied) {
                _ if status.refused() => "differs, NOT applied (the item was refused)",
                (true, true) => "would change",
                (false, true) => "changed",
                (_, false) => {
                    "differs, NOT applied (`preheat --update-meta` applies it; the stock needs `--force`, or `init --yes` once sold)"
                }
            };
            for field in &row.differences {
                differences.push_str(&output::paragraph(&format!(
                    "{}: {} {verb}: file {} · Redis {}",
                    row.preheat.report.item, field.field, field.file, field.redis
                )));
            }
        }
        format!(
            "{} campaign {} on {}{}\n{table}\n{rooms}{differences}{recovered}",
            if self.dry_run {
                "dry run:"
            } else if self.written {
                "preheated"
            } else if !self.not_applied().is_empty() {
                "not applied (the file differs from Redis):"
            } else {
                "nothing written:"
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

/// Preheat the campaign; exit 0, 5 (`preheat_refused`) when an item was
/// refused (sales exist that a reload would double-sell), 1 when Redis fails.
pub(crate) fn run(ctx: &Context, args: &Args) -> Result<PreheatSummary> {
    // A bad order database URL is a usage error before Redis is contacted.
    let location = StoreLocation::resolve(&args.store, &ctx.campaign()?)?;
    let Opened {
        campaign,
        target,
        mut conn,
    } = ctx.open()?;
    let now = slot::redis_now_ms(&mut conn)?;
    if let Some(expire_at) = campaign.expire_at_ms()
        && expire_at <= now
    {
        return Err(usage(format!(
            "{}: the sale ended at {} and its keys would expire at once (ends_at + keep_after_end is in the past)",
            campaign.path.display(),
            text::time_or_dash(campaign.ends_at_ms)
        )));
    }
    let mode = if args.force {
        PreheatMode::Force
    } else if args.update_meta {
        PreheatMode::UpdateMeta
    } else {
        PreheatMode::Load
    };
    let items = campaign.select_items(args.item.as_deref())?;
    check_eviction(&mut conn, &target.display)?;
    check_persistence(&mut conn, &target.display, args.require_durable)?;
    if !args.allow_shared_items {
        registry::refuse_collisions(&mut conn, &campaign, now)?;
    }
    let StoredCheck { stored, mut store } =
        stored_sales(&mut conn, &location, &campaign, &items, args, mode)?;
    let mut recovered = Vec::new();
    let mut reports = Vec::new();
    for item in items {
        if let (Some(sales), Some(store)) = (stored.iter().find(|s| s.item == item.id), &mut store)
        {
            recovered.push(recovery::recover_item(
                &mut conn,
                store.as_mut(),
                &SaleItem::live(&campaign, item),
                sales,
                mode,
            )?);
            continue;
        }
        let sale = SaleItem::live(&campaign, item);
        let differences: Vec<FieldPlan> = preheat_plan::plan(&mut conn, &sale)?
            .into_iter()
            .filter(|field| field.differs)
            .collect();
        let preheat = sale.preheat(&mut conn, mode, args.dry_run)?;
        reports.push(ItemRow {
            preheat,
            differences,
        });
    }
    // The registry describes what Redis holds: it follows the file only when
    // this preheat wrote the file's values (an item loaded, overwritten,
    // updated or recovered). One that wrote nothing — every item kept or
    // refused — leaves it as it was: "nothing written" means no key changed
    // (issue 25 item 40: a refused preheat rewrote the entry's window).
    let wrote = reports.iter().any(|r| r.preheat.writes()) || !recovered.is_empty();
    if !args.dry_run && wrote {
        let by = crate::domain::kill_switch::operator(None)?;
        registry::record(&mut conn, &registry::Entry::of(&campaign, now, &by))?;
    }
    if !args.dry_run {
        for script in crate::redis_client::scripts::sale_scripts() {
            script.load(&mut conn)?;
        }
    }
    let mut sold = Vec::new();
    for row in reports
        .iter()
        .map(|row| &row.preheat)
        .filter(|row| row.kept_anywhere())
    {
        let item = campaign.item(&row.report.item)?;
        if SaleItem::live(&campaign, item)
            .state(&mut conn)?
            .has_sales()
        {
            sold.push(item.id.clone());
        }
    }
    Ok(PreheatSummary {
        dry_run: args.dry_run,
        written: !args.dry_run && reports.iter().any(|row| row.preheat.writes()),
        sold,
        expires_at: campaign
            .expire_at_ms()
            .map(|ms| text::time_or_dash(Some(ms))),
        items: reports,
        recovered,
        campaign: campaign.id,
        redis: target.display,
    })
}

/// Refuse (exit 5) when a master evicts keys under memory pressure: it
/// would delete the sale's state, and a later preheat would load the full
/// stock again. A server that will not say (INFO refused) is a warning.
fn check_eviction(conn: &mut Conn, at: &str) -> Result<()> {
    let eviction = server::eviction(conn, at);
    let Some(problem) = eviction.problem() else {
        return Ok(());
    };
    if let Eviction::Unknown(_) = eviction {
        output::warn(format!("seckill preheat: warning: {problem}"));
        return Ok(());
    }
    Err(preheat_refused(format!("nothing was written: {problem}")))
}

/// Warn when a master keeps nothing across a restart (or fsyncs its AOF
/// only now and then); `--require-durable` refuses when one persists
/// nothing or will not say. The AOF is read from `INFO persistence` of
/// every master, which the operator role may send (`CONFIG` is `@admin`);
/// the finer points (`appendfsync`, `save`) from `CONFIG GET` only when
/// this user may send it (asked first, so a refusal never reaches `ACL LOG`).
fn check_persistence(conn: &mut Conn, at: &str, require_durable: bool) -> Result<()> {
    let may_config = dryrun::may_send(conn, &["CONFIG", "GET", "appendfsync"]).unwrap_or(false);
    if may_config && !conn.is_cluster() {
        return judge(
            vec![(at.to_string(), recovery::persistence(conn))],
            require_durable,
        );
    }
    let masters = match server::info(conn, "persistence", at) {
        Ok(masters) if masters.is_empty() => Err("reached no master".to_string()),
        Ok(masters) => Ok(masters),
        Err(e) => Err(crate::util::error_text::render(&e)),
    };
    let mut config = |name: &str| -> Vec<(String, String)> {
        if !may_config {
            return Vec::new();
        }
        server::config(conn, name, at)
            .map(|answers| answers.into_iter().map(|a| (a.node, a.value)).collect())
            .unwrap_or_default()
    };
    let (fsync, save) = (config("appendfsync"), config("save"));
    let of = |values: &[(String, String)], node: &str| {
        values
            .iter()
            .find(|(n, _)| n == node)
            .map(|(_, value)| value.clone())
    };
    let persistence: Vec<(String, Persistence)> = match masters {
        Err(why) => vec![(at.to_string(), Persistence::Unknown(why))],
        Ok(masters) => masters
            .into_iter()
            .map(|master| {
                let aof = master.value.get("aof_enabled").map(String::as_str) == Some("1");
                let kept = match (aof, of(&fsync, &master.node), of(&save, &master.node)) {
                    (true, Some(fsync), _) if fsync != "always" => Persistence::AofRelaxed(fsync),
                    (true, _, _) => Persistence::AofAlways,
                    (false, _, Some(save)) if save.trim().is_empty() => Persistence::Nothing,
                    (false, _, Some(_)) => Persistence::SnapshotsOnly,
                    (false, _, None) => Persistence::Unknown(
                        "it keeps no AOF (INFO persistence), and its snapshot settings are not \
                         readable to this user (CONFIG GET)"
                            .to_string(),
                    ),
                };
                (master.node, kept)
            })
            .collect(),
    };
    judge(persistence, require_durable)
}

/// Each master's warning said; under `--require-durable`, refused when one
/// persists nothing or will not say.
fn judge(persistence: Vec<(String, Persistence)>, require_durable: bool) -> Result<()> {
    let warnings: Vec<String> = persistence
        .iter()
        .filter_map(|(node, kept)| kept.warning(node))
        .collect();
    if warnings.is_empty() {
        return Ok(());
    }
    if require_durable
        && persistence
            .iter()
            .any(|(_, kept)| !kept.persists_something())
    {
        return Err(preheat_refused(format!(
            "{}; --require-durable refuses to preheat",
            warnings.join("; ")
        )));
    }
    for warning in warnings {
        crate::util::output::warn(format!("seckill preheat: warning: {warning}"));
    }
    Ok(())
}

/// What the order database holds of items Redis would load from scratch.
struct StoredCheck {
    stored: Vec<StoredSales>,
    /// Open when `--recover` will need it.
    store: Option<Box<dyn OrderStore>>,
}

/// Items the order database holds orders of although Redis would load them
/// from scratch (it lost its data); refused unless `--recover`. A SQLite
/// database that does not exist yet holds nothing and is not created.
fn stored_sales(
    conn: &mut Conn,
    location: &StoreLocation,
    campaign: &crate::model::campaign::Campaign,
    items: &[&crate::model::campaign::Item],
    args: &Args,
    mode: PreheatMode,
) -> Result<StoredCheck> {
    if let StoreLocation::Sqlite(path) = location
        && !path.exists()
    {
        return Ok(StoredCheck {
            stored: Vec::new(),
            store: None,
        });
    }
    let mut store = location.open()?;
    let stored = recovery::items_with_stored_orders(conn, store.as_mut(), campaign, items, mode)?;
    if stored.is_empty() || (args.recover && !args.dry_run) {
        return Ok(StoredCheck {
            stored,
            store: Some(store),
        });
    }
    let lines: Vec<String> = stored
        .iter()
        .map(|s| {
            let item = items.iter().find(|i| i.id == s.item).map_or(0, |i| i.stock);
            format!(
                "item {}: {} unit(s) in {} order(s) are stored in {} but Redis has no sales of it \
                 (did Redis lose its data?): loading the file's stock ({item}) would sell them again; \
                 `seckill preheat --recover` loads {} and restores the buyers",
                s.item,
                s.units,
                s.rows,
                location.display(),
                (item - s.units).max(0)
            )
        })
        .collect();
    Err(preheat_refused(format!(
        "nothing was written: {}",
        lines.join("; ")
    )))
}

fn describe(report: &PreheatReport, dry_run: bool, has_sales: bool) -> String {
    let (before, file_stock) = (report.redis_stock_before, report.file_stock);
    let text = match report.status {
        PreheatStatus::Loaded => "loaded".to_string(),
        PreheatStatus::Kept if has_sales => format!(
            "kept (Redis has {}, file says {file_stock}; the item has sales: `init --yes` \
             resets it, --update-meta changes window and limits)",
            before.unwrap_or(0)
        ),
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
