//! `seckill loadtest --reservations`: buys with a payment timeout, then
//! payments racing expiry, and the proof afterwards that every order ended in
//! exactly one state and the stock identity holds.
//!
//! Three phases on the load-test namespace (never a live sale's keys):
//! 1. **buy**: `threads` workers send the requests through the real buy
//!    script with `payment_timeout`; every `ok` is a reservation;
//! 2. **race**: `--pay-share` of the reservations are paid — half of those
//!    at once, half aimed at their deadline (a random point within ±20 ms of
//!    it, on the Redis clock) — while two expirers release what is due every
//!    10 ms, until nothing is reserved;
//! 3. **check**: each order's record, its final events in the stream (exactly
//!    one, the one the record names), and `initial = left + reserved + paid`.
//!
//! It measures correctness under contention, not speed, so it records no
//! latency. A scenario-level driver, not the engine's worker loop: each
//! worker thread runs the item layer's reserve and pay on its own redis-rs
//! connection, payments timed against each order's deadline on the Redis
//! clock, while expirers run beside them — a race of several operations
//! per order that the engine's fixed request-and-reply conversations do not
//! express.
//!
//! Within loadtest it uses: nothing.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use rand::Rng;
use serde::Serialize;

use crate::domain::item::SaleItem;
use crate::domain::orders::stream;
use crate::domain::reservations::{
    OrderOutcome, Record, Slot, expire_batch, pay_in, records, totals,
};
use crate::domain::slot::{self, BuyRequest, Outcome, PreheatMode};
use crate::model::campaign::Campaign;
use crate::model::keys::{ItemKeys, LOADTEST_PREFIX};
use crate::redis_client::conn::RedisTarget;

/// How the reservations load test runs.
#[derive(Debug, Clone)]
pub(crate) struct RaceSettings {
    pub(crate) threads: usize,
    pub(crate) requests: u64,
    pub(crate) users: u64,
    /// Payment timeout of every reservation.
    pub(crate) payment_timeout: Duration,
    /// Share of the reservations paid (0.0..=1.0); half of them at the deadline.
    pub(crate) pay_share: f64,
}

/// What the race did, and whether the identity holds.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct RaceReport {
    pub(crate) requests: u64,
    pub(crate) stock: i64,
    /// Buy attempts answered `ok` (reservations made).
    pub(crate) reserved: u64,
    pub(crate) sold_out: u64,
    /// Duplicate, rate-limited, ...: refused for another reason.
    pub(crate) rejected: u64,
    pub(crate) buy_elapsed_s: f64,
    /// Payments sent, and how they came out.
    pub(crate) pay_attempts: u64,
    pub(crate) paid: u64,
    /// Payments refused because the deadline had passed.
    pub(crate) pay_refused_expired: u64,
    /// Payments aimed at the deadline (within ±20 ms).
    pub(crate) paid_at_deadline_attempts: u64,
    pub(crate) race_elapsed_s: f64,
    /// Final states of the reservations.
    pub(crate) final_paid: u64,
    pub(crate) final_expired: u64,
    pub(crate) final_cancelled: u64,
    pub(crate) final_reserved: u64,
    /// Orders without exactly one final event matching their record.
    pub(crate) not_exactly_once: u64,
    pub(crate) final_stock: i64,
    /// `initial = left + reserved + paid` with numbers.
    pub(crate) identity: String,
    /// "exact", or what is wrong.
    pub(crate) verdict: String,
}

/// One reservation to pay: when (local clock) and which.
struct Payment {
    at: Instant,
    order_id: String,
    at_deadline: bool,
}

/// Run the three phases on `keys` (a load-test namespace, already reset).
pub(crate) fn run(
    target: &RedisTarget,
    campaign: &Campaign,
    keys: &ItemKeys,
    settings: &RaceSettings,
) -> Result<RaceReport> {
    let item = campaign
        .items
        .first()
        .ok_or_else(|| anyhow!("the load-test campaign has no item"))?;
    let sale = SaleItem::under(LOADTEST_PREFIX, campaign, item);
    let slot = Slot {
        item,
        sale: sale.clone(),
        bucket: None,
        keys: keys.clone(),
    };
    let mut control = target.connect()?;
    sale.preheat(&mut control, PreheatMode::Force, false)?;
    let mut report = RaceReport {
        requests: settings.requests,
        stock: item.stock,
        ..RaceReport::default()
    };

    // 1. buy
    let timeout_ms = settings.payment_timeout.as_millis() as u64;
    let issued = AtomicU64::new(0);
    let started = Instant::now();
    let outcomes: Mutex<Vec<(Outcome, Option<String>)>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| -> Result<()> {
        let workers: Vec<_> = (0..settings.threads)
            .map(|_| {
                scope.spawn(|| -> Result<()> {
                    let mut conn = target.connect()?;
                    let mut mine = Vec::new();
                    loop {
                        let n = issued.fetch_add(1, Ordering::Relaxed);
                        if n >= settings.requests {
                            break;
                        }
                        let user = format!("u{}", n % settings.users);
                        let reply = sale
                            .reserve(
                                &mut conn,
                                &BuyRequest {
                                    campaign: &campaign.id,
                                    item: &item.id,
                                    user: &user,
                                    qty: 1,
                                    request_id: None,
                                    ticket: None,
                                    seats: None,
                                },
                                timeout_ms,
                            )?
                            .reply;
                        mine.push((reply.outcome, reply.order_id));
                    }
                    outcomes
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .extend(mine);
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
    report.buy_elapsed_s = started.elapsed().as_secs_f64();
    let outcomes = outcomes.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut orders = Vec::new();
    for (outcome, order_id) in outcomes {
        match (outcome, order_id) {
            (Outcome::Ok, Some(id)) => orders.push(id),
            (Outcome::SoldOut, _) => report.sold_out += 1,
            _ => report.rejected += 1,
        }
    }
    report.reserved = orders.len() as u64;

    // 2. race: the payment plan on the Redis clock, mapped to the local one.
    let redis_now = slot::redis_now_ms(&mut control)?;
    let local_now = Instant::now();
    let ids: Vec<&str> = orders.iter().map(String::as_str).collect();
    let mut plan = Vec::new();
    let mut rng = rand::rng();
    for chunk in ids.chunks(1000) {
        let found = records(&mut control, keys, chunk)?;
        for (id, record) in chunk.iter().zip(found) {
            let record = record.with_context(|| format!("reservation {id} has no record"))?;
            if !rng.random_bool(settings.pay_share.clamp(0.0, 1.0)) {
                continue;
            }
            let at_deadline = rng.random_bool(0.5);
            let at = if at_deadline {
                let offset = record.deadline_ms - redis_now + rng.random_range(-20..=20);
                local_now + Duration::from_millis(offset.max(0) as u64)
            } else {
                local_now
            };
            plan.push(Payment {
                at,
                order_id: (*id).to_string(),
                at_deadline,
            });
        }
    }
    plan.sort_by_key(|p| p.at);
    report.pay_attempts = plan.len() as u64;
    report.paid_at_deadline_attempts = plan.iter().filter(|p| p.at_deadline).count() as u64;
    let next = AtomicU64::new(0);
    let payers_done = AtomicBool::new(false);
    let paid = AtomicU64::new(0);
    let refused = AtomicU64::new(0);
    let race_started = Instant::now();
    std::thread::scope(|scope| -> Result<()> {
        let expirers: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| -> Result<()> {
                    let mut conn = target.connect()?;
                    loop {
                        let batch = expire_batch(&mut conn, campaign, &slot, 100)?;
                        let reserved: u64 = redis::cmd("ZCARD")
                            .arg(&keys.deadlines)
                            .query(&mut conn)
                            .context("cannot count reservations")?;
                        if payers_done.load(Ordering::SeqCst) && reserved == 0 {
                            return Ok(());
                        }
                        if batch.due_left == 0 {
                            std::thread::sleep(Duration::from_millis(10));
                        }
                    }
                })
            })
            .collect();
        let payers: Vec<_> = (0..settings.threads.min(plan.len().max(1)))
            .map(|_| {
                scope.spawn(|| -> Result<()> {
                    let mut conn = target.connect()?;
                    loop {
                        let n = next.fetch_add(1, Ordering::Relaxed) as usize;
                        let Some(payment) = plan.get(n) else {
                            return Ok(());
                        };
                        if let Some(wait) = payment.at.checked_duration_since(Instant::now()) {
                            std::thread::sleep(wait);
                        }
                        let reply = pay_in(&mut conn, campaign, &slot, &payment.order_id)?;
                        match reply.outcome {
                            OrderOutcome::Paid => paid.fetch_add(1, Ordering::Relaxed),
                            OrderOutcome::Expired => refused.fetch_add(1, Ordering::Relaxed),
                            other => bail!(
                                "payment of {} answered {} (a reservation is paid once)",
                                payment.order_id,
                                other.as_str()
                            ),
                        };
                    }
                })
            })
            .collect();
        let mut result = Ok(());
        for payer in payers {
            let joined = payer
                .join()
                .map_err(|_| anyhow!("a payer thread panicked"))
                .and_then(|r| r);
            result = result.and(joined);
        }
        payers_done.store(true, Ordering::SeqCst);
        for expirer in expirers {
            let joined = expirer
                .join()
                .map_err(|_| anyhow!("an expirer thread panicked"))
                .and_then(|r| r);
            result = result.and(joined);
        }
        result
    })?;
    report.race_elapsed_s = race_started.elapsed().as_secs_f64();
    report.paid = paid.into_inner();
    report.pay_refused_expired = refused.into_inner();

    // 3. check
    check(&mut control, keys, &ids, &mut report)?;
    Ok(report)
}

/// Every order: one final event, the one its record names; then the identity.
fn check(
    conn: &mut crate::redis_client::conn::Conn,
    keys: &ItemKeys,
    ids: &[&str],
    report: &mut RaceReport,
) -> Result<()> {
    let mut finals: HashMap<String, Vec<String>> = HashMap::new();
    let mut after = "-".to_string();
    loop {
        let page = stream::range_after(conn, &keys.orders, &after, "+", 1000)?;
        let Some(last) = page.last() else { break };
        after = last.id.clone();
        for entry in &page {
            if let (Some(event), Some(order)) = (entry.field("event"), entry.field("order_id")) {
                finals
                    .entry(String::from_utf8_lossy(order).into_owned())
                    .or_default()
                    .push(String::from_utf8_lossy(event).into_owned());
            }
        }
    }
    for chunk in ids.chunks(1000) {
        for (id, record) in chunk.iter().zip(records(conn, keys, chunk)?) {
            let Some(Record { state, .. }) = record else {
                report.not_exactly_once += 1;
                continue;
            };
            let events = finals.get(*id).map(Vec::as_slice).unwrap_or_default();
            let once = match state.as_str() {
                "reserved" => events.is_empty(),
                final_state => events == [final_state],
            };
            report.not_exactly_once += u64::from(!once);
            match state.as_str() {
                "paid" => report.final_paid += 1,
                "expired" => report.final_expired += 1,
                "cancelled" => report.final_cancelled += 1,
                _ => report.final_reserved += 1,
            }
        }
    }
    let counters = totals(conn, keys)?;
    report.final_stock = slot::item_state(conn, keys)?.stock.unwrap_or(0);
    let held = counters.reserved_units + counters.paid_units;
    report.identity = format!(
        "{} {} {} left + {} reserved + {} paid",
        report.stock,
        if report.stock == report.final_stock + held {
            "="
        } else {
            "≠"
        },
        report.final_stock,
        counters.reserved_units,
        counters.paid_units
    );
    let mut problems = Vec::new();
    if report.stock != report.final_stock + held {
        problems.push(format!("identity broken: {}", report.identity));
    }
    if report.not_exactly_once > 0 {
        problems.push(format!(
            "{} order(s) without exactly one final state",
            report.not_exactly_once
        ));
    }
    if report.paid != report.final_paid {
        problems.push(format!(
            "{} payments answered paid but {} orders are paid",
            report.paid, report.final_paid
        ));
    }
    if report.final_reserved > 0 {
        problems.push(format!(
            "{} reservation(s) left unreleased",
            report.final_reserved
        ));
    }
    report.verdict = if problems.is_empty() {
        "exact".to_string()
    } else {
        problems.join("; ")
    };
    Ok(())
}
