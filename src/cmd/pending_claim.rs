//! `seckill pending-claim`: recover entries a dead or stuck consumer left
//! pending, and dead-letter the ones that can never be stored.
//!
//! Claimed entries go through the same "commit, then ack" path as
//! `consume`. An entry that is not an order, or a valid order that has been
//! delivered `--max-deliveries` times already *and* that the database
//! refuses while it accepts others, is moved to the item's dead-letter
//! stream and acked in one Lua script, so it never blocks the group and is
//! never dropped without a trace. A valid order is a customer's: while the
//! database takes it, it is stored however often it was delivered, and while
//! the database is down it stays pending. Streams are never trimmed here.

use std::collections::HashMap;
use std::time::Duration;

use anyhow::Result;
use serde::Serialize;

use crate::context::Globals;
use crate::exit_codes;
use crate::orders::entry::parse_order;
use crate::orders::pipeline::{Batch, Session, store_then_ack};
use crate::orders::{StoreArgs, default_consumer_name, log, now_ms, stream};
use crate::output::{self, Format};
use crate::redis_conn::parse_duration_arg;

/// Flags of `seckill pending-claim`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Claim entries pending at least this long (e.g. 30s, 5m; 0s claims everything pending).
    #[arg(long, default_value = "30s", value_parser = parse_duration_arg, value_name = "DURATION")]
    pub min_idle: Duration,

    /// Dead-letter a valid order delivered this many times if the database still refuses it
    /// (entries that are not orders are dead-lettered at once).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..), value_name = "N")]
    pub max_deliveries: u64,

    /// Entries claimed per XAUTOCLAIM call and stored per transaction.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=10_000), value_name = "N")]
    pub batch: u64,

    /// Consumer name the entries are claimed to (default: pending-claim-HOST-PID).
    #[arg(long, value_name = "NAME")]
    pub consumer: Option<String>,

    /// The order database (`--orders-db`).
    #[command(flatten)]
    pub store: StoreArgs,
}

const COMMAND: &str = "pending-claim";

/// What happened to one item's pending entries.
#[derive(Debug, Clone, Default, Serialize)]
struct ItemClaims {
    item: String,
    /// Entries claimed (idle long enough).
    claimed: u64,
    /// Claimed entries committed to the database and acked.
    stored: u64,
    /// Claimed entries moved to the dead-letter stream and acked.
    dead_lettered: u64,
    /// Pending ids whose entry was already deleted from the stream (Redis drops them from the pending list).
    deleted: u64,
}

impl ItemClaims {
    /// Add another bucket's counts of the same item.
    fn absorb(&mut self, other: &ItemClaims) {
        self.claimed += other.claimed;
        self.stored += other.stored;
        self.dead_lettered += other.dead_lettered;
        self.deleted += other.deleted;
    }
}

/// Claim, store or dead-letter every idle pending entry of the campaign; exit 0.
pub fn run(globals: &Globals, args: &Args) -> Result<i32> {
    let Session {
        campaign,
        target,
        mut conn,
        mut store,
        stop,
    } = Session::open(COMMAND, globals, &args.store)?;
    let consumer = args
        .consumer
        .clone()
        .unwrap_or_else(|| default_consumer_name("pending-claim"));
    let mut reports: Vec<ItemClaims> = Vec::new();
    // One pass per order stream: a bucketed item has one per bucket.
    for (item, keys) in crate::buckets::order_streams(&campaign) {
        stream::ensure_group(&mut conn, &keys)?;
        let mut report = ItemClaims {
            item: item.id.clone(),
            ..ItemClaims::default()
        };
        let mut cursor = "0-0".to_string();
        loop {
            // SIGINT/SIGTERM: stop between pages; what is not stored stays pending.
            if stop.load(std::sync::atomic::Ordering::SeqCst) {
                log(COMMAND, "stop requested: the rest stays pending");
                break;
            }
            let (next, entries, deleted) = stream::autoclaim(
                &mut conn,
                &keys.orders,
                &consumer,
                args.min_idle,
                &cursor,
                args.batch as usize,
            )?;
            if !deleted.is_empty() {
                log(
                    COMMAND,
                    format!(
                        "{}: {} pending id(s) no longer in the stream (deleted or trimmed by someone): {}",
                        keys.orders,
                        deleted.len(),
                        deleted.join(", ")
                    ),
                );
            }
            report.deleted += deleted.len() as u64;
            report.claimed += entries.len() as u64;
            if let (Some(first), Some(last)) = (entries.first(), entries.last()) {
                let deliveries: HashMap<String, u64> = stream::pending_deliveries(
                    &mut conn,
                    &keys.orders,
                    &first.id,
                    &last.id,
                    entries.len(),
                    Some(&consumer),
                )?
                .into_iter()
                .collect();
                let mut batch = Batch::default();
                let mut ids = Vec::new();
                let mut doomed = Vec::new();
                let mut suspects = Vec::new();
                for entry in &entries {
                    let delivered = deliveries.get(&entry.id).copied().unwrap_or(0);
                    match parse_order(entry, &campaign.id, &item.id) {
                        Err(reason) => doomed.push((
                            entry.id.clone(),
                            format!("not an order: {reason}"),
                            delivered,
                        )),
                        Ok(order) if delivered >= args.max_deliveries => {
                            suspects.push((entry.id.clone(), order, delivered));
                        }
                        Ok(order) => {
                            ids.push(entry.id.clone());
                            batch.orders.push(order);
                        }
                    }
                }
                if !ids.is_empty() {
                    batch.acks.push((keys.orders.clone(), ids));
                    report.stored +=
                        store_then_ack(COMMAND, store.as_mut(), &target, &mut conn, &batch, &stop)?
                            .acked;
                }
                // A valid order delivered too often is still a customer's order: it is
                // dead-lettered only when the database refuses *it* while accepting
                // others. While the database is down it stays pending.
                for (id, order, delivered) in suspects {
                    match store.insert_orders(std::slice::from_ref(&order), now_ms()) {
                        Ok(_) => {
                            stream::ack(&mut conn, &keys.orders, std::slice::from_ref(&id))?;
                            report.stored += 1;
                        }
                        Err(error) if store.accepts_writes() => {
                            doomed.push((
                                id,
                                format!("delivered {delivered} times, and the database refuses it: {error:#}"),
                                delivered,
                            ));
                        }
                        Err(error) => {
                            return Err(error.context(format!(
                                "cannot store order entry {id} of {}: left pending",
                                keys.orders
                            )));
                        }
                    }
                }
                for (id, reason, delivered) in doomed {
                    if stream::dead_letter(&mut conn, &keys, &id, &reason, delivered, &consumer)? {
                        log(
                            COMMAND,
                            format!(
                                "dead-lettered entry {id} of {} to {}: {reason}",
                                keys.orders, keys.dead
                            ),
                        );
                        report.dead_lettered += 1;
                    }
                }
            }
            if next == "0-0" {
                break;
            }
            cursor = next;
        }
        match reports.last_mut() {
            Some(same) if same.item == report.item => same.absorb(&report),
            _ => reports.push(report),
        }
    }
    match globals.format {
        Format::Json => output::print_json(&serde_json::json!({
            "campaign": campaign.id,
            "consumer": consumer,
            "database": store.display(),
            "min_idle_ms": args.min_idle.as_millis() as u64,
            "max_deliveries": args.max_deliveries,
            "items": reports,
        }))?,
        Format::Table => {
            let mut table =
                output::table(["item", "claimed", "stored", "dead-lettered", "deleted"]);
            for r in &reports {
                table.add_row(vec![
                    r.item.clone(),
                    r.claimed.to_string(),
                    r.stored.to_string(),
                    r.dead_lettered.to_string(),
                    r.deleted.to_string(),
                ]);
            }
            println!("{table}");
        }
    }
    Ok(exit_codes::SUCCESS)
}
