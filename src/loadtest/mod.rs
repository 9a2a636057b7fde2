//! The load-test engine behind `seckill loadtest`: drive one Redis as hard as
//! it goes with each stock-decrement design of the reference chapter (V1–V4),
//! the toolkit's real buy script and a lock-based design, then tell how many
//! units each one sold against the stock it had.
//!
//! Work is split over a rayon pool of exactly `threads` workers, each with its
//! own connection, all released at once from a start line after connecting.
//! Latencies go into one HDR histogram per worker, merged at the end, so
//! memory stays constant whatever the request count.

pub mod namespace;
mod raw;
mod resp;
pub mod variants;

use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use hdrhistogram::Histogram;
use indicatif::ProgressBar;
use rayon::ThreadPool;
use redis::ConnectionLike;
use serde::Serialize;

use crate::campaign::Campaign;
use crate::redis_conn::{Conn, RedisTarget};
use crate::state::{self, PreheatMode};
use namespace::LoadtestKeys;
use variants::{Counts, Shopper};

/// One way of taking a unit of stock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Variant {
    /// GET, compare in the client, DECR: not atomic, oversells.
    V1,
    /// WATCH / GET / MULTI / DECR / EXEC, retried on abort.
    V2,
    /// A minimal Lua script: check stock, DECR.
    V3,
    /// DECR, INCR back when the result is negative.
    V4,
    /// The toolkit's real buy script (rate limit, dedupe, stock, order stream).
    Full,
    /// GET/DECR under a per-item lock (SET NX PX, compare-and-delete release).
    Lock,
}

impl Variant {
    /// Every variant, in the order `--variant all` runs them.
    pub const ALL: [Variant; 6] = [
        Variant::V1,
        Variant::V2,
        Variant::V3,
        Variant::V4,
        Variant::Full,
        Variant::Lock,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Variant::V1 => "v1",
            Variant::V2 => "v2",
            Variant::V3 => "v3",
            Variant::V4 => "v4",
            Variant::Full => "full",
            Variant::Lock => "lock",
        }
    }

    /// Whether `--pipeline` applies (the script variants, whose requests are independent).
    pub fn pipelines(self) -> bool {
        matches!(self, Variant::V3 | Variant::Full)
    }
}

/// The knobs of a run, already validated.
#[derive(Debug, Clone)]
pub struct Settings {
    pub threads: usize,
    pub requests: u64,
    /// Size of the synthetic shopper pool; request `n` is user `u<n % users>`.
    pub users: u64,
    pub stock: i64,
    pub pipeline: usize,
    /// Keep the campaign's rate limit in the `full` variant.
    pub rate_limit: bool,
}

/// Everything a worker needs to know, shared read-only by all of them.
#[derive(Debug, Clone)]
pub struct Plan {
    pub settings: Settings,
    pub keys: LoadtestKeys,
    pub campaign_id: String,
    pub item_id: String,
    /// The campaign as `full` preheats it: --stock, no sale window, rate limit only on request.
    pub campaign: Campaign,
    /// Unique per run: written into the namespace marker and used as order-id prefix.
    pub run_id: String,
    pub buy_sha: String,
    pub v3_sha: String,
    pub lock_release_sha: String,
}

/// One variant's figures: a row of the comparison table, an object of the JSON.
#[derive(Debug, Clone, Serialize)]
pub struct VariantReport {
    /// v1, v2, v3, v4, full or lock.
    pub variant: Variant,
    /// Requests sent.
    pub requests: u64,
    /// Wall time of the variant, seconds.
    pub elapsed_s: f64,
    /// Requests per second (requests / elapsed_s).
    pub qps: f64,
    /// Purchases that succeeded.
    pub succeeded: u64,
    /// Attempts refused because the stock was gone.
    pub sold_out: u64,
    /// Duplicate or rate-limited (full), gave up waiting for the lock (lock).
    pub rejected: u64,
    /// Units sold beyond the stock: max(succeeded − stock, −final_stock, 0).
    pub oversold: u64,
    /// Stock left in Redis afterwards (negative: oversold).
    pub final_stock: i64,
    /// Entries in the order stream afterwards (full only; 0 for the others).
    pub stream_len: i64,
    /// Median latency of one request, milliseconds.
    pub p50_ms: f64,
    /// 95th percentile latency, milliseconds.
    pub p95_ms: f64,
    /// 99th percentile latency, milliseconds.
    pub p99_ms: f64,
    /// Slowest request, milliseconds.
    pub max_ms: f64,
    /// v2: aborted transactions; v4: stock seen below zero; lock: busy-lock waits.
    pub retries: u64,
    /// v4 only: the lowest stock any DECR saw.
    pub lowest_stock_seen: Option<i64>,
    /// `--stock`: units at the start.
    pub stock: i64,
    /// `--threads`.
    pub threads: usize,
    /// `--pipeline`.
    pub pipeline: usize,
    /// Distinct synthetic shoppers.
    pub users: u64,
    /// "exact", "OVERSOLD n", ...
    pub verdict: String,
}

/// Reset the namespace, set it up for `variant`, run it and read the result.
pub fn run_variant(
    target: &RedisTarget,
    pool: &ThreadPool,
    plan: &Plan,
    variant: Variant,
    progress: &ProgressBar,
) -> Result<VariantReport> {
    let mut control = target.connect()?;
    namespace::reset(&mut control, &plan.keys, &plan.run_id)?;
    if variant == Variant::Full {
        let item = plan.campaign.item(&plan.item_id)?;
        state::preheat_item(
            &mut control,
            &plan.keys.item,
            &plan.campaign,
            item,
            PreheatMode::Force,
            false,
        )?;
    } else {
        let () = redis::cmd("SET")
            .arg(&plan.keys.item.stock)
            .arg(plan.settings.stock)
            .query(&mut control)
            .with_context(|| format!("cannot set {}", plan.keys.item.stock))?;
    }

    let threads = pool.current_num_threads();
    let start_line = Barrier::new(threads + 1);
    let counters = Counters::default();
    let done = &counters.done;
    let sockets = Mutex::new(Vec::new());
    let (outcomes, elapsed) = std::thread::scope(|scope| {
        let workers = scope.spawn(|| {
            pool.broadcast(|_| work(target, plan, variant, &start_line, &counters, &sockets))
        });
        start_line.wait();
        let started = Instant::now();
        let stalled = watch(
            &workers,
            done,
            &sockets,
            progress,
            target.response_timeout(),
        );
        let outcomes = workers.join();
        (outcomes.map(|o| (o, stalled)), started.elapsed())
    });
    progress.set_position(done.load(Ordering::Relaxed));
    let (outcomes, stalled) = outcomes.map_err(|_| anyhow!("a load-test worker panicked"))?;
    if stalled {
        bail!(
            "Redis at {} answered nothing for {:?}: the load test gave up",
            target.display,
            target.response_timeout()
        );
    }

    let mut counts = Counts::default();
    let mut latency = new_histogram()?;
    for outcome in outcomes {
        let (worker_counts, worker_latency) = outcome?;
        counts.absorb(worker_counts);
        latency
            .add(&worker_latency)
            .context("cannot merge latency histograms")?;
    }
    let after = state::item_state(&mut control, &plan.keys.item)?;
    Ok(report(
        variant,
        plan,
        counts,
        &latency,
        elapsed,
        after.stock.unwrap_or(0),
        after.stream_len,
    ))
}

type WorkerOutcome = Result<(Counts, Histogram<u64>)>;

/// Follow the workers until they finish: update the progress bar and, when
/// no request completes for `stall_limit`, shut every raw socket down so the
/// workers stop waiting (raw connections have no socket timeout). Returns
/// whether it had to.
fn watch<T>(
    workers: &std::thread::ScopedJoinHandle<'_, T>,
    done: &AtomicU64,
    sockets: &Mutex<Vec<TcpStream>>,
    progress: &ProgressBar,
    stall_limit: Duration,
) -> bool {
    let mut last = (0, Instant::now());
    while !workers.is_finished() {
        let now_done = done.load(Ordering::Relaxed);
        progress.set_position(now_done);
        if now_done != last.0 {
            last = (now_done, Instant::now());
        } else if last.1.elapsed() > stall_limit {
            for socket in sockets.lock().unwrap_or_else(|e| e.into_inner()).iter() {
                let _ = socket.shutdown(Shutdown::Both);
            }
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    progress.set_position(done.load(Ordering::Relaxed));
    false
}

/// A worker's connection: the raw RESP connection on a standalone plain-TCP
/// Redis (see `raw`), redis-rs for TLS and Cluster.
enum WorkerConn {
    Raw(raw::RawConnection),
    Redis(Conn),
}

impl WorkerConn {
    fn open(target: &RedisTarget, sockets: &Mutex<Vec<TcpStream>>) -> Result<WorkerConn> {
        let Some(plain) = target.plain_tcp() else {
            return Ok(WorkerConn::Redis(target.connect()?));
        };
        let conn = raw::RawConnection::connect(
            &plain,
            target.connect_timeout(),
            target.response_timeout(),
        )?;
        let handle = conn
            .socket_handle()
            .context("cannot clone a socket handle")?;
        sockets
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(handle);
        Ok(WorkerConn::Raw(conn))
    }
}

/// Shared by the workers of one variant.
#[derive(Default)]
struct Counters {
    /// Request numbers handed out so far.
    issued: AtomicU64,
    /// Requests answered so far (progress, stall detection).
    done: AtomicU64,
}

/// One worker: connect, wait at the start line, make requests until none are left.
fn work(
    target: &RedisTarget,
    plan: &Plan,
    variant: Variant,
    start_line: &Barrier,
    counters: &Counters,
    sockets: &Mutex<Vec<TcpStream>>,
) -> WorkerOutcome {
    let Counters { issued, done } = counters;
    let connected = WorkerConn::open(target, sockets);
    let mut shopper = Shopper::new(variant, plan);
    let latency = new_histogram();
    // Always reach the start line, even on failure, or the others would wait forever.
    start_line.wait();
    let latency = latency?;
    match connected? {
        WorkerConn::Raw(mut conn) => drive(&mut conn, plan, &mut shopper, latency, issued, done),
        WorkerConn::Redis(mut conn) => drive(&mut conn, plan, &mut shopper, latency, issued, done),
    }
}

/// The timed loop of one worker. Request numbers come from one shared
/// counter, as redis-benchmark hands requests to whichever connection is free:
/// a fixed share per thread would leave the slowest-scheduled threads running
/// alone at the end, at a fraction of the concurrency asked for.
fn drive<C: ConnectionLike>(
    conn: &mut C,
    plan: &Plan,
    shopper: &mut Shopper,
    mut latency: Histogram<u64>,
    issued: &AtomicU64,
    done: &AtomicU64,
) -> WorkerOutcome {
    let mut counts = Counts::default();
    let total = plan.settings.requests;
    let batch_limit = shopper.batch_limit(plan.settings.pipeline) as u64;
    let mut batch: Vec<u64> = Vec::with_capacity(batch_limit as usize);
    loop {
        let first = issued.fetch_add(batch_limit, Ordering::Relaxed);
        if first >= total {
            break;
        }
        batch.clear();
        batch.extend(first..(first + batch_limit).min(total));
        let sent = Instant::now();
        shopper.shop(conn, &batch, &mut counts)?;
        let micros = (sent.elapsed().as_micros() as u64).clamp(1, HISTOGRAM_MAX_MICROS);
        latency
            .record_n(micros, batch.len() as u64)
            .context("cannot record a latency")?;
        done.fetch_add(batch.len() as u64, Ordering::Relaxed);
    }
    Ok((counts, latency))
}

/// Latencies are recorded in microseconds, up to an hour, 3 significant digits.
const HISTOGRAM_MAX_MICROS: u64 = 3_600_000_000;

fn new_histogram() -> Result<Histogram<u64>> {
    Histogram::new_with_bounds(1, HISTOGRAM_MAX_MICROS, 3)
        .context("cannot create a latency histogram")
}

fn report(
    variant: Variant,
    plan: &Plan,
    counts: Counts,
    latency: &Histogram<u64>,
    elapsed: Duration,
    final_stock: i64,
    stream_len: i64,
) -> VariantReport {
    let settings = &plan.settings;
    let stock = settings.stock;
    let oversold = (counts.succeeded as i64 - stock).max(-final_stock).max(0) as u64;
    let millis = |micros: u64| micros as f64 / 1000.0;
    let elapsed_s = elapsed.as_secs_f64();
    let verdict = verdict(
        variant,
        stock,
        counts.succeeded,
        oversold,
        final_stock,
        stream_len,
    );
    VariantReport {
        variant,
        requests: settings.requests,
        elapsed_s,
        qps: settings.requests as f64 / elapsed_s.max(1e-9),
        succeeded: counts.succeeded,
        sold_out: counts.sold_out,
        rejected: counts.rejected,
        oversold,
        final_stock,
        stream_len,
        p50_ms: millis(latency.value_at_quantile(0.50)),
        p95_ms: millis(latency.value_at_quantile(0.95)),
        p99_ms: millis(latency.value_at_quantile(0.99)),
        max_ms: millis(latency.max()),
        retries: counts.retries,
        lowest_stock_seen: counts.lowest_stock_seen,
        stock,
        threads: settings.threads,
        pipeline: if variant.pipelines() {
            settings.pipeline
        } else {
            1
        },
        users: settings.users,
        verdict,
    }
}

/// One line a person can act on: did the books balance?
fn verdict(
    variant: Variant,
    stock: i64,
    succeeded: u64,
    oversold: u64,
    final_stock: i64,
    stream_len: i64,
) -> String {
    let expected_left = stock - succeeded as i64;
    if oversold > 0 {
        format!("OVERSOLD {oversold}")
    } else if final_stock != expected_left {
        format!("STOCK DRIFT: {final_stock} left, {expected_left} expected")
    } else if variant == Variant::Full && stream_len != succeeded as i64 {
        format!("STREAM DRIFT: {stream_len} orders for {succeeded} sales")
    } else if final_stock > 0 {
        format!("exact ({final_stock} unsold)")
    } else {
        "exact".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_name_the_problem() {
        assert_eq!(verdict(Variant::V1, 10, 13, 3, -3, 0), "OVERSOLD 3");
        assert_eq!(verdict(Variant::V3, 10, 10, 0, 0, 0), "exact");
        assert_eq!(verdict(Variant::V3, 10, 4, 0, 6, 0), "exact (6 unsold)");
        assert_eq!(
            verdict(Variant::V4, 10, 9, 0, 0, 0),
            "STOCK DRIFT: 0 left, 1 expected"
        );
        assert_eq!(
            verdict(Variant::Full, 10, 10, 0, 0, 9),
            "STREAM DRIFT: 9 orders for 10 sales"
        );
    }
}
