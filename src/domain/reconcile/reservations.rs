//! Reconcile with reservations: the stock equation and the order states.
//!
//! With `payment_timeout`, an order's units are held while it is reserved or
//! paid and are back in `left` once it is released (expired or cancelled).
//! The stream carries every order entry and every state change, both
//! written atomically with the stock they concern, so walking the stream up
//! to the snapshot's last id gives, as of that snapshot:
//!
//! ```text
//! initial = left + reserved + paid + confirmed
//!         = left + (units of the order entries − units released)
//! ```
//!
//! where the order entries' units are, as before, split by where they are
//! (database, in flight, dead-lettered) — which is the equation checked.
//!
//! Each order's state is compared too: Redis's reservation record against
//! the database row's `state`. A difference is drift unless the record's
//! latest state change is still on its way (after the snapshot, not yet
//! delivered, pending, or dead-lettered); drift names the order and both
//! states.

use std::collections::{HashMap, HashSet};

use anyhow::Result;
use redis::ConnectionLike;
use serde::Serialize;

use crate::domain::orders::entry::{Order, OrderState, StateChange, stream_id_key};
use crate::domain::orders::{OrderStore, now_ms, stream};
use crate::domain::reservations::{Record, records};
use crate::model::keys::ItemKeys;

/// Offending orders named per item (the count is always exact).
const MAX_NAMED: usize = 1000;

/// Reservation figures of one item, as of the reconcile snapshot.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct ReservationCheck {
    /// Units of order entries that are reservations (`deadline_ms` set).
    pub(crate) reserving_units: i64,
    /// Units of order entries final on `ok` (no `payment_timeout`).
    pub(crate) confirmed_units: i64,
    /// Units paid (paid events in the stream).
    pub(crate) paid_units: i64,
    /// Units released back to stock (expired + cancelled events).
    pub(crate) released_units: i64,
    /// Still reserved: reserving − paid − released.
    pub(crate) reserved_units: i64,
    /// State-change entries in the stream.
    pub(crate) change_entries: u64,
    /// State-change entries pending or not yet delivered to the group.
    pub(crate) changes_in_flight: u64,
    /// Stored orders whose Redis and database states differ while the
    /// change is still on its way (not drift).
    pub(crate) states_catching_up: u64,
    /// Orders whose Redis and database states differ for good: "id (redis X, database Y)".
    pub(crate) state_mismatch: Vec<String>,
    /// Exact count of `state_mismatch`.
    pub(crate) state_mismatch_count: u64,
    /// `--repair`: reserved rows moved to the final state Redis has.
    pub(crate) states_repaired: u64,
    /// Released units the buyers hash still counts (`rebuy_after_release: false`).
    pub(crate) buyers_keep: i64,
}

impl ReservationCheck {
    /// Count one state-change entry of the walk.
    pub(crate) fn add_change(&mut self, change: &StateChange, in_flight: bool) {
        self.change_entries += 1;
        self.changes_in_flight += u64::from(in_flight);
        if change.state == OrderState::Paid {
            self.paid_units += change.order.qty;
        } else {
            self.released_units += change.order.qty;
        }
    }

    /// Count one order entry of the walk.
    pub(crate) fn add_order(&mut self, order: &Order) {
        if order.deadline_ms.is_some() {
            self.reserving_units += order.qty;
        } else {
            self.confirmed_units += order.qty;
        }
    }

    /// Whether the item has seen reservations at all.
    pub(crate) fn any(&self) -> bool {
        self.reserving_units > 0 || self.change_entries > 0
    }

    /// Derive `reserved_units` once the walk is done.
    pub(crate) fn finish(&mut self) {
        self.reserved_units = self.reserving_units - self.paid_units - self.released_units;
    }

    fn mismatch(&mut self, name: String) {
        self.state_mismatch_count += 1;
        if self.state_mismatch.len() < MAX_NAMED {
            self.state_mismatch.push(name);
        }
    }
}

/// Where the walk is: what decides whether a change is still on its way.
pub(crate) struct WalkPosition<'a> {
    /// The group's last-delivered id.
    pub(crate) last_delivered: (u64, u64),
    /// The snapshot's last stream id.
    pub(crate) snapshot_end: &'a str,
    /// Original ids of dead-lettered entries.
    pub(crate) dead_ids: &'a HashSet<String>,
}

/// Compare the states of one page's stored orders: Redis record vs database
/// row. With `repair`, a row still `reserved` whose order Redis has settled
/// (paid, expired, cancelled) is moved to that state — the conditional
/// update `consume` uses, so nothing else can change.
pub(crate) fn compare_states<C: ConnectionLike>(
    conn: &mut C,
    store: &mut dyn OrderStore,
    keys: &ItemKeys,
    stored: &[&Order],
    position: &WalkPosition,
    repair: bool,
    check: &mut ReservationCheck,
) -> Result<()> {
    let reserving: Vec<&Order> = stored
        .iter()
        .copied()
        .filter(|o| o.deadline_ms.is_some())
        .collect();
    if reserving.is_empty() {
        // Orders final on `ok` have no state to drift (and this keeps a
        // campaign without payment_timeout at one query per page).
        return Ok(());
    }
    let ids: Vec<&str> = stored.iter().map(|o| o.order_id.as_str()).collect();
    let database = store.order_states(&ids)?;
    let reserving_ids: Vec<&str> = reserving.iter().map(|o| o.order_id.as_str()).collect();
    let redis: HashMap<&str, Option<Record>> = reserving_ids
        .iter()
        .copied()
        .zip(records(conn, keys, &reserving_ids)?)
        .collect();
    for order in stored {
        let Some(&in_database) = database.get(&order.order_id) else {
            continue; // deleted meanwhile: the order-set check names it
        };
        let (in_redis, change_id) = match redis.get(order.order_id.as_str()) {
            None => (Some(OrderState::Confirmed), None),
            Some(Some(record)) => (
                OrderState::parse(&record.state),
                Some(record.event_stream_id.as_str()),
            ),
            Some(None) => (None, None),
        };
        if in_redis == Some(in_database) {
            continue;
        }
        if let Some(change_id) = change_id
            && on_its_way(conn, keys, change_id, position)?
        {
            check.states_catching_up += 1;
            continue;
        }
        if let (true, OrderState::Reserved, Some(state), Some(Some(record))) = (
            repair,
            in_database,
            in_redis.filter(|s| *s != OrderState::Reserved),
            redis.get(order.order_id.as_str()),
        ) {
            let change = StateChange {
                order: (*order).clone(),
                state,
                at_ms: record.changed_at_ms,
                reason: String::new(),
            };
            store.apply_changes(std::slice::from_ref(&change), now_ms())?;
            check.states_repaired += 1;
            continue;
        }
        let redis_name = in_redis.map_or("no reservation record", OrderState::as_str);
        check.mismatch(format!(
            "{} (redis {redis_name}, database {})",
            order.order_id,
            in_database.as_str()
        ));
    }
    Ok(())
}

/// A state change not yet applied legitimately: written after the snapshot,
/// never delivered, pending, or dead-lettered.
fn on_its_way<C: ConnectionLike>(
    conn: &mut C,
    keys: &ItemKeys,
    change_id: &str,
    position: &WalkPosition,
) -> Result<bool> {
    let Some(id) = stream_id_key(change_id) else {
        return Ok(false);
    };
    let after_snapshot = stream_id_key(position.snapshot_end).is_none_or(|end| id > end);
    if after_snapshot || id > position.last_delivered || position.dead_ids.contains(change_id) {
        return Ok(true);
    }
    let pending = stream::pending_deliveries(conn, &keys.orders, change_id, change_id, 1, None)?;
    Ok(!pending.is_empty())
}
