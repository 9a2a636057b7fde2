//! `lua/release.lua`: release reservations exactly once — one named order
//! (`cancel`) or a bounded batch of due ones (`expire`). Its call and replies.

use anyhow::Result;
use redis::Value;

super::script_call! {
    /// Release reservations: KEYS then ARGV of `lua/release.lua`.
    Release = "release.lua", Sale;
    roles { operator }
    keys { reservations, deadlines, meta, stock, buyers, buyer_orders, orders, reservation_counts }
    optional { seats, seat_orders }
    argv { mode, order_id, reason, limit, rebuy, campaign, item }
}

/// What one expire call did in one slot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ExpireBatch {
    /// Orders released by this call.
    pub(crate) released: u64,
    /// Their units, back in stock.
    pub(crate) units: i64,
    /// Orders still due after the call.
    pub(crate) due_left: u64,
    /// Due order ids whose record does not parse (taken off the deadline list).
    pub(crate) unreadable: Vec<String>,
}

/// Parse the expire-mode reply `{released, units, due_left, unreadable}`.
pub(crate) fn parse_expire_reply(reply: Value) -> Result<ExpireBatch> {
    let (released, units, due_left, unreadable) = redis::from_redis_value(reply)?;
    Ok(ExpireBatch {
        released,
        units,
        due_left,
        unreadable,
    })
}
