//! What every request of `seckill serve` shares ([`App`]: the campaign, the
//! Redis connections, the cache, the metrics, the in-flight limit) and the
//! steps every endpoint takes: admission under the limit, the JSON body
//! within its size and time, the JSON or error answer, counting it.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Result;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::api::{ErrorBody, ErrorField, Refusal};
use super::cache::Cache;
use super::metrics::Metrics;
use crate::model::campaign::Campaign;
use crate::redis_client::conn::{Conn, RedisTarget};
use crate::redis_client::failure::{self, Failure};
use crate::redis_client::multiplexed::{Multiplexed, NotSent};

/// Largest request body accepted (a buy is well under 1 KiB).
pub(crate) const MAX_BODY: usize = 16 * 1024;

/// How `serve` runs.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) listen: SocketAddr,
    /// Requests answered at once; beyond: 503 with `Retry-After`.
    pub(crate) max_in_flight: usize,
    /// A client must send its request headers within this.
    pub(crate) header_timeout: Duration,
    /// ... and its body within this.
    pub(crate) body_timeout: Duration,
    /// After SIGTERM, requests in flight get this long to finish.
    pub(crate) shutdown_grace: Duration,
    /// How often the cache re-reads each item's state (the bound on a
    /// cached refusal outliving units that came back).
    pub(crate) recheck: Duration,
    /// `--wait-replicas N` and its timeout, as in `seckill buy`.
    pub(crate) wait_replicas: Option<(u32, Duration)>,
    /// The operator endpoints' bearer token; `None`: they are off.
    pub(crate) operator_token: Option<Vec<u8>>,
    /// Threads answering HTTP.
    pub(crate) workers: usize,
}

/// Shared by every request.
pub(crate) struct App {
    pub(crate) campaign: Campaign,
    pub(crate) target: RedisTarget,
    pub(crate) settings: Settings,
    pub(crate) cache: Cache,
    /// The shared async connection(s) the attempts run on.
    pub(crate) redis: Multiplexed,
    pub(crate) pool: Pool,
    pub(crate) permits: Arc<tokio::sync::Semaphore>,
    pub(crate) draining: AtomicBool,
    pub(crate) metrics: Metrics,
    pub(crate) answered: AtomicU64,
    /// Attempts this instance is running: (item, user, request id).
    pub(crate) running: Mutex<HashSet<(String, String, String)>>,
}

/// Blocking Redis connections, one per worker thread at a time.
pub(crate) struct Pool {
    pub(crate) target: RedisTarget,
    pub(crate) idle: Mutex<Vec<Conn>>,
}

impl Pool {
    /// Run `call` on an idle connection (or a new one); a connection whose
    /// call failed is dropped, never reused.
    pub(crate) fn with<T>(&self, call: impl FnOnce(&mut Conn) -> Result<T>) -> Result<T> {
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut conn = match idle {
            Some(conn) => conn,
            None => self.target.connect().map_err(|e| e.context(NotSent))?,
        };
        let result = call(&mut conn);
        if result.is_ok() {
            self.idle
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(conn);
        }
        result
    }
}

/// A JSON answer with `status`.
pub(crate) fn json_answer(status: StatusCode, body: &impl Serialize) -> Response {
    let text = serde_json::to_vec(body).unwrap_or_else(|_| b"{}".to_vec());
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        text,
    )
        .into_response()
}

/// `{"error": {"kind", "message"}}` with `status`.
pub(crate) fn error_answer(
    status: StatusCode,
    kind: &str,
    message: &str,
    request_id: Option<&str>,
) -> Response {
    json_answer(
        status,
        &ErrorBody {
            error: ErrorField {
                kind,
                message,
                request_id,
            },
        },
    )
}

/// What every `/v1` request passes first: not draining, under the in-flight limit.
pub(crate) fn admit(app: &App) -> Result<tokio::sync::OwnedSemaphorePermit, Box<Response>> {
    if app.draining.load(Ordering::SeqCst) {
        let mut answer = error_answer(
            StatusCode::SERVICE_UNAVAILABLE,
            "shutting_down",
            "this instance is stopping: send the request to another one",
            None,
        );
        answer
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        return Err(Box::new(answer));
    }
    Arc::clone(&app.permits).try_acquire_owned().map_err(|_| {
        let mut answer = error_answer(
            StatusCode::SERVICE_UNAVAILABLE,
            "overloaded",
            "too many requests in flight on this instance: retry shortly",
            None,
        );
        answer
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        Box::new(answer)
    })
}

/// The request's JSON body, within the size and time limits.
pub(crate) async fn json_body(
    app: &App,
    headers: &HeaderMap,
    body: Body,
) -> Result<axum::body::Bytes, Refusal> {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return Err(Refusal {
            status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
            kind: "unsupported_media_type",
            message: "send the body as JSON (Content-Type: application/json)".into(),
        });
    }
    match tokio::time::timeout(
        app.settings.body_timeout,
        axum::body::to_bytes(body, MAX_BODY),
    )
    .await
    {
        Err(_) => Err(Refusal {
            status: StatusCode::REQUEST_TIMEOUT,
            kind: "request_timeout",
            message: format!(
                "the body did not arrive within {:?} (--body-timeout)",
                app.settings.body_timeout
            ),
        }),
        Ok(Err(_)) => Err(Refusal {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            kind: "payload_too_large",
            message: format!("the body is over {MAX_BODY} bytes"),
        }),
        Ok(Ok(bytes)) => Ok(bytes),
    }
}

/// Count the answer, then give it.
pub(crate) fn counted(
    app: &App,
    endpoint: &'static str,
    outcome: &'static str,
    started: Instant,
    answer: Response,
) -> Response {
    app.metrics.answered(
        endpoint,
        outcome,
        answer.status().as_u16(),
        started.elapsed(),
    );
    app.answered.fetch_add(1, Ordering::Relaxed);
    answer
}

/// What a failed attempt means for the client: refused before running
/// (503, a new attempt is safe), unknown (504, retry with the same request
/// id), or failed at the server (500, retry with the same request id).
pub(crate) fn explain(
    error: &anyhow::Error,
    at: &str,
    request_id: &str,
) -> (StatusCode, &'static str, String) {
    let rendered = crate::util::error_text::render(error);
    if error.downcast_ref::<NotSent>().is_some() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "redis_unreachable",
            format!("{rendered}: nothing was sent, a new attempt is safe"),
        );
    }
    match failure::find(error).map(failure::classify) {
        Some(Failure::NotExecuted(code)) => (
            StatusCode::SERVICE_UNAVAILABLE,
            "not_executed",
            format!(
                "Redis at {at} refused the attempt, it was not executed ({code}): a new attempt is safe; {rendered}"
            ),
        ),
        Some(Failure::Failed) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "redis_error",
            format!(
                "Redis at {at} reported an error running the attempt: retry with request_id {request_id}; {rendered}"
            ),
        ),
        // A lost reply, a connection that could not be made or broke: unknown.
        _ => (
            StatusCode::GATEWAY_TIMEOUT,
            "outcome_unknown",
            format!(
                "outcome unknown: the attempt may or may not have run on Redis at {at} ({rendered}); \
                 retry with the same request_id, never a new one"
            ),
        ),
    }
}

/// `Retry-After` for a wait of `eta_ms`: whole seconds, at least 1.
pub(crate) fn retry_after(answer: &mut Response, eta_ms: i64) {
    let seconds = (eta_ms.max(0) as u64).div_ceil(1000).max(1);
    if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
        answer.headers_mut().insert(header::RETRY_AFTER, value);
    }
}
