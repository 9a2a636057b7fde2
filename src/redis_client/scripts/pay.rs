//! `lua/pay.lua`: mark one reserved order paid before its deadline. Its call,
//! outcomes and reply (shared with `lua/release.lua`'s cancel mode).

use anyhow::{Result, bail};
use redis::Value;
use serde::Serialize;

super::script_call! {
    /// Pay one order: KEYS then ARGV of `lua/pay.lua`.
    Pay = "pay.lua", Sale;
    roles { operator }
    keys { reservations, deadlines, meta, orders, reservation_counts }
    optional { seats, seat_orders }
    argv { order_id, campaign, item }
}

/// What `pay` or `cancel` decided about one order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum OrderOutcome {
    /// pay: the reservation is now paid.
    Paid,
    /// pay: it was paid before (nothing changed); cancel: it is paid, never released.
    AlreadyPaid,
    /// cancel: the reservation is now cancelled, its units back in stock.
    Cancelled,
    /// cancel: it was cancelled before (nothing changed).
    AlreadyCancelled,
    /// The deadline passed: released by `expire`, or about to be.
    Expired,
    /// pay: the order was cancelled (nothing changed).
    WasCancelled,
    /// No reservation with this id in the campaign (or the item given).
    UnknownOrder,
    /// The item's keys are gone (expired): nothing changed.
    NotPreheated,
}

impl OrderOutcome {
    /// Every outcome (the exit-code map's test reads it).
    #[cfg(test)]
    pub(crate) const ALL: [OrderOutcome; 8] = [
        OrderOutcome::Paid,
        OrderOutcome::AlreadyPaid,
        OrderOutcome::Cancelled,
        OrderOutcome::AlreadyCancelled,
        OrderOutcome::Expired,
        OrderOutcome::WasCancelled,
        OrderOutcome::UnknownOrder,
        OrderOutcome::NotPreheated,
    ];

    /// The exit code of `seckill pay` / `cancel` for this outcome.
    pub(crate) fn exit_code(self) -> i32 {
        crate::model::exit_codes::of_outcome(self.as_str())
    }

    /// The name in JSON and tables.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            OrderOutcome::Paid => "paid",
            OrderOutcome::AlreadyPaid => "already_paid",
            OrderOutcome::Cancelled => "cancelled",
            OrderOutcome::AlreadyCancelled => "already_cancelled",
            OrderOutcome::Expired => "expired",
            OrderOutcome::WasCancelled => "was_cancelled",
            OrderOutcome::UnknownOrder => "unknown_order",
            OrderOutcome::NotPreheated => "not_preheated",
        }
    }
}

/// The record of one reservation after a pay or cancel call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct OrderReply {
    pub(crate) outcome: OrderOutcome,
    /// `reserved`, `paid`, `expired` or `cancelled`; None for an unknown order.
    pub(crate) state: Option<String>,
    pub(crate) qty: i64,
    /// Payment deadline, Unix ms (Redis clock).
    pub(crate) deadline_ms: i64,
    /// When the order got its state, Unix ms (Redis clock).
    pub(crate) changed_at_ms: i64,
    pub(crate) user: Option<String>,
}

/// Parse `{outcome, state, qty, deadline_ms, changed_at_ms, user}`; `pay`
/// says `cancelled` for an order cancelled before, which is
/// [`OrderOutcome::WasCancelled`] here.
pub(crate) fn parse_reply(reply: Value, paying: bool) -> Result<OrderReply> {
    let (outcome, state, qty, deadline_ms, changed_at_ms, user): (
        String,
        String,
        i64,
        i64,
        i64,
        String,
    ) = redis::from_redis_value(reply)?;
    let outcome = match (outcome.as_str(), paying) {
        ("paid", true) => OrderOutcome::Paid,
        ("already_paid", true) | ("paid", false) => OrderOutcome::AlreadyPaid,
        ("cancelled", true) => OrderOutcome::WasCancelled,
        ("cancelled", false) => OrderOutcome::Cancelled,
        ("already_cancelled", false) => OrderOutcome::AlreadyCancelled,
        ("expired", _) => OrderOutcome::Expired,
        ("unknown_order", _) => OrderOutcome::UnknownOrder,
        ("not_preheated", _) => OrderOutcome::NotPreheated,
        (other, _) => bail!("the order script answered an unknown outcome {other:?}"),
    };
    Ok(OrderReply {
        outcome,
        state: (!state.is_empty()).then_some(state),
        qty,
        deadline_ms,
        changed_at_ms,
        user: (!user.is_empty()).then_some(user),
    })
}
