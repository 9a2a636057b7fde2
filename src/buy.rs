//! One purchase attempt through `lua/buy.lua`: the library side of `seckill buy`.

use anyhow::{Context, Result, bail};
use redis::ConnectionLike;
use serde::Serialize;

use crate::exit_codes;
use crate::keys::ItemKeys;
use crate::scripts;

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
}

impl Outcome {
    /// Every outcome, in exit-code order.
    pub const ALL: [Outcome; 10] = [
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
        }
    }

    /// The exit code of `seckill buy` for this outcome.
    pub fn exit_code(self) -> i32 {
        match self {
            Outcome::Ok => exit_codes::SUCCESS,
            Outcome::SoldOut => exit_codes::SOLD_OUT,
            Outcome::Duplicate => exit_codes::DUPLICATE,
            Outcome::RateLimited => exit_codes::RATE_LIMITED,
            Outcome::Closed => exit_codes::CLOSED,
            Outcome::NotStarted => exit_codes::NOT_STARTED,
            Outcome::Ended => exit_codes::ENDED,
            Outcome::NotPreheated => exit_codes::NOT_PREHEATED,
            Outcome::CorruptState => exit_codes::CORRUPT_STATE,
            Outcome::RequestIdReused => exit_codes::REQUEST_ID_REUSED,
        }
    }

    /// Parse the script's outcome name.
    pub fn parse(name: &[u8]) -> Option<Outcome> {
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
}

/// A fresh, time-sortable order id.
pub fn new_order_id() -> String {
    ulid::Ulid::generate().to_string()
}

/// Run the buy script once.
pub fn buy<C: ConnectionLike>(
    conn: &mut C,
    keys: &ItemKeys,
    request: &BuyRequest,
) -> Result<BuyReply> {
    let order_id = new_order_id();
    let reply: (Vec<u8>, String, i64) = scripts::BUY
        .key(&keys.meta)
        .key(&keys.stock)
        .key(&keys.buyers)
        .key(&keys.buyer_orders)
        .key(&keys.requests)
        .key(&keys.orders)
        .key(keys.rate(request.user))
        .arg(request.user)
        .arg(request.qty)
        .arg(request.request_id.unwrap_or(""))
        .arg(&order_id)
        .arg(request.campaign)
        .arg(request.item)
        .invoke(conn)
        .with_context(|| {
            format!(
                "buy script failed for item {} user {}",
                request.item, request.user
            )
        })?;
    parse_reply(reply)
}

/// Turn the raw script reply into a [`BuyReply`].
pub fn parse_reply((outcome, order_id, stock_left): (Vec<u8>, String, i64)) -> Result<BuyReply> {
    let Some(outcome) = Outcome::parse(&outcome) else {
        bail!(
            "buy script returned an unknown outcome {:?}",
            String::from_utf8_lossy(&outcome)
        );
    };
    // The script puts the problem where an order id would be: same reply shape.
    let (order_id, problem) = match outcome {
        Outcome::CorruptState => (String::new(), Some(order_id)),
        _ => (order_id, None),
    };
    Ok(BuyReply {
        outcome,
        order_id: (!order_id.is_empty()).then_some(order_id),
        stock_left: (stock_left >= 0).then_some(stock_left),
        problem,
    })
}
