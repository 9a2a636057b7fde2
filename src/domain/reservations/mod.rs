//! Reservations (`payment_timeout` in the campaign): an `ok` holds the units
//! until the order is paid, or releases them when it is cancelled or its
//! deadline passes — each order ends `paid` or released, exactly once.
//!
//! Where the state lives: in the slot the order was sold from (the item's
//! hash tag; a bucket's once items are bucketed), next to the stock its units
//! came from:
//! * `…:reservations` hash: order id → record `"<state> <qty> <price_cents>
//!   <bought_at_ms> <deadline_ms> <changed_at_ms> <event_stream_id> <user>"`
//!   (the format is `lua/lib/record.lua`'s, [`Record`] its one Rust reading;
//!   written by the buy scripts, changed only by `lua/pay.lua` and
//!   `lua/release.lua`);
//! * `…:deadlines` zset: order id → deadline (ms), reserved orders only;
//! * counters in `…:reservation_counts` (not `meta`: the buyer role must not write
//!   `meta`, see docs/security.md): `reserved_`, `paid_`, `expired_`, `cancelled_`
//!   `orders` / `units`.
//!
//! Every state change is one script that re-checks the record (and, for
//! expiry, the deadline against Redis `TIME`) before writing, and appends an
//! event to the item's order stream in the same step, so the database learns
//! of it through `consume` like any order. Released units return to the
//! stock key of the slot holding the record — the slot the order was sold
//! from, never recomputed. Key-expiry notifications play no part: the
//! deadline list is read by `seckill expire` on the Redis clock.
//!
//! Which slot holds an order: order ids are unique, so `pay`/`cancel` look
//! the id up (HEXISTS) in the slots of `--item`, or of every item when none
//! is given, and run the script in the one slot that has it.
//!
//! May import: domain::orders, domain::item, redis_client, model, util.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};
use redis::{Commands, ConnectionLike};
use serde::Serialize;

use crate::domain::item::SaleItem;
use crate::model::campaign::{Campaign, Item, is_valid_id};
use crate::model::error::usage;
use crate::model::keys::ItemKeys;
use crate::redis_client::conn::{Conn, RedisTarget};
use crate::redis_client::failure;
use crate::redis_client::scripts::ScriptCall;
use crate::redis_client::scripts::pay::{self, Pay};
use crate::redis_client::scripts::release::{self, ExpireBatch, Release};
use crate::util::log;
use crate::util::retry::Reconnecting;

pub(crate) use crate::redis_client::scripts::pay::{OrderOutcome, OrderReply};

/// Longest `--reason` kept with a cancellation.
pub(crate) const MAX_REASON_BYTES: usize = 255;

/// A reservation record: the one Rust reading and writing of the format
/// `lua/lib/record.lua` owns on the Lua side (module doc), with the same
/// integer rule (`lua/lib/strict_int.lua`: digits, no leading zero, at most 2^53).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Record {
    pub state: String,
    pub(crate) qty: i64,
    pub(crate) price_cents: i64,
    pub(crate) bought_at_ms: i64,
    pub deadline_ms: i64,
    pub changed_at_ms: i64,
    /// The order stream entry that announced `state`.
    pub(crate) event_stream_id: String,
    pub(crate) user: String,
}

/// The states a record can be in, as the scripts write them.
const STATES: [&str; 4] = ["reserved", "paid", "expired", "cancelled"];

/// A non-negative number as the scripts accept it (`lua/lib/strict_int.lua`).
fn strict_number(part: &str) -> Option<i64> {
    let digits_only = !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    let leading_zero = part.len() > 1 && part.starts_with('0');
    let value: i64 = part.parse().ok()?;
    (digits_only && !leading_zero && value <= 1 << 53).then_some(value)
}

impl Record {
    /// Parse a record; `None` when it is not one.
    pub fn parse(text: &str) -> Option<Record> {
        let mut parts = text.splitn(8, ' ');
        let mut next = || parts.next();
        let state = next()?.to_string();
        let record = Record {
            state,
            qty: strict_number(next()?)?,
            price_cents: strict_number(next()?)?,
            bought_at_ms: strict_number(next()?)?,
            deadline_ms: strict_number(next()?)?,
            changed_at_ms: strict_number(next()?)?,
            event_stream_id: next().filter(|id| !id.is_empty())?.to_string(),
            user: next()?.to_string(),
        };
        STATES.contains(&record.state.as_str()).then_some(record)
    }
}

impl std::fmt::Display for Record {
    /// The record's text, exactly as the scripts write it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} {} {} {} {} {} {}",
            self.state,
            self.qty,
            self.price_cents,
            self.bought_at_ms,
            self.deadline_ms,
            self.changed_at_ms,
            self.event_stream_id,
            self.user
        )
    }
}

/// One slot that can hold reservations: an item, or one bucket of a
/// bucketed item (`docs/buckets.md`).
#[derive(Debug, Clone)]
pub(crate) struct Slot<'a> {
    pub(crate) item: &'a Item,
    /// The item as Redis recorded it at preheat.
    pub(crate) sale: SaleItem<'a>,
    /// The bucket, for a bucketed item.
    pub(crate) bucket: Option<u32>,
    pub(crate) keys: ItemKeys,
}

/// Every slot of the selected items (`None`: all items of the campaign). A
/// bucketed item's buckets are those of the bucket count Redis recorded at
/// preheat (`bucket_count`), not the file's: orders live in the buckets they
/// were sold from, whatever the file says now.
pub(crate) fn slots<'a, C: ConnectionLike>(
    conn: &mut C,
    campaign: &'a Campaign,
    item: Option<&str>,
) -> Result<Vec<Slot<'a>>> {
    let mut slots = Vec::new();
    for from_file in SaleItem::select(campaign, item)? {
        let sale = from_file.recorded(conn)?;
        for bucket in sale.slots() {
            slots.push(Slot {
                item: sale.item,
                bucket: sale.bucket_of(&bucket),
                keys: bucket.keys,
                sale: sale.clone(),
            });
        }
    }
    Ok(slots)
}

/// Refuse an order id that cannot be one (it goes after a hash tag and into Lua).
pub(crate) fn check_order_id(order_id: &str) -> Result<()> {
    if !is_valid_id(order_id) {
        return Err(usage(format!(
            "--order {order_id:?} is not an order id (1..64 letters, digits, '-' or '_')"
        )));
    }
    Ok(())
}

/// The slot whose reservations hash has `order_id`, if any.
pub(crate) fn locate<'a, C: ConnectionLike>(
    conn: &mut C,
    slots: &'a [Slot<'a>],
    order_id: &str,
) -> Result<Option<&'a Slot<'a>>> {
    for slot in slots {
        let found: bool = conn
            .hexists(&slot.keys.reservations, order_id)
            .with_context(|| {
                format!(
                    "cannot look order {order_id} up in {}",
                    slot.keys.reservations
                )
            })?;
        if found {
            return Ok(Some(slot));
        }
    }
    Ok(None)
}

/// What `pay` or `cancel` did, and where.
#[derive(Debug, Clone, Serialize)]
pub struct OrderResult {
    pub(crate) order_id: String,
    /// The item holding the order (None when unknown).
    pub(crate) item: Option<String>,
    /// The bucket holding it (bucketed items): its units return there.
    pub(crate) bucket: Option<u32>,
    #[serde(flatten)]
    pub(crate) reply: OrderReply,
}

impl OrderResult {
    fn of(order_id: &str, slot: &Slot, reply: OrderReply) -> OrderResult {
        OrderResult {
            order_id: order_id.to_string(),
            item: Some(slot.item.id.clone()),
            bucket: slot.bucket,
            reply,
        }
    }

    fn unknown(order_id: &str) -> OrderResult {
        OrderResult {
            order_id: order_id.to_string(),
            item: None,
            bucket: None,
            reply: OrderReply {
                outcome: OrderOutcome::UnknownOrder,
                state: None,
                qty: 0,
                deadline_ms: 0,
                changed_at_ms: 0,
                user: None,
            },
        }
    }
}

/// Pay `order_id` (looked up in `item`'s slots, or every item's).
pub fn pay<C: ConnectionLike>(
    conn: &mut C,
    campaign: &Campaign,
    item: Option<&str>,
    order_id: &str,
) -> Result<OrderResult> {
    check_order_id(order_id)?;
    let slots = slots(conn, campaign, item)?;
    let Some(slot) = locate(conn, &slots, order_id)? else {
        return Ok(OrderResult::unknown(order_id));
    };
    let reply = pay_in(conn, campaign, slot, order_id)?;
    Ok(OrderResult::of(order_id, slot, reply))
}

/// Run the pay script for `order_id` in `slot`.
pub(crate) fn pay_in<C: ConnectionLike>(
    conn: &mut C,
    campaign: &Campaign,
    slot: &Slot,
    order_id: &str,
) -> Result<OrderReply> {
    let call = Pay {
        reservations: slot.keys.reservations.as_str(),
        deadlines: slot.keys.deadlines.as_str(),
        meta: slot.keys.meta.as_str(),
        orders: slot.keys.orders.as_str(),
        reservation_counts: slot.keys.reservation_counts.as_str(),
        seats: slot.sale.has_seats().then_some(slot.keys.seats.as_str()),
        seat_orders: slot
            .sale
            .has_seats()
            .then_some(slot.keys.seat_orders.as_str()),
        order_id,
        campaign: campaign.id.as_str(),
        item: slot.item.id.as_str(),
    };
    call.invoke(conn)
        .map_err(anyhow::Error::from)
        .and_then(|reply| pay::parse_reply(reply, true))
        .with_context(|| {
            format!(
                "pay script failed for order {order_id} (outcome unknown: paying again is safe)"
            )
        })
}

/// Cancel `order_id`: release its units if it is still reserved.
pub fn cancel<C: ConnectionLike>(
    conn: &mut C,
    campaign: &Campaign,
    item: Option<&str>,
    order_id: &str,
    reason: &str,
) -> Result<OrderResult> {
    check_order_id(order_id)?;
    if reason.len() > MAX_REASON_BYTES || reason.chars().any(char::is_control) {
        return Err(usage(format!(
            "--reason must be at most {MAX_REASON_BYTES} bytes without control characters"
        )));
    }
    let slots = slots(conn, campaign, item)?;
    let Some(slot) = locate(conn, &slots, order_id)? else {
        return Ok(OrderResult::unknown(order_id));
    };
    let call = release_call(campaign, slot, "cancel", order_id, reason, 1);
    let reply = call
        .invoke(conn)
        .map_err(anyhow::Error::from)
        .and_then(|reply| pay::parse_reply(reply, false))
        .with_context(|| {
            format!(
                "release script failed for order {order_id} (outcome unknown: cancelling again is safe)"
            )
        })?;
    if reply.outcome == OrderOutcome::Cancelled {
        // The release script cleared the sell-out proof in its own bucket;
        // `expire` heals the others each pass should this stop half-way.
        slot.sale.units_returned(conn)?;
    }
    Ok(OrderResult::of(order_id, slot, reply))
}

fn release_call<'a>(
    campaign: &'a Campaign,
    slot: &'a Slot,
    mode: &'a str,
    order_id: &'a str,
    reason: &'a str,
    limit: u64,
) -> Release<String> {
    Release {
        reservations: slot.keys.reservations.clone(),
        deadlines: slot.keys.deadlines.clone(),
        meta: slot.keys.meta.clone(),
        stock: slot.keys.stock.clone(),
        buyers: slot.keys.buyers.clone(),
        buyer_orders: slot.keys.buyer_orders.clone(),
        orders: slot.keys.orders.clone(),
        reservation_counts: slot.keys.reservation_counts.clone(),
        seats: slot.sale.has_seats().then(|| slot.keys.seats.clone()),
        seat_orders: slot.sale.has_seats().then(|| slot.keys.seat_orders.clone()),
        mode: mode.to_string(),
        order_id: order_id.to_string(),
        reason: reason.to_string(),
        limit: limit.to_string(),
        rebuy: if campaign.rebuy_after_release {
            "1"
        } else {
            "0"
        }
        .to_string(),
        campaign: campaign.id.clone(),
        item: slot.item.id.clone(),
    }
}

/// One expire call in one slot: up to `limit` due orders released.
pub(crate) fn expire_batch<C: ConnectionLike>(
    conn: &mut C,
    campaign: &Campaign,
    slot: &Slot,
    limit: u64,
) -> Result<ExpireBatch> {
    let call = release_call(campaign, slot, "expire", "", "", limit);
    call.invoke(conn)
        .map_err(anyhow::Error::from)
        .and_then(release::parse_expire_reply)
        .with_context(|| format!("release script (expire) failed on {}", slot.keys.base))
}

/// What one `expire` pass did to one item.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct ItemExpiry {
    pub(crate) item: String,
    /// Orders released.
    pub(crate) released: u64,
    /// Their units, back in stock.
    pub(crate) units: i64,
    /// Script calls made (each releases at most `--batch` orders).
    pub(crate) calls: u64,
    /// Orders due but not released because the item's stock key is gone.
    pub(crate) stuck: u64,
    /// Due orders whose record does not parse (named in the log).
    pub(crate) unreadable: Vec<String>,
    /// What stopped this item's releases in the last pass, naming the key: a
    /// value no wait can fix (a corrupt counter, a wrong type). The other
    /// items were released; this one waits for a repair.
    pub(crate) failed: Option<String>,
}

/// How `expire` runs.
#[derive(Debug, Clone)]
pub(crate) struct ExpireSettings {
    /// Orders released per script call.
    pub(crate) batch: u64,
}

/// The command name in log lines.
const EXPIRE: &str = "expire";

/// The connection `expire` works on: opened afresh after any failed call,
/// and waited for while Redis does not answer (a stall, a restart).
pub(crate) struct ExpireConn<'t> {
    inner: Reconnecting<Conn, Box<dyn FnMut() -> Result<Conn> + 't>>,
    /// Item → what stops its releases, as last logged: a loop says it once,
    /// not every pass, and says when it is over.
    said: BTreeMap<String, String>,
}

impl<'t> ExpireConn<'t> {
    /// `conn`, a working connection to `target`, and `target` to reconnect to.
    pub(crate) fn new(target: &'t RedisTarget, conn: Conn) -> ExpireConn<'t> {
        ExpireConn {
            inner: Reconnecting::new(Some(conn), Box::new(move || target.connect())),
            said: BTreeMap::new(),
        }
    }

    /// Log that `item`'s releases stop on `why`, unless the last pass said so.
    fn say_failed(&mut self, item: &str, what: &str, why: &str) {
        if self.said.get(item).map(String::as_str) != Some(why) {
            log::line(
                EXPIRE,
                format!(
                    "item {item}: {what}, a value no wait can fix (repair it; the other items go on): {why}"
                ),
            );
            self.said.insert(item.to_string(), why.to_string());
        }
    }

    /// After a pass: say which items' releases go on again.
    fn say_recovered(&mut self, totals: &[ItemExpiry]) {
        for total in totals.iter().filter(|t| t.failed.is_none()) {
            if self.said.remove(&total.item).is_some() {
                log::line(EXPIRE, format!("item {}: releases go on again", total.item));
            }
        }
    }

    /// Run `call` until it succeeds or fails for a reason no wait can fix
    /// (credentials, a corrupt value): `util::retry::Reconnecting::retry`.
    fn retry<T>(
        &mut self,
        what: &str,
        stop: &AtomicBool,
        call: impl FnMut(&mut Conn) -> Result<T>,
    ) -> Result<T> {
        self.inner.retry(
            EXPIRE,
            what,
            stop,
            failure::transient,
            failure::refused_for_credentials,
            call,
        )
    }
}

/// What to do with a failed step of a pass.
enum Failed {
    /// A value no wait can fix: name it, leave this item, go on with the others.
    SkipItem(String),
    /// Stopping (SIGINT/SIGTERM) while Redis did not answer: end the pass.
    Stop,
}

/// Sort a failed step: a refusal for credentials ends the command (its
/// error); a value no wait can fix skips the item; anything else only
/// reaches here once a stop was asked for.
fn failed(error: anyhow::Error, stop: &AtomicBool) -> Result<Failed> {
    if failure::refused_for_credentials(&error) {
        return Err(error);
    }
    if stop.load(Ordering::SeqCst) && failure::transient(&error) {
        return Ok(Failed::Stop);
    }
    Ok(Failed::SkipItem(crate::util::error_text::render(&error)))
}

/// One pass: release every due reservation of the campaign, each slot in
/// bounded batches until none is due. Redis errors that waiting may fix are
/// retried on a fresh connection with backoff (a lost reply is harmless: the
/// script re-checks everything, so a call repeated changes nothing twice);
/// a value no wait can fix leaves its item (`failed`, logged) and the pass
/// goes on with the others; a refusal for credentials ends it (its error).
pub(crate) fn expire(
    conn: &mut ExpireConn,
    campaign: &Campaign,
    settings: &ExpireSettings,
    stop: &AtomicBool,
) -> Result<Vec<ItemExpiry>> {
    let mut totals: Vec<ItemExpiry> = campaign
        .items
        .iter()
        .map(|item| ItemExpiry {
            item: item.id.clone(),
            ..ItemExpiry::default()
        })
        .collect();
    let slots = match conn.retry("reading where the campaign's orders are", stop, |conn| {
        slots(conn, campaign, None)
    }) {
        Ok(slots) => slots,
        Err(error) => {
            return match failed(error, stop)? {
                Failed::Stop => Ok(totals),
                Failed::SkipItem(why) => Err(anyhow::anyhow!(why)),
            };
        }
    };
    for slot in &slots {
        let total = totals
            .iter_mut()
            .find(|t| t.item == slot.item.id)
            .expect("every slot's item has a total");
        if total.failed.is_some() {
            continue;
        }
        loop {
            if stop.load(Ordering::SeqCst) {
                return Ok(totals);
            }
            let what = format!("releasing due reservations of {}", slot.keys.base);
            let batch = match conn.retry(&what, stop, |conn| {
                expire_batch(conn, campaign, slot, settings.batch)
            }) {
                Ok(batch) => batch,
                Err(error) => match failed(error, stop)? {
                    Failed::Stop => return Ok(totals),
                    Failed::SkipItem(why) => {
                        conn.say_failed(&slot.item.id, "due reservations NOT released", &why);
                        total.failed = Some(why);
                        break;
                    }
                },
            };
            total.calls += 1;
            total.released += batch.released;
            total.units += batch.units;
            if !batch.unreadable.is_empty() {
                log::line(
                    EXPIRE,
                    format!(
                        "{}: {} due reservation(s) whose record does not parse, taken off the deadline list (inspect them): {}",
                        slot.keys.reservations,
                        batch.unreadable.len(),
                        batch.unreadable.join(" ")
                    ),
                );
                total.unreadable.extend(batch.unreadable);
            }
            if batch.due_left == 0 {
                break;
            }
            if batch.released == 0 {
                // Due orders left but none released: the stock key is gone.
                total.stuck = batch.due_left;
                log::line(
                    EXPIRE,
                    format!(
                        "{}: {} due reservation(s) not released: no stock key {} (keys expired or deleted)",
                        slot.keys.base, batch.due_left, slot.keys.stock
                    ),
                );
                break;
            }
        }
    }
    heal_sell_out_proofs(conn, &slots, &mut totals, stop)?;
    conn.say_recovered(&totals);
    Ok(totals)
}

/// An item proven sold out while units are back in some slot (a release
/// raced the prover, or a `cancel` died before reopening every bucket):
/// clear the proof, so every shopper sweeps again.
fn heal_sell_out_proofs(
    conn: &mut ExpireConn,
    slots: &[Slot],
    totals: &mut [ItemExpiry],
    stop: &AtomicBool,
) -> Result<()> {
    let mut items: Vec<&SaleItem> = slots.iter().map(|s| &s.sale).collect();
    items.dedup_by(|a, b| a.id() == b.id());
    for sale in items {
        let what = format!("checking the sell-out proof of item {}", sale.id());
        match conn.retry(&what, stop, |conn| sale.heal_sell_out_proof(conn)) {
            Ok(Some(stock)) => log::line(
                EXPIRE,
                format!(
                    "item {}: {stock} unit(s) back in stock: clearing its proven sell-out",
                    sale.id()
                ),
            ),
            Ok(None) => {}
            Err(error) => match failed(error, stop)? {
                Failed::Stop => return Ok(()),
                Failed::SkipItem(why) => {
                    if let Some(total) = totals.iter_mut().find(|t| t.item == sale.id()) {
                        if total.failed.is_none() {
                            conn.say_failed(sale.id(), "sell-out proof NOT checked", &why);
                        }
                        total.failed.get_or_insert(why);
                    }
                }
            },
        }
    }
    Ok(())
}

/// Reservation counters of one slot (from `…:reservation_counts`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Totals {
    pub(crate) reserved_orders: i64,
    pub(crate) reserved_units: i64,
    pub(crate) paid_orders: i64,
    pub(crate) paid_units: i64,
    pub(crate) expired_orders: i64,
    pub(crate) expired_units: i64,
    pub(crate) cancelled_orders: i64,
    pub(crate) cancelled_units: i64,
}

impl Totals {
    /// Units given back to stock (expired + cancelled).
    pub(crate) fn released_units(&self) -> i64 {
        self.expired_units + self.cancelled_units
    }

    /// Orders released (expired + cancelled).
    pub(crate) fn released_orders(&self) -> i64 {
        self.expired_orders + self.cancelled_orders
    }

    /// Add another slot's counters.
    pub(crate) fn add(&mut self, other: &Totals) {
        self.reserved_orders += other.reserved_orders;
        self.reserved_units += other.reserved_units;
        self.paid_orders += other.paid_orders;
        self.paid_units += other.paid_units;
        self.expired_orders += other.expired_orders;
        self.expired_units += other.expired_units;
        self.cancelled_orders += other.cancelled_orders;
        self.cancelled_units += other.cancelled_units;
    }
}

/// Read one slot's reservation counters.
pub(crate) fn totals<C: ConnectionLike>(conn: &mut C, keys: &ItemKeys) -> Result<Totals> {
    let values: Vec<Option<i64>> = redis::cmd("HMGET")
        .arg(&keys.reservation_counts)
        .arg(&[
            "reserved_orders",
            "reserved_units",
            "paid_orders",
            "paid_units",
            "expired_orders",
            "expired_units",
            "cancelled_orders",
            "cancelled_units",
        ])
        .query(conn)
        .with_context(|| {
            format!(
                "cannot read the reservation counters in {}",
                keys.reservation_counts
            )
        })?;
    let v = |i: usize| values.get(i).copied().flatten().unwrap_or(0);
    Ok(Totals {
        reserved_orders: v(0),
        reserved_units: v(1),
        paid_orders: v(2),
        paid_units: v(3),
        expired_orders: v(4),
        expired_units: v(5),
        cancelled_orders: v(6),
        cancelled_units: v(7),
    })
}

/// The records of `order_ids` in one slot (None: no record, or not one).
pub(crate) fn records<C: ConnectionLike>(
    conn: &mut C,
    keys: &ItemKeys,
    order_ids: &[&str],
) -> Result<Vec<Option<Record>>> {
    if order_ids.is_empty() {
        return Ok(Vec::new());
    }
    let raw: Vec<Option<String>> = redis::cmd("HMGET")
        .arg(&keys.reservations)
        .arg(order_ids)
        .query(conn)
        .with_context(|| format!("cannot read reservation records in {}", keys.reservations))?;
    Ok(raw
        .into_iter()
        .map(|r| r.as_deref().and_then(Record::parse))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_parse_with_spaces_in_the_user() {
        let text = "paid 2 149900 1700000000000 1700000900000 1700000100000 17-0 a b c";
        let record = Record::parse(text).unwrap();
        assert_eq!(record.state, "paid");
        assert_eq!(record.qty, 2);
        assert_eq!(record.user, "a b c");
        assert_eq!(record.event_stream_id, "17-0");
        assert_eq!(record.to_string(), text, "written as read");
        assert!(Record::parse("odd 1 1 1 1 1 1-0 u").is_none());
        assert!(Record::parse("reserved x 1 1 1 1 1-0 u").is_none());
    }

    /// The integer rule of `lua/lib/strict_int.lua`, which 2^53 + 1 breaks
    /// (a Lua double cannot hold it): the Rust reading agrees with the scripts.
    #[test]
    fn records_follow_the_scripts_integer_rule() {
        let with_deadline = |deadline: &str| format!("reserved 1 1 1 {deadline} 1 1-0 u");
        assert!(Record::parse(&with_deadline("9007199254740992")).is_some());
        for bad in ["9007199254740993", "05", "-1", "+1", "1.5", ""] {
            assert!(
                Record::parse(&with_deadline(bad)).is_none(),
                "{bad:?} was accepted"
            );
        }
    }
}
