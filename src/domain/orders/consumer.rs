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
//! New entries are read by a thread of their own on a connection of its own
//! ([`read_new_entries`], a `wire::ReadConn`): while this thread commits one
//! batch and then acks it, the reader already reads and parses the next —
//! at most one batch waits between them, so memory stays flat. Nothing
//! changes for the pipeline's rule: only this thread stores and acks, each
//! ack after its commit; what the reader read is pending under our name
//! until then, like any read that is not acked yet. The reader stops at a
//! stop request, at a read that failed (we re-read our own pending entries
//! first, as before) and, with `drain`, at the first read that finds nothing.
//!
//! Entries that are not orders are left pending and reported once each:
//! `pending-claim` dead-letters them, so one poison entry never stops the
//! flow and is never silently dropped.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::time::Duration;

use anyhow::{Result, anyhow};
use serde::Serialize;

use super::entry::{RawEntry, StreamEntry, parse_entry};
use super::pipeline::{Batch, store_then_ack};
use super::reconnecting::ReconnectingConn;
use super::wire::{ReadConn, ReadsStreams};
use super::{OrderStore, stream};
use crate::model::campaign::Campaign;
use crate::model::keys::ItemKeys;
use crate::redis_client::conn::{Conn, RedisTarget};

/// The command name in log lines.
const COMMAND: &str = "consume";

/// Read rounds stored in one transaction at most, when the reader has them
/// ready (each round is `--batch` entries per stream at most).
const MAX_ROUNDS_PER_COMMIT: usize = 4;

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
    /// Rows new in the database.
    pub(crate) inserted: u64,
    /// Reservations' state changes applied: the rest of `acked`, beside
    /// `inserted`, were orders already stored.
    pub(crate) changes: u64,
    /// Ended by a stop signal (else: drained).
    pub(crate) stopped: bool,
}

/// What the command shows while a consumer runs.
pub(crate) trait Watcher {
    /// An entry that is not an order was left pending (said once per entry).
    fn left_pending(&mut self, message: String);
    /// A round ended; `acked` entries so far.
    fn round_done(&mut self, acked: u64, conn: &mut Conn);
    /// The database refused an order of `item` (left pending).
    fn refused(&mut self, item: &str);
}

/// One consumer of the campaign's order streams.
pub(crate) struct Consumer<'a> {
    campaign: &'a Campaign,
    items: Vec<ItemKeys>,
    /// Position in `campaign.items` of the item of each stream in `items`.
    owners: Vec<usize>,
    /// Stream key → position in `items`.
    index: HashMap<String, usize>,
    /// Stream key → item id, for parsing.
    streams: StreamItems,
    settings: ConsumerSettings,
    target: &'a RedisTarget,
    conn: ReconnectingConn<'a>,
    store: &'a mut dyn OrderStore,
    stop: &'a AtomicBool,
    counts: Vec<ItemCounts>,
    /// "stream id" of every non-order entry already reported.
    not_orders: HashSet<String>,
    inserted: u64,
    changes: u64,
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
        let streams = StreamItems {
            item_of: items
                .iter()
                .zip(&owners)
                .map(|(k, &owner)| (k.orders.clone(), campaign.items[owner].id.clone()))
                .collect(),
        };
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
            streams,
            settings,
            target,
            conn,
            store,
            stop,
            counts,
            not_orders: HashSet::new(),
            inserted: 0,
            changes: 0,
            acked: 0,
        })
    }

    /// Its Redis connection, for what the command shows (who else uses the name).
    pub(crate) fn conn(&mut self) -> &mut Conn {
        self.conn.conn()
    }

    /// The item streams this consumer reads.
    pub(crate) fn items(&self) -> &[ItemKeys] {
        &self.items
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
            if phase == Phase::NewEntries {
                phase = match self.new_entries(watcher)? {
                    NewEnded::Drained => return Ok(self.finish(false)),
                    // The stop check above turns this into the final pass.
                    NewEnded::Stopped => Phase::NewEntries,
                    // A failed `>` read may still have delivered entries to
                    // us, now pending under our name: read those next.
                    NewEnded::ReadFailed => Phase::OwnPending(self.pending_from_start()),
                };
                continue;
            }
            let reads = self.read(&phase)?;
            let read_any = reads.iter().any(|(_, entries)| !entries.is_empty());
            let parsed = self.streams.parse(&self.campaign.id, reads);
            let batch = self.assemble(&mut phase, parsed, watcher);
            self.store(&batch, watcher)?;
            phase = match phase {
                Phase::FinalPass(_) if !read_any => return Ok(self.finish(true)),
                Phase::OwnPending(_) if !read_any => Phase::NewEntries,
                phase => phase,
            };
            watcher.round_done(self.acked, self.conn.conn());
        }
    }

    /// Store `batch` (commit, then ack) and count it.
    fn store(&mut self, batch: &Batch, watcher: &mut dyn Watcher) -> Result<()> {
        if batch.ack_count() == 0 {
            return Ok(());
        }
        let stored = store_then_ack(COMMAND, &mut *self.store, &mut self.conn, batch, self.stop)?;
        self.inserted += stored.inserted;
        self.changes += stored.changes;
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
        Ok(())
    }

    /// New entries, read by a reader thread while this one stores: until
    /// drained (`drain`), stopped, or a read failed.
    fn new_entries(&mut self, watcher: &mut dyn Watcher) -> Result<NewEnded> {
        let reader = Reader {
            target: self.target,
            consumer: self.settings.consumer.clone(),
            items: self.items.clone(),
            streams: self.streams.clone(),
            campaign: self.campaign.id.clone(),
            batch: self.settings.batch as usize,
            block: (!self.settings.drain).then_some(self.settings.block),
            stop: self.stop,
        };
        // Rounds wait here while the one before them is stored.
        let (sender, receiver) = sync_channel(MAX_ROUNDS_PER_COMMIT - 1);
        std::thread::scope(|scope| {
            let reading = scope.spawn(move || reader.run(&sender));
            let ended = self.take_new_entries(&receiver, watcher);
            // Stored no further: the reader stops at its next hand-over.
            drop(receiver);
            let read = reading
                .join()
                .map_err(|_| anyhow!("the order stream reader panicked"))?;
            match (ended?, read) {
                (_, Err(error)) => Err(error),
                (Some(ended), Ok(())) => Ok(ended),
                (None, Ok(())) => Err(anyhow!("the order stream reader ended without a word")),
            }
        })
    }

    /// Store what the reader hands over; `None` when it went away (its error says why).
    fn take_new_entries(
        &mut self,
        receiver: &Receiver<Read>,
        watcher: &mut dyn Watcher,
    ) -> Result<Option<NewEnded>> {
        while let Ok(read) = receiver.recv() {
            let (mut reads, mut failed) = match read {
                Read::Entries { reads, failed } => (reads, failed),
                Read::Drained => return Ok(Some(NewEnded::Drained)),
                Read::Stopped => return Ok(Some(NewEnded::Stopped)),
            };
            // Rounds the reader has ready already go into the same
            // transaction: fewer commits (each one fsync) while catching up,
            // and nothing is held back to wait for more.
            let mut ended = None;
            for _ in 0..MAX_ROUNDS_PER_COMMIT - 1 {
                match receiver.try_recv() {
                    Ok(Read::Entries {
                        reads: more,
                        failed: more_failed,
                    }) => {
                        reads.extend(more);
                        failed = more_failed;
                    }
                    Ok(Read::Drained) => ended = Some(NewEnded::Drained),
                    Ok(Read::Stopped) => ended = Some(NewEnded::Stopped),
                    Err(_) => {}
                }
                if failed || ended.is_some() {
                    break;
                }
            }
            let batch = self.assemble(&mut Phase::NewEntries, reads, watcher);
            self.store(&batch, watcher)?;
            watcher.round_done(self.acked, self.conn.conn());
            if failed {
                return Ok(Some(NewEnded::ReadFailed));
            }
            if ended.is_some() {
                return Ok(ended);
            }
        }
        Ok(None)
    }

    /// Cursors at the start of every stream's pending list.
    fn pending_from_start(&self) -> Vec<String> {
        vec!["0".to_string(); self.items.len()]
    }

    /// One XREADGROUP round of our own pending entries, retried on a fresh connection.
    fn read(&mut self, phase: &Phase) -> Result<Vec<(String, Vec<RawEntry>)>> {
        let (Phase::OwnPending(start_ids) | Phase::FinalPass(start_ids)) = phase else {
            return Ok(Vec::new());
        };
        let (settings, items, stop) = (&self.settings, &self.items, self.stop);
        self.conn
            .retry(COMMAND, "reading the order streams", stop, |conn| {
                stream::read_items(
                    conn,
                    &settings.consumer,
                    items,
                    start_ids,
                    settings.batch as usize,
                    None,
                )
            })
    }

    /// Turn one round's entries into a batch (orders to store, ids to ack);
    /// moves the pending cursors of `phase` past what was read.
    fn assemble(&mut self, phase: &mut Phase, reads: Parsed, watcher: &mut dyn Watcher) -> Batch {
        let mut batch = Batch::default();
        for (key, entries) in reads {
            let Some(&i) = self.index.get(key.as_str()) else {
                continue;
            };
            if let (Phase::OwnPending(cursors) | Phase::FinalPass(cursors), Some((last, _))) =
                (&mut *phase, entries.last())
            {
                cursors[i].clone_from(last);
            }
            let mut ids = Vec::with_capacity(entries.len());
            for (id, parsed) in entries {
                match parsed {
                    Ok(StreamEntry::Order(order)) => {
                        ids.push(id);
                        batch.push_order(&key, order);
                    }
                    Ok(StreamEntry::Change(change)) => {
                        ids.push(id);
                        batch.changes.push(change);
                    }
                    Err(reason) => {
                        if self.not_orders.insert(format!("{key} {id}")) {
                            self.counts[self.owners[i]].left_pending += 1;
                            watcher.left_pending(format!(
                                "entry {id} of {key} is not an order ({reason}): left pending for `seckill pending-claim` to dead-letter"
                            ));
                        }
                    }
                }
            }
            self.counts[self.owners[i]].acked += ids.len() as u64;
            // Rounds stored together ack together: one XACK per stream.
            match batch.acks.iter_mut().find(|(k, _)| *k == key) {
                Some((_, acked)) => acked.extend(ids),
                None if !ids.is_empty() => batch.acks.push((key, ids)),
                None => {}
            }
        }
        batch
    }

    fn finish(self, stopped: bool) -> Consumed {
        Consumed {
            items: self.counts,
            acked: self.acked,
            inserted: self.inserted,
            changes: self.changes,
            stopped,
        }
    }
}

/// Each stream's entries as read: the stream id and what the parser made of it.
type Parsed = Vec<(
    String,
    Vec<(String, std::result::Result<StreamEntry, String>)>,
)>;

/// Which item each stream belongs to, for parsing its entries.
#[derive(Debug, Clone)]
struct StreamItems {
    /// Stream key → item id.
    item_of: HashMap<String, String>,
}

impl StreamItems {
    fn parse(&self, campaign: &str, reads: Vec<(String, Vec<RawEntry>)>) -> Parsed {
        reads
            .into_iter()
            .filter_map(|(key, entries)| {
                let item = self.item_of.get(&key)?;
                let parsed = entries
                    .into_iter()
                    .map(|entry| {
                        let parsed = parse_entry(&entry, campaign, item);
                        (entry.id, parsed)
                    })
                    .collect();
                Some((key, parsed))
            })
            .collect()
    }
}

/// How the reader thread's run ended, as the storing thread sees it.
enum NewEnded {
    Drained,
    Stopped,
    ReadFailed,
}

/// What the reader hands over.
enum Read {
    /// One round (nothing, when a blocking read timed out); `failed`: the read
    /// failed at least once, so entries may have been delivered to us unseen,
    /// and the reader stopped.
    Entries { reads: Parsed, failed: bool },
    /// Nothing new was left (`drain`); the reader stopped.
    Drained,
    /// A stop request; the reader stopped.
    Stopped,
}

/// The reader thread: XREADGROUP `>` rounds on a connection of its own.
struct Reader<'a> {
    target: &'a RedisTarget,
    consumer: String,
    items: Vec<ItemKeys>,
    streams: StreamItems,
    campaign: String,
    batch: usize,
    /// BLOCK per read; `None` (drain) reads without waiting.
    block: Option<Duration>,
    stop: &'a AtomicBool,
}

impl Reader<'_> {
    fn run(&self, hand_over: &SyncSender<Read>) -> Result<()> {
        let conn = ReadConn::open(self.target)?;
        let mut conn = ReconnectingConn::new(self.target, conn).with_groups(&self.items)?;
        let start_ids = vec![">".to_string(); self.items.len()];
        loop {
            if self.stop.load(Ordering::SeqCst) {
                let _ = hand_over.send(Read::Stopped);
                return Ok(());
            }
            let (mut failed, mut interrupted) = (false, false);
            let reads = conn.retry(COMMAND, "reading the order streams", self.stop, |conn| {
                let result = stream::read_items(
                    conn,
                    &self.consumer,
                    &self.items,
                    &start_ids,
                    self.batch,
                    self.block,
                );
                failed |= result.is_err();
                if result.is_err() && self.stop.load(Ordering::SeqCst) {
                    // The stop signal interrupted this read (EINTR): not an
                    // error. The final pass re-reads whatever it delivered.
                    interrupted = true;
                    return Ok(Vec::new());
                }
                result
            })?;
            if interrupted {
                let _ = hand_over.send(Read::Stopped);
                return Ok(());
            }
            let nothing = reads.iter().all(|(_, entries)| entries.is_empty());
            if nothing && !failed && self.block.is_none() {
                let _ = hand_over.send(Read::Drained);
                return Ok(());
            }
            let reads = self.streams.parse(&self.campaign, reads);
            if hand_over.send(Read::Entries { reads, failed }).is_err() || failed {
                return Ok(());
            }
        }
    }
}
