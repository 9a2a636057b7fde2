//! One purchase attempt's answer as people and programs read it: the fields
//! of `seckill buy --format json` and of `seckill serve`'s buy answer, made
//! in one place from the script's reply, so the two never disagree.

use serde::Serialize;

use crate::domain::slot::{BuyReply, BuyRequest, Outcome};
use crate::util::text;

/// What an attempt decided.
#[derive(Debug, Clone, Serialize)]
pub struct PurchaseAnswer {
    /// `ok`, `sold_out`, `duplicate`, `rate_limited`, `closed`, `not_started`,
    /// `ended`, `not_preheated`, `corrupt_state`, `request_id_reused`,
    /// `unreplicated`, or the waiting room's `not_registered`, `not_queued`,
    /// `not_admitted`, `admission_expired`, `fenced` (docs/failover.md,
    /// "The fence"), or a limit above the item's `limit_reached`,
    /// `identity_required`, `identity_mismatch` (docs/limits.md); the exit
    /// code says the same.
    pub(crate) outcome: Outcome,
    /// The order: new on `ok` and `unreplicated`, the user's existing one on
    /// `duplicate`, the request id's original one on `request_id_reused`; null otherwise.
    pub(crate) order_id: Option<String>,
    /// Units left after this attempt; null when the item is not preheated
    /// (or the answer came from serve's memory, which does not ask).
    pub(crate) stock_left: Option<i64>,
    /// The item bought.
    pub(crate) item: String,
    /// The shopper.
    pub(crate) user: String,
    /// Units asked for.
    pub(crate) qty: u32,
    /// The idempotency key: retry with it to get this answer again without buying twice.
    pub(crate) request_id: String,
    /// `--wait-replicas` only: replicas that confirmed the buy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) replicas_acked: Option<i64>,
    /// `corrupt_state`: the key and what is wrong with it; `fenced`: which
    /// Redis process holds the item instead of the one preheat loaded it on,
    /// and what the operator must run; `seat_taken`: each seat not free and
    /// why; `no_block`: the closest block; a limit's refusal: which limit,
    /// what is held. Nothing was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) problem: Option<String>,
    /// True when the order this answer names is a reservation still to be
    /// paid (`payment_timeout`): the units are held until `deadline`, then
    /// released unless `seckill pay` ran. An `ok` stays `ok` (exit 0) so
    /// scripts reading it keep working; a `duplicate` names the user's order.
    pub(crate) reserved: bool,
    /// A reservation's state now: `reserved`, or for a retried request id or
    /// a `duplicate` (the user's order) `paid`, `expired` or `cancelled`;
    /// null when the order is final (no `payment_timeout`).
    pub(crate) reservation_state: Option<String>,
    /// Pay before this (RFC 3339, UTC, Redis clock); null when the ok is final.
    pub(crate) deadline: Option<String>,
    /// The same deadline in Unix milliseconds.
    pub(crate) deadline_ms: Option<i64>,
    /// `not_admitted` / `admission_expired`: where the user stands in the
    /// item's waiting room (position, serving position, wait in ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) waiting: Option<crate::redis_client::scripts::buy::Waiting>,
    /// `not_started`: when the sale opens (RFC 3339, UTC), as the campaign says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) opens_at: Option<String>,
    /// The same, in Unix milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) opens_at_ms: Option<i64>,
    /// A seat item's `ok`: its seats, `A-12-7` (section-row-seat, 1-based).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) seats: Option<Vec<String>>,
}

impl PurchaseAnswer {
    /// The answer to `request`: the script's `reply`, with `outcome` as
    /// decided after it (`unreplicated` when WAIT fell short) and the
    /// replicas that confirmed it (`--wait-replicas`).
    pub(crate) fn of(
        request: &BuyRequest,
        reply: BuyReply,
        outcome: Outcome,
        replicas_acked: Option<i64>,
    ) -> PurchaseAnswer {
        let reservation = reply.reservation.as_ref();
        PurchaseAnswer {
            outcome,
            order_id: reply.order_id,
            stock_left: reply.stock_left,
            item: request.item.to_string(),
            user: request.user.to_string(),
            qty: request.qty,
            request_id: request.request_id.unwrap_or("").to_string(),
            replicas_acked,
            problem: reply.problem,
            reserved: reservation.is_some_and(|r| r.state == "reserved"),
            reservation_state: reservation.map(|r| r.state.clone()),
            deadline: reservation.map(|r| text::time_or_dash(Some(r.deadline_ms))),
            deadline_ms: reservation.map(|r| r.deadline_ms),
            waiting: reply.waiting,
            opens_at: None,
            opens_at_ms: None,
            seats: reply.seats,
        }
    }

    /// A `not_started` answer says when the sale opens (`starts_at_ms`, the
    /// campaign's); any other answer stays as it is.
    pub(crate) fn opening(mut self, starts_at_ms: Option<i64>) -> PurchaseAnswer {
        if self.outcome == Outcome::NotStarted {
            self.opens_at_ms = starts_at_ms;
            self.opens_at = starts_at_ms.map(|at| text::time_or_dash(Some(at)));
        }
        self
    }

    /// An answer known without asking Redis (serve's cache): the outcome alone.
    pub(crate) fn refused(request: &BuyRequest, outcome: Outcome) -> PurchaseAnswer {
        let reply = BuyReply {
            outcome,
            order_id: None,
            stock_left: None,
            problem: None,
            reservation: None,
            waiting: None,
            seats: None,
        };
        PurchaseAnswer::of(request, reply, outcome, None)
    }
}
