//! `pending-claim` as two steps per page of idle pending entries:
//!
//! * **claim** ([`Claimer::claim`]): XAUTOCLAIM one page to our consumer name,
//!   read each entry's delivery count, and sort the entries into orders to
//!   store, suspects (valid orders delivered `max_deliveries` times already)
//!   and doomed entries (not orders);
//! * **settle** ([`Claimer::settle`]): store the orders and ack them (commit,
//!   then ack), try each suspect alone, and dead-letter what can never be
//!   stored.
//!
//! A valid order is a customer's: while the database takes it, it is stored
//! however often it was delivered; it is dead-lettered only when the
//! database refuses *it* while accepting others, and while the database is
//! down it stays pending. Dead-lettering moves the entry to the item's
//! dead-letter stream and acks it in one Lua script, so it never blocks the
//! group and is never dropped without a trace. Streams are never trimmed here.
//!
//! With `delete_consumers`, each stream's consumers that hold nothing
//! pending and have been idle that long are deleted afterwards, each by one
//! script that checks and deletes atomically (`lua/consumer_delete.lua`): a
//! consumer with pending entries is never deleted, since that would drop
//! them from the pending list where nobody could claim them again.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context as _, Result};
use redis::ConnectionLike;
use serde::Serialize;

use super::entry::{Order, StreamEntry, parse_entry};
use super::pipeline::{Batch, store_then_ack};
use super::reconnecting::ReconnectingConn;
use super::{OrderStore, now_ms, stream};
use crate::model::campaign::{Campaign, Item};
use crate::model::keys::{ItemKeys, ORDER_GROUP};
use crate::redis_client::conn::{Conn, RedisTarget};
use crate::redis_client::scripts::ScriptCall;
use crate::redis_client::scripts::consumer_delete::{self, ConsumerDelete};
use crate::util::log;

/// The command name in log lines.
const COMMAND: &str = "pending-claim";

/// How entries are claimed and judged.
#[derive(Debug, Clone)]
pub(crate) struct ClaimSettings {
    /// Consumer name the entries are claimed to.
    pub(crate) consumer: String,
    /// Claim entries pending at least this long.
    pub(crate) min_idle: Duration,
    /// Deliveries after which a valid order the database refuses is dead-lettered.
    pub(crate) max_deliveries: u64,
    /// Entries per XAUTOCLAIM page and per transaction.
    pub(crate) batch: u64,
    /// Delete consumers idle at least this long that hold nothing pending.
    pub(crate) delete_consumers: Option<Duration>,
}

/// What happened to one item's pending entries.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct ItemClaims {
    /// The item id.
    pub(crate) item: String,
    /// Entries claimed (idle long enough).
    pub(crate) claimed: u64,
    /// Claimed entries committed to the database and acked.
    pub(crate) stored: u64,
    /// Claimed orders the database refused while it took others: left
    /// pending, or dead-lettered once delivered `max_deliveries` times.
    pub(crate) refused: u64,
    /// Claimed entries moved to the dead-letter stream and acked.
    pub(crate) dead_lettered: u64,
    /// Pending ids whose entry was already deleted from the stream (Redis drops them from the pending list).
    pub(crate) deleted: u64,
    /// Consumers deleted from the group (idle, nothing pending), by name.
    pub(crate) consumers_deleted: Vec<String>,
}

impl ItemClaims {
    /// Add another bucket's counts of the same item.
    fn absorb(&mut self, other: &ItemClaims) {
        self.claimed += other.claimed;
        self.stored += other.stored;
        self.refused += other.refused;
        self.dead_lettered += other.dead_lettered;
        self.deleted += other.deleted;
        for name in &other.consumers_deleted {
            if !self.consumers_deleted.contains(name) {
                self.consumers_deleted.push(name.clone());
            }
        }
    }
}

/// One consumer of an order stream's group, as Redis remembers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct GroupConsumer {
    /// Its name (`consume --consumer`, by default the host name).
    pub(crate) name: String,
    /// Entries delivered to it and not yet acknowledged.
    pub(crate) pending: i64,
    /// Milliseconds since it last read or claimed (a running `consume`
    /// reads at least every 500 ms).
    pub(crate) idle_ms: i64,
}

/// The consumers of `stream`'s order group, busiest first (`XINFO
/// CONSUMERS`: one read-only round trip). Call only when the group exists.
pub(crate) fn group_consumers<C: ConnectionLike>(
    conn: &mut C,
    stream: &str,
) -> Result<Vec<GroupConsumer>> {
    let rows: Vec<HashMap<String, redis::Value>> = redis::cmd("XINFO")
        .arg("CONSUMERS")
        .arg(stream)
        .arg(ORDER_GROUP)
        .query(conn)
        .with_context(|| format!("XINFO CONSUMERS {stream} failed"))?;
    let mut consumers: Vec<GroupConsumer> = rows
        .iter()
        .map(|row| {
            let int = |field: &str| -> i64 {
                row.get(field)
                    .and_then(|v| redis::from_redis_value_ref::<i64>(v).ok())
                    .unwrap_or(0)
            };
            GroupConsumer {
                name: row
                    .get("name")
                    .and_then(|v| redis::from_redis_value_ref::<String>(v).ok())
                    .unwrap_or_default(),
                pending: int("pending"),
                idle_ms: int("idle"),
            }
        })
        .collect();
    sort_consumers(&mut consumers);
    Ok(consumers)
}

/// Most pending first, then the most recently active, then by name.
pub(crate) fn sort_consumers(consumers: &mut [GroupConsumer]) {
    consumers.sort_by(|a, b| (b.pending, a.idle_ms, &a.name).cmp(&(a.pending, b.idle_ms, &b.name)));
}

/// One claimed page, sorted for settling.
struct Claimed {
    /// XAUTOCLAIM cursor of the next page, `0-0` at the end.
    next: String,
    /// Orders to store and ack together.
    batch: Batch,
    /// (stream id, order, deliveries) of valid orders delivered too often.
    suspects: Vec<(String, Order, u64)>,
    /// (stream id, reason, deliveries) of entries to dead-letter.
    doomed: Vec<(String, String, u64)>,
}

/// Claims, stores and dead-letters the idle pending entries of a campaign.
pub(crate) struct Claimer<'a> {
    campaign: &'a Campaign,
    conn: ReconnectingConn<'a>,
    store: &'a mut dyn OrderStore,
    stop: &'a AtomicBool,
    settings: ClaimSettings,
}

impl<'a> Claimer<'a> {
    pub(crate) fn new(
        campaign: &'a Campaign,
        target: &'a RedisTarget,
        conn: Conn,
        store: &'a mut dyn OrderStore,
        stop: &'a AtomicBool,
        settings: ClaimSettings,
    ) -> Claimer<'a> {
        Claimer {
            campaign,
            conn: ReconnectingConn::new(target, conn),
            store,
            stop,
            settings,
        }
    }

    /// Every item in turn, page by page, until no idle pending entry is left
    /// or the stop flag is set (what is not settled then stays pending).
    pub(crate) fn run(&mut self) -> Result<Vec<ItemClaims>> {
        let mut reports: Vec<ItemClaims> = Vec::new();
        // One pass per order stream: a bucketed item has one per bucket.
        for (item, keys) in crate::domain::item::order_streams(self.campaign) {
            stream::ensure_group(self.conn.conn(), &keys)?;
            let mut report = ItemClaims {
                item: item.id.clone(),
                ..ItemClaims::default()
            };
            let mut cursor = "0-0".to_string();
            loop {
                if self.stop.load(Ordering::SeqCst) {
                    log::line(COMMAND, "stop requested: the rest stays pending");
                    break;
                }
                let claimed = self.claim(&keys, item, &cursor, &mut report)?;
                let next = self.settle(&keys, claimed, &mut report)?;
                if next == "0-0" {
                    break;
                }
                cursor = next;
            }
            if let Some(idle) = self.settings.delete_consumers
                && !self.stop.load(Ordering::SeqCst)
            {
                self.delete_consumers(&keys, idle, &mut report)?;
            }
            match reports.last_mut() {
                Some(same) if same.item == report.item => same.absorb(&report),
                _ => reports.push(report),
            }
        }
        Ok(reports)
    }

    /// Delete the consumers of `keys`' stream that hold nothing pending and
    /// have been idle at least `idle` (the script re-checks both).
    fn delete_consumers(
        &mut self,
        keys: &ItemKeys,
        idle: Duration,
        report: &mut ItemClaims,
    ) -> Result<()> {
        let idle_ms = idle.as_millis().to_string();
        let conn = self.conn.conn();
        for consumer in group_consumers(conn, &keys.orders)? {
            if consumer.pending > 0 || (consumer.idle_ms as u128) < idle.as_millis() {
                continue;
            }
            let call = ConsumerDelete {
                orders: keys.orders.as_str(),
                group: ORDER_GROUP,
                consumer: consumer.name.as_str(),
                min_idle_ms: idle_ms.as_str(),
            };
            let deleted = call
                .invoke(conn)
                .map_err(anyhow::Error::from)
                .and_then(consumer_delete::parse_reply)
                .with_context(|| {
                    format!(
                        "cannot delete consumer {} of {}",
                        consumer.name, keys.orders
                    )
                })?;
            if deleted {
                log::line(
                    COMMAND,
                    format!(
                        "deleted consumer {} of {} (idle {} ms, nothing pending)",
                        consumer.name, keys.orders, consumer.idle_ms
                    ),
                );
                report.consumers_deleted.push(consumer.name);
            }
        }
        Ok(())
    }

    /// Claim one page from `cursor` and sort its entries.
    fn claim(
        &mut self,
        keys: &ItemKeys,
        item: &Item,
        cursor: &str,
        report: &mut ItemClaims,
    ) -> Result<Claimed> {
        let consumer = self.settings.consumer.as_str();
        let (min_idle, batch) = (self.settings.min_idle, self.settings.batch as usize);
        // Retried like every pipeline call: a SIGTERM cutting the read (EINTR) is no failure.
        let (next, entries, deleted) = self.conn.retry(
            COMMAND,
            "claiming idle pending entries",
            self.stop,
            |conn| stream::autoclaim(conn, &keys.orders, consumer, min_idle, cursor, batch),
        )?;
        if !deleted.is_empty() {
            log::line(
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
        let mut claimed = Claimed {
            next,
            batch: Batch::default(),
            suspects: Vec::new(),
            doomed: Vec::new(),
        };
        let (Some(first), Some(last)) = (entries.first(), entries.last()) else {
            return Ok(claimed);
        };
        let deliveries: HashMap<String, u64> = self
            .conn
            .retry(COMMAND, "reading delivery counts", self.stop, |conn| {
                let (first, last, count) = (&first.id, &last.id, entries.len());
                stream::pending_deliveries(conn, &keys.orders, first, last, count, Some(consumer))
            })?
            .into_iter()
            .collect();
        let mut ids = Vec::new();
        for entry in &entries {
            let delivered = deliveries.get(&entry.id).copied().unwrap_or(0);
            match parse_entry(entry, &self.campaign.id, &item.id) {
                Err(reason) => claimed.doomed.push((
                    entry.id.clone(),
                    format!("not an order: {reason}"),
                    delivered,
                )),
                Ok(StreamEntry::Order(order)) if delivered >= self.settings.max_deliveries => {
                    claimed.suspects.push((entry.id.clone(), order, delivered));
                }
                Ok(StreamEntry::Order(order)) => {
                    ids.push(entry.id.clone());
                    claimed.batch.push_order(&keys.orders, order);
                }
                // A state change is applied whatever its delivery count: a
                // database that takes it never refuses it for its content
                // (the parser checked every field), and one that is down
                // leaves it pending.
                Ok(StreamEntry::Change(change)) => {
                    ids.push(entry.id.clone());
                    claimed.batch.changes.push(change);
                }
            }
        }
        if !ids.is_empty() {
            claimed.batch.acks.push((keys.orders.clone(), ids));
        }
        Ok(claimed)
    }

    /// Store and ack the page's orders, try each suspect alone, dead-letter
    /// the doomed; returns the cursor of the next page.
    fn settle(
        &mut self,
        keys: &ItemKeys,
        claimed: Claimed,
        report: &mut ItemClaims,
    ) -> Result<String> {
        let Claimed {
            next,
            batch,
            suspects,
            mut doomed,
        } = claimed;
        if batch.ack_count() > 0 {
            let stored =
                store_then_ack(COMMAND, &mut *self.store, &mut self.conn, &batch, self.stop)?;
            report.stored += stored.acked;
            report.refused += stored.refused.len() as u64;
        }
        for (id, order, delivered) in suspects {
            match self
                .store
                .insert_orders(std::slice::from_ref(&order), now_ms())
            {
                Ok(_) => {
                    stream::ack(self.conn.conn(), &keys.orders, std::slice::from_ref(&id))?;
                    report.stored += 1;
                }
                Err(error) if self.store.accepts_writes() => {
                    report.refused += 1;
                    doomed.push((
                        id,
                        format!(
                            "delivered {delivered} times, and the database refuses it: {}",
                            crate::util::error_text::render(&error)
                        ),
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
        let consumer = self.settings.consumer.as_str();
        for (id, reason, delivered) in doomed {
            if stream::dead_letter(self.conn.conn(), keys, &id, &reason, delivered, consumer)? {
                log::line(
                    COMMAND,
                    format!(
                        "dead-lettered entry {id} of {} to {}: {reason}",
                        keys.orders, keys.dead
                    ),
                );
                report.dead_lettered += 1;
            }
        }
        Ok(next)
    }
}
