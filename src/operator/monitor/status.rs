//! A live sale's state, read only: what `seckill status` shows and what the
//! Prometheus metrics export.
//!
//! One script call per item (`lua/item_status.lua`) reads stock, window,
//! kill switch, order stream, consumer group, dead letters and key expiry at
//! one instant on the Redis clock; one `XINFO CONSUMERS` lists the group's
//! consumers; one pipelined read adds what the script does not read — the
//! units a recovery carried over (`preheat --recover` writes them into the
//! meta hash) and, for a reservation campaign, the reservations past their
//! payment deadline that nothing released yet. A status costs three round
//! trips per item (per bucket of a bucketed item; up to five on a cluster,
//! whose connection pipelines nothing), never writes and never scans the
//! keyspace.
//!
//! The sales rate comes from the order stream: the growth of its
//! `entries-added` counter between two samples, over the Redis time between
//! them (`--watch` samples anyway; a single `status` samples twice, a second
//! apart). The script reads no entry, so its cost does not grow with a busy
//! stream — counting the entries of the last interval did: 22–36 ms of
//! Redis time per call for 5,000 entries (measured), a stall no live sale
//! should pay for a look.

use std::collections::HashMap;

use anyhow::{Context, Result};
use redis::ConnectionLike;
use serde::Serialize;

use crate::domain::item::SaleItem;
use crate::domain::item::shape::Shape;
use crate::domain::orders::claimer::{GroupConsumer, group_consumers, sort_consumers};
use crate::domain::recovery::{CARRIED_ORDERS_FIELD, CARRIED_UNITS_FIELD};
use crate::domain::reservations::Totals;
use crate::domain::seats::view::{self, SectionView};
use crate::model::keys::{ItemKeys, ORDER_GROUP};
use crate::redis_client::scripts::ScriptCall;
use crate::redis_client::scripts::item_status::ReadItemStatus;
use crate::util::text;

/// Where the sale window of an item stands, on the Redis clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WindowState {
    /// No metadata in Redis: never preheated, or its keys expired.
    NotPreheated,
    /// `starts_at` is still ahead.
    NotStarted,
    /// Between `starts_at` and `ends_at` (buys go through unless the kill switch is on).
    Open,
    /// `ends_at` has passed.
    Ended,
}

impl WindowState {
    /// The window at `now_ms` for a preheated item with these bounds.
    pub(crate) fn at(
        now_ms: i64,
        starts_at_ms: Option<i64>,
        ends_at_ms: Option<i64>,
    ) -> WindowState {
        if starts_at_ms.is_some_and(|s| now_ms < s) {
            WindowState::NotStarted
        } else if ends_at_ms.is_some_and(|e| now_ms >= e) {
            WindowState::Ended
        } else {
            WindowState::Open
        }
    }
}

/// The sale window of one item as Redis has it (the buy script's view).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Window {
    pub(crate) state: WindowState,
    pub(crate) starts_at_ms: Option<i64>,
    pub(crate) ends_at_ms: Option<i64>,
    /// Milliseconds until the window opens (state `not_started`).
    pub(crate) opens_in_ms: Option<i64>,
    /// Milliseconds until it closes (state `open` with an end).
    pub(crate) closes_in_ms: Option<i64>,
    /// Milliseconds since it closed (state `ended`).
    pub(crate) ended_ms_ago: Option<i64>,
}

impl Window {
    /// "not started — opens in 2h 13m", "open — closes in 41m", "ended 5m ago".
    pub(crate) fn describe(&self) -> String {
        match self.state {
            WindowState::NotPreheated => "not preheated".to_string(),
            WindowState::NotStarted => format!(
                "not started — opens in {}",
                text::human_duration_ms(self.opens_in_ms.unwrap_or(0))
            ),
            WindowState::Open => match self.closes_in_ms {
                Some(ms) => format!("open — closes in {}", text::human_duration_ms(ms)),
                None => "open (no end)".to_string(),
            },
            WindowState::Ended => format!(
                "ended {} ago",
                text::human_duration_ms(self.ended_ms_ago.unwrap_or(0))
            ),
        }
    }
}

/// The kill switch of one item.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Switch {
    /// True when every buy is refused with `closed`.
    pub(crate) on: bool,
    pub(crate) reason: Option<String>,
    pub(crate) switched_at_ms: Option<i64>,
    pub(crate) switched_by: Option<String>,
}

/// The order stream and its consumer group.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct StreamStatus {
    /// Entries in the order stream (orders not yet deleted; consumed ones stay).
    pub(crate) length: i64,
    /// Entries ever appended (Redis' `entries-added`).
    pub(crate) entries_added: i64,
    /// Whether the `orders-db` consumer group exists.
    pub(crate) group_exists: bool,
    /// Delivered to a consumer, not yet acknowledged (stored and acked).
    pub(crate) pending: i64,
    /// Never delivered to any consumer yet; `None` when Redis cannot tell.
    pub(crate) lag: Option<i64>,
    pub(crate) last_delivered_id: Option<String>,
}

/// Orders `preheat --recover` carried over (docs/orders.md, "When Redis
/// lost its data"): stored before the loss, their units not loaded again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub(crate) struct CarriedOver {
    pub(crate) orders: i64,
    pub(crate) units: i64,
}

/// Reservations past their payment deadline, not released yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Overdue {
    /// How many.
    pub(crate) orders: i64,
    /// How long ago the oldest deadline passed (Redis clock), ms; `None` when none is overdue.
    pub(crate) oldest_ms: Option<i64>,
}

impl Overdue {
    /// Two buckets' figures together.
    fn add(self, other: Overdue) -> Overdue {
        Overdue {
            orders: self.orders + other.orders,
            oldest_ms: match (self.oldest_ms, other.oldest_ms) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            },
        }
    }
}

/// Consumers of several streams (a bucketed item's) merged by name.
fn merge_consumers<'a>(lists: impl Iterator<Item = &'a [GroupConsumer]>) -> Vec<GroupConsumer> {
    let mut merged: Vec<GroupConsumer> = Vec::new();
    for consumer in lists.flatten() {
        match merged.iter_mut().find(|m| m.name == consumer.name) {
            Some(m) => {
                m.pending += consumer.pending;
                m.idle_ms = m.idle_ms.min(consumer.idle_ms);
            }
            None => merged.push(consumer.clone()),
        }
    }
    sort_consumers(&mut merged);
    merged
}

/// Everything `status` knows about one item at one instant.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ItemStatus {
    pub(crate) item: String,
    /// Name as preheated into Redis (the file's name when not preheated).
    pub(crate) name: String,
    /// Redis server time of this sample (Unix ms).
    pub(crate) redis_time_ms: i64,
    pub(crate) preheated: bool,
    /// The item's whole stock: what preheat loaded plus what a recovery
    /// carried over (the campaign file's stock, once recovered).
    pub(crate) initial_stock: Option<i64>,
    pub(crate) stock_left: Option<i64>,
    /// Units sold: initial stock minus stock left (the carried-over units included).
    pub(crate) sold: Option<i64>,
    /// What `preheat --recover` carried over: orders stored in the database
    /// before Redis lost its data, whose units were not loaded again
    /// (zero when the item was never recovered).
    pub(crate) carried_over: CarriedOver,
    /// Distinct users who bought.
    pub(crate) buyers: i64,
    /// Orders per second over `rate_interval_ms` (entries added to the order
    /// stream between the previous sample and this one); `None` on a first sample.
    pub(crate) rate_per_s: Option<f64>,
    pub(crate) rate_interval_ms: i64,
    pub(crate) window: Window,
    pub(crate) kill_switch: Switch,
    pub(crate) stream: StreamStatus,
    /// Entries `pending-claim` moved to the dead-letter stream (fewer again
    /// once `dead-letter redrive` removes them).
    pub(crate) dead_letter: i64,
    /// The consumers of the order group (`XINFO CONSUMERS`): a bucketed
    /// item's streams merged by name (pending summed, the least idle kept).
    pub(crate) consumers: Vec<GroupConsumer>,
    /// Milliseconds until the item's keys expire (`None`: no expiry or no keys).
    /// The nightly `reconcile` must run before that.
    pub(crate) expires_in_ms: Option<i64>,
    /// Reservations (`payment_timeout`): orders and units reserved, paid,
    /// expired and cancelled, from the counters the scripts keep in `reservation_counts`.
    pub(crate) reservations: Totals,
    /// Reservations whose payment deadline passed and that nothing released
    /// yet (`seckill expire` releases them): their units stay held. `None`:
    /// the campaign has no `payment_timeout`.
    pub(crate) overdue: Option<Overdue>,
    /// A bucketed item: each bucket's own status, in bucket order (the fields
    /// above are their sum; window and switch text come from bucket 0, `on`
    /// only when every bucket is closed).
    #[serde(rename = "buckets", skip_serializing_if = "Vec::is_empty")]
    pub(crate) slots: Vec<ItemStatus>,
    /// The item's waiting room, when it has one (`room`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) room: Option<super::room::RoomView>,
    /// Fenced after a failover or restart (docs/failover.md, "The fence"):
    /// which process preheat loaded the stock on and which one holds it now.
    /// Read by `status` only (not `--watch`, not the metrics).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) fenced: Option<String>,
    /// A seat item (docs/seats.md): each section's seats by state, in file
    /// order (its slots are the `buckets` above, one per section).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) sections: Vec<SectionStatus>,
}

/// One section of a seat item: its seats counted by state. Every seat is
/// in exactly one state, so free + held + sold + blocked = seats once the
/// section is preheated (`problem` says why not otherwise).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct SectionStatus {
    pub(crate) section: String,
    pub(crate) tier: String,
    pub(crate) rows: u32,
    pub(crate) seats_per_row: u32,
    /// rows × seats_per_row.
    pub(crate) seats: u32,
    pub(crate) free: u32,
    pub(crate) held: u32,
    pub(crate) sold: u32,
    pub(crate) blocked: u32,
    /// Not preheated, or its state string is corrupt (what is wrong).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) problem: Option<String>,
}

impl SectionStatus {
    fn of(view: &SectionView) -> SectionStatus {
        let seats = view.rows * view.seats_per_row;
        let problem = match (&view.problem, view.state.is_empty()) {
            (Some(problem), _) => Some(problem.clone()),
            (None, true) => Some("not preheated (no seat state in Redis)".to_string()),
            (None, false) => None,
        };
        SectionStatus {
            section: view.section.clone(),
            tier: view.tier.clone(),
            rows: view.rows,
            seats_per_row: view.seats_per_row,
            seats,
            free: view.free,
            held: view.held,
            sold: view.sold,
            blocked: view.blocked,
            problem,
        }
    }
}

impl ItemStatus {
    /// One item's status from its buckets' (never empty).
    fn sum(parts: Vec<ItemStatus>) -> ItemStatus {
        let first = parts[0].clone();
        let add = |f: fn(&ItemStatus) -> Option<i64>| -> Option<i64> {
            parts
                .iter()
                .map(f)
                .try_fold(0i64, |sum, v| v.map(|v| sum + v))
        };
        let initial_stock = add(|p| p.initial_stock);
        let stock_left = add(|p| p.stock_left);
        ItemStatus {
            redis_time_ms: parts.iter().map(|p| p.redis_time_ms).max().unwrap_or(0),
            preheated: parts.iter().all(|p| p.preheated),
            initial_stock,
            stock_left,
            sold: initial_stock.zip(stock_left).map(|(i, s)| i - s),
            buyers: parts.iter().map(|p| p.buyers).sum(),
            rate_per_s: parts
                .iter()
                .map(|p| p.rate_per_s)
                .try_fold(0.0, |sum, r| r.map(|r| sum + r)),
            kill_switch: Switch {
                on: parts.iter().all(|p| p.kill_switch.on),
                ..first.kill_switch.clone()
            },
            stream: StreamStatus {
                length: parts.iter().map(|p| p.stream.length).sum(),
                entries_added: parts.iter().map(|p| p.stream.entries_added).sum(),
                group_exists: parts.iter().all(|p| p.stream.group_exists),
                pending: parts.iter().map(|p| p.stream.pending).sum(),
                lag: add(|p| p.stream.lag),
                last_delivered_id: None,
            },
            dead_letter: parts.iter().map(|p| p.dead_letter).sum(),
            carried_over: CarriedOver {
                orders: parts.iter().map(|p| p.carried_over.orders).sum(),
                units: parts.iter().map(|p| p.carried_over.units).sum(),
            },
            overdue: parts.iter().filter_map(|p| p.overdue).reduce(Overdue::add),
            consumers: merge_consumers(parts.iter().map(|p| p.consumers.as_slice())),
            expires_in_ms: parts.iter().filter_map(|p| p.expires_in_ms).min(),
            reservations: parts.iter().fold(Totals::default(), |mut sum, p| {
                sum.add(&p.reservations);
                sum
            }),
            slots: parts,
            ..first
        }
    }
}

/// Reads item statuses and remembers the previous sample of each stream:
/// the rate is the stream's growth since then.
#[derive(Debug, Default)]
pub(crate) struct StatusReader {
    /// item key base → (redis time ms, entries added) of the previous sample.
    previous: HashMap<String, (i64, i64)>,
}

impl StatusReader {
    /// Read every item of `items`, one script call per slot.
    pub(crate) fn read_items<C: ConnectionLike>(
        &mut self,
        conn: &mut C,
        items: &[SaleItem],
    ) -> Result<Vec<ItemStatus>> {
        items
            .iter()
            .map(|item| self.read_item(conn, item))
            .collect()
    }

    /// Read one item, slot by slot (one script call each); an item of
    /// several slots (a bucketed item, docs/buckets.md) is summed, its slots
    /// kept as rows.
    pub(crate) fn read_item<C: ConnectionLike>(
        &mut self,
        conn: &mut C,
        item: &SaleItem,
    ) -> Result<ItemStatus> {
        let mut parts = item
            .slots()
            .iter()
            .map(|slot| {
                self.read(
                    conn,
                    &slot.keys,
                    item.id(),
                    &item.item.name,
                    item.campaign.payment_timeout.is_some(),
                )
            })
            .collect::<Result<Vec<_>>>()?;
        let mut status = if parts.len() == 1 {
            parts.remove(0)
        } else {
            ItemStatus::sum(parts)
        };
        // Redis holds what the recovery loaded; the item's stock and sales
        // include what it carried over (once, whatever the buckets).
        let carried = status.carried_over.units;
        if let (Some(loaded), Some(left)) = (status.initial_stock, status.stock_left) {
            status.initial_stock = Some(loaded + carried);
            status.sold = Some(loaded + carried - left);
        }
        status.room = super::room::read(conn, item)?;
        // One GET per section: a 50 × 40 section is a 2,000-byte string.
        if let Shape::Seated(layout, seating) = item.shape() {
            status.sections = view::read(conn, layout, seating)?
                .iter()
                .map(SectionStatus::of)
                .collect();
        }
        Ok(status)
    }

    /// Read one slot of an item. `name` is shown when Redis has none (not
    /// preheated); `reservations`: the campaign has a `payment_timeout`, so
    /// the slot's deadlines are read for overdue reservations.
    pub(crate) fn read<C: ConnectionLike>(
        &mut self,
        conn: &mut C,
        keys: &ItemKeys,
        item: &str,
        name: &str,
        reservations: bool,
    ) -> Result<ItemStatus> {
        let call = ReadItemStatus {
            meta: keys.meta.as_str(),
            stock: keys.stock.as_str(),
            buyers: keys.buyers.as_str(),
            orders: keys.orders.as_str(),
            dead: keys.dead.as_str(),
            reservation_counts: keys.reservation_counts.as_str(),
            group: ORDER_GROUP,
        };
        let reply: Vec<redis::Value> = call
            .invoke(conn)
            .map_err(anyhow::Error::from)
            .and_then(|v| Ok(redis::from_redis_value(v)?))
            .with_context(|| format!("cannot read the status of {}", keys.base))?;
        let raw = RawStatus::parse(&reply)
            .with_context(|| format!("item_status script gave an unexpected reply for {item}"))?;
        let (rate_per_s, rate_interval_ms) = match self.previous.get(&keys.base) {
            Some(&(then_ms, then_added)) if raw.now_ms > then_ms && raw.added >= then_added => {
                let elapsed = raw.now_ms - then_ms;
                let rate = (raw.added - then_added) as f64 * 1000.0 / elapsed as f64;
                (Some(rate), elapsed)
            }
            // A first sample; or the stream was rebuilt (init), the clock stepped: start over.
            _ => (None, 0),
        };
        self.previous
            .insert(keys.base.clone(), (raw.now_ms, raw.added));
        let consumers = if raw.group_exists {
            group_consumers(conn, &keys.orders)?
        } else {
            Vec::new()
        };
        let (carried_over, overdue) = read_beside(conn, keys, raw.now_ms, reservations)?;
        let mut status = raw.into_status(item, name, rate_per_s, rate_interval_ms, consumers);
        status.carried_over = carried_over;
        status.overdue = overdue;
        Ok(status)
    }
}

/// What the status script does not read, in one pipelined round trip (one
/// round trip each on a cluster connection, which pipelines nothing): the
/// recovery's carried-over figures from the meta hash and, with
/// `reservations`, the deadlines that passed before `now_ms` (Redis time).
/// Every command is a read the consumer role may send (docs/security.md).
fn read_beside<C: ConnectionLike>(
    conn: &mut C,
    keys: &ItemKeys,
    now_ms: i64,
    reservations: bool,
) -> Result<(CarriedOver, Option<Overdue>)> {
    let mut commands = vec![
        redis::cmd("HMGET")
            .arg(&keys.meta)
            .arg(CARRIED_ORDERS_FIELD)
            .arg(CARRIED_UNITS_FIELD)
            .to_owned(),
    ];
    let due = format!("({now_ms}");
    if reservations {
        commands.push(
            redis::cmd("ZCOUNT")
                .arg(&keys.deadlines)
                .arg("-inf")
                .arg(&due)
                .to_owned(),
        );
        commands.push(
            redis::cmd("ZRANGEBYSCORE")
                .arg(&keys.deadlines)
                .arg("-inf")
                .arg(&due)
                .arg("WITHSCORES")
                .arg("LIMIT")
                .arg(0)
                .arg(1)
                .to_owned(),
        );
    }
    let replies: Vec<redis::Value> = if conn.supports_pipelining() {
        let mut pipe = redis::pipe();
        for command in commands {
            pipe.add_command(command);
        }
        pipe.query(conn)
    } else {
        commands.iter().map(|command| command.query(conn)).collect()
    }
    .with_context(|| format!("cannot read {} and {}", keys.meta, keys.deadlines))?;
    let carried: Vec<Option<String>> = redis::from_redis_value_ref(&replies[0])?;
    let figure = |i: usize, field: &str| -> Result<i64> {
        carried[i]
            .as_deref()
            .map(|text| {
                text.parse::<i64>()
                    .with_context(|| format!("{} {field} = {text:?} is not a number", keys.meta))
            })
            .transpose()
            .map(|n| n.unwrap_or(0))
    };
    let carried_over = CarriedOver {
        orders: figure(0, CARRIED_ORDERS_FIELD)?,
        units: figure(1, CARRIED_UNITS_FIELD)?,
    };
    let overdue = if reservations {
        let orders: i64 = redis::from_redis_value_ref(&replies[1])?;
        let oldest: Vec<(String, f64)> = redis::from_redis_value_ref(&replies[2])?;
        Some(Overdue {
            orders,
            oldest_ms: oldest
                .first()
                .map(|(_, deadline)| now_ms - *deadline as i64),
        })
    } else {
        None
    };
    Ok((carried_over, overdue))
}

/// The script's reply, field by field (see the header of `lua/item_status.lua`).
struct RawStatus {
    now_ms: i64,
    initial_stock: Option<i64>,
    name: Option<String>,
    starts_at_ms: Option<i64>,
    ends_at_ms: Option<i64>,
    closed: bool,
    reason: Option<String>,
    switched_at_ms: Option<i64>,
    switched_by: Option<String>,
    stock: Option<i64>,
    buyers: i64,
    length: i64,
    added: i64,
    group_exists: bool,
    pending: i64,
    lag: i64,
    last_delivered: String,
    dead: i64,
    stock_ttl_ms: i64,
    meta_ttl_ms: i64,
    reservations: Totals,
}

impl RawStatus {
    fn parse(reply: &[redis::Value]) -> Result<RawStatus> {
        anyhow::ensure!(reply.len() == 28, "{} fields instead of 28", reply.len());
        let text = |i: usize| -> Result<Option<String>> {
            Ok(match &reply[i] {
                redis::Value::Nil => None,
                v => Some(redis::from_redis_value_ref::<String>(v)?),
            })
            .map(|s| s.filter(|s| !s.is_empty()))
        };
        // Numbers stored as text in the hash; an empty field means "none".
        let number = |i: usize| -> Result<Option<i64>> {
            text(i)?
                .map(|s| {
                    s.parse::<i64>()
                        .with_context(|| format!("field {} = {s:?}", i + 1))
                })
                .transpose()
        };
        let int = |i: usize| -> Result<i64> { Ok(redis::from_redis_value_ref::<i64>(&reply[i])?) };
        Ok(RawStatus {
            now_ms: int(0)?,
            initial_stock: number(1)?,
            name: text(2)?,
            starts_at_ms: number(3)?,
            ends_at_ms: number(4)?,
            closed: text(5)?.as_deref() == Some("1"),
            reason: text(6)?,
            switched_at_ms: number(7)?,
            switched_by: text(8)?,
            stock: number(9)?,
            buyers: int(10)?,
            length: int(11)?,
            added: int(12)?,
            group_exists: int(13)? == 1,
            pending: int(14)?,
            lag: int(15)?,
            last_delivered: text(16)?.unwrap_or_default(),
            dead: int(17)?,
            stock_ttl_ms: int(18)?,
            meta_ttl_ms: int(19)?,
            reservations: Totals {
                reserved_orders: number(20)?.unwrap_or(0),
                reserved_units: number(21)?.unwrap_or(0),
                paid_orders: number(22)?.unwrap_or(0),
                paid_units: number(23)?.unwrap_or(0),
                expired_orders: number(24)?.unwrap_or(0),
                expired_units: number(25)?.unwrap_or(0),
                cancelled_orders: number(26)?.unwrap_or(0),
                cancelled_units: number(27)?.unwrap_or(0),
            },
        })
    }

    fn into_status(
        self,
        item: &str,
        file_name: &str,
        rate_per_s: Option<f64>,
        rate_interval_ms: i64,
        consumers: Vec<GroupConsumer>,
    ) -> ItemStatus {
        let now = self.now_ms;
        let preheated = self.initial_stock.is_some();
        let state = if preheated {
            WindowState::at(now, self.starts_at_ms, self.ends_at_ms)
        } else {
            WindowState::NotPreheated
        };
        let window = Window {
            state,
            starts_at_ms: self.starts_at_ms,
            ends_at_ms: self.ends_at_ms,
            opens_in_ms: (state == WindowState::NotStarted)
                .then(|| self.starts_at_ms.map(|s| s - now))
                .flatten(),
            closes_in_ms: (state == WindowState::Open)
                .then(|| self.ends_at_ms.map(|e| e - now))
                .flatten(),
            ended_ms_ago: (state == WindowState::Ended)
                .then(|| self.ends_at_ms.map(|e| now - e))
                .flatten(),
        };
        // The earliest expiry of the keys that carry the sale (-1 none, -2 absent).
        let expires_in_ms = [self.stock_ttl_ms, self.meta_ttl_ms]
            .into_iter()
            .filter(|ttl| *ttl >= 0)
            .min();
        ItemStatus {
            item: item.to_string(),
            name: self.name.unwrap_or_else(|| file_name.to_string()),
            redis_time_ms: now,
            preheated,
            initial_stock: self.initial_stock,
            stock_left: self.stock,
            sold: self.initial_stock.zip(self.stock).map(|(i, s)| i - s),
            buyers: self.buyers,
            rate_per_s,
            rate_interval_ms,
            window,
            kill_switch: Switch {
                on: self.closed,
                reason: self.reason,
                switched_at_ms: self.switched_at_ms,
                switched_by: self.switched_by,
            },
            stream: StreamStatus {
                length: self.length,
                entries_added: self.added,
                group_exists: self.group_exists,
                pending: self.pending,
                lag: (self.lag >= 0).then_some(self.lag),
                last_delivered_id: (!self.last_delivered.is_empty()).then_some(self.last_delivered),
            },
            dead_letter: self.dead,
            carried_over: CarriedOver::default(),
            consumers,
            expires_in_ms,
            reservations: self.reservations,
            overdue: None,
            slots: Vec::new(),
            room: None,
            fenced: None,
            sections: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_state_follows_the_bounds() {
        assert_eq!(
            WindowState::at(5, Some(10), Some(20)),
            WindowState::NotStarted
        );
        assert_eq!(WindowState::at(10, Some(10), Some(20)), WindowState::Open);
        assert_eq!(WindowState::at(20, Some(10), Some(20)), WindowState::Ended);
        assert_eq!(WindowState::at(20, None, None), WindowState::Open);
    }
}
