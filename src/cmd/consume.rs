//! `seckill consume`: carry orders from the item streams into the order
//! database at the pace the database takes, committing before acking.
//!
//! A thin shell: the flags, the progress line and the report. The consumer
//! itself (own pending entries, new entries, final pass; commit then ack) is
//! `orders::consumer`.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};

use crate::domain::orders::consumer::{Consumed, Consumer, ConsumerSettings, ItemCounts, Watcher};
use crate::domain::orders::{StoreArgs, default_consumer_name, stream};
use crate::invocation::context::{Context, Opened};
use crate::invocation::report::Report;
use crate::model::campaign::Item;
use crate::model::keys::{ItemKeys, ORDER_GROUP};
use crate::redis_client::conn::Conn;
use crate::util::log;
use crate::util::output;

/// Flags of `seckill consume`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Consumer name in the group (default: HOST-PID). Reuse a name to take over that consumer's pending entries on start.
    #[arg(long, value_name = "NAME")]
    pub(crate) consumer: Option<String>,

    /// Entries read per stream per round; a round is stored in one transaction (with the rounds read meanwhile, up to 4).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=10_000), value_name = "N")]
    pub(crate) batch: u64,

    /// Exit 0 once every stream is consumed (nothing new to read) instead of running until SIGINT/SIGTERM.
    #[arg(long)]
    pub(crate) drain: bool,

    /// Serve Prometheus metrics at http://ADDR/metrics while consuming (e.g. 127.0.0.1:9464).
    #[arg(long, value_name = "ADDR")]
    pub(crate) metrics_listen: Option<std::net::SocketAddr>,

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
    /// One entry per item of the campaign.
    pub(crate) items: Vec<ItemCounts>,
}

impl Report for ConsumeReport {
    fn render(&self) -> String {
        let rows = self.items.iter().map(|c| {
            vec![
                c.item.clone(),
                c.acked.to_string(),
                c.left_pending.to_string(),
            ]
        });
        output::grid(
            &["item", "stored and acked", "left pending\n(not orders)"],
            rows.collect(),
            &[],
        )
    }
}

/// Consume until drained (`--drain`) or stopped by a signal; exit 0.
pub(crate) fn run(ctx: &Context, args: &Args) -> Result<ConsumeReport> {
    let stop = ctx.stop_on_signals()?;
    let (
        Opened {
            campaign,
            target,
            conn,
        },
        mut store,
    ) = ctx.open_with_store(&args.store, &stop)?;
    if let Some(listen) = args.metrics_listen {
        let bound = crate::features::monitor::metrics::serve_consume(
            listen,
            campaign.clone(),
            target.clone(),
        )?;
        log::line(COMMAND, format!("metrics at http://{bound}/metrics"));
    }
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
    let worker = Consumer::new(&campaign, &target, conn, store.as_mut(), &stop, settings)?;
    log::line(
        COMMAND,
        format!(
            "consumer {consumer} of group {ORDER_GROUP}: {} item stream(s) on {} into {database}",
            worker.items().len(),
            target.display,
        ),
    );
    let mut progress = Progress::new(
        std::io::stderr().is_terminal(),
        worker.items().to_vec(),
        worker.stream_items(),
    );
    let Consumed {
        items: counts,
        acked,
        inserted,
        stopped,
    } = worker.run(&mut progress)?;
    let seconds = progress.finish();
    let left_pending: u64 = counts.iter().map(|c| c.left_pending).sum();
    log::line(
        COMMAND,
        format!(
            "{} after {acked} entries stored and acked in {seconds:.2}s ({:.0}/s; {inserted} new rows, {} already stored){}",
            if !stopped { "drained" } else { "stopped" },
            acked as f64 / seconds.max(1e-9),
            acked - inserted,
            if left_pending > 0 {
                format!(", {left_pending} unparseable left pending")
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
        already_stored: acked - inserted,
        items: counts,
    })
}

/// Progress: a live line on a terminal, a log line every few seconds otherwise.
struct Progress {
    bar: Option<ProgressBar>,
    keys: Vec<ItemKeys>,
    items: Vec<Item>,
    started: Instant,
    last_update: Instant,
    last_count: u64,
    logged_count: u64,
}

impl Progress {
    fn new(terminal: bool, keys: Vec<ItemKeys>, items: Vec<Item>) -> Progress {
        let bar = terminal.then(|| {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        let now = Instant::now();
        Progress {
            bar,
            keys,
            items,
            started: now,
            last_update: now,
            last_count: 0,
            logged_count: 0,
        }
    }

    /// Clear the live line; returns the seconds since start.
    fn finish(&self) -> f64 {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        self.started.elapsed().as_secs_f64()
    }
}

impl Watcher for Progress {
    fn left_pending(&mut self, message: String) {
        match &self.bar {
            Some(bar) => bar.suspend(|| log::line(COMMAND, &message)),
            None => log::line(COMMAND, message),
        }
    }

    fn round_done(&mut self, acked: u64, conn: &mut Conn) {
        let every = if self.bar.is_some() {
            Duration::from_secs(1)
        } else {
            Duration::from_secs(5)
        };
        let elapsed = self.last_update.elapsed();
        if elapsed < every || (self.bar.is_none() && acked == self.logged_count) {
            return;
        }
        let rate = (acked - self.last_count) as f64 / elapsed.as_secs_f64();
        let lags: Vec<String> = self
            .keys
            .iter()
            .zip(&self.items)
            .map(|(k, item)| match stream::group_info(conn, k) {
                Ok(Some(info)) => format!(
                    "{}: lag {} pending {}",
                    item.id,
                    info.lag.map_or_else(|| "?".to_string(), |l| l.to_string()),
                    info.pending
                ),
                _ => format!("{}: lag ?", item.id),
            })
            .collect();
        let message = format!("{acked} orders stored, {rate:.0}/s; {}", lags.join(", "));
        match &self.bar {
            Some(bar) => bar.set_message(message),
            None => {
                log::line(COMMAND, message);
                self.logged_count = acked;
            }
        }
        self.last_update = Instant::now();
        self.last_count = acked;
    }
}
