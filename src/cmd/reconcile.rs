//! `seckill reconcile`: the nightly proof that nothing was lost or doubled
//! between Redis and the order database (see `domain::reconcile`).
//!
//! Exit codes, for cron: 0 balanced (a known loss recorded by `preheat
//! --recover` included); 3 drift found (the offending order ids are
//! printed; Redis holding nothing of an item whose orders are stored is
//! drift too); 1 could not check (an item not preheated or expired, Redis or
//! the database unreachable, a database without the seckill schema — never
//! created here). Drift wins over "could not check" when both happen in one
//! run, because drift is what someone must act on.

use anyhow::Result;
use serde::Serialize;

use crate::cmd::regions::Links;
use crate::domain::item::SaleItem;
use crate::domain::orders::StoreArgs;
use crate::domain::reconcile::baseline::KnownLoss;
use crate::domain::reconcile::seats::{SeatCheck, SeatFinding};
use crate::domain::reconcile::transfers::TransferReport;
use crate::domain::reconcile::{ItemReport, Run, fence, reconcile_item};
use crate::invocation::context::{Context, Opened, StoreAccess};
use crate::invocation::help;
use crate::invocation::notify::Event;
use crate::invocation::report::Report;
use crate::model::campaign::Campaign;
use crate::model::exit_codes;
use crate::util::output;
use crate::util::progress::Progress;
use crate::util::text::counted;

/// Flags of `seckill reconcile`.
#[derive(Debug, clap::Args)]
#[command(after_help = format!("{}\n\n{}", exit_codes::help("reconcile"), help::CRON_NOTE))]
pub(crate) struct Args {
    /// Insert orders that are in the stream but missing from the database (idempotent), then check again.
    #[arg(long)]
    pub(crate) repair: bool,

    /// Reopen a sale the failover fence closed: re-apply the orders the
    /// database holds and Redis lost (stock debited, buyers credited), check,
    /// and when the books balance record the running Redis process and lift
    /// the fence (docs/failover.md, "The fence").
    #[arg(long)]
    pub(crate) fence: bool,

    /// With --fence in a region (`--region NAME`): reopen even when a peer
    /// region cannot be read to prove what it credited from this one (said
    /// on stderr and in the report; a unit that peer credited and this
    /// region lost may then sell twice). Without it the region stays fenced.
    #[arg(long, requires = "fence")]
    pub(crate) accept_risk: bool,

    /// A campaign with regions: prove the books over every region instead
    /// (stock never below 0, no credit without its debit, each region's
    /// ledger, Σ stock + Σ sold + in transit = the file's stock); exit 3
    /// names the pair and amount a failover lost (docs/regions.md). Each
    /// region's orders are checked by `reconcile --region NAME`.
    #[arg(long, conflicts_with_all = ["repair", "fence"])]
    pub(crate) regions: bool,

    /// Check only this item (default: every item of the campaign).
    #[arg(long, value_name = "ID")]
    pub(crate) item: Option<String>,

    /// The order database (`--orders-db`).
    #[command(flatten)]
    pub(crate) store: StoreArgs,
}

/// `seckill reconcile`'s report.
#[derive(Debug, Serialize)]
pub(crate) struct ReconcileReport {
    /// The order database checked against (password hidden).
    pub(crate) database: String,
    /// Every item checked and balanced (exit code 0).
    pub(crate) balanced: bool,
    /// One entry per selected item.
    pub(crate) items: Vec<ItemReport>,
    #[serde(skip)]
    campaign: String,
}

impl Report for ReconcileReport {
    /// 3 drift found (or, with `--fence`, an item still fenced); else 1 when
    /// an item could not be checked; else 0.
    fn exit_code(&self) -> i32 {
        let still_fenced = |r: &ItemReport| r.fence.as_ref().is_some_and(|f| f.fenced);
        if self
            .items
            .iter()
            .any(|r| (r.checked && !r.balanced) || still_fenced(r))
        {
            exit_codes::DRIFT_FOUND
        } else if self.items.iter().any(|r| !r.checked) {
            exit_codes::RUNTIME_ERROR
        } else {
            exit_codes::SUCCESS
        }
    }

    fn failure(&self) -> Option<String> {
        let unchecked: Vec<String> = self
            .items
            .iter()
            .filter(|r| !r.checked)
            .map(|r| {
                format!(
                    "could not check item {}: {}",
                    r.item,
                    r.problem.as_deref().unwrap_or("?")
                )
            })
            .collect();
        (!unchecked.is_empty()).then(|| unchecked.join("; "))
    }

    fn render(&self) -> String {
        let mut text = render_table(&self.items, &self.campaign, &self.database);
        for r in &self.items {
            if let Some(fence) = &r.fence {
                text.push_str(&fence_lines(&r.item, fence));
            }
        }
        text
    }
}

/// Check every selected item; exit 0 balanced, 3 drift, 1 could not check
/// (each but 0 also an event for `--notify`).
pub(crate) fn run(ctx: &Context, args: &Args) -> Result<ReconcileReport> {
    let checked = check(ctx, args);
    let event = match &checked {
        Ok(report) => outcome_event(report),
        Err(error) => ctx.campaign_id().map(|campaign| {
            let problem = crate::util::error_text::render(error);
            Event::new(
                "reconcile_unchecked",
                campaign,
                args.item.as_deref(),
                serde_json::json!({ "exit_code": exit_codes::RUNTIME_ERROR, "problem": problem }),
                format!("reconcile of campaign {campaign} could not check anything: {problem}"),
            )
        }),
    };
    if let Some(event) = event {
        ctx.notifier().send(event);
    }
    checked
}

/// `--notify`'s event for a reconcile that found drift (exit 3) or could
/// not check an item (exit 1): what differs, per item; none when balanced.
fn outcome_event(report: &ReconcileReport) -> Option<Event> {
    let campaign = report.campaign.as_str();
    let code = report.exit_code();
    let (event, affected): (&'static str, Vec<&ItemReport>) = match code {
        exit_codes::DRIFT_FOUND => (
            "reconcile_drift",
            report
                .items
                .iter()
                .filter(|r| r.checked && !r.balanced)
                .collect(),
        ),
        exit_codes::RUNTIME_ERROR => (
            "reconcile_unchecked",
            report.items.iter().filter(|r| !r.checked).collect(),
        ),
        _ => return None,
    };
    let first_ids = |named: &crate::domain::reconcile::Named| -> Vec<String> {
        named.ids.iter().take(10).cloned().collect()
    };
    let items: Vec<serde_json::Value> = affected
        .iter()
        .map(|r| {
            serde_json::json!({
                "item": r.item,
                "problem": r.problem,
                "equation": r.equation,
                "missing_from_database": r.missing_from_database.count,
                "missing_from_database_first": first_ids(&r.missing_from_database),
                "not_in_redis": r.not_in_redis.count,
                "not_in_redis_first": first_ids(&r.not_in_redis),
                "content_mismatch": r.content_mismatch.count,
                "database_units_excess": r.database_units_excess,
                "redis_lost_data": r.redis_lost_data,
                "seat_drift": r.seats.as_ref().map_or(0, |s| s.drift_count),
                "seat_drift_first": r.seats.as_ref().map_or_else(Vec::new, |s| {
                    s.drift.iter().take(10).map(SeatFinding::sentence).collect()
                }),
                "next_step": r.next_step,
            })
        })
        .collect();
    let what: Vec<String> = affected
        .iter()
        .map(|r| match (&r.problem, r.checked) {
            (Some(problem), false) => format!("item {}: {problem}", r.item),
            _ if r.redis_lost_data => format!("item {}: Redis lost the item's data", r.item),
            _ => format!("item {}: {}", r.item, r.equation),
        })
        .collect();
    let item = match affected.as_slice() {
        [one] => Some(one.item.as_str()),
        _ => None,
    };
    let text = match code {
        exit_codes::DRIFT_FOUND => format!(
            "reconcile found DRIFT in campaign {campaign} against {}: {}",
            report.database,
            what.join("; ")
        ),
        _ => format!(
            "reconcile could not check campaign {campaign} against {}: {}",
            report.database,
            what.join("; ")
        ),
    };
    Some(Event::new(
        event,
        campaign,
        item,
        serde_json::json!({ "exit_code": code, "database": report.database, "items": items }),
        text,
    ))
}

fn check(ctx: &Context, args: &Args) -> Result<ReconcileReport> {
    // SIGINT/SIGTERM stop the walk between pages (it writes only with
    // --repair, one idempotent transaction at a time), so the bar is cleared.
    let stop = ctx.stop_on_signals()?;
    let (
        Opened {
            campaign,
            target,
            mut conn,
        },
        mut store,
    ) = ctx.open_with_store_as(&args.store, &stop, StoreAccess::MustExist)?;
    let mut reports = Vec::new();
    // Cleared when dropped: on an error, and before the report is printed.
    let progress = Progress::bar(0, "stream entries checked");
    let run = Run {
        progress: &progress,
        stop: &stop,
    };
    let mut peers = match (args.fence, &campaign.region) {
        (true, Some(region)) => Some(PeerLinks::open(ctx, region)?),
        _ => None,
    };
    for item in SaleItem::select(&campaign, args.item.as_deref())? {
        // One item's failure (Redis or the database) must not hide drift
        // already found on another: it is reported as "could not check".
        let fenced = match args.fence {
            true => {
                let peers = peers.as_mut().map(|links| {
                    links.peers.reconnect();
                    fence::Peers {
                        region: links.region.as_str(),
                        links: &mut links.peers.regions,
                        accept_risk: args.accept_risk,
                    }
                });
                fence::reapply(&mut conn, store.as_mut(), &item, peers).map(Some)
            }
            false => Ok(None),
        };
        let checked = fenced
            .and_then(|fenced| {
                let report =
                    reconcile_item(&mut conn, &target, store.as_mut(), &item, args.repair, run)?;
                Ok((fenced, report))
            })
            .and_then(|(fenced, report)| {
                let Some(mut fenced) = fenced else {
                    return Ok(report);
                };
                // Reopened only when the books balance after the re-apply
                // and nothing the database holds was left out.
                if fenced.fenced && !fenced.held_back() && report.checked && report.balanced {
                    fence::reopen(&mut conn, &item, &mut fenced)?;
                }
                Ok(ItemReport {
                    fence: Some(fenced),
                    ..report
                })
            })
            .and_then(|report| {
                if !(args.repair && report.checked) || report.redis_lost_data {
                    return Ok(report);
                }
                let mut again =
                    reconcile_item(&mut conn, &target, store.as_mut(), &item, false, run)?;
                again.repaired = report.repaired;
                again.fence = report.fence.clone();
                again.reservations.states_repaired = report.reservations.states_repaired;
                if let (Some(now), Some(first)) = (&mut again.transfers, &report.transfers) {
                    now.settled = first.settled;
                }
                Ok(again)
            });
        run.check_stop()?;
        let report = checked.unwrap_or_else(|error| {
            // After an error the connection may still owe a reply: start afresh.
            if let Ok(fresh) = target.connect() {
                conn = fresh;
            }
            ItemReport {
                item: item.id().to_string(),
                problem: Some(crate::util::error_text::render(&error)),
                ..ItemReport::default()
            }
        });
        reports.push(report);
    }
    let report = ReconcileReport {
        database: store.display(),
        balanced: false,
        items: reports,
        campaign: campaign.id,
    };
    Ok(ReconcileReport {
        balanced: report.exit_code() == exit_codes::SUCCESS,
        ..report
    })
}

/// `reconcile --fence --region R`: a link to every other region of the
/// campaign, the witnesses of what R sent them (one that cannot be reached
/// is tried again for the next item).
struct PeerLinks {
    region: String,
    peers: Links,
}

impl PeerLinks {
    fn open(ctx: &Context, region: &str) -> Result<PeerLinks> {
        let everywhere: Campaign = ctx.campaign_everywhere()?;
        Ok(PeerLinks {
            region: region.to_string(),
            peers: Links::to(ctx, &everywhere, Some(region))?,
        })
    }
}

/// The table (numbers only, so it fits 80 columns), then per item the
/// equation, the source of the initial stock and the offending order ids.
fn render_table(reports: &[ItemReport], campaign: &str, database: &str) -> String {
    let mut text = output::paragraph(&format!("reconcile campaign {campaign} against {database}"));
    let mut table = output::table([
        "item",
        "initial",
        "in\nDB",
        "in\nflight",
        "dead-\nletter",
        "left",
        "result",
    ]);
    for r in reports {
        if !r.checked || r.redis_lost_data {
            let mut row = vec![r.item.clone()];
            row.extend(std::iter::repeat_n("-".to_string(), 5));
            row.push(if r.checked { "DRIFT" } else { "NOT CHECKED" }.into());
            table.add_row(row);
            continue;
        }
        table.add_row(vec![
            r.item.clone(),
            r.initial_stock.to_string(),
            r.stored.units.to_string(),
            r.in_flight.units.to_string(),
            r.dead_lettered.units.to_string(),
            r.remaining.to_string(),
            if r.balanced { "balanced" } else { "DRIFT" }.into(),
        ]);
    }
    output::fit(&mut table, &[]);
    text.push_str(&format!("{table}\n"));
    for r in reports.iter().filter(|r| r.checked) {
        let mut line = |line: String| text.push_str(&output::paragraph(&line));
        if r.redis_lost_data {
            lost_lines(r, &mut line);
            continue;
        }
        line(format!(
            "{}: {} (initial stock from {}; {}; buyers hold {}, {})",
            r.item,
            r.equation,
            r.initial_stock_from,
            counted(r.database.rows, "database row"),
            counted(r.sold_per_redis, "unit"),
            counted(r.buyers as i64, "user")
        ));
        if r.repaired > 0 {
            line(format!(
                "{}: repaired {} order(s) missing from the database",
                r.item, r.repaired
            ));
        }
        if let Some(loss) = &r.known_loss {
            known_loss_lines(&r.item, loss, &mut line);
        }
        if r.database_after_snapshot.rows > 0 {
            line(format!(
                "{}: {} row(s) ({} units) stored for orders after the snapshot (the sale and a \
                 consumer went on during the check): not part of this equation",
                r.item, r.database_after_snapshot.rows, r.database_after_snapshot.units
            ));
        }
        if r.database_units_excess != 0 {
            line(format!(
                "{}: as of the snapshot the database holds {} units more than the orders it \
                 stores{}",
                r.item,
                r.database_units_excess,
                if (0..=r.in_flight.units + r.dead_lettered.units)
                    .contains(&r.database_units_excess)
                {
                    " (committed since from what was in flight: fine)"
                } else {
                    ""
                }
            ));
        }
        if let Some(t) = &r.transfers {
            transfer_lines(&r.item, t, &mut line);
        }
        let in_transit = r.transfers.as_ref().map_or(0, |t| t.in_transit_units);
        let sold = r.initial_stock - r.remaining - in_transit + r.reservations.buyers_keep;
        if r.sold_per_redis != sold {
            line(format!(
                "{}: buyers hold {} units but {} were sold (initial - left - in transit{})",
                r.item,
                r.sold_per_redis,
                sold,
                if r.reservations.buyers_keep > 0 {
                    " + released, kept against the limit"
                } else {
                    ""
                }
            ));
        }
        if r.reservations.states_repaired > 0 {
            line(format!(
                "{}: repaired {} order state(s) the database had not caught up with",
                r.item, r.reservations.states_repaired
            ));
        }
        if r.reservations.state_mismatch_count > 0 {
            line(format!(
                "{}: {} order(s) whose Redis and database states differ: {}",
                r.item,
                r.reservations.state_mismatch_count,
                r.reservations.state_mismatch.join(", ")
            ));
        }
        if let Some(seats) = &r.seats {
            seat_lines(&r.item, seats, &mut line);
        }
        for (list, what) in [
            (&r.missing_from_database, "in Redis but not in the database"),
            (&r.not_in_redis, "in the database but not in Redis"),
            (
                &r.content_mismatch,
                "whose database row differs from the order (user, qty or price)",
            ),
        ] {
            if list.count > 0 {
                let more = list.count - list.ids.len() as u64;
                let tail = if more > 0 {
                    format!(" (and {more} more)")
                } else {
                    String::new()
                };
                line(format!(
                    "{}: {} order(s) {what}: {}{tail}",
                    r.item,
                    list.count,
                    list.ids.join(" ")
                ));
            }
        }
    }
    text
}

/// Seats named in the table per list (JSON has up to
/// `MAX_NAMED_SEATS` of `domain::reconcile::seats`; the counts are exact).
const SEATS_IN_TABLE: usize = 10;

/// A seat item's proof: each section's counts, then the seats that do not
/// add up, named (a long list capped, with how many more).
fn seat_lines(item: &str, check: &SeatCheck, line: &mut impl FnMut(String)) {
    for s in &check.sections {
        line(format!(
            "{item}: section {}: {} free · {} held ({} in open reservations) · {} sold ({} to \
             paid or final orders in Redis, {} in the database) · {} blocked{}",
            s.section,
            s.free,
            s.held,
            s.held_by_open_reservations,
            s.sold,
            s.sold_to_redis_orders,
            s.sold_in_database,
            s.blocked,
            if s.moving {
                " (kept changing while read)"
            } else {
                ""
            }
        ));
    }
    for (findings, count, what) in [
        (&check.drift, check.drift_count, "DRIFT seat by seat"),
        (
            &check.catching_up,
            check.catching_up_count,
            "seats the database has not caught up with yet (orders in flight, not drift)",
        ),
    ] {
        if count == 0 {
            continue;
        }
        let named: Vec<String> = findings
            .iter()
            .take(SEATS_IN_TABLE)
            .map(SeatFinding::sentence)
            .collect();
        let more = count - named.len() as u64;
        line(format!(
            "{item}: {what}, {count}: {}{}",
            named.join("; "),
            if more > 0 {
                format!(" (and {more} more)")
            } else {
                String::new()
            }
        ));
    }
    if check.drift_count == 0 {
        line(format!(
            "{item}: seat by seat: every sold seat is a stored paid or final order's, every \
             held seat an open reservation's, no seat in two live orders"
        ));
    }
}

/// An item whose Redis state is gone while its orders are stored.
fn lost_lines(r: &ItemReport, line: &mut impl FnMut(String)) {
    if let Some(problem) = &r.problem {
        line(format!("{}: DRIFT: {problem}", r.item));
    }
    let list = &r.not_in_redis;
    let more = list.count - list.ids.len() as u64;
    line(format!(
        "{}: {} order(s) stored, their stream entries gone: {}{}",
        r.item,
        list.count,
        list.ids.join(" "),
        if more > 0 {
            format!(" (and {more} more)")
        } else {
            String::new()
        }
    ));
    if let Some(next) = &r.next_step {
        line(format!("{}: next: {next}", r.item));
    }
}

/// The recoveries an item balances against, and whether they are intact.
fn known_loss_lines(item: &str, loss: &KnownLoss, line: &mut impl FnMut(String)) {
    for recovery in &loss.recoveries {
        line(format!(
            "{item}: known loss: Redis lost its data; `preheat --recover` at {} by {} carried over \
             {} order(s) ({} units) stored before the loss and loaded {} of {}; orders \
             acknowledged but not yet stored then cannot be known",
            crate::util::text::time_or_dash(Some(recovery.recovered_at_ms)),
            recovery.recovered_by,
            recovery.rows_carried,
            recovery.units_carried,
            recovery.stock_loaded,
            recovery.initial_stock
        ));
    }
    if !loss.intact {
        line(format!(
            "{item}: DRIFT: the database marks {} row(s) ({} units) carried over, the recoveries \
             recorded {} ({} units): carried-over orders were changed or deleted since",
            loss.database_rows, loss.database_units, loss.rows_carried, loss.units_carried
        ));
    }
}

/// The transfer lines of a bucketed item (docs/buckets.md).
fn transfer_lines(item: &str, t: &TransferReport, line: &mut impl FnMut(String)) {
    line(format!(
        "{item}: {} buckets, {} transfer(s), {} unit(s) in transit",
        t.buckets, t.transfers, t.in_transit_units
    ));
    if t.settled > 0 {
        line(format!("{item}: settled {} transfer(s)", t.settled));
    }
    for (list, what) in [
        (
            &t.in_transit,
            "in transit (`reconcile --repair` settles them)",
        ),
        (&t.unmatched_credits, "credited without a debit"),
    ] {
        if list.count > 0 {
            line(format!(
                "{item}: {} transfer(s) {what}: {}",
                list.count,
                list.ids.join(", ")
            ));
        }
    }
}

/// `--fence`: what was re-applied for one item, and whether it reopened.
fn fence_lines(item: &str, fence: &fence::FenceReport) -> String {
    let mut text = String::new();
    let mut line = |line: String| text.push_str(&output::paragraph(&line));
    match fence.before.as_str() {
        "fenced" => {}
        "unarmed" => {
            line(format!(
                "{item}: fence: preheated before the fence; armed now, nothing re-applied"
            ));
            return text;
        }
        other => {
            line(format!("{item}: fence: {other}, nothing to re-apply"));
            return text;
        }
    }
    line(format!(
        "{item}: fence: preheat loaded the stock on Redis process {}, {} holds it now; \
         re-applied {} ({}) the order database holds and Redis had lost",
        short_run_id(&fence.recorded_run_id),
        short_run_id(&fence.running_run_id),
        counted(fence.reapplied.len() as i64, "order"),
        counted(fence.units_reapplied, "unit"),
    ));
    if !fence.reapplied.is_empty() {
        let mut table = output::table(["order id", "stream id", "user", "qty"]);
        for order in &fence.reapplied {
            table.add_row(vec![
                order.order_id.clone(),
                order.stream_id.clone(),
                order.user.clone(),
                order.qty.to_string(),
            ]);
        }
        output::fit(&mut table, &[2]);
        text.push_str(&format!("{table}\n"));
    }
    if !fence.peers.is_empty() {
        text.push_str(&output::paragraph(&format!(
            "{item}: peers: out:<peer> raised to what each peer credited from this region, \
             {} debited again",
            counted(fence.units_raised.unwrap_or(0), "unit")
        )));
        let mut table = output::table([
            "peer",
            "sent\nbefore",
            "peer\ncredited",
            "raised",
            "stock\nafter",
        ]);
        for peer in &fence.peers {
            table.add_row(vec![
                peer.peer.clone(),
                peer.sent_before.to_string(),
                peer.peer_credited.to_string(),
                peer.raised.to_string(),
                peer.stock_after.to_string(),
            ]);
        }
        output::fit(&mut table, &[]);
        text.push_str(&format!("{table}\n"));
    }
    let mut line = |line: String| text.push_str(&output::paragraph(&line));
    for peer in &fence.peers_unproven {
        line(match peer.accepted {
            true => format!(
                "{item}: RISK ACCEPTED: region {} could not prove what it credited ({}); \
                 reopened without it (--accept-risk)",
                peer.peer, peer.why
            ),
            false => format!(
                "{item}: region {} could not prove what it credited from this region ({}): \
                 stays fenced until it can be read (or --accept-risk)",
                peer.peer, peer.why
            ),
        });
    }
    for not in &fence.not_reapplied {
        let order = match not.order_id.as_str() {
            "" => String::new(),
            id => format!("order {id}: "),
        };
        line(format!("{item}: not re-applied: {order}{}", not.why));
    }
    line(match (fence.reopened, fence.fenced) {
        (true, _) => format!("{item}: REOPENED: the books balance; buys sell again"),
        (false, true) => format!(
            "{item}: STILL FENCED: every buy answers `fenced` until the books balance \
             (see above), then run reconcile --fence again"
        ),
        (false, false) => format!("{item}: open"),
    });
    text
}

/// A run_id's first 12 hex digits, enough to tell two processes apart.
fn short_run_id(run_id: &str) -> &str {
    run_id.get(..12).unwrap_or(run_id)
}
