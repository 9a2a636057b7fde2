//! `lua/order_lookup.lua`: a user's result for one item in one read-only
//! step (serve's `GET /v1/items/{item}/orders/{user}`). Its call and reply.

use anyhow::Result;
use redis::Value;

super::script_call! {
    /// Look one user up: KEYS then ARGV of `lua/order_lookup.lua`.
    OrderLookup = "order_lookup.lua", Sale;
    roles { buyer, operator }
    keys { buyers, buyer_orders, requests, reservations }
    argv { user, request_id }
}

/// What the lookup found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    /// Units the user holds (0: none; an unreadable value counts as 0).
    pub units: i64,
    pub latest_order_id: Option<String>,
    /// The order of the request id asked about, when it bought.
    pub request_order_id: Option<String>,
    /// The latest order's reservation record, on a reservation campaign.
    pub record: Option<String>,
}

/// Parse `{units, latest_order_id, request_order_id, record}`.
pub(crate) fn parse_reply(reply: Value) -> Result<Found> {
    let (units, latest, requested, record): (String, String, String, String) =
        redis::from_redis_value(reply)?;
    let some = |text: String| (!text.is_empty()).then_some(text);
    Ok(Found {
        units: units.parse().unwrap_or(0),
        latest_order_id: some(latest),
        request_order_id: some(requested),
        record: some(record),
    })
}
