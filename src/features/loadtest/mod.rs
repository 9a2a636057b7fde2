//! The load-test engine behind `seckill loadtest`: drive one Redis as hard as
//! it goes with each stock-decrement design of the reference chapter (V1–V4),
//! the toolkit's real buy script and a lock-based design, then tell how many
//! units each one sold against the stock it had.
//!
//! Work is split over a rayon pool (the unit of parallelism): on a
//! standalone plain-TCP Redis each worker runs an event loop driving many
//! non-blocking connections (`event_loop`); on TLS, Unix-socket and Cluster
//! targets each worker drives one blocking redis-rs connection (`blocking`).
//! Either way a variant's logic is its `conversation`, its pacing (closed or
//! open loop) its `schedule`, and what it measured a `measure::Tally` per
//! worker, merged at the end into a `report`. Presentation (table, JSON,
//! CSV, `.hgrm`) is the caller's and `export`'s business. The waiting room
//! (`--variant queue`) is a scenario of its own: `queue`.

mod blocking;
pub(crate) mod buckets;
mod conversation;
mod event_loop;
pub(crate) mod export;
pub(crate) mod http;
mod measure;
pub(crate) mod namespace;
pub(crate) mod queue;
pub(crate) mod report;
pub(crate) mod reservations;
mod resp;
pub(crate) mod scenarios;
pub(crate) mod schedule;
mod template;
pub(crate) mod variants;

use std::sync::Barrier;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};
use hdrhistogram::Histogram;
use indicatif::ProgressBar;
use serde::Serialize;

use crate::domain::slot::{self, PreheatMode};
use crate::model::campaign::Campaign;
use crate::redis_client::conn::{Conn, RedisTarget};
use measure::Tally;
use namespace::LoadtestKeys;
use report::{Books, MasterShare, VariantReport};
use schedule::Pace;

/// One way of taking a unit of stock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Variant {
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
    pub(crate) const ALL: [Variant; 6] = [
        Variant::V1,
        Variant::V2,
        Variant::V3,
        Variant::V4,
        Variant::Full,
        Variant::Lock,
    ];

    pub(crate) fn as_str(self) -> &'static str {
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
    pub(crate) fn pipelines(self) -> bool {
        matches!(self, Variant::V3 | Variant::Full)
    }
}

/// The knobs of a run, already validated.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// Connections to Redis, over all workers.
    pub(crate) connections: usize,
    /// Event-loop workers (plain-TCP standalone Redis; otherwise one worker per connection).
    pub(crate) threads: usize,
    /// Attempts per variant (open loop: rate × duration).
    pub(crate) requests: u64,
    pub(crate) pace: Pace,
    /// Size of the synthetic shopper pool; request `n` is user `u<n % users>`.
    pub(crate) users: u64,
    pub(crate) stock: i64,
    pub(crate) pipeline: usize,
    /// Keep the campaign's rate limit in the `full` variant.
    pub(crate) rate_limit: bool,
    /// `full` only: WAIT for this many replicas after every buy, on the same connection.
    pub(crate) wait_replicas: Option<u32>,
    /// Longest WAIT.
    pub(crate) wait_timeout: Duration,
}

/// Everything a worker needs to know, shared read-only by all of them.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub(crate) settings: Settings,
    pub(crate) keys: LoadtestKeys,
    pub(crate) campaign_id: String,
    pub(crate) item_id: String,
    /// The campaign as `full` preheats it: --stock, no sale window, rate limit only on request.
    pub(crate) campaign: Campaign,
    /// Unique per run: written into the namespace marker and used as order-id prefix.
    pub(crate) run_id: String,
    pub(crate) buy_sha: String,
    pub(crate) v3_sha: String,
    pub(crate) lock_release_sha: String,
}

/// One variant's report and the histograms behind it (for `.hgrm` files).
pub(crate) struct VariantRun {
    pub(crate) report: VariantReport,
    /// Corrected latency, µs.
    pub(crate) corrected: Histogram<u64>,
    /// Service time, µs.
    pub(crate) service: Histogram<u64>,
}

/// Shared by the workers of one variant.
pub(crate) struct Job<'a> {
    pub(crate) plan: &'a Plan,
    pub(crate) variant: Variant,
    /// Requests per write (the pipeline, for the script variants).
    pub(crate) batch_limit: usize,
    pub(crate) workers: usize,
    /// Closed loop: request numbers handed out so far.
    pub(crate) issued: AtomicU64,
    /// Requests answered so far (progress bar).
    pub(crate) done: AtomicU64,
    /// No reply for this long while requests are in flight ends the run.
    pub(crate) stall_limit: Duration,
}

/// Reset the namespace, set it up for `variant`, run it and read the result.
pub(crate) fn run_variant(
    target: &RedisTarget,
    plan: &Plan,
    variant: Variant,
    progress: &ProgressBar,
) -> Result<VariantRun> {
    let mut control = target.connect()?;
    namespace::reset(&mut control, &plan.keys, &plan.run_id)?;
    if variant == Variant::Full {
        let item = plan.campaign.item(&plan.item_id)?;
        slot::preheat_item(
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
    let settings = &plan.settings;
    let plain = target.plain_tcp();
    // The event loop multiplexes; a blocking worker holds one connection.
    let workers = match plain {
        Some(_) => settings.threads.min(settings.connections),
        None => settings.connections,
    };
    let job = Job {
        plan,
        variant,
        batch_limit: if variant.pipelines() {
            settings.pipeline
        } else {
            1
        },
        workers,
        issued: AtomicU64::new(0),
        done: AtomicU64::new(0),
        stall_limit: target.response_timeout(),
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(workers)
        .thread_name(|i| format!("loadtest-{i}"))
        .build()
        .context("cannot start the worker threads")?;
    let start_line = Barrier::new(workers + 1);
    let (outcomes, started, commands_before) = std::thread::scope(|scope| {
        let workers = scope.spawn(|| {
            pool.broadcast(|context| {
                let worker = context.index();
                match &plain {
                    Some(plain) => event_loop::work(
                        plain,
                        target.connect_timeout(),
                        event_loop::share(settings.connections, workers, worker),
                        worker,
                        &job,
                        &start_line,
                    ),
                    None => blocking::work(target, worker, &job, &start_line),
                }
            })
        });
        start_line.wait();
        let started = Instant::now();
        // Read after the workers connected: connecting costs a cluster node commands too.
        let commands_before = master_commands(&mut control);
        while !workers.is_finished() {
            progress.set_position(job.done.load(Ordering::Relaxed));
            std::thread::sleep(Duration::from_millis(50));
        }
        (workers.join(), started, commands_before)
    });
    progress.set_position(job.done.load(Ordering::Relaxed));
    let outcomes = outcomes.map_err(|_| anyhow!("a load-test worker panicked"))?;

    let mut tally = Tally::new()?;
    for outcome in outcomes {
        tally.absorb(outcome?)?;
    }
    // The clock stops at the last answer, not when this thread noticed the
    // workers were done (it looks every 50 ms).
    let elapsed = tally.last_answer.map_or(Duration::ZERO, |last| {
        last.saturating_duration_since(started)
    });
    let commands_before = commands_before?;
    let commands_after = master_commands(&mut control)?;
    let after = slot::item_state(&mut control, &plan.keys.item)?;
    let books = Books {
        final_stock: after.stock.unwrap_or(0),
        stream_len: after.stream_len,
    };
    let mut report = report::build(variant, plan, &tally, elapsed, books, workers);
    report.masters = shares(commands_before, commands_after);
    Ok(VariantRun {
        report,
        corrected: tally.corrected,
        service: tally.service,
    })
}

/// Commands processed so far by each master (`INFO stats`), on a cluster only.
fn master_commands(conn: &mut Conn) -> Result<Option<Vec<(String, u64)>>> {
    let Conn::Cluster(cluster) = conn else {
        return Ok(None);
    };
    let routing = redis::cluster_routing::RoutingInfo::MultiNode((
        redis::cluster_routing::MultipleNodeRoutingInfo::AllMasters,
        None,
    ));
    let reply = cluster
        .route_command(redis::cmd("INFO").arg("stats"), routing)
        .context("cannot read INFO stats from the cluster's masters")?;
    let redis::Value::Map(nodes) = reply else {
        return Err(anyhow!("INFO stats on every master answered {reply:?}"));
    };
    let mut counts = Vec::new();
    for (node, info) in nodes {
        let node: String = redis::from_redis_value(node).context("a node address")?;
        let info: String = redis::from_redis_value(info).context("INFO stats text")?;
        let processed = info
            .lines()
            .find_map(|line| line.strip_prefix("total_commands_processed:"))
            .and_then(|n| n.trim().parse().ok())
            .with_context(|| format!("no total_commands_processed in INFO stats of {node}"))?;
        counts.push((node, processed));
    }
    counts.sort();
    Ok(Some(counts))
}

/// Each master's part of the commands processed between two readings.
fn shares(
    before: Option<Vec<(String, u64)>>,
    after: Option<Vec<(String, u64)>>,
) -> Option<Vec<MasterShare>> {
    let (before, after) = (before?, after?);
    let deltas: Vec<(String, u64)> = after
        .into_iter()
        .map(|(node, count)| {
            let earlier = before.iter().find(|(n, _)| *n == node).map_or(0, |b| b.1);
            (node, count.saturating_sub(earlier))
        })
        .collect();
    let total: u64 = deltas.iter().map(|d| d.1).sum();
    Some(
        deltas
            .into_iter()
            .map(|(node, commands)| MasterShare {
                node,
                commands,
                share: commands as f64 / total.max(1) as f64,
            })
            .collect(),
    )
}
