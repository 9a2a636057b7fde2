//! `lua/buy.lua`, the whole purchase: kill switch, window, rate limit, dedupe,
//! stock and order stream in one atomic step (`lua/lib/purchase.lua`). Its
//! call, outcomes and reply.

use anyhow::{Result, bail};
use redis::Value;
use serde::Serialize;

use crate::model::exit_codes;

super::script_call! {
    /// One purchase attempt: KEYS then ARGV of `lua/buy.lua`.
    Buy = "buy.lua", Sale;
    keys { meta, stock, buyers, buyer_orders, requests, orders, rate, reservations, deadlines, reservation_counts }
    argv { user, qty, request_id, order_id, campaign, item, payment_timeout_ms }
}

/// What the buy script decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Ok,
    SoldOut,
    Duplicate,
    RateLimited,
    Closed,
    NotStarted,
    Ended,
    NotPreheated,
    /// A stored value the script reads is malformed; nothing was written.
    CorruptState,
    /// The request id already bought another qty; the original order is named.
    RequestIdReused,
    /// `--wait-replicas`: bought, but fewer replicas confirmed it in time
    /// (decided after the script by WAIT; the script never returns it).
    Unreplicated,
}

impl Outcome {
    /// Every outcome, in exit-code order.
    pub const ALL: [Outcome; 11] = [
        Outcome::Ok,
        Outcome::SoldOut,
        Outcome::Duplicate,
        Outcome::RateLimited,
        Outcome::Closed,
        Outcome::NotStarted,
        Outcome::Ended,
        Outcome::NotPreheated,
        Outcome::CorruptState,
        Outcome::RequestIdReused,
        Outcome::Unreplicated,
    ];

    /// The name used by the script and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::SoldOut => "sold_out",
            Outcome::Duplicate => "duplicate",
            Outcome::RateLimited => "rate_limited",
            Outcome::Closed => "closed",
            Outcome::NotStarted => "not_started",
            Outcome::Ended => "ended",
            Outcome::NotPreheated => "not_preheated",
            Outcome::CorruptState => "corrupt_state",
            Outcome::RequestIdReused => "request_id_reused",
            Outcome::Unreplicated => "unreplicated",
        }
    }

    /// The exit code of `seckill buy` for this outcome.
    pub fn exit_code(self) -> i32 {
        exit_codes::of_outcome(self.as_str())
    }

    /// Parse the script's outcome name.
    pub(crate) fn parse(name: &[u8]) -> Option<Outcome> {
        Outcome::ALL
            .into_iter()
            .find(|o| o.as_str().as_bytes() == name)
    }
}

/// The reply of one attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BuyReply {
    pub outcome: Outcome,
    /// The new or remembered order id (`ok`), the existing one (`duplicate`).
    pub order_id: Option<String>,
    /// Units left after the attempt; `None` when the item is not preheated.
    pub stock_left: Option<i64>,
    /// `corrupt_state` only: which key holds what malformed value.
    pub problem: Option<String>,
    /// An `ok` that is a reservation (`payment_timeout`): its deadline and state.
    pub reservation: Option<Reservation>,
}

/// The reservation an `ok` holds (campaigns with `payment_timeout`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reservation {
    /// Pay before this, Unix ms on the Redis clock.
    pub deadline_ms: i64,
    /// `reserved` for a new one; a retried request id's order may be `paid`,
    /// `expired` or `cancelled` by now.
    pub state: String,
}

/// The outcome of a reply (its first field) without reading the rest: the
/// load-test hot loop counts outcomes only.
pub(crate) fn outcome_of(reply: &Value) -> Result<Outcome> {
    let Value::Array(fields) = reply else {
        bail!("buy script answered {reply:?}");
    };
    let Some(Value::BulkString(name)) = fields.first() else {
        bail!("buy script answered {reply:?}");
    };
    match Outcome::parse(name) {
        Some(outcome) => Ok(outcome),
        None => bail!(
            "buy script returned an unknown outcome {:?}",
            String::from_utf8_lossy(name)
        ),
    }
}

/// Parse the reply `{outcome, order_id, stock_left, deadline_ms, reservation_state}`.
pub(crate) fn parse_reply(reply: Value) -> Result<BuyReply> {
    let outcome = outcome_of(&reply)?;
    let (_, order_id, stock_left, deadline_ms, state): (Value, String, i64, i64, String) =
        redis::from_redis_value(reply)?;
    // corrupt_state puts the problem ("<key>: <what>") where an order id would be.
    let (order_id, problem) = match outcome {
        Outcome::CorruptState => (String::new(), Some(order_id)),
        _ => (order_id, None),
    };
    Ok(BuyReply {
        outcome,
        order_id: (!order_id.is_empty()).then_some(order_id),
        stock_left: (stock_left >= 0).then_some(stock_left),
        problem,
        reservation: (!state.is_empty()).then_some(Reservation { deadline_ms, state }),
    })
}
