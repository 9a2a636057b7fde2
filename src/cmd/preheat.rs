//! `seckill preheat`: the launch-day command. Loads each item's stock,
//! metadata and sale window atomically, with TTL = ends_at + keep_after_end,
//! and never overwrites stock already in Redis unless told to.

use anyhow::{Context as _, Result};

use crate::model::campaign::{Campaign, Item};
use serde::Serialize;

use crate::domain::item::{ItemPreheat, SaleItem};
use crate::domain::orders::{OrderStore, StoreLocation};
use crate::domain::preheat_plan::{self, FieldPlan};
use crate::domain::recovery::{self, Persistence, Recovered, StoredSales};
use crate::domain::registry;
use crate::domain::slot::{self, PreheatMode, PreheatStatus};
use crate::invocation::context::{Context, Opened};
use crate::invocation::report::Report;
use crate::model::error::{preheat_refused, usage};
use crate::model::exit_codes;
use crate::operator::acl::dryrun;
use crate::redis_client::conn::{Conn, UrlSource, redact};
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
    /// Every field, file against Redis before this preheat, in machine
    /// units (Redis's values `null` for an item Redis did not hold).
    pub(crate) fields: Vec<FieldPlan>,
    /// Of those, the ones that differed in an item Redis held: applied when
    /// the status is `meta_updated` (or `overwritten`), left as Redis has
    /// them when `kept` (`--update-meta` applies them).
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
        let plan = self.plan_rows();
        let applied = !self.dry_run && self.written;
        let mut out = format!(
            "{} campaign {} on {}{}\n",
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
        );
        if !plan.is_empty() {
            let arrow = if applied {
                "was → now"
            } else {
                "Redis → file"
            };
            let mut table = output::table(["item", "field", arrow, "status"]);
            for row in &plan {
                table.add_row(vec![
                    row.items.join(", "),
                    row.field.clone(),
                    if row.from.is_empty() && row.to.is_empty() {
                        "see below".to_string()
                    } else {
                        format!("{} → {}", row.from, row.to)
                    },
                    row.status.to_string(),
                ]);
            }
            output::fit(&mut table, &[0, 2, 3]);
            out.push_str(&format!("{table}\n"));
        }
        let unchanged = self.unchanged();
        if unchanged > 0 {
            out.push_str(&output::paragraph(&format!(
                "{} unchanged: Redis holds what the file says",
                if unchanged == self.items.len() && unchanged > 1 {
                    format!("all {unchanged} items")
                } else {
                    text::counted(unchanged as i64, "item")
                }
            )));
        }
        out.push_str(&self.advice(&plan));
        out
    }
}

/// One line of the plan: a field of one or more items, from → to.
struct PlanRow {
    items: Vec<String>,
    field: String,
    from: String,
    to: String,
    status: &'static str,
}

impl PreheatSummary {
    /// Items with nothing to show: kept (or updated) and every field as the file says.
    fn unchanged(&self) -> usize {
        self.items
            .iter()
            .filter(|row| {
                let status = row.preheat.report.status;
                matches!(status, PreheatStatus::Kept | PreheatStatus::MetaUpdated)
                    && row.preheat.refused_because.is_none()
                    && row.differences.is_empty()
                    && row
                        .preheat
                        .waiting_room
                        .as_ref()
                        .is_none_or(|room| room.status != "refused")
            })
            .count()
    }

    /// What differs, one row per field, rows equal but for the item merged.
    fn plan_rows(&self) -> Vec<PlanRow> {
        let mut rows: Vec<PlanRow> = Vec::new();
        let mut push = |item: &str, field: &str, from: &str, to: &str, status: &'static str| {
            // A bucket's row is its own (one row per bucket, as `status --buckets`).
            let bucket = item.contains(" bucket ");
            if let Some(same) = rows.iter_mut().find(|r| {
                !bucket && r.field == field && r.from == from && r.to == to && r.status == status
            }) {
                same.items.push(item.to_string());
            } else {
                rows.push(PlanRow {
                    items: vec![item.to_string()],
                    field: field.to_string(),
                    from: from.to_string(),
                    to: to.to_string(),
                    status,
                });
            }
        };
        let dry = self.dry_run;
        let pick = |dry_text: &'static str, done: &'static str| if dry { dry_text } else { done };
        let stock = |s: Option<i64>| s.map_or_else(|| "-".to_string(), |s| s.to_string());
        for row in &self.items {
            let r = &row.preheat.report;
            let item = r.item.as_str();
            if row.preheat.refused_because.is_some() {
                // Its layout differs: the reason, under the table, says how.
                push(item, "buckets", "", "", "REFUSED");
                continue;
            }
            if r.status.refused() {
                let initial = row.fields.iter().find(|f| f.field == "stock");
                push(
                    item,
                    "stock",
                    initial.map_or("-", |f| f.redis_text.as_str()),
                    &r.file_stock.to_string(),
                    "REFUSED",
                );
                continue;
            }
            let room_refused = row
                .preheat
                .waiting_room
                .as_ref()
                .is_some_and(|room| room.status == "refused");
            let meta_status = match r.status {
                PreheatStatus::Kept => "not applied",
                _ => pick("would apply", "applied"),
            };
            match r.status {
                PreheatStatus::Loaded if dry => {
                    for field in row.fields.iter().filter(|f| f.differs) {
                        push(
                            item,
                            field.field,
                            &field.redis_text,
                            &field.file_text,
                            "would load",
                        );
                    }
                }
                PreheatStatus::Loaded => {
                    push(item, "stock", "-", &r.file_stock.to_string(), "loaded");
                }
                PreheatStatus::Overwritten => push(
                    item,
                    "stock",
                    &stock(r.redis_stock_before),
                    &r.file_stock.to_string(),
                    pick("would overwrite", "overwritten"),
                ),
                _ => {}
            }
            for field in &row.differences {
                let status = match field.field {
                    _ if room_refused && field.field.starts_with("waiting_room") => "REFUSED",
                    "stock" if r.status == PreheatStatus::Overwritten => continue,
                    "stock" => "not applied",
                    _ => meta_status,
                };
                push(
                    item,
                    field.field,
                    &field.redis_text,
                    &field.file_text,
                    status,
                );
            }
            for part in &row.preheat.per_bucket {
                let p = &part.report;
                let status = match p.status {
                    PreheatStatus::Loaded => pick("would load", "loaded"),
                    PreheatStatus::Overwritten => pick("would overwrite", "overwritten"),
                    s if s.refused() => "REFUSED",
                    _ => continue,
                };
                push(
                    &match &part.section {
                        Some(section) => format!("{item} section {section} slot {}", part.slot),
                        None => format!("{item} bucket {} slot {}", part.bucket, part.slot),
                    },
                    "stock",
                    &stock(p.redis_stock_before),
                    &p.file_stock.to_string(),
                    status,
                );
            }
        }
        let everyone = self.items.len();
        for row in &mut rows {
            if everyone > 1 && row.items.len() == everyone {
                row.items = vec![format!("all {everyone} items")];
            }
        }
        // The campaign's own fields (every item's) first, then item by item.
        rows.sort_by_key(|row| !row.items[0].starts_with("all "));
        rows
    }

    /// Each piece of advice once, under the table.
    fn advice(&self, plan: &[PlanRow]) -> String {
        let mut lines: Vec<String> = Vec::new();
        let has = |status: &str, stock: bool| {
            plan.iter()
                .any(|r| r.status == status && (r.field == "stock") == stock)
        };
        if !self.dry_run && self.written && plan.iter().any(|r| r.status != "not applied") {
            lines.push(
                "Redis now holds the values on the right (\"now\"); the left is what it held before."
                    .to_string(),
            );
        }
        if self.dry_run && !plan.is_empty() {
            lines.push(
                "dry run: Redis still holds the values on the left; this preheat would write \
                 those marked \"would\"."
                    .to_string(),
            );
        }
        if has("not applied", false) {
            lines.push(
                "not applied: Redis keeps the values on the left. `preheat --update-meta` \
                 applies the file's name, price, window, limits, key expiry and room (the \
                 stock stays)."
                    .to_string(),
            );
        }
        if has("not applied", true) {
            lines.push(if self.sold.is_empty() {
                "stock not applied: `preheat --force` loads the file's stock (only for items \
                 that sold nothing)."
                    .to_string()
            } else {
                format!(
                    "stock not applied: item(s) {} have sales; `init --yes` resets them (then \
                     preheat) — loading stock over sales would sell units twice.",
                    self.sold.join(", ")
                )
            });
        }
        for row in &self.items {
            if let Some(why) = &row.preheat.refused_because {
                lines.push(format!("{}: REFUSED: {why}", row.preheat.report.item));
            } else if row.preheat.report.status.refused() {
                lines.push(format!(
                    "{}: REFUSED: {}",
                    row.preheat.report.item,
                    refusal(row.preheat.report.status)
                ));
            }
        }
        let mut rooms: Vec<(String, Vec<&str>)> = Vec::new();
        for row in &self.items {
            let item = row.preheat.report.item.as_str();
            let Some(room) = row.preheat.waiting_room.as_ref() else {
                continue;
            };
            let mut notes = Vec::new();
            if room.status == "refused" {
                notes.push(
                    "waiting room REFUSED: its mode or pre-queue cannot change once users \
                     joined; it stays as it was"
                        .to_string(),
                );
            }
            if let Some(need) = &room.needs_admitter {
                notes.push(need.clone());
            }
            for note in notes {
                match rooms.iter_mut().find(|(n, _)| *n == note) {
                    Some((_, items)) => items.push(item),
                    None => rooms.push((note, vec![item])),
                }
            }
            if room.status == "created" && room.config.contains("prequeue 1") {
                lines.push(format!(
                    "{item}: pre-queue shuffle seed sha256 {}",
                    room.seed_sha256
                ));
            }
        }
        for (note, items) in rooms {
            lines.push(format!("{}: {note}", items.join(", ")));
        }
        for r in &self.recovered {
            lines.push(format!(
                "{}: recovered after data loss: loaded {} of {} ({} unit(s) already in the \
                 order database), {} buyer(s) restored. {}",
                r.item,
                r.stock_loaded,
                r.initial_stock,
                r.units_stored,
                r.buyers_restored,
                r.cannot_be_known
            ));
        }
        lines.iter().map(|line| output::paragraph(line)).collect()
    }
}

/// Preheat the campaign; exit 0, 5 (`preheat_refused`) when an item was
/// refused (sales exist that a reload would double-sell), 1 when Redis fails.
/// `seckill preheat` in a campaign with regions and no `--region`: every
/// region, each with its share (docs/regions.md).
#[derive(Debug, Serialize)]
pub(crate) struct RegionsPreheat {
    pub(crate) regions: Vec<RegionPreheat>,
}

#[derive(Debug, Serialize)]
pub(crate) struct RegionPreheat {
    pub(crate) region: String,
    #[serde(flatten)]
    pub(crate) summary: PreheatSummary,
}

impl Report for RegionsPreheat {
    fn exit_code(&self) -> i32 {
        self.regions
            .iter()
            .map(|r| r.summary.exit_code())
            .max()
            .unwrap_or(exit_codes::SUCCESS)
    }

    fn failure(&self) -> Option<String> {
        let failed: Vec<String> = self
            .regions
            .iter()
            .filter_map(|r| {
                r.summary
                    .failure()
                    .map(|f| format!("region {}: {f}", r.region))
            })
            .collect();
        (!failed.is_empty()).then(|| failed.join("; "))
    }

    fn render(&self) -> String {
        self.regions
            .iter()
            .map(|r| format!("region {}: {}", r.region, r.summary.render()))
            .collect()
    }
}

/// `--force` in a region: refused for an item that ever moved units to or
/// from another region (reloading its share would undo the transfers and
/// break the books of both regions, docs/regions.md).
fn refuse_moved_stock(conn: &mut Conn, campaign: &Campaign, items: &[&Item]) -> Result<()> {
    for item in items {
        let keys = crate::domain::regions::item_keys(campaign, &item.id);
        let slot = crate::domain::regions::read_slot(conn, &keys)?;
        if !slot.sent_to.is_empty() || !slot.received_from.is_empty() {
            return Err(crate::model::error::preheat_refused(format!(
                "item {} moved units between regions (sent {:?}, received {:?}): --force would \
                 undo the transfers; nothing was written (`seckill init --yes` resets a rehearsal)",
                item.id, slot.sent_to, slot.received_from
            )));
        }
    }
    Ok(())
}

/// `seckill preheat`: in one Redis, or in every region of a campaign with
/// regions when no `--region` says which.
pub(crate) fn run_anywhere(ctx: &Context, args: &Args) -> Result<i32> {
    let campaign = ctx.campaign_everywhere()?;
    if campaign.regions.is_empty() || ctx.connection.region.is_some() {
        return crate::invocation::report::emit(ctx, &run(ctx, args)?);
    }
    let mut regions = Vec::new();
    for region in &campaign.regions {
        let here = ctx.in_region(&region.name);
        let summary = run(&here, args)
            .with_context(|| format!("region {} ({})", region.name, redact(&region.redis_url)))?;
        regions.push(RegionPreheat {
            region: region.name.clone(),
            summary,
        });
    }
    crate::invocation::report::emit(ctx, &RegionsPreheat { regions })
}

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
    if mode == PreheatMode::Force && campaign.region.is_some() {
        refuse_moved_stock(&mut conn, &campaign, &items)?;
    }
    check_eviction(&mut conn, &target.display)?;
    check_persistence(&mut conn, &target.display, args.require_durable)?;
    if !args.allow_shared_items {
        registry::refuse_collisions(&mut conn, &campaign, now)?;
    }
    let seen = Seen {
        now,
        redis: target.display.clone(),
        file_redis: campaign
            .redis_url
            .as_ref()
            .filter(|_| matches!(target.source, UrlSource::Flag | UrlSource::Env))
            .map(|url| redact(url))
            .filter(|url| !url.contains(&target.display)),
    };
    let StoredCheck { stored, mut store } =
        stored_sales(&mut conn, &location, &campaign, &items, args, mode, &seen)?;
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
        let fields = preheat_plan::plan(&mut conn, &sale)?;
        let held = fields.first().is_some_and(|field| !field.redis.is_null());
        let differences: Vec<FieldPlan> = fields
            .iter()
            .filter(|field| held && field.differs)
            .cloned()
            .collect();
        let preheat = sale.preheat(&mut conn, mode, args.dry_run)?;
        reports.push(ItemRow {
            preheat,
            fields,
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
/// from scratch (it lost its data — or it is not the Redis the sale ran on);
/// refused unless `--recover`, and refused with `--recover` too when this
/// Redis shows it never had the campaign ([`Trace`]). A SQLite database
/// that does not exist yet holds nothing and is not created.
fn stored_sales(
    conn: &mut Conn,
    location: &StoreLocation,
    campaign: &crate::model::campaign::Campaign,
    items: &[&crate::model::campaign::Item],
    args: &Args,
    mode: PreheatMode,
    seen: &Seen,
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
    if stored.is_empty() {
        return Ok(StoredCheck {
            stored,
            store: Some(store),
        });
    }
    let trace = Trace::of(conn, store.as_mut(), campaign, &stored, seen.now)?;
    if args.recover && !args.dry_run && !matches!(trace, Trace::NeverHere(_)) {
        return Ok(StoredCheck {
            stored,
            store: Some(store),
        });
    }
    let database = location.display();
    let orders: i64 = stored.iter().map(|s| s.rows).sum();
    let lines: Vec<String> = stored
        .iter()
        .map(|s| {
            format!(
                "item {}: {} unit(s) in {} order(s) are stored in {database}",
                s.item, s.units, s.rows
            )
        })
        .collect();
    let rehearsal = format!(
        "use a rehearsal database, not the sale's: `--orders-db \
         sqlite://rehearsal-orders.db` (or SECKILL_ORDERS_DB); `--recover` would record {orders} order(s) in {database} as \
         lost{}",
        seen.file_names_another_redis()
    );
    let why = match trace {
        Trace::Held => {
            let loads: Vec<String> = stored
                .iter()
                .map(|s| {
                    let stock = items.iter().find(|i| i.id == s.item).map_or(0, |i| i.stock);
                    format!(
                        "{} for item {} (file: {stock})",
                        (stock - s.units).max(0),
                        s.item
                    )
                })
                .collect();
            format!(
                "{}, but Redis at {} has no sales of it although it held campaign {} (did Redis \
                 lose its data?): loading the file's stock would sell them again; `seckill \
                 preheat --recover` loads {} and restores the buyers",
                lines.join("; "),
                seen.redis,
                campaign.id,
                loads.join(", ")
            )
        }
        Trace::NeverHere(kept) => format!(
            "{}, but Redis at {} never held campaign {}: it has no registry entry nor key of it, \
             and it kept campaign(s) {kept} preheated before the first of those orders, so it \
             did not lose its data. It is not the Redis this sale ran on; {rehearsal}",
            lines.join("; "),
            seen.redis,
            campaign.id,
        ),
        Trace::Nothing => format!(
            "{}, but Redis at {} holds no trace of campaign {} (no registry entry, no key). \
             If it is a rehearsal or any other Redis than the sale's, {rehearsal}. Only if it is \
             the Redis this sale ran on and it lost its data: `seckill preheat --recover` loads \
             what is left and restores the buyers",
            lines.join("; "),
            seen.redis,
            campaign.id,
        ),
    };
    Err(preheat_refused(format!("nothing was written: {why}")))
}

/// What `stored_sales` needs to know of this run beyond the campaign.
struct Seen {
    /// Redis time, Unix ms.
    now: i64,
    /// The Redis, for messages.
    redis: String,
    /// The campaign file's `redis:` when the command was sent elsewhere
    /// (`--redis`, `SECKILL_REDIS_URL`), redacted.
    file_redis: Option<String>,
}

impl Seen {
    fn file_names_another_redis(&self) -> String {
        self.file_redis
            .as_ref()
            .map(|url| {
                format!(
                    " (the campaign file names `redis: {url}`: the sale's Redis is likely there, \
                     not at {})",
                    self.redis
                )
            })
            .unwrap_or_default()
    }
}

/// What this Redis shows of the campaign whose orders the database holds,
/// when it would load the items from scratch. Redis alone cannot tell a
/// Redis that lost everything from one that never had the sale (a loss
/// takes the registry with it), so only positive evidence decides:
/// its registry entry or a key of it (it held the campaign: a loss), or
/// another campaign's entry older than the first stored order (a loss
/// would have taken that entry too: it never had this sale).
enum Trace {
    /// A registry entry or a key of the campaign is here.
    Held,
    /// Campaigns preheated before the first stored order survive here and
    /// this one left no trace: never here. Their ids.
    NeverHere(String),
    /// Nothing either way (an empty Redis, or one preheated since).
    Nothing,
}

impl Trace {
    fn of(
        conn: &mut Conn,
        store: &mut dyn OrderStore,
        campaign: &crate::model::campaign::Campaign,
        stored: &[StoredSales],
        now: i64,
    ) -> Result<Trace> {
        if registry::find(conn, &campaign.id, now)?.is_some() {
            return Ok(Trace::Held);
        }
        for item in &campaign.items {
            if SaleItem::live(campaign, item).in_redis(conn)?.is_some() {
                return Ok(Trace::Held);
            }
        }
        // The first stored order's time on the sale's Redis clock (its stream id).
        let mut first: Option<i64> = None;
        for sales in stored {
            let orders = store.item_orders_after(&campaign.id, &sales.item, "", 1)?;
            let at = orders
                .first()
                .and_then(|o| o.stream_id.split('-').next()?.parse::<i64>().ok());
            first = match (first, at) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        let Some(first) = first else {
            return Ok(Trace::Nothing);
        };
        let older: Vec<String> = registry::live(conn, now)?
            .into_iter()
            .filter(|e| e.campaign != campaign.id && e.preheated_at_ms < first)
            .map(|e| e.campaign)
            .collect();
        Ok(if older.is_empty() {
            Trace::Nothing
        } else {
            Trace::NeverHere(older.join(", "))
        })
    }
}

/// Why the script refused an item, in words.
fn refusal(status: PreheatStatus) -> &'static str {
    match status {
        PreheatStatus::HasSales => {
            "the item has sales, `--force` would sell them again (`init --yes` resets it)"
        }
        _ => {
            "no stock key but orders exist (evicted or deleted?); reloading would sell twice: \
             restore the stock by hand, or `init --yes`"
        }
    }
}
