//! "Commit, THEN ack": the one rule that makes the order pipeline safe.
//!
//! A batch is inserted in one database transaction (idempotent on order_id)
//! and only after the commit returned are its stream ids acknowledged. A
//! crash between the two leaves the entries pending; whoever claims them
//! later inserts them again, which changes nothing. Database and Redis
//! errors are retried with bounded exponential backoff and a log line each
//! time; a stop request (SIGINT/SIGTERM) ends the retrying, leaving the
//! entries pending rather than acking anything uncommitted.
//!
//! A batch the database refuses while it takes writes (an empty transaction
//! commits) is refused for what some of its orders contain — a trigger, a
//! unique index, a charset. Retrying it would stall everything behind it
//! forever, so the refused orders are isolated by bisection (each insert is
//! idempotent), the rest is committed and acked, and only the refused ones
//! stay pending: `pending-claim` dead-letters them after `--max-deliveries`.

use std::sync::atomic::AtomicBool;

use anyhow::Result;

use super::counters;
use super::entry::{Order, StateChange};
use super::reconnecting::ReconnectingConn;
use super::transient::is_transient;
use super::{OrderStore, now_ms, stream};
use crate::redis_client::failure;
use crate::util::log;

/// Orders to store and the stream ids to ack once they are committed.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    pub(crate) orders: Vec<Order>,
    /// The stream key each of `orders` was read from (a bucketed item has a
    /// stream per bucket: the order's item alone does not say which).
    pub(crate) origins: Vec<String>,
    /// Reservations' state changes, applied after the orders (their own
    /// transaction: a change and its order may arrive in either order).
    pub(crate) changes: Vec<StateChange>,
    /// (stream key, ids) — acked stream by stream, in the order read.
    pub(crate) acks: Vec<(String, Vec<String>)>,
}

impl Batch {
    /// Add an order read from `stream_key`.
    pub(crate) fn push_order(&mut self, stream_key: &str, order: Order) {
        self.origins.push(stream_key.to_string());
        self.orders.push(order);
    }

    /// Number of stream ids this batch will ack.
    pub(crate) fn ack_count(&self) -> usize {
        self.acks.iter().map(|(_, ids)| ids.len()).sum()
    }
}

/// What one batch did.
#[derive(Debug, Clone, Default)]
pub(crate) struct Stored {
    /// Rows that were new in the database.
    pub(crate) inserted: u64,
    /// Reservations' state changes applied (paid, expired, cancelled): entries
    /// of the stream that are events, not orders.
    pub(crate) changes: u64,
    /// Stream ids acknowledged.
    pub(crate) acked: u64,
    /// Orders the database refused while taking the others: (stream key,
    /// stream id, why). Left pending, not acked.
    pub(crate) refused: Vec<(String, String, String)>,
}

/// How one attempt at storing a batch ended.
enum Insert {
    /// Every order committed; rows new.
    All(u64),
    /// The database takes writes but refused some orders: rows new, and the
    /// indexes (into the batch) and reasons of the refused ones.
    Some(u64, Vec<(usize, String)>),
}

/// Insert `orders`, isolating what the database refuses while it accepts
/// writes. An error means the database itself failed (retry the whole batch).
fn insert_isolating(store: &mut dyn OrderStore, orders: &[Order]) -> Result<Insert> {
    match store.insert_orders(orders, now_ms()) {
        Ok(inserted) => Ok(Insert::All(inserted)),
        Err(error) if refused_while_writable(store, &error) => {
            let mut refused = Vec::new();
            let inserted = bisect(store, orders, 0, error, &mut refused)?;
            Ok(Insert::Some(inserted, refused))
        }
        Err(error) => Err(error),
    }
}

/// A failure is the orders' own (isolate them) only when it is not a passing
/// one and the database still takes an empty transaction: a lost connection,
/// a lock wait or a deadlock retries the whole batch instead, so a valid order
/// is never set aside because the database hiccuped.
fn refused_while_writable(store: &mut dyn OrderStore, error: &anyhow::Error) -> bool {
    !is_transient(error) && store.accepts_writes()
}

/// `orders` (at `offset` in the batch) failed with `error` although the
/// database takes writes: store each half, splitting a refused half again,
/// until the refused orders stand alone.
fn bisect(
    store: &mut dyn OrderStore,
    orders: &[Order],
    offset: usize,
    error: anyhow::Error,
    refused: &mut Vec<(usize, String)>,
) -> Result<u64> {
    if orders.len() == 1 {
        refused.push((offset, format!("{error:#}")));
        return Ok(0);
    }
    let (left, right) = orders.split_at(orders.len() / 2);
    let mut inserted = 0;
    for (half, at) in [(left, offset), (right, offset + left.len())] {
        match store.insert_orders(half, now_ms()) {
            Ok(n) => inserted += n,
            Err(error) if refused_while_writable(store, &error) => {
                inserted += bisect(store, half, at, error, refused)?;
            }
            Err(error) => return Err(error),
        }
    }
    Ok(inserted)
}

/// Commit `batch.orders` in one transaction, then ack `batch.acks`; both retried.
pub(crate) fn store_then_ack(
    command: &str,
    store: &mut dyn OrderStore,
    conn: &mut ReconnectingConn,
    batch: &Batch,
    stop: &AtomicBool,
) -> Result<Stored> {
    let mut stored = Stored::default();
    let mut skip = std::collections::HashSet::new();
    if !batch.orders.is_empty() {
        let what = format!(
            "storing {} orders in {}",
            batch.orders.len(),
            store.display()
        );
        match failure::retry(command, &what, stop, None, || {
            insert_isolating(store, &batch.orders)
                .inspect_err(|_| counters::CONSUME.add_store_retry())
        })? {
            Insert::All(inserted) => stored.inserted = inserted,
            Insert::Some(inserted, refused) => {
                stored.inserted = inserted;
                for (index, reason) in refused {
                    let order = &batch.orders[index];
                    let key = batch.origins[index].clone();
                    log::line(
                        command,
                        format!(
                            "order {} (entry {} of {key}) refused by {}: {reason}; the rest of \
                             the batch is stored, this entry stays pending \
                             (`pending-claim` dead-letters it after --max-deliveries)",
                            order.order_id,
                            order.stream_id,
                            store.display()
                        ),
                    );
                    skip.insert((key.clone(), order.stream_id.clone()));
                    stored.refused.push((key, order.stream_id.clone(), reason));
                }
            }
        }
    }
    if !batch.changes.is_empty() {
        let what = format!(
            "applying {} state changes in {}",
            batch.changes.len(),
            store.display()
        );
        failure::retry(command, &what, stop, None, || {
            store.apply_changes(&batch.changes, now_ms())
        })?;
        stored.changes = batch.changes.len() as u64;
    }
    for (stream_key, ids) in &batch.acks {
        let ids: Vec<String> = ids
            .iter()
            .filter(|id| !skip.contains(&(stream_key.clone(), (*id).clone())))
            .cloned()
            .collect();
        if ids.is_empty() {
            continue;
        }
        let what = format!("acking {} entries of {stream_key}", ids.len());
        conn.retry(command, &what, stop, |conn| {
            stream::ack(conn, stream_key, &ids)
        })?;
        stored.acked += ids.len() as u64;
    }
    Ok(stored)
}
