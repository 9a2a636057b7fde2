//! `consume` as a small state machine: carry orders from the item streams
//! into the order database, committing before acking.
//!
//! The phases, each one round (one XREADGROUP, one batch stored) at a time:
//! * [`Phase::OwnPending`]: this consumer's own pending entries, each stream
//!   from its cursor (a restart under the same name picks up where it died;
//!   a failed read of new entries may have delivered some to us).
//! * [`Phase::NewEntries`]: entries never delivered (`>`); with `drain`, the
//!   run ends when a round finds none.
//! * [`Phase::FinalPass`]: after SIGINT/SIGTERM, our own pending entries once
//!   more: a read the signal interrupted may still have delivered entries to
//!   us, and they are the batch in hand to finish before exiting.
//!
//! Entries that are not orders are left pending and reported once each:
//! `pending-claim` dead-letters them, so one poison entry never stops the
//! flow and is never silently dropped.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Result;
use serde::Serialize;

use super::entry::{RawEntry, StreamEntry, parse_entry};
use super::pipeline::{Batch, store_then_ack};
use super::reconnecting::ReconnectingConn;
use super::{OrderStore, stream};
use crate::model::campaign::Campaign;
use crate::model::keys::ItemKeys;
use crate::redis_client::conn::{Conn, RedisTarget};

/// The command name in log lines.
const COMMAND: &str = "consume";

/// How one consumer runs.
#[derive(Debug, Clone)]
pub(crate) struct ConsumerSettings {
    /// Consumer name in the group.
    pub(crate) consumer: String,
    /// Entries read per stream per round.
    pub(crate) batch: u64,
    /// End once nothing new is left to read, instead of waiting for more.
    pub(crate) drain: bool,
    /// XREADGROUP BLOCK while waiting for new entries.
    pub(crate) block: Duration,
}

/// Where a consumer is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Re-reading our own pending entries; one cursor per item.
    OwnPending(Vec<String>),
    /// Reading entries never delivered.
    NewEntries,
    /// Stop requested: our own pending entries once more, then exit.
    FinalPass(Vec<String>),
}

/// Per-item counts of this run.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct ItemCounts {
    /// The item id.
    pub(crate) item: String,
    /// Entries committed and acked.
    pub(crate) acked: u64,
    /// Entries that are not orders, left pending for `pending-claim`.
    pub(crate) left_pending: u64,
    /// Orders the database refused while taking the rest of their batch, left pending.
    pub(crate) refused: u64,
}

/// What a run did.
#[derive(Debug, Clone)]
pub(crate) struct Consumed {
    pub(crate) items: Vec<ItemCounts>,
    /// Entries acked (all items).
    pub(crate) acked: u64,
    /// Rows new in the database (`acked - inserted` were already stored).
    pub(crate) inserted: u64,
    /// Ended by a stop signal (else: drained).
    pub(crate) stopped: bool,
}

/// What the command shows while a consumer runs.
pub(crate) trait Watcher {
    /// An entry that is not an order was left pending (said once per entry).
    fn left_pending(&mut self, message: String);
    /// The database refused an order of `item` (left pending).
    fn refused(&mut self, item: &str);
    /// A round ended; `acked` entries so far.
    fn round_done(&mut self, acked: u64, conn: &mut Conn);
}

/// One consumer of the campaign's order streams.
pub(crate) struct Consumer<'a> {
    campaign: &'a Campaign,
    items: Vec<ItemKeys>,
    /// Position in `campaign.items` of the item of each stream in `items`.
    owners: Vec<usize>,
    /// Stream key → position in `items`.
    index: HashMap<String, usize>,
    settings: ConsumerSettings,
    conn: ReconnectingConn<'a>,
    store: &'a mut dyn OrderStore,
    stop: &'a AtomicBool,
    counts: Vec<ItemCounts>,
    /// "stream id" of every non-order entry already reported.
    not_orders: HashSet<String>,
    inserted: u64,
    acked: u64,
}

impl<'a> Consumer<'a> {
    /// A consumer of every item of `campaign`; creates the consumer groups when missing.
    pub(crate) fn new(
        campaign: &'a Campaign,
        target: &'a RedisTarget,
        conn: Conn,
        store: &'a mut dyn OrderStore,
        stop: &'a AtomicBool,
        settings: ConsumerSettings,
    ) -> Result<Consumer<'a>> {
        // One stream per plain item, one per bucket of a bucketed item.
        let (owners, items): (Vec<usize>, Vec<ItemKeys>) =
            crate::domain::item::order_streams(campaign)
                .into_iter()
                .map(|(item, keys)| {
                    let owner = campaign.items.iter().position(|i| i.id == item.id);
                    (owner.unwrap_or(0), keys)
                })
                .unzip();
        let conn = ReconnectingConn::new(target, conn).with_groups(&items)?;
        let index = items
            .iter()
            .enumerate()
            .map(|(i, k)| (k.orders.clone(), i))
            .collect();
        let counts = campaign
            .items
            .iter()
            .map(|i| ItemCounts {
                item: i.id.clone(),
                ..ItemCounts::default()
            })
            .collect();
        Ok(Consumer {
            campaign,
            items,
            owners,
            index,
            settings,
            conn,
            store,
            stop,
            counts,
            not_orders: HashSet::new(),
            inserted: 0,
            acked: 0,
        })
    }

    /// The item streams this consumer reads.
    pub(crate) fn items(&self) -> &[ItemKeys] {
        &self.items
    }

    /// Its Redis connection, for what the command shows (who else uses the name).
    pub(crate) fn conn(&mut self) -> &mut Conn {
        self.conn.conn()
    }

    /// The item of each stream of [`Consumer::items`], in the same order.
    pub(crate) fn stream_items(&self) -> Vec<crate::model::campaign::Item> {
        self.owners
            .iter()
            .map(|&i| self.campaign.items[i].clone())
            .collect()
    }

    /// Run until drained (`drain`) or stopped by the stop flag.
    pub(crate) fn run(mut self, watcher: &mut dyn Watcher) -> Result<Consumed> {
        let mut phase = Phase::OwnPending(self.pending_from_start());
        loop {
            if self.stop.load(Ordering::SeqCst) && !matches!(phase, Phase::FinalPass(_)) {
                phase = Phase::FinalPass(self.pending_from_start());
                self.conn.start_afresh();
            }
            let round = self.read(&phase)?;
            let read_any = round.reads.iter().any(|(_, entries)| !entries.is_empty());
            let batch = self.assemble(&mut phase, round.reads, watcher);
            if batch.ack_count() > 0 {
                let stored =
                    store_then_ack(COMMAND, &mut *self.store, &mut self.conn, &batch, self.stop)?;
                self.inserted += stored.inserted;
                self.acked += stored.acked;
                for (key, ids) in &batch.acks {
                    if let Some(&i) = self.index.get(key.as_str()) {
                        // Stream i belongs to item owners[i] (one stream per bucket);
                        // entries the database refused stay pending, not stored.
                        let refused = stored.refused.iter().filter(|(k, _, _)| k == key).count();
                        let item = &self.campaign.items[self.owners[i]].id;
                        crate::domain::orders::counters::CONSUME
                            .add_stored(item, (ids.len() - refused) as u64);
                    }
                }
                for (key, _, _) in &stored.refused {
                    if let Some(&i) = self.index.get(key.as_str()) {
                        // counts are per item; i is the stream (one per bucket).
                        self.counts[self.owners[i]].acked -= 1;
                        self.counts[self.owners[i]].refused += 1;
                        watcher.refused(&self.campaign.items[self.owners[i]].id);
                    }
                }
            }
            phase = match phase {
                // A failed `>` read may still have delivered entries to us,
                // now pending under our name: read those next.
                _ if round.new_read_failed => Phase::OwnPending(self.pending_from_start()),
                Phase::FinalPass(_) if !read_any => return Ok(self.finish(true)),
                Phase::OwnPending(_) if !read_any => Phase::NewEntries,
                Phase::NewEntries if !read_any && self.settings.drain => {
                    return Ok(self.finish(false));
                }
                phase => phase,
            };
            watcher.round_done(self.acked, self.conn.conn());
        }
    }

    /// Cursors at the start of every stream's pending list.
    fn pending_from_start(&self) -> Vec<String> {
        vec!["0".to_string(); self.items.len()]
    }

    /// One XREADGROUP round for `phase`, retried on a fresh connection.
    fn read(&mut self, phase: &Phase) -> Result<Round> {
        let (start_ids, wait) = match phase {
            Phase::OwnPending(cursors) | Phase::FinalPass(cursors) => (cursors.clone(), None),
            Phase::NewEntries => (
                vec![">".to_string(); self.items.len()],
                (!self.settings.drain).then_some(self.settings.block),
            ),
        };
        let reading_new = *phase == Phase::NewEntries;
        let final_pass = matches!(phase, Phase::FinalPass(_));
        let (settings, items, stop) = (&self.settings, &self.items, self.stop);
        let mut new_read_failed = false;
        let mut interrupted = false;
        let reads = self
            .conn
            .retry(COMMAND, "reading the order streams", stop, |conn| {
                let result = stream::read_items(
                    conn,
                    &settings.consumer,
                    items,
                    &start_ids,
                    settings.batch as usize,
                    wait,
                );
                new_read_failed |= result.is_err() && reading_new;
                if result.is_err() && stop.load(Ordering::SeqCst) && !final_pass {
                    // The stop signal interrupted this read (EINTR): not an
                    // error. The final pass re-reads whatever it delivered.
                    interrupted = true;
                    return Ok(Vec::new());
                }
                result
            })?;
        if interrupted {
            self.conn.start_afresh();
        }
        Ok(Round {
            reads,
            new_read_failed,
        })
    }

    /// Turn one round's entries into a batch (orders to store, ids to ack);
    /// moves the pending cursors of `phase` past what was read.
    fn assemble(
        &mut self,
        phase: &mut Phase,
        reads: Vec<(String, Vec<RawEntry>)>,
        watcher: &mut dyn Watcher,
    ) -> Batch {
        let mut batch = Batch::default();
        for (key, entries) in reads {
            let Some(&i) = self.index.get(key.as_str()) else {
                continue;
            };
            if let (Phase::OwnPending(cursors) | Phase::FinalPass(cursors), Some(last)) =
                (&mut *phase, entries.last())
            {
                cursors[i].clone_from(&last.id);
            }
            let item = &self.campaign.items[self.owners[i]];
            let mut ids = Vec::with_capacity(entries.len());
            for entry in &entries {
                match parse_entry(entry, &self.campaign.id, &item.id) {
                    Ok(StreamEntry::Order(order)) => {
                        ids.push(entry.id.clone());
                        batch.push_order(&key, order);
                    }
                    Ok(StreamEntry::Change(change)) => {
                        ids.push(entry.id.clone());
                        batch.changes.push(change);
                    }
                    Err(reason) => {
                        if self.not_orders.insert(format!("{key} {}", entry.id)) {
                            self.counts[self.owners[i]].left_pending += 1;
                            watcher.left_pending(format!(
                                "entry {} of {key} is not an order ({reason}): left pending for `seckill pending-claim` to dead-letter",
                                entry.id
                            ));
                        }
                    }
                }
            }
            self.counts[self.owners[i]].acked += ids.len() as u64;
            if !ids.is_empty() {
                batch.acks.push((key, ids));
            }
        }
        batch
    }

    fn finish(self, stopped: bool) -> Consumed {
        Consumed {
            items: self.counts,
            acked: self.acked,
            inserted: self.inserted,
            stopped,
        }
    }
}

/// What one read round brought.
struct Round {
    reads: Vec<(String, Vec<RawEntry>)>,
    /// A read of new entries failed at least once this round.
    new_read_failed: bool,
}
