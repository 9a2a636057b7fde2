//! The HTTP API's words: what a request may say (validated before anything
//! touches Redis), what an answer says (the fields of `seckill buy --format
//! json`), and which HTTP status each outcome is.
//!
//! Statuses: 200 `ok` (and `unreplicated`: bought, fewer replicas
//! confirmed), 409 `duplicate` / `request_id_reused`, 410 `sold_out` /
//! `ended`, 425 `not_started`, 429 `rate_limited` (with `Retry-After`), 503
//! `closed` / `not_preheated` and a Redis that refused before running, 504
//! outcome unknown (retry with the same `request_id`), 500 `corrupt_state`;
//! the waiting room's (docs/waiting-room.md): 403 `not_registered`, 428
//! `not_queued` (join first), 425 `not_admitted` (with `Retry-After`), 410
//! `admission_expired`;
//! 400/404/405/413/415 for requests that are wrong, never touching Redis.

use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

use crate::domain::item::answer::PurchaseAnswer;
use crate::domain::slot::Outcome;

/// Longest user id, request id or item id accepted.
pub(crate) const MAX_ID_BYTES: usize = 128;

/// The body of `POST /v1/items/{item}/buy`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BuyBody {
    pub(crate) user: String,
    #[serde(default = "one")]
    pub(crate) qty: u32,
    /// Required: a client's retry must be safe.
    pub(crate) request_id: String,
}

fn one() -> u32 {
    1
}

/// A request refused before Redis: its status and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) status: StatusCode,
    pub(crate) kind: &'static str,
    pub(crate) message: String,
}

impl Refusal {
    pub(crate) fn bad_request(message: impl Into<String>) -> Refusal {
        Refusal {
            status: StatusCode::BAD_REQUEST,
            kind: "bad_request",
            message: message.into(),
        }
    }
}

/// An id a shopper or the shop sends: 1..128 bytes, no control characters.
pub(crate) fn check_id(what: &str, id: &str) -> Result<(), Refusal> {
    if id.is_empty() || id.len() > MAX_ID_BYTES || id.chars().any(char::is_control) {
        return Err(Refusal::bad_request(format!(
            "{what} must be 1..{MAX_ID_BYTES} bytes of UTF-8 without control characters, got {} bytes",
            id.len()
        )));
    }
    Ok(())
}

impl BuyBody {
    /// Check every field; `per_user_limit` bounds `qty`.
    pub(crate) fn validate(&self, per_user_limit: u32) -> Result<(), Refusal> {
        check_id("user", &self.user)?;
        check_id("request_id", &self.request_id)?;
        if self.qty == 0 || self.qty > per_user_limit {
            return Err(Refusal::bad_request(format!(
                "qty must be 1..{per_user_limit} (the campaign's per_user_limit), got {}",
                self.qty
            )));
        }
        Ok(())
    }
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

/// The HTTP status of an outcome.
pub(crate) fn status_of(outcome: Outcome) -> StatusCode {
    match outcome {
        Outcome::Ok | Outcome::Unreplicated => StatusCode::OK,
        Outcome::Duplicate | Outcome::RequestIdReused => StatusCode::CONFLICT,
        Outcome::SoldOut | Outcome::Ended => StatusCode::GONE,
        Outcome::NotStarted => StatusCode::TOO_EARLY,
        Outcome::RateLimited => StatusCode::TOO_MANY_REQUESTS,
        Outcome::Closed | Outcome::NotPreheated => StatusCode::SERVICE_UNAVAILABLE,
        Outcome::CorruptState => StatusCode::INTERNAL_SERVER_ERROR,
        Outcome::NotRegistered => StatusCode::FORBIDDEN,
        Outcome::NotQueued => StatusCode::PRECONDITION_REQUIRED,
        Outcome::NotAdmitted => StatusCode::TOO_EARLY,
        Outcome::AdmissionExpired => StatusCode::GONE,
    }
}

/// The error body every refusal and failure has: `{"error": {"kind", "message"}}`.
#[derive(Debug, Serialize)]
pub(crate) struct ErrorBody<'a> {
    pub(crate) error: ErrorField<'a>,
}

#[derive(Debug, Serialize)]
pub(crate) struct ErrorField<'a> {
    pub(crate) kind: &'a str,
    pub(crate) message: &'a str,
    /// Outcome unknown only: retry with this id, never a new one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) request_id: Option<&'a str>,
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
    fn bodies_are_checked_field_by_field() {
        let body = |user: &str, qty, request_id: &str| BuyBody {
            user: user.into(),
            qty,
            request_id: request_id.into(),
        };
        assert!(body("u", 1, "r").validate(1).is_ok());
        assert!(body("", 1, "r").validate(1).is_err());
        assert!(body("u", 1, "").validate(1).is_err());
        assert!(body("u", 2, "r").validate(1).is_err());
        assert!(body("u", 0, "r").validate(1).is_err());
        assert!(body(&"x".repeat(129), 1, "r").validate(1).is_err());
        assert!(body("a\u{7}b", 1, "r").validate(1).is_err());
    }

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
