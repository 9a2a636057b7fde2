//! One slot — one hash tag's keys: a plain item's, or one bucket's — and
//! what is done to it in one script call each: preheat, read, reset, flip
//! the kill switch, and a purchase attempt through `lua/buy.lua`. The item
//! layer (`domain::item`) runs these on every slot of an item.
//!
//! May import: domain::kill_switch, redis_client, model.

use anyhow::{Context, Result};
use redis::{Commands, ConnectionLike};
use serde::Serialize;

use crate::model::campaign::{Campaign, Item};
use crate::model::keys::{ItemKeys, ORDER_GROUP, RoomKeys};
use crate::redis_client::scripts::ScriptCall;
use crate::redis_client::scripts::buy::parse_reply;
pub use crate::redis_client::scripts::buy::{BuyReply, Outcome};
pub(crate) use crate::redis_client::scripts::item_state::ItemState;
use crate::redis_client::scripts::item_state::{self, ReadItemState};
pub(crate) use crate::redis_client::scripts::preheat::PreheatStatus;
use crate::redis_client::scripts::preheat::{self, Preheat};

/// How `preheat_item` treats stock already in Redis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreheatMode {
    /// Keep existing stock (the launch-day default).
    Load,
    /// Overwrite existing stock, unless the item already has sales.
    Force,
    /// Keep existing stock; update name, price, window, limits and expiry.
    UpdateMeta,
}

/// Result of preheating one item.
#[derive(Debug, Clone, Serialize)]
pub struct PreheatReport {
    /// The item id.
    pub(crate) item: String,
    /// The item's display name.
    pub(crate) name: String,
    /// What happened: loaded, kept, meta_updated, overwritten, or refused (has_sales, stock_missing).
    pub(crate) status: PreheatStatus,
    /// Stock in the file.
    pub(crate) file_stock: i64,
    /// Stock in Redis before, `None` when there was none.
    pub(crate) redis_stock_before: Option<i64>,
    /// Stock in Redis after (equal to before in a dry run).
    pub(crate) redis_stock_after: Option<i64>,
}

/// Load (or, with `dry_run`, only decide) one item's stock and metadata.
pub fn preheat_item<C: ConnectionLike>(
    conn: &mut C,
    keys: &ItemKeys,
    campaign: &Campaign,
    item: &Item,
    mode: PreheatMode,
    dry_run: bool,
) -> Result<PreheatReport> {
    let mode_name = match mode {
        PreheatMode::Load => "load",
        PreheatMode::Force => "force",
        PreheatMode::UpdateMeta => "meta",
    };
    let opt = |v: Option<i64>| v.map(|v| v.to_string()).unwrap_or_default();
    let call = Preheat {
        meta: keys.meta.clone(),
        stock: keys.stock.clone(),
        buyers: keys.buyers.clone(),
        orders: keys.orders.clone(),
        buyer_orders: keys.buyer_orders.clone(),
        requests: keys.requests.clone(),
        mode: (if dry_run { "dry" } else { mode_name }).to_string(),
        initial_stock: item.stock.to_string(),
        name: item.name.clone(),
        price_cents: item.price_cents.to_string(),
        starts_at_ms: opt(campaign.starts_at_ms),
        ends_at_ms: opt(campaign.ends_at_ms),
        per_user_limit: campaign.per_user_limit.to_string(),
        rate_window_ms: opt(campaign.rate_limit.map(|r| r.window.as_millis() as i64)),
        rate_max: campaign
            .rate_limit
            .map(|r| r.max_requests)
            .unwrap_or(0)
            .to_string(),
        expire_at_ms: opt(campaign.expire_at_ms()),
        group: ORDER_GROUP.to_string(),
        dry_mode: mode_name.to_string(),
        waiting_room: match &item.waiting_room {
            Some(room) if room.is_ticket() => "ticket",
            Some(_) => "1",
            None => "0",
        }
        .to_string(),
    };
    let reply = call
        .invoke(conn)
        .with_context(|| format!("preheat script failed for item {}", item.id))?;
    let reply = preheat::parse_reply(reply)
        .with_context(|| format!("preheat script failed for item {}", item.id))?;
    Ok(PreheatReport {
        item: item.id.clone(),
        name: item.name.clone(),
        status: reply.status,
        file_stock: item.stock,
        redis_stock_before: reply.before,
        redis_stock_after: reply.after,
    })
}

/// Read one item's state in one round trip.
pub fn item_state<C: ConnectionLike>(conn: &mut C, keys: &ItemKeys) -> Result<ItemState> {
    let call = ReadItemState {
        meta: keys.meta.as_str(),
        stock: keys.stock.as_str(),
        buyers: keys.buyers.as_str(),
        orders: keys.orders.as_str(),
    };
    call.invoke(conn)
        .map_err(anyhow::Error::from)
        .and_then(item_state::parse_reply)
        .with_context(|| format!("cannot read state of {}", keys.base))
}

/// Delete every key of one item: the fixed ones by name, per-user ones by SCAN
/// (never KEYS, which blocks Redis). Returns how many keys were deleted.
pub(crate) fn delete_item<C: ConnectionLike>(
    conn: &mut C,
    keys: &ItemKeys,
    scan_too: bool,
) -> Result<u64> {
    let mut deleted: u64 = conn
        .del(&keys.fixed()[..])
        .with_context(|| format!("cannot delete keys of {}", keys.base))?;
    if scan_too {
        let mut cursor: u64 = 0;
        loop {
            let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(keys.scan_pattern())
                .arg("COUNT")
                .arg(1000)
                .query(conn)
                .with_context(|| format!("cannot SCAN keys of {}", keys.base))?;
            if !batch.is_empty() {
                let n: u64 = conn.del(&batch).context("cannot delete scanned keys")?;
                deleted += n;
            }
            if next == 0 {
                break;
            }
            cursor = next;
        }
    }
    Ok(deleted)
}

/// Redis server time in Unix milliseconds (one clock for every client).
pub(crate) fn redis_now_ms<C: ConnectionLike>(conn: &mut C) -> Result<i64> {
    let (secs, micros): (i64, i64) = redis::cmd("TIME").query(conn).context("TIME failed")?;
    Ok(secs * 1000 + micros / 1000)
}

/// One attempt's parameters.
#[derive(Debug, Clone)]
pub struct BuyRequest<'a> {
    pub campaign: &'a str,
    pub item: &'a str,
    pub user: &'a str,
    pub qty: u32,
    /// Same id on a retry ⇒ same outcome and order id, nothing bought twice.
    pub request_id: Option<&'a str>,
    /// A ticket room: the shopper's verified ticket (`None`: no ticket).
    pub ticket: Option<TicketClaim>,
    /// A seat item: the seats asked for (`None`: the best block of `qty`).
    pub seats: Option<crate::model::seats::SeatAsk>,
}

impl BuyRequest<'_> {
    /// The buy scripts' `arrival_ms` ARGV: the ticket's arrival, "" without one.
    pub(crate) fn arrival_argv(&self) -> String {
        self.ticket
            .as_ref()
            .map_or(String::new(), |t| t.arrival_ms.to_string())
    }

    /// The buy scripts' `ticket_key` ARGV: the ticket's key id, "" without one.
    pub(crate) fn ticket_key_argv(&self) -> String {
        self.ticket
            .as_ref()
            .map_or(String::new(), |t| t.key_id.clone())
    }
}

/// What the buy script needs of a verified ticket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TicketClaim {
    /// Its arrival time (Unix ms, Redis clock).
    pub arrival_ms: i64,
    /// The id of the key that signed it (a revoked one is no ticket).
    pub key_id: String,
}

/// A fresh, time-sortable order id.
pub(crate) fn new_order_id() -> String {
    ulid::Ulid::generate().to_string()
}

/// Run the buy script once; with `payment_timeout_ms` > 0 an `ok` is a
/// reservation due that long after the purchase (Redis time), see
/// `reservations`. `room`: the item's waiting room keys, passed only for an
/// item that has one, so a sale without one sends the keys it always did.
pub(crate) fn reserve<C: ConnectionLike>(
    conn: &mut C,
    keys: &ItemKeys,
    request: &BuyRequest,
    payment_timeout_ms: u64,
    room: Option<&RoomKeys>,
) -> Result<BuyReply> {
    let reply = buy_call(keys, request, payment_timeout_ms, room)
        .invoke(conn)
        .with_context(|| buy_failed(request))?;
    parse_reply(reply)
}

/// [`reserve`] on an async connection (`seckill serve`'s shared one): the
/// same KEYS, ARGV and reply, only the wait for the reply differs.
pub(crate) async fn reserve_async<C: redis::aio::ConnectionLike + Send>(
    conn: &mut C,
    keys: &ItemKeys,
    request: &BuyRequest<'_>,
    payment_timeout_ms: u64,
    room: Option<&RoomKeys>,
) -> Result<BuyReply> {
    let reply = buy_call(keys, request, payment_timeout_ms, room)
        .invoke_async(conn)
        .await
        .with_context(|| buy_failed(request))?;
    parse_reply(reply)
}

fn buy_failed(request: &BuyRequest) -> String {
    format!(
        "buy script failed for item {} user {}",
        request.item, request.user
    )
}

/// The buy script's KEYS and ARGV for one attempt, with a new order id
/// (`room`: the waiting room's keys, only for an item that has one).
fn buy_call(
    keys: &ItemKeys,
    request: &BuyRequest,
    payment_timeout_ms: u64,
    room: Option<&RoomKeys>,
) -> crate::redis_client::scripts::buy::Buy<String> {
    let key = |pick: fn(&RoomKeys) -> &String| room.map(|r| pick(r).clone());
    crate::redis_client::scripts::buy::Buy {
        meta: keys.meta.clone(),
        stock: keys.stock.clone(),
        buyers: keys.buyers.clone(),
        buyer_orders: keys.buyer_orders.clone(),
        requests: keys.requests.clone(),
        orders: keys.orders.clone(),
        rate: keys.rate(request.user),
        user: request.user.to_string(),
        qty: request.qty.to_string(),
        request_id: request.request_id.unwrap_or("").to_string(),
        order_id: new_order_id(),
        campaign: request.campaign.to_string(),
        item: request.item.to_string(),
        reservations: keys.reservations.clone(),
        deadlines: keys.deadlines.clone(),
        reservation_counts: keys.reservation_counts.clone(),
        room: key(|r| &r.room),
        queue: key(|r| &r.queue),
        registered: key(|r| &r.registered),
        risk: key(|r| &r.risk),
        admitted: key(|r| &r.admitted),
        active: key(|r| &r.active),
        shuffled: key(|r| &r.shuffled),
        passes: key(|r| &r.passes),
        revoked: key(|r| &r.revoked),
        payment_timeout_ms: payment_timeout_ms.to_string(),
        arrival_ms: request.arrival_argv(),
        ticket_key: request.ticket_key_argv(),
        // Filled in by the connection (the fence, redis_client::node).
        node: crate::redis_client::node::NODE_PLACEHOLDER.to_string(),
    }
}
