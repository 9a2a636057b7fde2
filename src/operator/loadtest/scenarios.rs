//! The load-test scenarios on Redis, each set up, run and cleaned up here:
//! the stock-decrement variants (on the engine, `run::run_variant`), the
//! bucketed buy path (`buckets`), the reservations race (`reservations`) and
//! the waiting room (`queue`). The command turns flags into one of them;
//! what it gets back is the report to show.
//!
//! Every scenario works in the load test's own namespace and refuses (exit 2)
//! a Redis that carries a live sale of the campaign (`namespace::ensure_free`).
//!
//! Within loadtest it uses: buckets, namespace, queue,
//! report, reservations, run.

use anyhow::{Context, Result};
use indicatif::ProgressBar;
use seckill_loadgen::Pace;

use super::buckets::{BucketReport, BucketRun};
use super::namespace::{self, LoadtestKeys};
use super::queue::{QueueReport, QueueRun};
use super::report::{Thresholds, VariantReport};
use super::reservations::{RaceReport, RaceSettings};
use super::run::run_variant;
use super::{Plan, Settings, Variant, VariantRun};
use crate::model::campaign::Campaign;
use crate::redis_client::conn::RedisTarget;
use crate::redis_client::scripts;

/// What the variants scenario produced.
pub(crate) struct VariantsRun {
    /// The lines above the table.
    pub(crate) heading: String,
    pub(crate) runs: Vec<VariantRun>,
}

/// Run `variants` in turn on a fresh namespace each, then check `thresholds`;
/// `progress` gives each variant its bar. The namespace is deleted afterwards
/// unless `keep` (after a failed variant too: its error matters more).
pub(crate) fn variants(
    target: &RedisTarget,
    campaign: &Campaign,
    item_id: &str,
    settings: Settings,
    variants: &[Variant],
    (keep, thresholds): (bool, &Thresholds),
    progress: &dyn Fn(Variant, u64) -> ProgressBar,
) -> Result<VariantsRun> {
    let keys = LoadtestKeys::new(&campaign.id, item_id);
    let mut control = target.connect()?;
    namespace::ensure_free(&mut control, &keys, campaign)?;
    let plan = Plan {
        campaign: loadtest_campaign(campaign, item_id, &settings),
        keys,
        campaign_id: campaign.id.clone(),
        item_id: item_id.to_string(),
        run_id: ulid::Ulid::generate().to_string(),
        // Loaded once, before any timing: the workers send bare EVALSHA and never see NOSCRIPT.
        buy_sha: scripts::buy::SPEC.load(&mut control)?,
        node_run_id: node_run_id(&mut control),
        v3_sha: scripts::v3_decr::SPEC.load(&mut control)?,
        lock_release_sha: scripts::lock_release::SPEC.load(&mut control)?,
        settings,
    };
    let outcome = (|| -> Result<Vec<VariantRun>> {
        let mut runs = Vec::new();
        for &variant in variants {
            let bar = progress(variant, plan.settings.requests);
            let run = run_variant(target, &plan, variant, &bar);
            bar.finish_and_clear();
            runs.push(run.with_context(|| format!("variant {} failed", variant.as_str()))?);
        }
        Ok(runs)
    })();
    let mut runs = if keep {
        outcome?
    } else {
        let cleaned = namespace::remove(&mut control, &plan.keys);
        let runs = outcome?;
        cleaned?;
        runs
    };
    for run in &mut runs {
        run.report.thresholds_failed = thresholds.check(&run.report);
    }
    Ok(VariantsRun {
        heading: heading(campaign, &plan, &target.display, keep),
        runs,
    })
}

/// The bucketed buy path, one run (see `buckets`): its heading and report.
pub(crate) fn buckets(
    target: &RedisTarget,
    campaign: &Campaign,
    item_id: &str,
    run: &BucketRun,
    keep: bool,
) -> Result<(String, BucketReport)> {
    let mut control = target.connect()?;
    namespace::ensure_free(
        &mut control,
        &LoadtestKeys::new(&campaign.id, item_id),
        campaign,
    )?;
    let report = super::buckets::run(target, campaign, item_id, run, keep)?;
    let heading = format!(
        "load test of campaign {} item {item_id} on {}: {} buckets, {} demand, {} threads, {} requests, stock {}, {} users",
        campaign.id,
        target.display,
        report.buckets,
        report.demand,
        report.threads,
        report.requests,
        report.stock,
        report.users
    );
    Ok((heading, report))
}

/// Buys with a payment timeout, payments racing expiry, the proof (see
/// `reservations`): its heading and report.
pub(crate) fn reservations(
    target: &RedisTarget,
    campaign: &Campaign,
    item_id: &str,
    settings: &Settings,
    race: &RaceSettings,
    keep: bool,
) -> Result<(String, RaceReport)> {
    let keys = LoadtestKeys::new(&campaign.id, item_id);
    let mut control = target.connect()?;
    namespace::ensure_free(&mut control, &keys, campaign)?;
    let mut copy = loadtest_campaign(campaign, item_id, settings);
    copy.payment_timeout = Some(race.payment_timeout);
    namespace::reset(&mut control, &keys, &ulid::Ulid::generate().to_string())?;
    let outcome = super::reservations::run(target, &copy, &keys.item, race);
    let report = if keep {
        outcome?
    } else {
        let cleaned = namespace::remove(&mut control, &keys);
        let report = outcome?;
        cleaned?;
        report
    };
    let heading = format!(
        "reservations load test of campaign {} item {item_id} on {}: {} connections (a thread each), {} requests, stock {}, payment timeout {:?}, pay share {}",
        campaign.id,
        target.display,
        race.threads,
        race.requests,
        settings.stock,
        race.payment_timeout,
        race.pay_share
    );
    Ok((heading, report))
}

/// The waiting room rehearsed (see `queue`): its heading and report. The
/// item keeps its room but no pre-queue or registration (synthetic shoppers
/// neither wait for a start nor register), no window, no rate limit; its
/// stock and buckets are the flags'.
pub(crate) fn queue(
    target: &RedisTarget,
    campaign: &Campaign,
    item_id: &str,
    run: &QueueRun,
    keep: bool,
) -> Result<(String, QueueReport)> {
    super::queue::check(run)?;
    let keys = LoadtestKeys::new(&campaign.id, item_id);
    let mut control = target.connect()?;
    namespace::ensure_free(&mut control, &keys, campaign)?;
    let mut copy = campaign.clone();
    copy.starts_at_ms = None;
    copy.ends_at_ms = None;
    copy.rate_limit = None;
    copy.payment_timeout = None;
    copy.items.retain(|item| item.id == item_id);
    let item = &mut copy.items[0];
    item.stock = run.stock;
    item.buckets = run.buckets;
    let Some(room) = item.waiting_room.as_mut() else {
        return Err(super::queue::no_room(campaign, item_id));
    };
    room.prequeue = false;
    room.registration = None;
    let sale = crate::domain::item::SaleItem::under(
        crate::model::keys::LOADTEST_PREFIX,
        &copy,
        &copy.items[0],
    );
    let clean = |conn: &mut crate::redis_client::conn::Conn| -> Result<()> {
        namespace::remove(conn, &keys)?;
        sale.delete(conn, !conn.is_cluster())?;
        Ok(())
    };
    clean(&mut control)?;
    namespace::reset(&mut control, &keys, &ulid::Ulid::generate().to_string())?;
    let outcome = super::queue::run(target, &copy, run);
    let report = if keep {
        outcome?
    } else {
        let cleaned = clean(&mut control);
        let report = outcome?;
        cleaned?;
        report
    };
    let heading = format!(
        "waiting-room load test of campaign {} item {item_id} on {}\n\
         {} arrivals at {}/s (open loop), {} threads, stock {}, {} bucket(s)\n\
         room: {}",
        campaign.id,
        target.display,
        run.arrivals,
        run.rate,
        run.threads,
        run.stock,
        run.buckets,
        report.room
    );
    Ok((heading, report))
}

/// The campaign as the `full` variant preheats it: only the chosen item, with
/// --stock; no sale window (the real sale's dates say nothing about when a
/// rehearsal runs); the rate limit only with --rate-limit.
fn loadtest_campaign(campaign: &Campaign, item_id: &str, settings: &Settings) -> Campaign {
    let mut copy = campaign.clone();
    copy.starts_at_ms = None;
    copy.ends_at_ms = None;
    if !settings.rate_limit {
        copy.rate_limit = None;
    }
    copy.items.retain(|item| item.id == item_id);
    for item in &mut copy.items {
        item.stock = settings.stock;
        // The waiting room has its own scenario (`--variant queue`).
        item.waiting_room = None;
    }
    copy
}

/// The lines above the table; short, so they fit an 80-column terminal like the table.
fn heading(campaign: &Campaign, plan: &Plan, redis: &str, kept: bool) -> String {
    let settings = &plan.settings;
    let pace = match settings.pace {
        Pace::Closed => "closed loop".to_string(),
        Pace::Open { rate } => format!("open loop at {rate} attempts/s"),
    };
    format!(
        "load test of campaign {} item {} on {redis}\n\
         {pace}, {} connections, pipeline {}\n\
         {} requests, stock {}, {} users{}{}",
        campaign.id,
        plan.item_id,
        settings.connections,
        settings.pipeline,
        settings.requests,
        settings.stock,
        settings.users,
        match settings.wait_replicas {
            Some(n) => format!(
                "\nfull: WAIT for {n} replica(s) after every buy, at most {}",
                humantime::format_duration(settings.wait_timeout)
            ),
            None => String::new(),
        },
        if kept {
            format!(" (keys kept under {}*)", plan.keys.item.base)
        } else {
            String::new()
        }
    )
}

/// The variants' reports, without their histograms.
pub(crate) fn reports(runs: Vec<VariantRun>) -> Vec<VariantReport> {
    runs.into_iter().map(|run| run.report).collect()
}

/// The run_id of the process behind `control` (the placeholder when INFO is
/// refused: the buy script then reads it itself).
fn node_run_id(control: &mut crate::redis_client::conn::Conn) -> String {
    let info: redis::RedisResult<String> = crate::redis_client::node::info_server().query(control);
    info.ok()
        .as_deref()
        .and_then(crate::redis_client::node::run_id_of)
        .unwrap_or_else(|| crate::redis_client::node::NODE_PLACEHOLDER.to_string())
}

/// A seat item's sale (see `seats`): its heading and report. Refuses a
/// Redis that carries a live sale, as every scenario does.
pub(crate) fn seats(
    target: &RedisTarget,
    campaign: &Campaign,
    item_id: &str,
    run: &super::seats::SeatRun,
    keep: bool,
) -> Result<(String, super::seats::SeatReport)> {
    let mut control = target.connect()?;
    namespace::ensure_free(
        &mut control,
        &LoadtestKeys::new(&campaign.id, item_id),
        campaign,
    )?;
    let report = super::seats::run(target, campaign, item_id, run, keep)?;
    let heading = format!(
        "seat load test of campaign {} item {item_id} on {}: {} sections, {} seats, {} threads, best blocks of {} and named pairs in the first {} rows, at most {} attempts",
        campaign.id,
        target.display,
        report.sections,
        report.seats,
        report.threads,
        super::seats::BEST_QTY,
        super::seats::FRONT_ROWS,
        run.requests
    );
    Ok((heading, report))
}
