//! `seckill consume`: carry orders from the item streams into the order
//! database at the pace the database takes, committing before acking.
//!
//! A thin shell: the flags, the progress, the service endpoints and the
//! report. The consumer itself (own pending entries, new entries, final
//! pass; commit then ack) is `orders::consumer`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::domain::orders::claimer::group_consumers;
use crate::domain::orders::consumer::{Consumed, Consumer, ConsumerSettings, ItemCounts, Watcher};
use crate::domain::orders::{StoreArgs, StoreLocation, default_consumer_name, stream};
use crate::http::service::{self, parse_listen};
use crate::invocation::context::{Context, Opened};
use crate::invocation::report::Report;
use crate::model::campaign::Item;
use crate::model::exit_codes;
use crate::model::keys::{ItemKeys, ORDER_GROUP};
use crate::operator::monitor::service::ServiceState;
use crate::redis_client::conn::Conn;
use crate::util::log;
use crate::util::output;
use crate::util::progress::Progress;

/// Flags of `seckill consume`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Consumer name in the group (default: the host name, the same across restarts). A consumer started under its old name stores its own pending entries first; give each process on one host its own name.
    #[arg(long, value_name = "NAME")]
    pub(crate) consumer: Option<String>,

    /// Entries read per stream per round; a round is stored in one transaction (with the rounds read meanwhile, up to 4).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=10_000), value_name = "N")]
    pub(crate) batch: u64,

    /// Exit 0 once every stream is consumed (nothing new to read) instead of running until SIGINT/SIGTERM.
    #[arg(long)]
    pub(crate) drain: bool,

    /// Serve http://ADDR/metrics (Prometheus) and /healthz (200 while Redis and the
    /// database answer) while consuming: :PORT for every interface, or HOST:PORT.
    #[arg(long, value_name = "ADDR", value_parser = parse_listen)]
    pub(crate) metrics_listen: Option<SocketAddr>,

    /// The order database (`--orders-db`).
    #[command(flatten)]
    pub(crate) store: StoreArgs,
}

const COMMAND: &str = "consume";
/// Longest XREADGROUP BLOCK; kept well below the Redis response timeout.
const MAX_BLOCK: Duration = Duration::from_millis(500);

/// `seckill consume`'s report: what this run stored.
#[derive(Debug, serde::Serialize)]
pub(crate) struct ConsumeReport {
    /// This consumer's name in the group.
    pub(crate) consumer: String,
    /// The order database (password hidden).
    pub(crate) database: String,
    /// Entries committed and acked (all items).
    pub(crate) acked: u64,
    /// Rows new in the database.
    pub(crate) inserted: u64,
    /// Entries acked whose order was already stored (a redelivery).
    pub(crate) already_stored: u64,
    /// Entries acked that were a reservation's state change (paid, expired,
    /// cancelled), not an order.
    pub(crate) state_changes: u64,
    /// Orders the database refused while it stored the rest: left pending
    /// (named on stderr) for `pending-claim`, which dead-letters them after
    /// `--max-deliveries`.
    pub(crate) refused: u64,
    /// One entry per item of the campaign.
    pub(crate) items: Vec<ItemCounts>,
}

impl Report for ConsumeReport {
    fn render(&self) -> String {
        let rows = self.items.iter().map(|c| {
            vec![
                c.item.clone(),
                c.acked.to_string(),
                c.refused.to_string(),
                c.left_pending.to_string(),
            ]
        });
        output::grid(
            &[
                "item",
                "stored and acked",
                "refused by the database\n(left pending)",
                "left pending\n(not orders)",
            ],
            rows.collect(),
            &[],
        )
    }

    /// 6 (`orders_refused`) when the database refused an order: like drift,
    /// an outcome the table shows (and `-q` does not hide), not an error.
    fn exit_code(&self) -> i32 {
        if self.refused > 0 {
            exit_codes::ORDERS_REFUSED
        } else {
            exit_codes::SUCCESS
        }
    }
}

/// Consume until drained (`--drain`) or stopped by a signal; exit 0, or 6
/// when the database refused orders.
pub(crate) fn run(ctx: &Context, args: &Args) -> Result<ConsumeReport> {
    let stop = ctx.stop_on_signals()?;
    let campaign = ctx.campaign()?;
    let location = StoreLocation::resolve(&args.store, &campaign)?;
    let (
        Opened {
            campaign,
            target,
            conn,
        },
        mut store,
    ) = ctx.open_with_store(&args.store, &stop)?;
    let state = service::start(
        args.metrics_listen,
        COMMAND,
        &campaign,
        &target,
        Some(location),
    )?;
    let _stall_watch = ctx.notifier().watch_stalls(ctx.command, &campaign.id);
    let consumer = args
        .consumer
        .clone()
        .unwrap_or_else(|| default_consumer_name(""));
    let database = store.display();
    let settings = ConsumerSettings {
        consumer: consumer.clone(),
        batch: args.batch,
        drain: args.drain,
        block: MAX_BLOCK.min(target.response_timeout() / 4),
    };
    let mut worker = Consumer::new(&campaign, &target, conn, store.as_mut(), &stop, settings)?;
    log::line(
        COMMAND,
        format!(
            "consumer {consumer} of group {ORDER_GROUP}: {} item stream(s) on {} into {database}",
            worker.items().len(),
            target.display,
        ),
    );
    let streams = worker.items().to_vec();
    say_what_this_name_holds(&consumer, &streams, worker.conn());
    let mut progress = Shown::new(
        args.drain,
        streams,
        worker.stream_items(),
        Arc::clone(&state),
    );
    let Consumed {
        items: counts,
        acked,
        inserted,
        changes,
        stopped,
    } = worker.run(&mut progress)?;
    let seconds = progress.started.elapsed().as_secs_f64();
    drop(progress);
    let left_pending: u64 = counts.iter().map(|c| c.left_pending).sum();
    let refused: u64 = counts.iter().map(|c| c.refused).sum();
    log::line(
        COMMAND,
        format!(
            "{} after {acked} entries stored and acked in {seconds:.2}s ({:.0}/s; {inserted} new orders, {} already stored, {changes} reservation state changes){}{}",
            if !stopped { "drained" } else { "stopped" },
            acked as f64 / seconds.max(1e-9),
            acked.saturating_sub(inserted + changes),
            if left_pending > 0 {
                format!(", {left_pending} unparseable left pending")
            } else {
                String::new()
            },
            if refused > 0 {
                format!(", {refused} refused by the database left pending")
            } else {
                String::new()
            }
        ),
    );
    Ok(ConsumeReport {
        consumer,
        database,
        acked,
        inserted,
        already_stored: acked.saturating_sub(inserted + changes),
        state_changes: changes,
        refused,
        items: counts,
    })
}

/// Say whether `consumer` resumes entries left pending under its name (a
/// restart), and warn when another live process seems to use the name.
fn say_what_this_name_holds(consumer: &str, streams: &[ItemKeys], conn: &mut Conn) {
    let mut pending = 0;
    let mut least_idle: Option<i64> = None;
    for keys in streams {
        // Informative only: a failed look must not stop the consumer.
        let Ok(consumers) = group_consumers(conn, &keys.orders) else {
            return;
        };
        for c in consumers.iter().filter(|c| c.name == consumer) {
            pending += c.pending;
            least_idle = Some(least_idle.map_or(c.idle_ms, |l| l.min(c.idle_ms)));
        }
    }
    match least_idle {
        None => log::line(COMMAND, format!("consumer {consumer} is new in the group")),
        Some(_) if pending > 0 => log::line(
            COMMAND,
            format!("consumer {consumer} resumes its {pending} pending entries first"),
        ),
        Some(_) => log::line(COMMAND, format!("consumer {consumer} has nothing pending")),
    }
    if least_idle.is_some_and(|idle| idle < 2 * MAX_BLOCK.as_millis() as i64) {
        log::line(
            COMMAND,
            format!(
                "warning: consumer {consumer} read {}ms ago: another process may be running under this name (give each its own --consumer)",
                least_idle.unwrap_or(0)
            ),
        );
    }
}

/// What a running consumer shows: on a terminal a bar (`--drain`: stored of
/// everything waiting, rate, ETA) or a spinner (a service: stored, rate,
/// lag); otherwise a log line every few seconds. It also tells the service
/// endpoints about each completed round and each refused order.
struct Shown {
    progress: Progress,
    drain: bool,
    keys: Vec<ItemKeys>,
    items: Vec<Item>,
    state: Arc<ServiceState>,
    started: Instant,
    last_update: Option<Instant>,
    last_count: u64,
    logged_count: u64,
}

impl Shown {
    fn new(drain: bool, keys: Vec<ItemKeys>, items: Vec<Item>, state: Arc<ServiceState>) -> Shown {
        let progress = if drain {
            Progress::bar(0, "orders stored")
        } else {
            Progress::spinner("starting")
        };
        Shown {
            progress,
            drain,
            keys,
            items,
            state,
            started: Instant::now(),
            last_update: None,
            last_count: 0,
            logged_count: 0,
        }
    }
}

impl Watcher for Shown {
    fn left_pending(&mut self, message: String) {
        self.progress.above(|| log::line(COMMAND, &message));
    }

    fn refused(&mut self, item: &str) {
        self.state.add_refused(item, 1);
    }

    fn round_done(&mut self, acked: u64, conn: &mut Conn) {
        self.state.succeeded();
        let every = if self.progress.shown() {
            Duration::from_secs(1)
        } else {
            Duration::from_secs(5)
        };
        let since = match self.last_update {
            Some(at) => at.elapsed(),
            // The first round updates a bar at once: it needs its total.
            None if self.progress.shown() => Duration::MAX,
            None => self.started.elapsed(),
        };
        if since < every || (!self.progress.shown() && acked == self.logged_count) {
            return;
        }
        let elapsed = self.last_update.unwrap_or(self.started).elapsed();
        let rate = (acked - self.last_count) as f64 / elapsed.as_secs_f64().max(1e-9);
        let mut waiting = 0u64;
        let lags: Vec<String> = self
            .keys
            .iter()
            .zip(&self.items)
            .map(|(k, item)| match stream::group_info(conn, k) {
                Ok(Some(info)) => {
                    waiting += info.lag.unwrap_or(0) + info.pending;
                    format!(
                        "{}: lag {} pending {}",
                        item.id,
                        info.lag.map_or_else(|| "?".to_string(), |l| l.to_string()),
                        info.pending
                    )
                }
                _ => format!("{}: lag ?", item.id),
            })
            .collect();
        let message = format!("{acked} entries stored, {rate:.0}/s; {}", lags.join(", "));
        if self.drain && self.progress.shown() {
            self.progress.set(acked, acked + waiting);
        } else if self.progress.shown() {
            self.progress.message(message);
        } else {
            log::line(COMMAND, message);
            self.logged_count = acked;
        }
        self.last_update = Some(Instant::now());
        self.last_count = acked;
    }
}
