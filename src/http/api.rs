//! The HTTP API's words: what a request may say, and which HTTP status each
//! outcome is. The checks themselves are the operations' (`domain::operation`),
//! shared with the command line.
//!
//! Statuses: 200 `ok` (and `unreplicated`: bought, fewer replicas
//! confirmed), 409 `duplicate` / `request_id_reused`, 410 `sold_out` /
//! `ended`, 425 `not_started`, 429 `rate_limited` (with `Retry-After`), 503
//! `closed` / `not_preheated` and a Redis that refused before running, 504
//! outcome unknown, 500 `corrupt_state`; the waiting room's
//! (docs/waiting-room.md): 403 `not_registered`, 428 `not_queued` (join
//! first), 425 `not_admitted` (with `Retry-After`), 410 `admission_expired`;
//! 400/404/405/408/413/415 for requests that are wrong, never touching Redis.

use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

use crate::domain::item::answer::PurchaseAnswer;
use crate::domain::operation::buy::SeatWish;
use crate::domain::reservations::{OrderOutcome, OrderResult};
use crate::domain::slot::Outcome;
use crate::domain::waiting_room::JoinOutcome;
use crate::redis_client::scripts::queue_register::RegisterOutcome;

/// The body of `POST /v1/items/{item}/buy`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BuyBody {
    pub(crate) user: String,
    #[serde(default = "one")]
    pub(crate) qty: u32,
    /// Required: a client's retry must be safe.
    pub(crate) request_id: String,
    /// The shop's hash of the shopper's identity document (docs/limits.md).
    #[serde(default)]
    pub(crate) identity: Option<String>,
    /// A seat item: one attendee identity (hash) per seat (docs/seats.md).
    #[serde(default)]
    pub(crate) attendees: Vec<String>,
    /// A seat item: these seats (`["A-12-7", "A-12-8"]`, one section), all or none.
    #[serde(default)]
    pub(crate) seats: Vec<String>,
    /// A seat item: the best block of `qty` in this section…
    #[serde(default)]
    pub(crate) section: Option<String>,
    /// …or in the sections of this tier.
    #[serde(default)]
    pub(crate) tier: Option<String>,
}

impl BuyBody {
    /// The seats asked for, as the buy operation takes them.
    pub(crate) fn seat_wish(&self) -> SeatWish<'_> {
        SeatWish {
            named: &self.seats,
            section: self.section.as_deref(),
            tier: self.tier.as_deref(),
        }
    }
}

fn one() -> u32 {
    1
}

/// The body of `POST /v1/items/{item}/queue`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct JoinBody {
    pub(crate) user: String,
}

/// The body of `POST /v1/items/{item}/register`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RegisterBody {
    pub(crate) user: String,
    pub(crate) device: String,
    /// The caller's address as the shop saw it (required by a room with `per_ip`).
    #[serde(default)]
    pub(crate) ip: Option<String>,
}

/// The body of `POST /v1/orders/{order}/cancel` (optional).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CancelBody {
    #[serde(default)]
    pub(crate) reason: String,
}

/// `GET /v1/items/{item}/orders/{user}`'s query.
#[derive(Debug, Deserialize)]
pub(crate) struct LookupQuery {
    pub(crate) request_id: Option<String>,
}

/// The answer to `POST /v1/items/{item}/buy`: the fields of `seckill buy
/// --format json` (one place makes both), and whether it came from memory.
#[derive(Debug, Serialize)]
pub(crate) struct BuyAnswer {
    #[serde(flatten)]
    pub(crate) answer: PurchaseAnswer,
    /// Answered from this instance's memory, without asking Redis (a
    /// sell-out or a window it already knows).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) from_cache: bool,
}

/// The HTTP status of a buy outcome.
pub(crate) fn status_of(outcome: Outcome) -> StatusCode {
    match outcome {
        Outcome::Ok | Outcome::Unreplicated => StatusCode::OK,
        Outcome::Duplicate
        | Outcome::RequestIdReused
        | Outcome::LimitReached
        | Outcome::SeatTaken => StatusCode::CONFLICT,
        // The request cannot be met as asked (another size or tier may be).
        Outcome::NoBlock => StatusCode::UNPROCESSABLE_ENTITY,
        Outcome::IdentityRequired => StatusCode::PRECONDITION_REQUIRED,
        Outcome::IdentityMismatch => StatusCode::FORBIDDEN,
        Outcome::SoldOut | Outcome::Ended => StatusCode::GONE,
        Outcome::NotStarted => StatusCode::TOO_EARLY,
        Outcome::RateLimited => StatusCode::TOO_MANY_REQUESTS,
        Outcome::Closed | Outcome::NotPreheated | Outcome::Fenced => {
            StatusCode::SERVICE_UNAVAILABLE
        }
        Outcome::CorruptState => StatusCode::INTERNAL_SERVER_ERROR,
        Outcome::NotRegistered => StatusCode::FORBIDDEN,
        Outcome::NotQueued => StatusCode::PRECONDITION_REQUIRED,
        Outcome::NotAdmitted => StatusCode::TOO_EARLY,
        Outcome::AdmissionExpired => StatusCode::GONE,
    }
}

/// The HTTP status of a join's outcome.
pub(crate) fn join_status(outcome: Option<JoinOutcome>) -> StatusCode {
    match outcome {
        Some(JoinOutcome::NotRegistered) => StatusCode::FORBIDDEN,
        Some(JoinOutcome::NotStarted) => StatusCode::TOO_EARLY,
        Some(JoinOutcome::Ended) => StatusCode::GONE,
        Some(JoinOutcome::NotPreheated) => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::OK,
    }
}

/// The HTTP status of a pay/cancel outcome.
pub(crate) fn order_status(result: &OrderResult) -> StatusCode {
    match result.reply.outcome {
        OrderOutcome::Paid | OrderOutcome::Cancelled => StatusCode::OK,
        OrderOutcome::AlreadyPaid | OrderOutcome::AlreadyCancelled | OrderOutcome::WasCancelled => {
            StatusCode::CONFLICT
        }
        OrderOutcome::Expired => StatusCode::GONE,
        OrderOutcome::UnknownOrder => StatusCode::NOT_FOUND,
        OrderOutcome::NotPreheated => StatusCode::SERVICE_UNAVAILABLE,
    }
}

/// The HTTP status of a registration's outcome.
pub(crate) fn register_status(outcome: RegisterOutcome) -> StatusCode {
    match outcome {
        RegisterOutcome::Registered => StatusCode::OK,
        RegisterOutcome::AlreadyRegistered => StatusCode::CONFLICT,
        RegisterOutcome::DeviceLimit | RegisterOutcome::IpLimit => StatusCode::FORBIDDEN,
        RegisterOutcome::RegistrationClosed => StatusCode::GONE,
    }
}

/// Constant-time comparison of a presented token with the configured one
/// (no early exit on the first differing byte).
pub(crate) fn same_token(presented: &[u8], expected: &[u8]) -> bool {
    let mut difference = presented.len() ^ expected.len();
    for i in 0..presented.len().max(expected.len()) {
        let a = presented.get(i).copied().unwrap_or(0);
        let b = expected.get(i).copied().unwrap_or(0);
        difference |= usize::from(a ^ b);
    }
    difference == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_whole() {
        assert!(same_token(b"secret", b"secret"));
        assert!(!same_token(b"secreT", b"secret"));
        assert!(!same_token(b"secret-longer", b"secret"));
        assert!(!same_token(b"", b"secret"));
    }

    #[test]
    fn every_outcome_has_its_status() {
        assert_eq!(status_of(Outcome::SoldOut), StatusCode::GONE);
        assert_eq!(status_of(Outcome::NotStarted), StatusCode::TOO_EARLY);
        assert_eq!(
            status_of(Outcome::RateLimited),
            StatusCode::TOO_MANY_REQUESTS
        );
        assert_eq!(status_of(Outcome::RequestIdReused), StatusCode::CONFLICT);
    }
}
