//! `seckill loadtest --variant queue`: the waiting room in front of the buy
//! script, rehearsed (docs/waiting-room.md, "Load test"). Shoppers arrive at
//! an open-loop rate, each joins the room and buys once admitted, retrying
//! at the wait the room told it; a few impostors who never joined try to buy
//! too. Afterwards the run is judged from Redis's own records, not the
//! clients' clocks:
//!
//! - positions: exactly 1..n, no duplicate, no hole;
//! - `ok` without admission: every order in the item's stream(s) must belong
//!   to a queued user and fall inside that user's admission (0);
//! - fairness: Kendall τ-b between arrival order (the order the shoppers were
//!   sent in) and admission order (the admission moments, Redis clock), and
//!   the same against the join order Redis saw (1.0 on one slot);
//! - waits: admission − join (Redis clock), p50/p99/max, and their error
//!   against the wait the join announced (position / rate);
//! - the admission rate achieved against the one asked for.
//!
//! Like `--reservations`, it measures behaviour, not speed, so it records
//! no latency (the waits are Redis-clock differences read back afterwards,
//! ranked exactly). A scenario-level driver, not the engine's worker loop:
//! each worker thread has an ordinary redis-rs connection and runs the real
//! item layer and room (join, then buy at the wait the room announced,
//! again and again, while an admitter passes the room on), a conversation
//! whose next step and its time the domain decides from each answer.
//!
//! Within loadtest it uses: nothing.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, bail};
use serde::Serialize;

use crate::domain::item::SaleItem;
use crate::domain::orders::stream;
use crate::domain::slot::{BuyRequest, Outcome, PreheatMode};
use crate::domain::waiting_room::{Room, State};
use crate::model::campaign::Campaign;
use crate::model::keys::LOADTEST_PREFIX;
use crate::model::waiting_room::AdmissionMode;
use crate::redis_client::conn::RedisTarget;

/// How the queue load test runs.
#[derive(Debug, Clone)]
pub(crate) struct QueueRun {
    /// Shoppers arriving, one join each.
    pub(crate) arrivals: u64,
    /// Arrivals per second (open loop: sent on schedule whatever Redis does).
    pub(crate) rate: f64,
    /// Worker threads (joins and buys), each with its own connection.
    pub(crate) threads: usize,
    pub(crate) stock: i64,
    /// Split the item into this many buckets (the fan-out runs beside).
    pub(crate) buckets: u32,
}

/// What the run measured.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct QueueReport {
    pub(crate) arrivals: u64,
    /// Arrivals per second asked for, and sent.
    pub(crate) arrival_rate: f64,
    pub(crate) arrival_rate_achieved: f64,
    /// The room's settings.
    pub(crate) room: String,
    /// Admissions per second the room is set to (rate mode), and achieved
    /// between the first and the last admission.
    pub(crate) admit_rate: Option<f64>,
    pub(crate) admit_rate_achieved: f64,
    pub(crate) stock: i64,
    pub(crate) buckets: u32,
    pub(crate) threads: usize,
    pub(crate) elapsed_s: f64,
    /// Users with a position, positions handed out more than once, and
    /// positions in 1..n nobody holds.
    pub(crate) joined: u64,
    pub(crate) duplicates: u64,
    pub(crate) holes: u64,
    /// Buys answered ok, and those outside any admission (must be 0).
    pub(crate) ok: u64,
    pub(crate) ok_without_admission: u64,
    /// not_admitted answers (a shopper asked before its turn and retried).
    pub(crate) not_admitted_answers: u64,
    /// Shoppers whose admission ran out before they bought, or who met a sell-out.
    pub(crate) admission_expired: u64,
    pub(crate) sold_out: u64,
    /// Buys by impostors who never joined, and how many were refused
    /// (`not_queued`, or `sold_out` once nothing is left: it wins over every refusal).
    pub(crate) impostor_buys: u64,
    pub(crate) impostors_refused: u64,
    /// Kendall τ-b of arrival (send) order vs admission order.
    pub(crate) kendall_tau_b: f64,
    /// Kendall τ-b of Redis's join order (positions) vs admission order
    /// (below 1 also when shoppers who joined in one millisecond share it).
    pub(crate) kendall_tau_b_positions: f64,
    /// Pairs of shoppers admitted in the reverse of their positions: the
    /// room's promise is 0 (ties are not inversions).
    pub(crate) admitted_out_of_position_order: u64,
    /// Admission − join, Redis clock, ms.
    pub(crate) wait_p50_ms: f64,
    pub(crate) wait_p99_ms: f64,
    pub(crate) wait_max_ms: f64,
    /// |actual wait − the wait the join announced (position / rate)|, ms.
    pub(crate) wait_error_p50_ms: f64,
    pub(crate) wait_error_p99_ms: f64,
    pub(crate) wait_error_max_ms: f64,
    /// "exact", or what is wrong.
    pub(crate) verdict: String,
}

/// One shopper's join, as it answered.
#[derive(Debug, Clone, Copy)]
struct Joined {
    joined_at_ms: i64,
    /// The wait the join announced (0 when admitted at once).
    eta_ms: i64,
}

/// What a worker does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Task {
    /// Shopper n buys.
    Buy(u64),
    /// An impostor (never joined) tries to buy.
    Impostor(u64),
}

/// Every twentieth arrival brings an impostor along.
const IMPOSTOR_EVERY: u64 = 20;
/// A shopper told "admitted, not carried to your bucket yet" asks again after this.
const FAN_OUT_RETRY: Duration = Duration::from_millis(20);
/// A waiting shopper's page asks again at least this often.
const POLL: Duration = Duration::from_secs(1);

struct Shared<'a> {
    sale: &'a SaleItem<'a>,
    room: &'a Room,
    run: &'a QueueRun,
    started: Instant,
    next_arrival: AtomicU64,
    tasks: Mutex<BinaryHeap<Reverse<(Instant, Task)>>>,
    /// Shoppers (and impostors) not finished yet.
    open: AtomicU64,
    joined: Vec<OnceLock<Joined>>,
    ok: AtomicU64,
    not_admitted: AtomicU64,
    expired: AtomicU64,
    sold_out: AtomicU64,
    impostor_buys: AtomicU64,
    impostors_refused: AtomicU64,
    impostor_ok: AtomicU64,
    last_arrival_sent: Mutex<Option<Instant>>,
    failed: AtomicBool,
}

fn user(n: u64) -> String {
    format!("q{n}")
}

/// Set up the room in the load test's namespace, run it, judge it.
pub(crate) fn run(
    target: &RedisTarget,
    campaign: &Campaign,
    run: &QueueRun,
) -> Result<QueueReport> {
    let item = campaign
        .items
        .first()
        .ok_or_else(|| anyhow!("the load-test campaign has no item"))?;
    let sale = SaleItem::under(LOADTEST_PREFIX, campaign, item);
    let room = sale
        .room()
        .cloned()
        .ok_or_else(|| anyhow!("the load-test item has no waiting room"))?;
    let mut control = target.connect()?;
    sale.preheat(&mut control, PreheatMode::Force, false)?;
    let shared = Shared {
        sale: &sale,
        room: &room,
        run,
        started: Instant::now(),
        next_arrival: AtomicU64::new(0),
        tasks: Mutex::new(BinaryHeap::new()),
        open: AtomicU64::new(run.arrivals + run.arrivals / IMPOSTOR_EVERY),
        joined: (0..run.arrivals).map(|_| OnceLock::new()).collect(),
        ok: AtomicU64::new(0),
        not_admitted: AtomicU64::new(0),
        expired: AtomicU64::new(0),
        sold_out: AtomicU64::new(0),
        impostor_buys: AtomicU64::new(0),
        impostors_refused: AtomicU64::new(0),
        impostor_ok: AtomicU64::new(0),
        last_arrival_sent: Mutex::new(None),
        failed: AtomicBool::new(false),
    };
    // Longest the run may take: every arrival admitted at the room's pace, twice over.
    // (max_active: at worst each place turns over once per admission_ttl.)
    let admit_per_s = match room.settings.mode {
        AdmissionMode::Rate { .. } | AdmissionMode::Ticket { .. } => {
            room.settings.per_second().unwrap_or(1.0)
        }
        AdmissionMode::MaxActive(n) => {
            f64::from(n) / room.settings.admission_ttl.as_secs_f64().max(0.001)
        }
    }
    .max(1.0);
    let limit = Duration::from_secs_f64(
        2.0 * (run.arrivals as f64 / run.rate + run.arrivals as f64 / admit_per_s) + 30.0,
    );
    let needs_admitter =
        room.buckets.is_some() || matches!(room.settings.mode, AdmissionMode::MaxActive(_));
    std::thread::scope(|scope| -> Result<()> {
        let admitter = needs_admitter.then(|| {
            scope.spawn(|| -> Result<()> {
                let mut conn = target.connect()?;
                while shared.open.load(Ordering::SeqCst) > 0
                    && !shared.failed.load(Ordering::SeqCst)
                {
                    room.pass(&mut conn, 500)?;
                    std::thread::sleep(Duration::from_millis(10));
                }
                Ok(())
            })
        });
        let workers: Vec<_> = (0..run.threads.max(1))
            .map(|_| scope.spawn(|| work(target, &shared, limit)))
            .collect();
        let mut result = Ok(());
        for worker in workers {
            let joined = worker
                .join()
                .map_err(|_| anyhow!("a load-test worker panicked"))
                .and_then(|r| r);
            if joined.is_err() {
                shared.failed.store(true, Ordering::SeqCst);
            }
            result = result.and(joined);
        }
        shared.open.store(0, Ordering::SeqCst);
        if let Some(admitter) = admitter {
            result = result.and(
                admitter
                    .join()
                    .map_err(|_| anyhow!("the admitter thread panicked"))
                    .and_then(|r| r),
            );
        }
        result
    })?;
    let elapsed = shared.started.elapsed();
    judge(&mut control, &shared, elapsed)
}

/// A worker: send the arrivals due, buy for the shoppers whose turn came.
fn work(target: &RedisTarget, shared: &Shared, limit: Duration) -> Result<()> {
    let mut conn = target.connect()?;
    let run = shared.run;
    let campaign_id = &shared.sale.campaign.id;
    let item = shared.sale.id();
    loop {
        if shared.failed.load(Ordering::SeqCst) {
            return Ok(());
        }
        if shared.open.load(Ordering::SeqCst) == 0 {
            return Ok(());
        }
        if shared.started.elapsed() > limit {
            bail!(
                "the queue load test did not finish within {limit:?}: {} shoppers still open",
                shared.open.load(Ordering::SeqCst)
            );
        }
        let now = Instant::now();
        let due = {
            let mut tasks = shared.tasks.lock().unwrap_or_else(|e| e.into_inner());
            match tasks.peek() {
                Some(Reverse((at, _))) if *at <= now => tasks.pop().map(|Reverse((_, t))| t),
                _ => None,
            }
        };
        let task = match due {
            Some(task) => task,
            None => {
                // The next arrival, when its planned time has come.
                let n = shared.next_arrival.load(Ordering::SeqCst);
                let planned = shared.started + Duration::from_secs_f64(n as f64 / run.rate);
                if n < run.arrivals && planned <= now {
                    if shared
                        .next_arrival
                        .compare_exchange(n, n + 1, Ordering::SeqCst, Ordering::SeqCst)
                        .is_err()
                    {
                        continue;
                    }
                    arrive(&mut conn, shared, n)?;
                } else {
                    std::thread::sleep(Duration::from_micros(300));
                }
                continue;
            }
        };
        let (who, impostor) = match task {
            Task::Buy(n) => (user(n), false),
            Task::Impostor(n) => (format!("impostor{n}"), true),
        };
        let request = BuyRequest {
            campaign: campaign_id,
            item,
            user: &who,
            qty: 1,
            request_id: None,
            ticket: None,
            seats: None,
        };
        let reply = shared.sale.buy(&mut conn, &request)?.reply;
        if impostor {
            shared.impostor_buys.fetch_add(1, Ordering::Relaxed);
            if reply.outcome == Outcome::Ok {
                shared.impostor_ok.fetch_add(1, Ordering::Relaxed);
            } else {
                shared.impostors_refused.fetch_add(1, Ordering::Relaxed);
            }
            shared.open.fetch_sub(1, Ordering::SeqCst);
            continue;
        }
        match reply.outcome {
            Outcome::Ok => {
                shared.ok.fetch_add(1, Ordering::Relaxed);
                shared.open.fetch_sub(1, Ordering::SeqCst);
            }
            Outcome::NotAdmitted => {
                shared.not_admitted.fetch_add(1, Ordering::Relaxed);
                let eta = reply.waiting.map_or(0, |w| w.eta_ms.max(0) as u64);
                // A queue page asks again at the announced wait, at least
                // every POLL (a max_active wait is an estimate).
                let again = if eta == 0 {
                    FAN_OUT_RETRY
                } else {
                    Duration::from_millis(eta).min(POLL)
                };
                schedule(shared, Instant::now() + again, task);
            }
            Outcome::AdmissionExpired => {
                shared.expired.fetch_add(1, Ordering::Relaxed);
                shared.open.fetch_sub(1, Ordering::SeqCst);
            }
            Outcome::SoldOut => {
                shared.sold_out.fetch_add(1, Ordering::Relaxed);
                shared.open.fetch_sub(1, Ordering::SeqCst);
            }
            other => bail!(
                "shopper {who} got {} from the buy script (the load test's item has no window, limit or switch to refuse it)",
                other.as_str()
            ),
        }
    }
}

fn schedule(shared: &Shared, at: Instant, task: Task) {
    shared
        .tasks
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Reverse((at, task)));
}

/// Shopper n arrives: joins, then buys when the room says it is its turn.
fn arrive(conn: &mut crate::redis_client::conn::Conn, shared: &Shared, n: u64) -> Result<()> {
    let reply = shared.room.join(conn, &user(n))?;
    *shared
        .last_arrival_sent
        .lock()
        .unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
    let Some(standing) = reply.standing else {
        bail!(
            "shopper {} could not join the load test's room: {}",
            user(n),
            reply.outcome.as_str()
        );
    };
    let eta = match standing.state {
        State::Admitted => 0,
        _ => standing.eta_ms.max(0),
    };
    let _ = shared.joined[n as usize].set(Joined {
        joined_at_ms: reply.now_ms,
        eta_ms: eta,
    });
    schedule(
        shared,
        Instant::now() + Duration::from_millis(eta as u64).min(POLL),
        Task::Buy(n),
    );
    if n % IMPOSTOR_EVERY == IMPOSTOR_EVERY - 1 {
        schedule(shared, Instant::now(), Task::Impostor(n));
    }
    Ok(())
}

/// Judge the run from Redis: positions, orders against admissions, fairness, waits.
fn judge(
    conn: &mut crate::redis_client::conn::Conn,
    shared: &Shared,
    elapsed: Duration,
) -> Result<QueueReport> {
    let run = shared.run;
    let room = shared.room;
    let users: Vec<String> = (0..run.arrivals).map(user).collect();
    let mut standings = Vec::with_capacity(users.len());
    for chunk in users.chunks(500) {
        let names: Vec<&str> = chunk.iter().map(String::as_str).collect();
        standings.extend(room.read(conn, &names)?.1);
    }
    let mut report = QueueReport {
        arrivals: run.arrivals,
        arrival_rate: run.rate,
        room: room.settings.describe(),
        admit_rate: room.settings.per_second(),
        stock: run.stock,
        buckets: run.buckets,
        threads: run.threads,
        elapsed_s: elapsed.as_secs_f64(),
        ok: shared.ok.load(Ordering::Relaxed),
        not_admitted_answers: shared.not_admitted.load(Ordering::Relaxed),
        admission_expired: shared.expired.load(Ordering::Relaxed),
        sold_out: shared.sold_out.load(Ordering::Relaxed),
        impostor_buys: shared.impostor_buys.load(Ordering::Relaxed),
        impostors_refused: shared.impostors_refused.load(Ordering::Relaxed),
        ..QueueReport::default()
    };
    let last_sent = shared
        .last_arrival_sent
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .map_or(elapsed, |at| at.duration_since(shared.started));
    report.arrival_rate_achieved = run.arrivals as f64 / last_sent.as_secs_f64().max(1e-3);

    // Positions: 1..n, each once.
    let mut seen = vec![0u32; run.arrivals as usize + 1];
    for s in &standings {
        if s.position >= 1 && (s.position as usize) < seen.len() {
            seen[s.position as usize] += 1;
            report.joined += 1;
        }
    }
    report.duplicates = seen.iter().map(|&c| u64::from(c.saturating_sub(1))).sum();
    report.holes = seen.iter().skip(1).filter(|&&c| c == 0).count() as u64;

    // Every order inside its buyer's admission.
    let admission: HashMap<&str, (i64, i64)> = users
        .iter()
        .zip(&standings)
        .filter_map(|(u, s)| Some((u.as_str(), (s.from_ms?, s.to_ms?))))
        .collect();
    let mut orders = 0u64;
    let mut outside = shared.impostor_ok.load(Ordering::Relaxed);
    for slot in shared.sale.slots() {
        let mut after = "-".to_string();
        loop {
            let page = stream::range_after(conn, &slot.keys.orders, &after, "+", 1000)?;
            let Some(last) = page.last() else { break };
            after = last.id.clone();
            for entry in &page {
                let buyer = entry.field("user_id").map(String::from_utf8_lossy);
                let bought_at = entry
                    .field("bought_at_ms")
                    .and_then(|b| std::str::from_utf8(b).ok()?.parse::<i64>().ok());
                let (Some(buyer), Some(bought_at)) = (buyer, bought_at) else {
                    continue;
                };
                if buyer.starts_with("impostor") {
                    continue; // counted from its answer above
                }
                orders += 1;
                let inside = admission
                    .get(buyer.as_ref())
                    .is_some_and(|(from, to)| (*from..*to).contains(&bought_at));
                outside += u64::from(!inside);
            }
        }
    }
    report.ok_without_admission = outside;

    // Fairness and waits over the admitted shoppers.
    let mut admitted: Vec<(u64, i64, i64, Joined)> = standings
        .iter()
        .enumerate()
        .filter_map(|(n, s)| {
            let joined = shared.joined[n].get()?;
            Some((n as u64, s.position, s.from_ms?, *joined))
        })
        .collect();
    let arrival: Vec<f64> = admitted.iter().map(|a| a.0 as f64).collect();
    let positions: Vec<f64> = admitted.iter().map(|a| a.1 as f64).collect();
    let moments: Vec<f64> = admitted.iter().map(|a| a.2 as f64).collect();
    report.kendall_tau_b = kendall_tau_b(&arrival, &moments);
    report.kendall_tau_b_positions = kendall_tau_b(&positions, &moments);
    report.admitted_out_of_position_order = discordant_pairs(&positions, &moments);
    let mut waits: Vec<f64> = Vec::new();
    let mut errors: Vec<f64> = Vec::new();
    for (_, _, from, joined) in &admitted {
        let wait = (*from - joined.joined_at_ms).max(0);
        waits.push(wait as f64);
        errors.push((wait - joined.eta_ms).abs() as f64);
    }
    (report.wait_p50_ms, report.wait_p99_ms, report.wait_max_ms) = percentiles(&mut waits);
    (
        report.wait_error_p50_ms,
        report.wait_error_p99_ms,
        report.wait_error_max_ms,
    ) = percentiles(&mut errors);
    admitted.sort_by_key(|a| a.2);
    if let (Some(first), Some(last)) = (admitted.first(), admitted.last())
        && last.2 > first.2
    {
        report.admit_rate_achieved =
            (admitted.len() - 1) as f64 * 1000.0 / (last.2 - first.2) as f64;
    }

    let mut problems = Vec::new();
    if report.duplicates > 0 || report.holes > 0 || report.joined != run.arrivals {
        problems.push(format!(
            "positions: {} joined of {}, {} duplicate(s), {} hole(s)",
            report.joined, run.arrivals, report.duplicates, report.holes
        ));
    }
    if report.ok_without_admission > 0 {
        problems.push(format!(
            "{} ok without admission",
            report.ok_without_admission
        ));
    }
    if orders != report.ok {
        problems.push(format!(
            "{} ok answered but {orders} orders in the stream(s)",
            report.ok
        ));
    }
    if report.impostors_refused != report.impostor_buys {
        problems.push(format!(
            "{} of {} impostors were sold to",
            report.impostor_buys - report.impostors_refused,
            report.impostor_buys
        ));
    }
    if report.admitted_out_of_position_order > 0 {
        problems.push(format!(
            "{} pair(s) of shoppers admitted in the reverse of their positions",
            report.admitted_out_of_position_order
        ));
    }
    report.verdict = if problems.is_empty() {
        "exact".to_string()
    } else {
        problems.join("; ")
    };
    Ok(report)
}

/// p50, p99 and max of `values` (0 when there are none).
pub(crate) fn percentiles(values: &mut [f64]) -> (f64, f64, f64) {
    if values.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((values.len() as f64 - 1.0) * q).round() as usize];
    (at(0.5), at(0.99), values[values.len() - 1])
}

/// Kendall's τ-b of two equally long samples (ties in either are allowed),
/// in O(n log n) (Knight's algorithm: sort by x then y, count the
/// discordant pairs as the swaps a merge sort by y makes). 1.0 when both
/// orders agree, 0 when unrelated, −1 reversed; NaN-free: 1.0 for fewer than
/// two points.
pub(crate) fn kendall_tau_b(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len().min(y.len());
    if n < 2 {
        return 1.0;
    }
    let mut pairs: Vec<(f64, f64)> = x.iter().copied().zip(y.iter().copied()).take(n).collect();
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let pairs_of = |run: u64| run * run.saturating_sub(1) / 2;
    // Ties in x, and in (x, y) jointly.
    let (mut tied_x, mut tied_xy) = (0u64, 0u64);
    let (mut run_x, mut run_xy) = (1u64, 1u64);
    for i in 1..n {
        if pairs[i].0 == pairs[i - 1].0 {
            run_x += 1;
            if pairs[i].1 == pairs[i - 1].1 {
                run_xy += 1;
            } else {
                tied_xy += pairs_of(run_xy);
                run_xy = 1;
            }
        } else {
            tied_x += pairs_of(run_x);
            tied_xy += pairs_of(run_xy);
            run_x = 1;
            run_xy = 1;
        }
    }
    tied_x += pairs_of(run_x);
    tied_xy += pairs_of(run_xy);
    // Discordant pairs: swaps of a stable merge sort by y.
    let mut ys: Vec<f64> = pairs.iter().map(|p| p.1).collect();
    let swaps = merge_count(&mut ys);
    let mut tied_y = 0u64;
    let mut run_y = 1u64;
    for i in 1..n {
        if ys[i] == ys[i - 1] {
            run_y += 1;
        } else {
            tied_y += pairs_of(run_y);
            run_y = 1;
        }
    }
    tied_y += pairs_of(run_y);
    let total = pairs_of(n as u64);
    let concordant_minus_discordant =
        total as f64 - (tied_x + tied_y) as f64 + tied_xy as f64 - 2.0 * swaps as f64;
    let denominator = ((total - tied_x) as f64 * (total - tied_y) as f64).sqrt();
    if denominator == 0.0 {
        return 1.0;
    }
    concordant_minus_discordant / denominator
}

/// Pairs i, j with x_i < x_j and y_i > y_j (ties in either are not counted).
pub(crate) fn discordant_pairs(x: &[f64], y: &[f64]) -> u64 {
    let mut pairs: Vec<(f64, f64)> = x.iter().copied().zip(y.iter().copied()).collect();
    // Equal x sorted by y first, so a tie in x is never counted as a swap.
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let mut ys: Vec<f64> = pairs.iter().map(|p| p.1).collect();
    merge_count(&mut ys)
}

/// Sort `values` (stable merge sort) and return how many pairs it swapped
/// (i < j with values[i] > values[j]).
fn merge_count(values: &mut [f64]) -> u64 {
    let n = values.len();
    if n < 2 {
        return 0;
    }
    let mid = n / 2;
    let mut swaps = merge_count(&mut values[..mid]) + merge_count(&mut values[mid..]);
    let mut merged = Vec::with_capacity(n);
    let (mut i, mut j) = (0, mid);
    while i < mid && j < n {
        if values[j] < values[i] {
            swaps += (mid - i) as u64;
            merged.push(values[j]);
            j += 1;
        } else {
            merged.push(values[i]);
            i += 1;
        }
    }
    merged.extend_from_slice(&values[i..mid]);
    merged.extend_from_slice(&values[j..n]);
    values.copy_from_slice(&merged);
    swaps
}

/// Refuse a run that cannot say anything (no arrival, a room it cannot drive).
pub(crate) fn check(run: &QueueRun) -> Result<()> {
    if run.arrivals == 0 {
        bail!("--variant queue needs at least one arrival");
    }
    if !(run.rate.is_finite() && run.rate > 0.0) {
        bail!("--variant queue needs a positive arrival rate");
    }
    Ok(())
}

/// The context for errors about the room of the load test's item.
pub(crate) fn no_room(campaign: &Campaign, item: &str) -> anyhow::Error {
    crate::model::error::usage(format!(
        "--variant queue rehearses the item's waiting room, and item {item} of {} has none: \
         give it (or the campaign) a `waiting_room:` (campaigns/moutai-queue.yaml has one; \
         docs/waiting-room.md)",
        campaign.path.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// τ-b by its definition, O(n²).
    fn slow_tau_b(x: &[f64], y: &[f64]) -> f64 {
        let (mut c, mut d, mut tx, mut ty) = (0f64, 0f64, 0f64, 0f64);
        for i in 0..x.len() {
            for j in i + 1..x.len() {
                let (dx, dy) = (x[i] - x[j], y[i] - y[j]);
                if dx == 0.0 && dy == 0.0 {
                    continue;
                } else if dx == 0.0 {
                    tx += 1.0;
                } else if dy == 0.0 {
                    ty += 1.0;
                } else if dx * dy > 0.0 {
                    c += 1.0;
                } else {
                    d += 1.0;
                }
            }
        }
        (c - d) / ((c + d + tx) * (c + d + ty)).sqrt()
    }

    /// Reproducible small numbers below `m` (a linear congruential generator).
    fn numbers(seed: u64) -> impl FnMut(u64) -> f64 {
        let mut state = seed;
        move |m| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) % m) as f64
        }
    }

    #[test]
    fn kendall_matches_its_definition_with_and_without_ties() {
        let same: Vec<f64> = (0..100).map(f64::from).collect();
        assert!((kendall_tau_b(&same, &same) - 1.0).abs() < 1e-12);
        let reversed: Vec<f64> = same.iter().rev().copied().collect();
        assert!((kendall_tau_b(&same, &reversed) + 1.0).abs() < 1e-12);
        let mut next = numbers(12345);
        for _ in 0..20 {
            let x: Vec<f64> = (0..60).map(|_| next(10)).collect();
            let y: Vec<f64> = (0..60).map(|_| next(7)).collect();
            let fast = kendall_tau_b(&x, &y);
            let slow = slow_tau_b(&x, &y);
            assert!((fast - slow).abs() < 1e-9, "{fast} vs {slow}");
        }
    }

    #[test]
    fn discordant_pairs_count_inversions_and_never_ties() {
        // Two shoppers joined in one millisecond: tied moments, no inversion.
        assert_eq!(discordant_pairs(&[1.0, 2.0, 3.0], &[10.0, 10.0, 15.0]), 0);
        assert_eq!(discordant_pairs(&[1.0, 1.0], &[20.0, 10.0]), 0);
        assert_eq!(discordant_pairs(&[1.0, 2.0, 3.0], &[30.0, 20.0, 10.0]), 3);
        let mut next = numbers(99);
        for _ in 0..20 {
            let x: Vec<f64> = (0..50).map(|_| next(8)).collect();
            let y: Vec<f64> = (0..50).map(|_| next(8)).collect();
            let mut slow = 0;
            for i in 0..50 {
                for j in 0..50 {
                    slow += u64::from(x[i] < x[j] && y[i] > y[j]);
                }
            }
            assert_eq!(discordant_pairs(&x, &y), slow);
        }
    }

    #[test]
    fn percentiles_pick_ranks() {
        let mut v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentiles(&mut v), (51.0, 99.0, 100.0));
        assert_eq!(percentiles(&mut []), (0.0, 0.0, 0.0));
    }
}
