//! `seckill consume`: carry orders from the item streams into the order
//! database at the pace the database takes, committing before acking.
//!
//! Start-up first re-reads this consumer's own pending entries (a restart
//! under the same `--consumer` name picks up where it died), then reads new
//! ones. Entries that are not orders are left pending and named in the log:
//! `pending-claim` dead-letters them, so one poison entry never stops the
//! flow and is never silently dropped.

use std::collections::{HashMap, HashSet};
use std::io::IsTerminal;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use crate::campaign::Item;
use crate::context::Globals;
use crate::exit_codes;
use crate::keys::{ItemKeys, ORDER_GROUP};
use crate::orders::entry::{RawEntry, parse_order};
use crate::orders::pipeline::{Batch, Session, retry, store_then_ack};
use crate::orders::{StoreArgs, default_consumer_name, log, stream};
use crate::output::{self, Format};
use crate::redis_conn::Conn;

/// Flags of `seckill consume`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Consumer name in the group (default: HOST-PID). Reuse a name to take over that consumer's pending entries on start.
    #[arg(long, value_name = "NAME")]
    pub consumer: Option<String>,

    /// Entries read per stream per round; each round is stored in one transaction.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=10_000), value_name = "N")]
    pub batch: u64,

    /// Exit 0 once every stream is consumed (nothing new to read) instead of running until SIGINT/SIGTERM.
    #[arg(long)]
    pub drain: bool,

    /// The order database (`--orders-db`).
    #[command(flatten)]
    pub store: StoreArgs,
}

const COMMAND: &str = "consume";
/// Longest XREADGROUP BLOCK; kept well below the Redis response timeout.
const MAX_BLOCK: Duration = Duration::from_millis(500);

/// Per-item counts of this run.
#[derive(Debug, Clone, Default, Serialize)]
struct ItemCounts {
    item: String,
    /// Entries committed and acked.
    acked: u64,
    /// Entries that are not orders, left pending for `pending-claim`.
    left_pending: u64,
}

/// Consume until drained (`--drain`) or stopped by a signal; exit 0.
pub fn run(globals: &Globals, args: &Args) -> Result<i32> {
    let Session {
        campaign,
        target,
        mut conn,
        mut store,
        stop,
    } = Session::open(COMMAND, globals, &args.store)?;
    // One stream per plain item, one per bucket of a bucketed item;
    // `owners[i]` is the item of stream `i`.
    let (stream_items, items): (Vec<Item>, Vec<ItemKeys>) =
        crate::buckets::order_streams(&campaign)
            .into_iter()
            .map(|(item, keys)| (item.clone(), keys))
            .unzip();
    let owners: Vec<usize> = stream_items
        .iter()
        .map(|s| {
            campaign
                .items
                .iter()
                .position(|i| i.id == s.id)
                .unwrap_or(0)
        })
        .collect();
    for keys in &items {
        stream::ensure_group(&mut conn, keys)?;
    }
    let consumer = args
        .consumer
        .clone()
        .unwrap_or_else(|| default_consumer_name(""));
    log(
        COMMAND,
        format!(
            "consumer {consumer} of group {ORDER_GROUP}: {} item stream(s) on {} into {}",
            items.len(),
            target.display,
            store.display()
        ),
    );
    let index: HashMap<&str, usize> = items
        .iter()
        .enumerate()
        .map(|(i, k)| (k.orders.as_str(), i))
        .collect();
    let mut counts: Vec<ItemCounts> = campaign
        .items
        .iter()
        .map(|i| ItemCounts {
            item: i.id.clone(),
            ..ItemCounts::default()
        })
        .collect();
    let block = MAX_BLOCK.min(target.response_timeout() / 4);
    let mut progress = Progress::new(std::io::stderr().is_terminal());
    // Own pending entries first, each stream from its cursor; then new ones
    // (`>`). On a stop signal, one more pass over our own pending entries:
    // a read the signal interrupted may still have delivered entries to us,
    // and they are the batch in hand to finish before exiting.
    let own_pending = || Some(vec!["0".to_string(); items.len()]);
    let mut history: Option<Vec<String>> = own_pending();
    let mut final_pass = false;
    let mut reconnect = false;
    let mut not_orders: HashSet<String> = HashSet::new();
    let (mut inserted, mut acked) = (0u64, 0u64);
    loop {
        if stop.load(Ordering::SeqCst) && !final_pass {
            final_pass = true;
            history = own_pending();
            reconnect = true;
        }
        let (start_ids, wait) = match &history {
            Some(cursors) => (cursors.clone(), None),
            None => (
                vec![">".to_string(); items.len()],
                (!args.drain).then_some(block),
            ),
        };
        let reading_new = history.is_none();
        let mut new_read_failed = false;
        let attempt = retry(COMMAND, "reading the order streams", &stop, || {
            if reconnect {
                // After an error the old connection may still owe a reply;
                // and a stream deleted meanwhile (`init --yes`) lost its group.
                conn = target.connect()?;
                for keys in &items {
                    stream::ensure_group(&mut conn, keys)?;
                }
            }
            let result = read(&mut conn, &consumer, &items, &start_ids, args.batch, wait);
            reconnect = result.is_err();
            new_read_failed |= reconnect && reading_new;
            if reconnect && stop.load(Ordering::SeqCst) && !final_pass {
                // The stop signal interrupted this read (EINTR): not an error.
                // The final pass re-reads whatever it may have delivered.
                return Ok(Vec::new());
            }
            result
        });
        let reads = attempt?;
        let read_any = reads.iter().any(|(_, entries)| !entries.is_empty());
        let mut batch = Batch::default();
        for (key, entries) in reads {
            let Some(&i) = index.get(key.as_str()) else {
                continue;
            };
            if let (Some(cursors), Some(last)) = (history.as_mut(), entries.last()) {
                cursors[i].clone_from(&last.id);
            }
            let item = &stream_items[i];
            let mut ids = Vec::with_capacity(entries.len());
            for entry in &entries {
                match parse_order(entry, &campaign.id, &item.id) {
                    Ok(order) => {
                        ids.push(entry.id.clone());
                        batch.orders.push(order);
                    }
                    Err(reason) => {
                        if not_orders.insert(format!("{key} {}", entry.id)) {
                            counts[owners[i]].left_pending += 1;
                            progress.log(format!(
                                "entry {} of {key} is not an order ({reason}): left pending for `seckill pending-claim` to dead-letter",
                                entry.id
                            ));
                        }
                    }
                }
            }
            counts[owners[i]].acked += ids.len() as u64;
            if !ids.is_empty() {
                batch.acks.push((key, ids));
            }
        }
        if batch.ack_count() > 0 {
            let stored =
                store_then_ack(COMMAND, store.as_mut(), &target, &mut conn, &batch, &stop)?;
            inserted += stored.inserted;
            acked += stored.acked;
        }
        if !read_any && !new_read_failed && (final_pass || (history.take().is_none() && args.drain))
        {
            break;
        }
        if new_read_failed {
            // A failed `>` read may still have delivered entries to us, now
            // pending under our name: read our own pending entries next.
            history = own_pending();
        }
        progress.tick(acked, &mut conn, &items, &stream_items);
    }
    let seconds = progress.finish();
    let left_pending: u64 = counts.iter().map(|c| c.left_pending).sum();
    log(
        COMMAND,
        format!(
            "{} after {acked} entries stored and acked in {seconds:.2}s ({:.0}/s; {inserted} new rows, {} already stored){}",
            if !final_pass { "drained" } else { "stopped" },
            acked as f64 / seconds.max(1e-9),
            acked - inserted,
            if left_pending > 0 {
                format!(", {left_pending} unparseable left pending")
            } else {
                String::new()
            }
        ),
    );
    match globals.format {
        Format::Json => output::print_json(&serde_json::json!({
            "campaign": campaign.id,
            "consumer": consumer,
            "database": store.display(),
            "acked": acked,
            "inserted": inserted,
            "already_stored": acked - inserted,
            "items": counts,
        }))?,
        Format::Table => {
            let mut table =
                output::table(["item", "stored and acked", "left pending (not orders)"]);
            for c in &counts {
                table.add_row(vec![
                    c.item.clone(),
                    c.acked.to_string(),
                    c.left_pending.to_string(),
                ]);
            }
            println!("{table}");
        }
    }
    Ok(exit_codes::SUCCESS)
}

/// One XREADGROUP round: all streams in one call on a single server, one
/// call per item on a cluster (each item's stream lives in its own slot).
fn read(
    conn: &mut Conn,
    consumer: &str,
    items: &[ItemKeys],
    start_ids: &[String],
    batch: u64,
    block: Option<Duration>,
) -> Result<Vec<(String, Vec<RawEntry>)>> {
    let streams: Vec<(&str, &str)> = items
        .iter()
        .zip(start_ids)
        .map(|(k, id)| (k.orders.as_str(), id.as_str()))
        .collect();
    if !conn.is_cluster() {
        return stream::read_group(conn, consumer, &streams, batch as usize, block);
    }
    let mut all = Vec::new();
    for one in &streams {
        // Blocking on each of several items in turn would add their waits up.
        let each_block = if streams.len() == 1 { block } else { None };
        all.extend(stream::read_group(
            conn,
            consumer,
            std::slice::from_ref(one),
            batch as usize,
            each_block,
        )?);
    }
    if let (Some(pause), true) = (block, streams.len() > 1) {
        if all.iter().all(|(_, entries)| entries.is_empty()) {
            // Nothing anywhere: wait once here instead of spinning on non-blocking reads.
            std::thread::sleep(pause);
        }
    }
    Ok(all)
}

/// Progress: a live line on a terminal, a log line every few seconds otherwise.
struct Progress {
    bar: Option<ProgressBar>,
    started: Instant,
    last_update: Instant,
    last_count: u64,
    logged_count: u64,
}

impl Progress {
    fn new(terminal: bool) -> Progress {
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
            started: now,
            last_update: now,
            last_count: 0,
            logged_count: 0,
        }
    }

    fn log(&self, message: String) {
        match &self.bar {
            Some(bar) => bar.suspend(|| log(COMMAND, &message)),
            None => log(COMMAND, message),
        }
    }

    fn tick(
        &mut self,
        acked: u64,
        conn: &mut Conn,
        keys: &[ItemKeys],
        items: &[crate::campaign::Item],
    ) {
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
        let lags: Vec<String> = keys
            .iter()
            .zip(items)
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
                log(COMMAND, message);
                self.logged_count = acked;
            }
        }
        self.last_update = Instant::now();
        self.last_count = acked;
    }

    /// Clear the live line; returns the seconds since start.
    fn finish(&self) -> f64 {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        self.started.elapsed().as_secs_f64()
    }
}
