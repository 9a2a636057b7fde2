//! `seckill init`: reset a campaign's Redis state to the file's values, for
//! rehearsals and load tests. Deletes stock, buyers, order and dead-letter
//! streams, request ids, the kill switch and rate-limit keys, then loads the
//! file's stock as `preheat` would.
//!
//! Refuses without `--yes` when the campaign has sales or a kill switch is
//! ON (a reset would silently reopen a stopped sale). With `--yes` it still
//! refuses a sale that is selling, and acknowledged orders the order
//! database does not hold yet, open or closed (the kill switch stores
//! nothing): `consume --drain` stores them, or `--purge-orders ID` names the
//! campaign again, as its own confirmation. The order database is only read
//! — `init` says how many rows of the campaign it still holds (`reconcile`
//! would report them as drift) — unless `--purge-orders ID`.
//!
//! Like `preheat`, it refuses to load a campaign whose items another
//! campaign live on this Redis already sells (a typo'd id would start a
//! second copy of the sale) unless `--allow-shared-items`.
//!
//! `--dry-run` makes the same checks and refusals, then counts what exists
//! ([`existing_keys`], shared with `campaigns drop`) instead of deleting it.

use anyhow::{Context as _, Result};
use serde::Serialize;

use crate::domain::item::SaleItem;
use crate::domain::operation::limits;
use crate::domain::orders::entry::{StreamEntry, parse_entry};
use crate::domain::orders::{OrderStore, stream};
use crate::domain::orders::{StoreArgs, StoreLocation};
use crate::domain::registry;
use crate::domain::slot;
use crate::domain::slot::PreheatMode;
use crate::invocation::context::{Context, Opened};
use crate::invocation::report::Report;
use crate::model::error::usage;
use crate::model::keys::ItemKeys;
use crate::model::layout::Layout;
use crate::operator::monitor::status::{StatusReader, WindowState};
use crate::redis_client::conn::Conn;
use crate::util::output;
use redis::Commands;

/// Flags of `seckill init`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Reset even when the campaign already has sales (their Redis record is
    /// deleted) or a kill switch is ON (it is turned off).
    #[arg(long)]
    pub(crate) yes: bool,

    /// Also delete the campaign's rows from the order database. The value must
    /// be the campaign id: a confirmation of its own.
    #[arg(long, value_name = "CAMPAIGN_ID", requires = "yes")]
    pub(crate) purge_orders: Option<String>,

    /// Reset even though another campaign live on this Redis holds the same
    /// item ids (without it that is refused, as `preheat` refuses it: usually
    /// a typo'd campaign id that would start a second copy of the same sale).
    #[arg(long)]
    pub(crate) allow_shared_items: bool,

    /// Show what init would delete and load, write nothing (the refusals
    /// below apply as they would: a dry run of a refused init is refused).
    #[arg(long)]
    pub(crate) dry_run: bool,

    /// The order database (`--orders-db`), counted (and purged) after the reset.
    #[command(flatten)]
    pub(crate) store: StoreArgs,
}

/// `seckill init`'s report: what was reset, and what the order database still holds.
#[derive(Debug, Serialize)]
pub(crate) struct InitReport {
    /// Nothing was written (`--dry-run`): every count says what init would do.
    pub(crate) dry_run: bool,
    /// One entry per item of the campaign.
    pub(crate) items: Vec<InitRow>,
    /// The order database (password hidden).
    pub(crate) database: String,
    /// Rows of this campaign the order database still holds (reconcile will
    /// call them drift); null when there is no database or it could not be read.
    pub(crate) order_rows_in_database: Option<i64>,
    /// Rows deleted by `--purge-orders`; null without it.
    pub(crate) order_rows_purged: Option<u64>,
    /// Why the rows could not be counted (the database unreachable, ...); the
    /// Redis reset happened all the same.
    pub(crate) order_database_problem: Option<String>,
    /// Orders acknowledged to shoppers (in an order stream) that were not in
    /// the order database when the reset deleted the streams: lost with it.
    pub(crate) unstored_orders_deleted: Unstored,
    #[serde(skip)]
    campaign: String,
    #[serde(skip)]
    campaign_file: String,
    #[serde(skip)]
    redis: String,
}

/// One item's reset.
#[derive(Debug, Serialize)]
pub(crate) struct InitRow {
    /// The item id.
    pub(crate) item: String,
    /// Redis keys deleted (stock, buyers, streams, request ids, switch, rate
    /// limits); in a dry run, the keys that exist and would be.
    pub(crate) keys_deleted: u64,
    /// Stock loaded afterwards, from the file.
    pub(crate) stock: Option<i64>,
    /// The kill switch was ON before the reset (it is off now).
    pub(crate) kill_switch_was_on: bool,
    #[serde(skip)]
    switch_reason: Option<String>,
}

impl Report for InitReport {
    fn render(&self) -> String {
        let rows = self.items.iter().map(|row| {
            vec![
                row.item.clone(),
                row.keys_deleted.to_string(),
                row.stock.map_or_else(|| "-".into(), |s| s.to_string()),
                match (row.kill_switch_was_on, &row.switch_reason, self.dry_run) {
                    (true, Some(reason), false) => format!("was ON ({reason}), now off"),
                    (true, None, false) => "was ON, now off".to_string(),
                    (true, Some(reason), true) => format!("ON ({reason}), would be off"),
                    (true, None, true) => "ON, would be off".to_string(),
                    (false, _, _) => "off".to_string(),
                },
            ]
        });
        let lost = &self.unstored_orders_deleted;
        let lost = if lost.count > 0 {
            output::paragraph(&format!(
                "{} {} acknowledged order(s) that are not in the order database {}: {}{}",
                if self.dry_run {
                    "would delete"
                } else {
                    "deleted"
                },
                lost.count,
                self.database,
                lost.ids.join(" "),
                if lost.count > lost.ids.len() as u64 {
                    format!(" (and {} more)", lost.count - lost.ids.len() as u64)
                } else {
                    String::new()
                }
            ))
        } else {
            String::new()
        };
        let mut text = format!(
            "{} campaign {} on {}\n{}{lost}",
            if self.dry_run {
                "dry run (nothing written): init would reset"
            } else {
                "reset"
            },
            self.campaign,
            self.redis,
            output::grid(
                if self.dry_run {
                    &["item", "keys to delete", "stock to load", "kill switch"]
                } else {
                    &["item", "keys deleted", "stock", "kill switch"]
                },
                rows.collect(),
                &[3]
            )
        );
        if let Some(n) = self.order_rows_purged {
            text.push_str(&output::paragraph(&format!(
                "{} {n} order row(s) of campaign {} from {}",
                if self.dry_run {
                    "would delete"
                } else {
                    "deleted"
                },
                self.campaign,
                self.database
            )));
        }
        if let Some(problem) = &self.order_database_problem {
            text.push_str(&output::paragraph(&format!(
                "could not count the order rows of campaign {} in {}: {problem}",
                self.campaign, self.database
            )));
        }
        if let Some(n) = self
            .order_rows_in_database
            .filter(|n| *n > 0 && !(self.dry_run && self.order_rows_purged.is_some()))
        {
            text.push_str(&output::paragraph(&format!(
                "the order database {} still holds {n} order row(s) of campaign {}: reconcile \
                 will report them as drift; delete them with `seckill -c {} init --yes --purge-orders {}`",
                self.database, self.campaign, self.campaign_file, self.campaign
            )));
        }
        text
    }
}

/// Reset every item of the campaign.
pub(crate) fn run(ctx: &Context, args: &Args) -> Result<InitReport> {
    let campaign = ctx.campaign()?;
    if let Some(id) = &args.purge_orders
        && *id != campaign.id
    {
        return Err(usage(format!(
            "--purge-orders {id} does not name campaign {}: repeat the campaign id to confirm",
            campaign.id
        )));
    }
    let location = StoreLocation::resolve(&args.store, &campaign)?;
    // Purging needs the database before anything is reset; counting is advice only.
    // A missing SQLite file holds no rows: nothing to say or purge. Any other failure
    // to read the database is said, since the count is what init promises.
    let mut problem = None;
    let mut store = match &args.purge_orders {
        // A SQLite file never made holds no rows: nothing to purge.
        Some(_) if location.require_existing().is_err() => None,
        Some(_) => Some(location.open_existing()?),
        None if location.require_existing().is_err() => None,
        None => location
            .open_existing()
            .inspect_err(|e| problem = Some(crate::util::error_text::render(e)))
            .ok(),
    };
    let Opened {
        campaign,
        target,
        mut conn,
    } = ctx.open()?;
    if !args.allow_shared_items {
        let now = slot::redis_now_ms(&mut conn)?;
        registry::refuse_collisions(&mut conn, &campaign, now)?;
    }
    let items = SaleItem::select(&campaign, None)?;
    // Each item's state before the reset (summed over its slots).
    let before = items
        .iter()
        .map(|item| item.state(&mut conn))
        .collect::<Result<Vec<_>>>()?;
    let unstored = unstored_orders(&mut conn, &items, store.as_deref_mut())?;
    if args.yes && args.purge_orders.is_none() {
        refuse_while_selling(&mut conn, &campaign, &items, &unstored)?;
        refuse_unstored(&campaign, &unstored)?;
    }
    if !args.yes {
        let mut refusals = Vec::new();
        let sold: Vec<String> = campaign
            .items
            .iter()
            .zip(&before)
            .filter(|(_, s)| s.has_sales())
            .map(|(item, s)| format!("{} ({} buyers, {} orders)", item.id, s.buyers, s.stream_len))
            .collect();
        if !sold.is_empty() {
            refusals.push(format!(
                "campaign {} already has sales on {}: pass --yes to delete them from Redis{}",
                campaign.id,
                sold.join(", "),
                unstored.warning()
            ));
        }
        let switched: Vec<String> = campaign
            .items
            .iter()
            .zip(&before)
            .filter(|(_, s)| s.closed)
            .map(|(item, s)| match &s.switch_reason {
                Some(reason) => format!("{} ({reason})", item.id),
                None => item.id.clone(),
            })
            .collect();
        if !switched.is_empty() {
            refusals.push(format!(
                "the kill switch is ON for item {}: a reset turns it off and reopens the sale; \
                 pass --yes to reset anyway",
                switched.join(", ")
            ));
        }
        if !refusals.is_empty() {
            return Err(usage(refusals.join("; ")));
        }
    }
    // The counts of limits above the items (docs/limits.md) go with them.
    let ids: Vec<&str> = items.iter().map(|item| item.id()).collect();
    let limit_keys = limits::reset_keys(&campaign, &ids);
    if args.dry_run {
        let mut rows = Vec::new();
        for ((item, was), limit_keys) in items.iter().zip(before).zip(&limit_keys) {
            rows.push(InitRow {
                item: item.id().to_string(),
                keys_deleted: existing_keys(&mut conn, item)?.len() as u64
                    + limits::existing(&mut conn, limit_keys)?,
                stock: Some(item.item.stock),
                kill_switch_was_on: was.closed,
                switch_reason: was.switch_reason,
            });
        }
        let order_rows = rows_held(store.as_deref_mut(), &campaign.id, &mut problem);
        return Ok(InitReport {
            dry_run: true,
            unstored_orders_deleted: unstored,
            items: rows,
            database: location.display(),
            order_rows_purged: args
                .purge_orders
                .as_ref()
                .map(|_| order_rows.unwrap_or(0).max(0) as u64),
            order_rows_in_database: order_rows,
            order_database_problem: problem,
            campaign: campaign.id,
            campaign_file: campaign.path.display().to_string(),
            redis: target.display,
        });
    }
    // SCAN visits one node; on a cluster the per-user rate keys expire by themselves within one window.
    let scan_too = !conn.is_cluster();
    let mut rows = Vec::new();
    for ((item, was), limit_keys) in items.iter().zip(before).zip(&limit_keys) {
        let deleted = item.delete(&mut conn, scan_too)? + limits::delete(&mut conn, limit_keys)?;
        let stock = item
            .preheat(&mut conn, PreheatMode::Load, false)?
            .report
            .redis_stock_after;
        rows.push(InitRow {
            item: item.id().to_string(),
            keys_deleted: deleted,
            stock,
            kill_switch_was_on: was.closed,
            switch_reason: was.switch_reason,
        });
    }
    let purged = match (&mut store, &args.purge_orders) {
        (Some(store), Some(_)) => Some(store.delete_campaign(&campaign.id)?),
        (None, Some(_)) => Some(0),
        (_, None) => None,
    };
    let order_rows = rows_held(store.as_deref_mut(), &campaign.id, &mut problem);
    let by = crate::domain::kill_switch::operator(None)?;
    let now = slot::redis_now_ms(&mut conn)?;
    registry::record(&mut conn, &registry::Entry::of(&campaign, now, &by))?;
    Ok(InitReport {
        dry_run: false,
        unstored_orders_deleted: unstored,
        items: rows,
        database: location.display(),
        order_rows_in_database: order_rows,
        order_rows_purged: purged,
        order_database_problem: problem,
        campaign: campaign.id,
        campaign_file: campaign.path.display().to_string(),
        redis: target.display,
    })
}

/// The keys of `item` that exist now: what a reset (or `campaigns drop`)
/// deletes — the plain slot's, each bucket's (the layout Redis recorded
/// too, when it differs from the file's), the room's and the per-user rate
/// keys (by SCAN on a standalone Redis; on a cluster SCAN sees one node, so
/// there the fixed names are asked one by one and rate keys, left to
/// expire within one window, are not counted).
pub(crate) fn existing_keys(conn: &mut Conn, item: &SaleItem) -> Result<Vec<String>> {
    let layout = item.layout();
    let plain = ItemKeys::new(&layout.prefix, &item.campaign.id, &item.item.id);
    let recorded: Option<u32> = conn
        .get(layout.marker())
        .with_context(|| format!("cannot read {}", layout.marker()))?;
    let mut layouts = vec![layout.clone()];
    if let Some(n) = recorded.filter(|n| *n != layout.buckets && (1..=256).contains(n)) {
        layouts.push(Layout {
            buckets: n,
            ..layout.clone()
        });
    }
    let mut bases = vec![plain.clone()];
    let mut names: Vec<String> = plain.fixed().iter().map(|k| k.to_string()).collect();
    names.extend(plain.room().all().iter().map(|k| k.to_string()));
    names.push(layout.marker());
    for layout in layouts.iter().filter(|l| l.buckets > 1) {
        for bucket in layout.all() {
            names.extend(bucket.keys.fixed().iter().map(|k| k.to_string()));
            names.extend([bucket.xfer_out, bucket.xfer_pending, bucket.xfer_in]);
            let room = bucket.keys.room();
            names.extend([room.admissions, room.admission_count]);
            bases.push(bucket.keys);
        }
    }
    let mut found = std::collections::BTreeSet::new();
    if conn.is_cluster() {
        for name in names {
            let exists: bool = conn
                .exists(&name)
                .with_context(|| format!("cannot check {name}"))?;
            if exists {
                found.insert(name);
            }
        }
    } else {
        for base in &bases {
            let mut cursor: u64 = 0;
            loop {
                let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(base.scan_pattern())
                    .arg("COUNT")
                    .arg(1000)
                    .query(conn)
                    .with_context(|| format!("cannot SCAN keys of {}", base.base))?;
                found.extend(batch);
                if next == 0 {
                    break;
                }
                cursor = next;
            }
        }
    }
    Ok(found.into_iter().collect())
}

/// Acknowledged orders not in the order database: exact count, the first
/// [`NAMED`] named.
#[derive(Debug, Default, Serialize)]
pub(crate) struct Unstored {
    pub(crate) count: u64,
    pub(crate) ids: Vec<String>,
}

/// Order ids named in refusals and reports (the count is always exact).
const NAMED: usize = 20;

impl Unstored {
    /// "; N acknowledged order(s) are not in the order database yet: ..." or "".
    pub(crate) fn warning(&self) -> String {
        if self.count == 0 {
            return String::new();
        }
        format!(
            "; {} acknowledged order(s) are not in the order database yet and would be lost: {}{} \
             (run `seckill consume --drain` first)",
            self.count,
            self.ids.join(" "),
            if self.count > self.ids.len() as u64 {
                " ..."
            } else {
                ""
            }
        )
    }
}

/// The orders in the items' streams that `store` does not hold (all of
/// them without a database): what a reset would delete for good.
pub(crate) fn unstored_orders(
    conn: &mut crate::redis_client::conn::Conn,
    items: &[SaleItem],
    mut store: Option<&mut (dyn OrderStore + 'static)>,
) -> Result<Unstored> {
    const PAGE: usize = 1000;
    let mut unstored = Unstored::default();
    for item in items {
        for slot in item.slots() {
            let mut after = "-".to_string();
            loop {
                let page = stream::range_after(conn, &slot.keys.orders, &after, "+", PAGE)?;
                let Some(last) = page.last() else {
                    break;
                };
                after = last.id.clone();
                let orders: Vec<String> = page
                    .iter()
                    .filter_map(
                        |entry| match parse_entry(entry, &item.campaign.id, item.id()) {
                            Ok(StreamEntry::Order(order)) => Some(order.order_id),
                            _ => None,
                        },
                    )
                    .collect();
                let ids: Vec<&str> = orders.iter().map(String::as_str).collect();
                let stored = match store.as_deref_mut() {
                    Some(store) => store.stored_contents(&ids)?,
                    None => Default::default(),
                };
                for id in orders.iter().filter(|id| !stored.contains_key(id.as_str())) {
                    unstored.count += 1;
                    if unstored.ids.len() < NAMED {
                        unstored.ids.push(id.clone());
                    }
                }
            }
        }
    }
    Ok(unstored)
}

/// How recent an order must be for a sale to count as selling.
const FLOWING_MS: i64 = 60_000;

/// `--yes` is not enough on a sale that is selling: while an item's window
/// is open, its kill switch off, and orders arrive (one in the last minute,
/// by the Redis clock) or wait unstored, a reset would reopen the stock to
/// shoppers mid-sale and delete acknowledged orders; the operator must then
/// type the campaign id (`--purge-orders ID`, which also clears the order
/// database). Closing the sale first (`shutdown-switch on`) is the other way.
fn refuse_while_selling(
    conn: &mut crate::redis_client::conn::Conn,
    campaign: &crate::model::campaign::Campaign,
    items: &[SaleItem],
    unstored: &Unstored,
) -> Result<()> {
    let selling = selling_items(conn, items, unstored)?;
    if selling.is_empty() {
        return Ok(());
    }
    // Closing alone stores nothing: with orders still to store, the way on
    // is to close and store them.
    let first = if unstored.count > 0 {
        "Close it (`shutdown-switch on`) and store its orders (`seckill consume --drain`) first"
    } else {
        "Close it first (`shutdown-switch on`)"
    };
    Err(usage(format!(
        "campaign {} is selling: the window of item(s) {} is open, the kill switch off, and \
         orders flow; --yes alone does not reset a live sale{}. {first}, or type the campaign \
         id: `init --yes --purge-orders {}` (it also deletes the campaign's rows from the order \
         database)",
        campaign.id,
        selling.join(", "),
        unstored.warning(),
        campaign.id
    )))
}

/// Items of a sale that is selling: window open, kill switch off, and
/// orders arriving (one in the last minute, Redis clock) or waiting unstored.
pub(crate) fn selling_items(
    conn: &mut crate::redis_client::conn::Conn,
    items: &[SaleItem],
    unstored: &Unstored,
) -> Result<Vec<String>> {
    let mut reader = StatusReader::default();
    let mut selling = Vec::new();
    for item in items {
        let status = reader.read_item(conn, item)?;
        if status.window.state != WindowState::Open || status.kill_switch.on {
            continue;
        }
        let mut newest: Option<i64> = None;
        for slot in item.slots() {
            let last = last_entry_ms(conn, &slot.keys.orders)?;
            newest = newest.max(last);
        }
        let recent = newest.is_some_and(|ms| status.redis_time_ms - ms < FLOWING_MS);
        if recent || unstored.count > 0 {
            selling.push(item.id().to_string());
        }
    }
    Ok(selling)
}

/// `--yes` is not enough either when acknowledged orders are not in the
/// order database yet, whether the sale is open, closed by the kill switch
/// (which stores nothing) or over: the reset would delete them for good
/// (issue 25 item 39). `consume --drain` stores them; typing the campaign id
/// (`--purge-orders ID`) deletes them knowingly.
fn refuse_unstored(campaign: &crate::model::campaign::Campaign, unstored: &Unstored) -> Result<()> {
    if unstored.count == 0 {
        return Ok(());
    }
    Err(usage(format!(
        "campaign {}: {} acknowledged order(s) are not in the order database yet: {}{}; a reset \
         deletes them for good, open or closed (the kill switch stores nothing). Store them \
         first (`seckill consume --drain`), or type the campaign id: `init --yes \
         --purge-orders {}` (it also deletes the campaign's rows from the order database)",
        campaign.id,
        unstored.count,
        unstored.ids.join(" "),
        if unstored.count > unstored.ids.len() as u64 {
            " ..."
        } else {
            ""
        },
        campaign.id
    )))
}

/// The Redis time (ms) of a stream's newest entry: its id's first part.
fn last_entry_ms(conn: &mut crate::redis_client::conn::Conn, stream: &str) -> Result<Option<i64>> {
    let newest: Vec<(String, redis::Value)> = redis::cmd("XREVRANGE")
        .arg(stream)
        .arg("+")
        .arg("-")
        .arg("COUNT")
        .arg(1)
        .query(conn)
        .with_context(|| format!("cannot read the newest entry of {stream}"))?;
    Ok(newest
        .first()
        .and_then(|(id, _)| id.split_once('-'))
        .and_then(|(ms, _)| ms.parse().ok()))
}

/// The campaign's rows in the order database, when there is one to read;
/// why it could not be read goes to `problem` (the count is advice only).
fn rows_held(
    store: Option<&mut (dyn OrderStore + 'static)>,
    campaign: &str,
    problem: &mut Option<String>,
) -> Option<i64> {
    match store.map(|store| store.campaign_rows(campaign)) {
        Some(Ok(rows)) => Some(rows),
        Some(Err(e)) => {
            *problem = Some(crate::util::error_text::render(&e));
            None
        }
        None => None,
    }
}
