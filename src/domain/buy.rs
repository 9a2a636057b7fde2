//! One purchase attempt through `lua/buy.lua`: the library side of `seckill buy`.

use anyhow::{Context, Result};
use redis::ConnectionLike;

use crate::model::keys::ItemKeys;
use crate::redis_client::scripts::ScriptCall;
pub use crate::redis_client::scripts::buy::{BuyReply, Outcome, parse_reply};

/// One attempt's parameters.
#[derive(Debug, Clone)]
pub struct BuyRequest<'a> {
    pub campaign: &'a str,
    pub item: &'a str,
    pub user: &'a str,
    pub qty: u32,
    /// Same id on a retry ⇒ same outcome and order id, nothing bought twice.
    pub request_id: Option<&'a str>,
}

/// A fresh, time-sortable order id.
pub fn new_order_id() -> String {
    ulid::Ulid::generate().to_string()
}

/// Run the buy script once; an `ok` is final (no `payment_timeout`).
pub fn buy<C: ConnectionLike>(
    conn: &mut C,
    keys: &ItemKeys,
    request: &BuyRequest,
) -> Result<BuyReply> {
    reserve(conn, keys, request, 0)
}

/// Run the buy script once; with `payment_timeout_ms` > 0 an `ok` is a
/// reservation due that long after the purchase (Redis time), see `reservations`.
pub fn reserve<C: ConnectionLike>(
    conn: &mut C,
    keys: &ItemKeys,
    request: &BuyRequest,
    payment_timeout_ms: u64,
) -> Result<BuyReply> {
    let order_id = new_order_id();
    let call = crate::redis_client::scripts::buy::Buy {
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
        order_id,
        campaign: request.campaign.to_string(),
        item: request.item.to_string(),
        reservations: keys.reservations.clone(),
        deadlines: keys.deadlines.clone(),
        reservation_counts: keys.reservation_counts.clone(),
        payment_timeout_ms: payment_timeout_ms.to_string(),
    };
    let reply = call.invoke(conn).with_context(|| {
        format!(
            "buy script failed for item {} user {}",
            request.item, request.user
        )
    })?;
    parse_reply(reply)
}
