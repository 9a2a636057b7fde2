//! "Did I get it?": a user's result for one item, read in the slot their
//! orders live in (a bucketed item: the home bucket), in one read-only
//! script — what the shop's front door answers a shopper, no database.
//!
//! May import: domain::reservations, redis_client, model.

use anyhow::{Context, Result};
use redis::ConnectionLike;

use crate::domain::reservations::Record;
use crate::model::keys::ItemKeys;
use crate::redis_client::scripts::ScriptCall;
use crate::redis_client::scripts::order_lookup::{self, OrderLookup};

/// A user's result in one slot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Looked {
    pub(crate) units: i64,
    pub(crate) latest_order_id: Option<String>,
    pub(crate) request_order_id: Option<String>,
    /// `confirmed`, or the reservation's state.
    pub(crate) state: Option<String>,
    pub(crate) deadline_ms: Option<i64>,
}

/// Look `user` (and, when given, their `request_id`) up in `keys`' slot.
pub(crate) fn look_up<C: ConnectionLike>(
    conn: &mut C,
    keys: &ItemKeys,
    user: &str,
    request_id: Option<&str>,
) -> Result<Looked> {
    let call = OrderLookup {
        buyers: keys.buyers.as_str(),
        buyer_orders: keys.buyer_orders.as_str(),
        requests: keys.requests.as_str(),
        reservations: keys.reservations.as_str(),
        user,
        request_id: request_id.unwrap_or(""),
    };
    let found = call
        .invoke(conn)
        .map_err(anyhow::Error::from)
        .and_then(order_lookup::parse_reply)
        .with_context(|| format!("cannot look user {user:?} up in {}", keys.base))?;
    let record = found.record.as_deref().and_then(Record::parse);
    let bought = found.latest_order_id.is_some();
    Ok(Looked {
        units: found.units,
        state: match &record {
            Some(record) => Some(record.state.clone()),
            None if bought => Some("confirmed".to_string()),
            None => None,
        },
        deadline_ms: record.as_ref().map(|r| r.deadline_ms),
        latest_order_id: found.latest_order_id,
        request_order_id: found.request_order_id,
    })
}
