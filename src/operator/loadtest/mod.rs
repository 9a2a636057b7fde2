//! `seckill loadtest`'s scenarios: the sale, load-tested on the engine crate
//! `seckill_loadgen` (pacing, the one worker loop, the one histogram, RESP
//! and HTTP/1.1, the exports), which knows nothing of sales. What is here is
//! what does: setting a scenario's state up and checking it through the
//! domain, what each request says and what each reply counts as, the
//! reports and their tables. Connecting stays with `redis_client`
//! (`connect` hands the engine its sockets or blocking links).
//!
//! On the engine's one worker loop (a `mio` event loop over plain-TCP
//! sockets; the same loop over one blocking redis-rs link per thread on TLS,
//! Unix-socket and Cluster targets):
//! - the stock-decrement variants V1–V4, `full` (the real buy script, with
//!   `--wait-replicas`) and `lock`: `variants` (the script calls),
//!   `conversation` (each variant's state machine), `script` (v3/full's
//!   call packed once), `run` (a variant set up, driven, read back);
//! - `--target`: shoppers through running `seckill serve` instances
//!   (`target`); a ticket room's run judged by `ticket_room`.
//!
//! Scenario-level drivers, a thread and a redis-rs connection per worker,
//! because each request is a conversation of several round trips that the
//! domain decides from each reply, not a fixed sequence of commands:
//! - `--buckets` (`buckets`): the item layer's bucketed buy, home bucket
//!   first, then the sweep and transfers; it records into the engine's
//!   [`seckill_loadgen::Tally`] and histogram (latency, round trips);
//! - `--reservations` (`reservations`): buys with a payment timeout, then
//!   payments racing expiry while expirers run, then the proof;
//! - `--variant queue` (`queue`): joins, waits the room announced, buys,
//!   impostors; judged from Redis's own records afterwards;
//! - `--variant seats` (`seats`): best-available and named-seat buyers on
//!   a seat item, then the proof that no seat was sold twice.
//!
//! `scenarios` is where each run is set up and cleaned up (refusing a Redis
//! that carries a live sale: `namespace`); `report`, `export` and `table`
//! present the results.
//!
//! May import: domain, redis_client, model, util.

pub(crate) mod buckets;
mod connect;
mod conversation;
pub(crate) mod export;
pub(crate) mod limit_group;
pub(crate) mod namespace;
pub(crate) mod queue;
pub(crate) mod report;
pub(crate) mod reservations;
mod run;
pub(crate) mod scenarios;
mod script;
pub(crate) mod seats;
pub(crate) mod table;
pub(crate) mod target;
pub(crate) mod ticket_room;
pub(crate) mod variants;

use std::time::Duration;

use seckill_loadgen::{Histogram, Pace};
use serde::Serialize;

use crate::model::campaign::Campaign;
use namespace::LoadtestKeys;
use report::VariantReport;

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

/// Everything a variant's connections need to know, shared read-only by all of them.
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
    /// The run_id of the Redis process the workers sell on (the fence's
    /// `node` ARGV, read once: a worker's connection to another process
    /// answers `fenced`, never sells unchecked).
    pub(crate) node_run_id: String,
    pub(crate) v3_sha: String,
    pub(crate) lock_release_sha: String,
}

/// One variant's report and the histograms behind it (for `.hgrm` files).
pub(crate) struct VariantRun {
    pub(crate) report: VariantReport,
    /// Corrected latency, µs.
    pub(crate) corrected: Histogram,
    /// Service time, µs.
    pub(crate) service: Histogram,
}
