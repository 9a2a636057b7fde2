//! Every answer that is not an operation's own, written once: a request
//! refused before anything runs ([`Rejection`]: its body, its size, its
//! time, its media type, the token) and an operation's [`Failure`], each
//! with one `impl IntoResponse`. The body is always
//! `{"error": {"kind", "message"}}` (plus `request_id` when a retry must
//! reuse it), and the kind is the outcome the metrics count.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::domain::operation::{Failure, FailureKind, Invalid, Retry};

/// The outcome a response counts as, for the metrics layer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Counted(pub(crate) &'static str);

/// A JSON answer with `status`, counted as `outcome`.
pub(crate) fn json_answer(
    status: StatusCode,
    outcome: &'static str,
    body: &impl Serialize,
) -> Response {
    let text = serde_json::to_vec(body).unwrap_or_else(|_| b"{}".to_vec());
    let mut answer = (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        text,
    )
        .into_response();
    answer.extensions_mut().insert(Counted(outcome));
    answer
}

#[derive(Debug, Serialize)]
struct ErrorBody<'a> {
    error: ErrorField<'a>,
}

#[derive(Debug, Serialize)]
struct ErrorField<'a> {
    kind: &'a str,
    message: &'a str,
    /// Only when a retry must reuse it, never a new one.
    #[serde(skip_serializing_if = "Option::is_none")]
    request_id: Option<&'a str>,
}

/// `{"error": {"kind", "message"}}` with `status`.
pub(crate) fn error_answer(
    status: StatusCode,
    kind: &'static str,
    message: &str,
    request_id: Option<&str>,
) -> Response {
    json_answer(
        status,
        kind,
        &ErrorBody {
            error: ErrorField {
                kind,
                message,
                request_id,
            },
        },
    )
}

/// `Retry-After` for a wait of `eta_ms`: whole seconds, at least 1.
pub(crate) fn retry_after(answer: &mut Response, eta_ms: i64) {
    let seconds = (eta_ms.max(0) as u64).div_ceil(1000).max(1);
    if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
        answer.headers_mut().insert(header::RETRY_AFTER, value);
    }
}

/// A request refused before anything ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rejection {
    pub(crate) status: StatusCode,
    pub(crate) kind: &'static str,
    pub(crate) message: String,
}

impl Rejection {
    pub(crate) fn bad_request(message: impl Into<String>) -> Rejection {
        Rejection {
            status: StatusCode::BAD_REQUEST,
            kind: "bad_request",
            message: message.into(),
        }
    }
}

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        error_answer(self.status, self.kind, &self.message, None)
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let rendered = format!("{:#}", self.cause);
        let at = &self.at;
        let again = match &self.retry {
            Retry::SameRequestId(_) => "retry with the same request_id, never a new one",
            Retry::Repeat => "sending it again is safe",
        };
        let request_id = match &self.retry {
            Retry::SameRequestId(id) => Some(id.as_str()),
            Retry::Repeat => None,
        };
        match &self.kind {
            FailureKind::Invalid(invalid) => {
                let (status, kind) = match invalid {
                    Invalid::Field { .. } => (StatusCode::BAD_REQUEST, "bad_request"),
                    Invalid::UnknownItem(_) => (StatusCode::NOT_FOUND, "unknown_item"),
                    Invalid::NoWaitingRoom(_) => (StatusCode::NOT_FOUND, "no_waiting_room"),
                    // 421: this door is not the one for this user; the
                    // message names the home region.
                    Invalid::WrongRegion(_) => (StatusCode::MISDIRECTED_REQUEST, "wrong_region"),
                };
                error_answer(status, kind, &invalid.say(str::to_string), None)
            }
            FailureKind::NotSent => error_answer(
                StatusCode::SERVICE_UNAVAILABLE,
                "redis_unreachable",
                &format!("{rendered}: nothing was sent, a new attempt is safe"),
                None,
            ),
            FailureKind::NotExecuted(code) => error_answer(
                StatusCode::SERVICE_UNAVAILABLE,
                "not_executed",
                &format!(
                    "Redis at {at} refused the request, it was not executed ({code}): a new attempt is safe; {rendered}"
                ),
                None,
            ),
            FailureKind::Failed => error_answer(
                StatusCode::INTERNAL_SERVER_ERROR,
                "redis_error",
                &format!(
                    "Redis at {at} reported an error running the request: {again}; {rendered}"
                ),
                request_id,
            ),
            FailureKind::Unknown => error_answer(
                StatusCode::GATEWAY_TIMEOUT,
                "outcome_unknown",
                &format!(
                    "outcome unknown: the request may or may not have run on Redis at {at} ({rendered}); {again}"
                ),
                request_id,
            ),
        }
    }
}
