//! `seckill loadtest --variant limit-group`: concurrent users hammering
//! every SKU of a limit group (docs/limits.md), each user's buys of the
//! SKUs sent at once from different threads, through the real CLAIM
//! protocol (`domain::operation::limits::reserve_claimed`: claim in the
//! user's limit bucket, buy in the SKU's slot, release on a refusal); then
//! the proof: no user holds more than the group's limit, units sold =
//! distinct buyers, and the group's counts equal the units bought (no
//! claim leaked).
//!
//! On the load test's namespace only (`seckill-loadtest:`): a synthetic
//! group of `--skus` items `lg-1`…, `--stock` units each, `per_user_limit`
//! 1, whatever the campaign file's items are. A scenario-level driver like
//! `--reservations`: each worker thread runs the protocol on its own
//! connection, several round trips per attempt.
//!
//! Within loadtest it uses: namespace.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use anyhow::{Context, Result, anyhow};
use redis::Commands;
use serde::Serialize;

use super::namespace::{self, LoadtestKeys};
use crate::domain::item::SaleItem;
use crate::domain::operation::limits::{Claims, reserve_claimed};
use crate::domain::slot::{BuyRequest, Outcome, PreheatMode};
use crate::model::campaign::{Campaign, Item};
use crate::model::keys::LOADTEST_PREFIX;
use crate::model::limits::{LimitGroup, LimitKeys};
use crate::redis_client::conn::{Conn, RedisTarget};

/// The synthetic group's name.
const GROUP: &str = "loadtest";

/// How the limit-group load test runs.
#[derive(Debug, Clone)]
pub(crate) struct GroupRun {
    /// SKUs in the group.
    pub(crate) skus: usize,
    /// Distinct users; each tries every SKU once.
    pub(crate) users: u64,
    pub(crate) threads: usize,
    /// Units of each SKU.
    pub(crate) stock: i64,
}

/// What the run did, and whether the limit held.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct GroupReport {
    pub(crate) skus: usize,
    pub(crate) users: u64,
    pub(crate) stock_per_sku: i64,
    pub(crate) per_user_limit: u32,
    pub(crate) attempts: u64,
    pub(crate) ok: u64,
    pub(crate) limit_reached: u64,
    pub(crate) sold_out: u64,
    /// Any other outcome (named in `verdict` when it matters).
    pub(crate) other: u64,
    pub(crate) elapsed_s: f64,
    pub(crate) attempts_per_s: f64,
    pub(crate) units_sold: i64,
    pub(crate) distinct_buyers: u64,
    /// Users holding more units of the group than its limit: must be 0.
    pub(crate) users_over_limit: u64,
    /// Users whose group count differs from the units they bought (a
    /// leaked or lost claim).
    pub(crate) counts_off: u64,
    /// "exact", or what is wrong.
    pub(crate) verdict: String,
}

/// The campaign the run sells: `campaign` with the synthetic SKUs and group.
fn synthetic(campaign: &Campaign, run: &GroupRun) -> Campaign {
    let mut copy = campaign.clone();
    copy.starts_at_ms = None;
    copy.ends_at_ms = None;
    copy.rate_limit = None;
    copy.payment_timeout = None;
    copy.per_user_limit = 1;
    copy.regions = Vec::new();
    copy.region = None;
    let template = campaign.items[0].clone();
    copy.items = (1..=run.skus)
        .map(|n| Item {
            id: format!("lg-{n}"),
            stock: run.stock,
            buckets: 1,
            waiting_room: None,
            region_stock: Vec::new(),
            per_identity_limit: None,
            ..template.clone()
        })
        .collect();
    copy.limit_groups = vec![LimitGroup {
        id: GROUP.to_string(),
        items: copy.items.iter().map(|item| item.id.clone()).collect(),
        per_user_limit: 1,
    }];
    copy
}

/// Run it on `target`, keeping the keys afterwards when `keep`.
pub(crate) fn run(
    target: &RedisTarget,
    campaign: &Campaign,
    run: &GroupRun,
    keep: bool,
) -> Result<GroupReport> {
    let copy = synthetic(campaign, run);
    let mut control = target.connect()?;
    let namespaces: Vec<LoadtestKeys> = copy
        .items
        .iter()
        .map(|item| LoadtestKeys::new(&copy.id, &item.id))
        .collect();
    for keys in &namespaces {
        namespace::ensure_free(&mut control, keys, campaign)?;
    }
    clean(&mut control, &copy, &namespaces)?;
    let run_id = ulid::Ulid::generate().to_string();
    for (keys, item) in namespaces.iter().zip(&copy.items) {
        namespace::reset(&mut control, keys, &run_id)?;
        SaleItem::under(LOADTEST_PREFIX, &copy, item).preheat(
            &mut control,
            PreheatMode::Force,
            false,
        )?;
    }
    let outcome = hammer(target, &copy, run).and_then(|report| prove(&mut control, &copy, report));
    if !keep {
        clean(&mut control, &copy, &namespaces)?;
    }
    outcome
}

/// Delete the SKUs' namespaces and the group's limit buckets.
fn clean(conn: &mut Conn, copy: &Campaign, namespaces: &[LoadtestKeys]) -> Result<()> {
    for keys in namespaces {
        namespace::remove(conn, keys)?;
    }
    for bucket in LimitKeys::every_under(LOADTEST_PREFIX, &copy.id, &format!("g.{GROUP}")) {
        for key in [&bucket.counts, &bucket.claims] {
            let _: u64 = conn
                .del(key)
                .with_context(|| format!("cannot delete {key}"))?;
        }
    }
    Ok(())
}

/// Every user tries every SKU once. Job n is user n / skus and SKU
/// n % skus, taken by whichever thread is free: one user's buys of the
/// SKUs are taken by different threads at the same moment and race.
fn hammer(target: &RedisTarget, copy: &Campaign, run: &GroupRun) -> Result<GroupReport> {
    let jobs = run.users * run.skus as u64;
    let next = AtomicU64::new(0);
    let counted: Mutex<HashMap<Outcome, u64>> = Mutex::new(HashMap::new());
    let started = Instant::now();
    std::thread::scope(|scope| -> Result<()> {
        let workers: Vec<_> = (0..run.threads)
            .map(|_| {
                scope.spawn(|| -> Result<()> {
                    let mut conn = target.connect()?;
                    let mut mine: HashMap<Outcome, u64> = HashMap::new();
                    loop {
                        let n = next.fetch_add(1, Ordering::Relaxed);
                        if n >= jobs {
                            break;
                        }
                        let user = format!("u{}", n / run.skus as u64);
                        let item = &copy.items[(n % run.skus as u64) as usize];
                        let request_id = format!("lg-{n}");
                        let claims = Claims::under(
                            LOADTEST_PREFIX,
                            copy,
                            item,
                            &user,
                            &request_id,
                            1,
                            None,
                            &[],
                        );
                        let request = BuyRequest {
                            campaign: &copy.id,
                            item: &item.id,
                            user: &user,
                            qty: 1,
                            request_id: Some(&request_id),
                            ticket: None,
                            seats: None,
                        };
                        let sale = SaleItem::under(LOADTEST_PREFIX, copy, item);
                        let outcome = match reserve_claimed(&mut conn, &sale, &claims, &request, 0)?
                        {
                            Ok(attempt) => attempt.reply.outcome,
                            Err(refusal) => refusal.outcome,
                        };
                        *mine.entry(outcome).or_insert(0) += 1;
                    }
                    let mut all = counted.lock().unwrap_or_else(|e| e.into_inner());
                    for (outcome, n) in mine {
                        *all.entry(outcome).or_insert(0) += n;
                    }
                    Ok(())
                })
            })
            .collect();
        for worker in workers {
            worker
                .join()
                .map_err(|_| anyhow!("a buyer thread panicked"))??;
        }
        Ok(())
    })?;
    let elapsed = started.elapsed().as_secs_f64();
    let counted = counted.into_inner().unwrap_or_else(|e| e.into_inner());
    let count = |outcome| counted.get(&outcome).copied().unwrap_or(0);
    let known = [Outcome::Ok, Outcome::LimitReached, Outcome::SoldOut];
    Ok(GroupReport {
        skus: run.skus,
        users: run.users,
        stock_per_sku: run.stock,
        per_user_limit: 1,
        attempts: jobs,
        ok: count(Outcome::Ok),
        limit_reached: count(Outcome::LimitReached),
        sold_out: count(Outcome::SoldOut),
        other: counted
            .iter()
            .filter(|(outcome, _)| !known.contains(outcome))
            .map(|(_, n)| n)
            .sum(),
        elapsed_s: elapsed,
        attempts_per_s: jobs as f64 / elapsed.max(1e-9),
        ..GroupReport::default()
    })
}

/// Read what Redis holds and judge it.
fn prove(conn: &mut Conn, copy: &Campaign, mut report: GroupReport) -> Result<GroupReport> {
    let mut units_of: BTreeMap<String, i64> = BTreeMap::new();
    for item in &copy.items {
        let keys = SaleItem::under(LOADTEST_PREFIX, copy, item).home("").keys;
        let buyers: BTreeMap<String, i64> = conn
            .hgetall(&keys.buyers)
            .with_context(|| format!("cannot read {}", keys.buyers))?;
        for (user, units) in buyers {
            *units_of.entry(user).or_insert(0) += units;
        }
        let left: i64 = conn
            .get(&keys.stock)
            .with_context(|| format!("cannot read {}", keys.stock))?;
        report.units_sold += item.stock - left;
    }
    let mut counts: BTreeMap<String, i64> = BTreeMap::new();
    for bucket in LimitKeys::every_under(LOADTEST_PREFIX, &copy.id, &format!("g.{GROUP}")) {
        let held: BTreeMap<String, i64> = conn
            .hgetall(&bucket.counts)
            .with_context(|| format!("cannot read {}", bucket.counts))?;
        counts.extend(held);
    }
    report.distinct_buyers = units_of.len() as u64;
    report.users_over_limit = units_of
        .values()
        .filter(|units| **units > i64::from(report.per_user_limit))
        .count() as u64;
    let users: std::collections::BTreeSet<&String> = units_of.keys().chain(counts.keys()).collect();
    report.counts_off = users
        .into_iter()
        .filter(|user| units_of.get(*user) != counts.get(*user))
        .count() as u64;
    let mut wrong = Vec::new();
    if report.users_over_limit > 0 {
        wrong.push(format!("{} users over the limit", report.users_over_limit));
    }
    if report.units_sold != report.distinct_buyers as i64 {
        wrong.push(format!(
            "{} units sold to {} distinct buyers",
            report.units_sold, report.distinct_buyers
        ));
    }
    if report.counts_off > 0 {
        wrong.push(format!(
            "{} users' group counts differ from their units",
            report.counts_off
        ));
    }
    if report.ok as i64 != report.units_sold {
        wrong.push(format!(
            "{} ok answers for {} units sold",
            report.ok, report.units_sold
        ));
    }
    report.verdict = match wrong.is_empty() {
        true => "exact".to_string(),
        false => wrong.join("; "),
    };
    Ok(report)
}
