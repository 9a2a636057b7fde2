//! Reconcile a seat item seat by seat (docs/seats.md, "Orders and
//! reconcile, seat by seat"): each section's state string, the orders Redis
//! says hold its seats (`seat_orders` and their reservation records) and the
//! seats the order database stores (`order_seats`) must tell one story:
//!
//! * a sold seat (`s`) is held by exactly one live order in Redis, paid or
//!   final on ok, and the database stores that order's seat as sold;
//! * a held seat (`h`) is held by exactly one open reservation (`reserved`);
//! * a free (`.`) or blocked (`x`) seat is in no live order, in Redis or in
//!   the database — no seat both free and sold;
//! * no seat is in two live orders (reserved, paid or final), in Redis or in
//!   the database;
//! * the section's stock is its free seats.
//!
//! A section is read as one moment: its state string before and after its
//! orders and records, again until both agree (every script that changes a
//! seat's byte changes the string, in the same call as the order hash and the
//! record). Redis against itself is then exact. Redis against the database
//! is not drift while the database is still catching up: an order whose
//! entry was in flight or dead-lettered during the stream walk, an order
//! whose stored state differs from Redis's (the reservation check decides
//! whether that is drift), or a sale that went on during the check.
//! Those are listed as catching up; everything else names the seat as drift.

use std::collections::{BTreeSet, HashMap, HashSet};

use anyhow::{Context, Result};
use redis::{Commands, ConnectionLike};
use serde::Serialize;

use crate::domain::orders::entry::OrderState;
use crate::domain::orders::{OrderStore, StoredSeat};
use crate::domain::reservations::records;
use crate::domain::seats::view::{SectionView, view_of};
use crate::model::layout::Layout;
use crate::model::seats::{BLOCKED, FREE, HELD, SOLD, Seating};

/// Seats named per item and list (the counts are always exact).
pub(crate) const MAX_NAMED_SEATS: usize = 1000;

/// Reads of one section before it is taken as moving (a sale in full swing).
const MAX_READS: usize = 5;

/// Records asked for per HMGET.
const RECORDS_PER_CALL: usize = 1000;

/// The seat-by-seat proof of one seat item.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct SeatCheck {
    /// Per section, Redis's counts beside what the orders say.
    pub(crate) sections: Vec<SectionSeats>,
    /// Seats whose Redis state, Redis orders and stored orders disagree.
    pub(crate) drift: Vec<SeatFinding>,
    /// Exact count of `drift`.
    pub(crate) drift_count: u64,
    /// Disagreements about orders the database has not caught up with yet
    /// (in flight, dead-lettered, a state change on its way, the sale went
    /// on during the check): not drift.
    pub(crate) catching_up: Vec<SeatFinding>,
    /// Exact count of `catching_up`.
    pub(crate) catching_up_count: u64,
}

/// One section as reconcile saw it.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct SectionSeats {
    pub(crate) section: String,
    /// Redis's state string, counted.
    pub(crate) free: u32,
    pub(crate) held: u32,
    pub(crate) sold: u32,
    pub(crate) blocked: u32,
    /// Seats of the open reservations in Redis (records `reserved`).
    pub(crate) held_by_open_reservations: u32,
    /// Seats of the orders Redis has paid or final on ok.
    pub(crate) sold_to_redis_orders: u32,
    /// Seats of the stored orders that are paid or final on ok.
    pub(crate) sold_in_database: u32,
    /// The section kept changing through every read: Redis against itself
    /// was not compared.
    pub(crate) moving: bool,
}

/// One seat that does not add up.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SeatFinding {
    /// `A-12-7` (or `section A` when the section itself is unreadable).
    pub(crate) seat: String,
    /// Its byte in Redis: `free`, `held`, `sold`, `blocked`.
    pub(crate) redis: String,
    /// The orders involved.
    pub(crate) orders: Vec<String>,
    /// What is wrong, in words.
    pub(crate) problem: String,
}

impl SeatFinding {
    /// `seat A-12-7: sold in Redis, in no stored order`.
    pub(crate) fn sentence(&self) -> String {
        format!("{}: {}", self.seat_name(), self.problem)
    }

    fn seat_name(&self) -> String {
        if self.seat.starts_with("section ") {
            self.seat.clone()
        } else {
            format!("seat {}", self.seat)
        }
    }
}

impl SeatCheck {
    fn push(&mut self, finding: SeatFinding, excused: bool) {
        let (list, count) = if excused {
            (&mut self.catching_up, &mut self.catching_up_count)
        } else {
            (&mut self.drift, &mut self.drift_count)
        };
        *count += 1;
        if list.len() < MAX_NAMED_SEATS {
            list.push(finding);
        }
    }
}

/// One section of Redis, read as one moment.
pub(crate) struct SectionRead {
    view: SectionView,
    /// Order id → (its seats' indexes as stored, its state in Redis).
    orders: Vec<(String, String, Option<OrderState>)>,
    moving: bool,
}

/// Every section of the item, each read until its state string is the same
/// before and after its orders and records.
pub(crate) fn read<C: ConnectionLike>(
    conn: &mut C,
    layout: &Layout,
    seating: &Seating,
) -> Result<Vec<SectionRead>> {
    let mut sections = Vec::with_capacity(seating.sections.len());
    for (i, section) in seating.sections.iter().enumerate() {
        let keys = layout.bucket(i as u32).keys;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let before: Option<Vec<u8>> = conn
                .get(&keys.seats)
                .with_context(|| format!("cannot read {}", keys.seats))?;
            let held: HashMap<String, String> = conn
                .hgetall(&keys.seat_orders)
                .with_context(|| format!("cannot read {}", keys.seat_orders))?;
            let mut held: Vec<(String, String)> = held.into_iter().collect();
            held.sort_unstable();
            let mut orders = Vec::with_capacity(held.len());
            for chunk in held.chunks(RECORDS_PER_CALL) {
                let ids: Vec<&str> = chunk.iter().map(|(id, _)| id.as_str()).collect();
                for ((id, indexes), record) in chunk.iter().zip(records(conn, &keys, &ids)?) {
                    // No record: the campaign has no payment_timeout, the
                    // order was final on ok.
                    let state = match record {
                        None => Some(OrderState::Confirmed),
                        Some(record) => OrderState::parse(&record.state),
                    };
                    orders.push((id.clone(), indexes.clone(), state));
                }
            }
            let after: Option<Vec<u8>> = conn
                .get(&keys.seats)
                .with_context(|| format!("cannot read {}", keys.seats))?;
            let moving = before != after;
            if !moving || attempt == MAX_READS {
                sections.push(SectionRead {
                    view: view_of(section, after.unwrap_or_default()),
                    orders,
                    moving,
                });
                break;
            }
        }
    }
    Ok(sections)
}

/// What the walk of the item's streams leaves for the seat proof.
pub(crate) struct Walked<'a> {
    /// Orders whose entry was in flight or dead-lettered during the walk.
    pub(crate) unsettled: &'a HashSet<String>,
    /// The streams moved during the check: the sale went on.
    pub(crate) sale_in_progress: bool,
    /// Each section's stock as of the snapshot (its free seats).
    pub(crate) stock: Vec<Option<i64>>,
}

/// A seat's holder: an order and its state.
type Holder = (String, OrderState);

/// Live: the order holds its seats (held or sold).
fn live(state: OrderState) -> bool {
    !state.released()
}

fn sells(state: OrderState) -> bool {
    matches!(state, OrderState::Paid | OrderState::Confirmed)
}

fn byte_name(byte: Option<u8>) -> &'static str {
    match byte {
        Some(FREE) => "free",
        Some(HELD) => "held",
        Some(SOLD) => "sold",
        Some(BLOCKED) => "blocked",
        _ => "unknown",
    }
}

fn ids(holders: &[&Holder]) -> Vec<String> {
    holders.iter().map(|(id, _)| id.clone()).collect()
}

fn listed(holders: &[&Holder]) -> String {
    holders
        .iter()
        .map(|(id, state)| format!("{id} ({})", state.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Compare the sections read with the seats the database stores.
pub(crate) fn check(
    store: &mut dyn OrderStore,
    campaign: &str,
    item: &str,
    seating: &Seating,
    read: Vec<SectionRead>,
    walked: &Walked,
) -> Result<SeatCheck> {
    let mut result = SeatCheck::default();
    // Redis: per section, per seat, its live holders; each order's state.
    let mut redis_state: HashMap<String, OrderState> = HashMap::new();
    let mut redis_holders: Vec<HashMap<u32, Vec<Holder>>> = Vec::with_capacity(read.len());
    for (i, section) in read.iter().enumerate() {
        let label = &seating.sections[i];
        let mut holders: HashMap<u32, Vec<Holder>> = HashMap::new();
        for (order_id, indexes, state) in &section.orders {
            let Some(state) = *state else {
                result.push(
                    SeatFinding {
                        seat: format!("section {}", label.id),
                        redis: String::new(),
                        orders: vec![order_id.clone()],
                        problem: format!(
                            "order {order_id} holds seats ({indexes}) but its reservation \
                             record is not readable"
                        ),
                    },
                    false,
                );
                continue;
            };
            redis_state.insert(order_id.clone(), state);
            for text in indexes.split(',') {
                match text.parse::<u32>() {
                    Ok(index) if index < label.seats() => {
                        if live(state) {
                            holders
                                .entry(index)
                                .or_default()
                                .push((order_id.clone(), state));
                        }
                    }
                    _ => result.push(
                        SeatFinding {
                            seat: format!("section {}", label.id),
                            redis: String::new(),
                            orders: vec![order_id.clone()],
                            problem: format!(
                                "order {order_id} names seat #{text:?} in Redis, not one of \
                                 the section's {} seats",
                                label.seats()
                            ),
                        },
                        false,
                    ),
                }
            }
        }
        redis_holders.push(holders);
    }
    // The database: per section, per seat, its live holders; each order's state.
    let mut stored_state: HashMap<String, OrderState> = HashMap::new();
    let mut stored_holders: Vec<HashMap<u32, Vec<Holder>>> = vec![HashMap::new(); read.len()];
    for StoredSeat {
        seat,
        order_id,
        state,
    } in store.item_seats(campaign, item)?
    {
        stored_state.insert(order_id.clone(), state);
        match seating.seat(&seat) {
            Ok(at) if at.section < read.len() => {
                if live(state) {
                    stored_holders[at.section]
                        .entry(at.index)
                        .or_default()
                        .push((order_id, state));
                }
            }
            Ok(_) | Err(_) => result.push(
                SeatFinding {
                    seat: seat.clone(),
                    redis: String::new(),
                    orders: vec![order_id.clone()],
                    problem: format!(
                        "stored for order {order_id}, but is not a seat of item {item}"
                    ),
                },
                false,
            ),
        }
    }
    // A stored order whose seats the database cannot be compared on yet.
    let catching_up = |order_id: &str| {
        walked.unsettled.contains(order_id)
            || matches!(
                (redis_state.get(order_id), stored_state.get(order_id)),
                (Some(r), Some(d)) if r != d
            )
    };
    let none: Vec<Holder> = Vec::new();
    for (i, section) in read.iter().enumerate() {
        let label = &seating.sections[i];
        let view = &section.view;
        let mut line = SectionSeats {
            section: label.id.clone(),
            free: view.free,
            held: view.held,
            sold: view.sold,
            blocked: view.blocked,
            moving: section.moving,
            ..SectionSeats::default()
        };
        // The stock is the section's free seats: a seat byte changed behind
        // the scripts' back leaves them apart.
        if let Some(Some(stock)) = walked.stock.get(i)
            && *stock != i64::from(view.free)
            && view.problem.is_none()
        {
            result.push(
                SeatFinding {
                    seat: format!("section {}", label.id),
                    redis: String::new(),
                    orders: Vec::new(),
                    problem: format!(
                        "its stock in Redis is {stock}, its seat map has {} free seats",
                        view.free
                    ),
                },
                walked.sale_in_progress || section.moving,
            );
        }
        if let Some(problem) = &view.problem {
            result.push(
                SeatFinding {
                    seat: format!("section {}", label.id),
                    redis: String::new(),
                    orders: Vec::new(),
                    problem: format!("its seat state in Redis {problem}"),
                },
                false,
            );
            result.sections.push(line);
            continue;
        }
        for index in 0..label.seats() {
            let byte = view.at(index);
            let in_redis: Vec<&Holder> = redis_holders[i]
                .get(&index)
                .unwrap_or(&none)
                .iter()
                .collect();
            let stored: Vec<&Holder> = stored_holders[i]
                .get(&index)
                .unwrap_or(&none)
                .iter()
                .collect();
            let stored_sold: Vec<&Holder> = stored.iter().copied().filter(|h| sells(h.1)).collect();
            line.held_by_open_reservations +=
                u32::from(in_redis.iter().any(|h| h.1 == OrderState::Reserved));
            line.sold_to_redis_orders += u32::from(in_redis.iter().any(|h| sells(h.1)));
            line.sold_in_database += u32::from(!stored_sold.is_empty());
            let mut own: Vec<String> = Vec::new();
            let mut against_database: Vec<String> = Vec::new();
            let mut involved: BTreeSet<String> = BTreeSet::new();
            involved.extend(ids(&in_redis));
            involved.extend(ids(&stored));
            // Redis against itself.
            if in_redis.len() > 1 {
                own.push(format!(
                    "in {} live orders in Redis: {}",
                    in_redis.len(),
                    listed(&in_redis)
                ));
            }
            match byte {
                Some(SOLD) if !in_redis.iter().any(|h| sells(h.1)) => {
                    own.push(match in_redis.first() {
                        Some(h) => {
                            format!("sold in Redis, but its order {} is {}", h.0, h.1.as_str())
                        }
                        None => "no order in Redis holds it".to_string(),
                    })
                }
                Some(HELD) if !in_redis.iter().any(|h| h.1 == OrderState::Reserved) => {
                    own.push(match in_redis.first() {
                        Some(h) => {
                            format!("held in Redis, but its order {} is {}", h.0, h.1.as_str())
                        }
                        None => "held in Redis, in no open reservation".to_string(),
                    })
                }
                Some(FREE) | Some(BLOCKED) if !in_redis.is_empty() => own.push(format!(
                    "{} in Redis, yet live in Redis order {}",
                    byte_name(byte),
                    listed(&in_redis)
                )),
                _ => {}
            }
            // Redis against the database.
            if stored.len() > 1 {
                against_database.push(format!(
                    "in {} live orders in the database: {}",
                    stored.len(),
                    listed(&stored)
                ));
            }
            match byte {
                Some(SOLD) => {
                    let sold_to: Vec<&Holder> =
                        in_redis.iter().copied().filter(|h| sells(h.1)).collect();
                    if stored_sold.is_empty() {
                        against_database.push(match sold_to.first() {
                            Some(h) => format!("sold in Redis (order {}), in no stored order", h.0),
                            None => "sold in Redis, in no stored order".to_string(),
                        });
                    } else if let Some(h) = sold_to.first()
                        && !stored_sold.iter().any(|s| s.0 == h.0)
                    {
                        against_database.push(format!(
                            "sold in Redis to order {}, in the database to {}",
                            h.0,
                            listed(&stored_sold)
                        ));
                    }
                }
                _ if !stored_sold.is_empty() => against_database.push(format!(
                    "sold in the database ({}), {} in Redis",
                    listed(&stored_sold),
                    byte_name(byte)
                )),
                _ => {}
            }
            if own.is_empty() && against_database.is_empty() {
                continue;
            }
            // Redis's own story is exact unless the section never held still;
            // the database's may lag while an order it involves is on its way.
            let excused = if own.is_empty() {
                walked.sale_in_progress || section.moving || involved.iter().any(|o| catching_up(o))
            } else {
                section.moving
            };
            against_database.extend(own);
            result.push(
                SeatFinding {
                    seat: label.label(index),
                    redis: byte_name(byte).to_string(),
                    orders: involved.into_iter().collect(),
                    problem: against_database.join("; "),
                },
                excused,
            );
        }
        result.sections.push(line);
    }
    Ok(result)
}
