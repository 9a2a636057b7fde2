//! The waiting room's HTTP door (docs/waiting-room.md, docs/serve.md):
//!
//! - `POST /v1/items/{item}/queue` `{"user"}` → the join: `joined` (a new
//!   position) or `queued` (the same one again), with where the user stands;
//! - `GET /v1/items/{item}/queue/{user}` → where the user stands, what the
//!   queue page polls ("N people ahead of you, about M s").
//!
//! Statuses: 200 joined / queued / any standing, 403 `not_registered`, 425
//! `not_started` (a room without a pre-queue, before starts_at), 410
//! `ended`, 503 `not_preheated`; 404 for an item without a room. A waiting
//! user's answer carries `Retry-After` (the wait, whole seconds, at least 1).
//! The handlers are thin: the room (`domain::waiting_room::Room`) does the
//! work on a blocking worker with a pooled connection, like a lookup.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::{Deserialize, Serialize};

use super::api::{Refusal, check_id};
use super::app::{App, admit, counted, error_answer, explain, json_answer, json_body, retry_after};
use crate::domain::item::SaleItem;
use crate::domain::waiting_room::{JoinOutcome, Room, Standing, State as Standing_};

/// The body of `POST /v1/items/{item}/queue`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JoinBody {
    user: String,
}

/// What a join or a position answers.
#[derive(Debug, Serialize)]
struct QueueAnswer {
    item: String,
    user: String,
    /// The join's outcome (`joined`, `queued`, or a refusal); absent on a read.
    #[serde(skip_serializing_if = "Option::is_none")]
    outcome: Option<JoinOutcome>,
    /// Where the user stands: state, position, serving position, wait, admission.
    #[serde(flatten)]
    standing: Option<Standing>,
    /// Users ahead of this one (waiting).
    #[serde(skip_serializing_if = "Option::is_none")]
    ahead: Option<i64>,
}

/// The item's room, or the 404 that says why not.
fn room_of(app: &App, item: &str) -> Result<Room, Refusal> {
    let found = app.campaign.items.iter().find(|i| i.id == item);
    let Some(found) = found else {
        return Err(Refusal {
            status: StatusCode::NOT_FOUND,
            kind: "unknown_item",
            message: format!("campaign {} has no item {item:?}", app.campaign.id),
        });
    };
    SaleItem::live(&app.campaign, found)
        .room()
        .ok_or_else(|| Refusal {
            status: StatusCode::NOT_FOUND,
            kind: "no_waiting_room",
            message: format!("item {item} has no waiting room: buy it directly"),
        })
}

/// The answer's status and headers.
fn answer(outcome: Option<JoinOutcome>, shown: &QueueAnswer) -> Response {
    let status = match outcome {
        Some(JoinOutcome::NotRegistered) => StatusCode::FORBIDDEN,
        Some(JoinOutcome::NotStarted) => StatusCode::TOO_EARLY,
        Some(JoinOutcome::Ended) => StatusCode::GONE,
        Some(JoinOutcome::NotPreheated) => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::OK,
    };
    let mut response = json_answer(status, shown);
    if let Some(standing) = &shown.standing
        && matches!(standing.state, Standing_::Waiting | Standing_::Prequeue)
    {
        retry_after(&mut response, standing.eta_ms);
    }
    response
}

fn shown(
    item: &str,
    user: &str,
    outcome: Option<JoinOutcome>,
    standing: Option<Standing>,
) -> QueueAnswer {
    let ahead = standing
        .as_ref()
        .filter(|s| matches!(s.state, Standing_::Waiting | Standing_::Prequeue))
        .map(|s| (s.position - s.serving - 1).max(0));
    QueueAnswer {
        item: item.to_string(),
        user: user.to_string(),
        outcome,
        standing,
        ahead,
    }
}

/// An error answer of the queue door, counted.
fn failed(
    app: &App,
    started: Instant,
    status: StatusCode,
    kind: &'static str,
    message: &str,
) -> Response {
    counted(
        app,
        "queue",
        kind,
        started,
        error_answer(status, kind, message, None),
    )
}

/// What a failed Redis call means for the queue page (no request id: a
/// join or a read may always be sent again).
fn redis_failed(app: &App, started: Instant, error: &anyhow::Error) -> Response {
    let (status, kind, message) = explain(error, &app.target.display, "");
    failed(app, started, status, kind, &message)
}

/// `POST /v1/items/{item}/queue`.
pub(super) async fn join(
    State(app): State<Arc<App>>,
    Path(item): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let started = Instant::now();
    let _permit = match admit(&app) {
        Ok(permit) => permit,
        Err(answer) => return counted(&app, "queue", "refused", started, *answer),
    };
    let refused = |r: Refusal| failed(&app, started, r.status, r.kind, &r.message);
    let bytes = match json_body(&app, &headers, body).await {
        Ok(bytes) => bytes,
        Err(r) => return refused(r),
    };
    let body: JoinBody = match serde_json::from_slice(&bytes) {
        Ok(body) => body,
        Err(e) => return refused(Refusal::bad_request(format!("the body is not a join: {e}"))),
    };
    if let Err(r) = check_id("user", &body.user) {
        return refused(r);
    }
    let room = match room_of(&app, &item) {
        Ok(room) => room,
        Err(r) => return refused(r),
    };
    let joined = {
        let app = Arc::clone(&app);
        let user = body.user.clone();
        tokio::task::spawn_blocking(move || app.pool.with(|conn| room.join(conn, &user))).await
    };
    match joined {
        Ok(Ok(reply)) => {
            let outcome = Some(reply.outcome);
            counted(
                &app,
                "queue",
                reply.outcome.as_str(),
                started,
                answer(outcome, &shown(&item, &body.user, outcome, reply.standing)),
            )
        }
        // A join is idempotent: any retry is safe, so no request id is named.
        Ok(Err(error)) => redis_failed(&app, started, &error),
        Err(_) => failed(
            &app,
            started,
            StatusCode::GATEWAY_TIMEOUT,
            "outcome_unknown",
            "the join's worker stopped: join again (a repeat join returns the same position)",
        ),
    }
}

/// `GET /v1/items/{item}/queue/{user}`.
pub(super) async fn position(
    State(app): State<Arc<App>>,
    Path((item, user)): Path<(String, String)>,
) -> Response {
    let started = Instant::now();
    let _permit = match admit(&app) {
        Ok(permit) => permit,
        Err(answer) => return counted(&app, "queue", "refused", started, *answer),
    };
    let refused = |r: Refusal| failed(&app, started, r.status, r.kind, &r.message);
    if let Err(r) = check_id("user", &user) {
        return refused(r);
    }
    let room = match room_of(&app, &item) {
        Ok(room) => room,
        Err(r) => return refused(r),
    };
    let read = {
        let app = Arc::clone(&app);
        let user = user.clone();
        tokio::task::spawn_blocking(move || app.pool.with(|conn| room.read(conn, &[&user]))).await
    };
    match read {
        Ok(Ok((_, mut standings))) => {
            let standing = standings.pop();
            let state = standing.as_ref().map_or("not_queued", |s| s.state.as_str());
            counted(
                &app,
                "queue",
                state,
                started,
                answer(None, &shown(&item, &user, None, standing)),
            )
        }
        Ok(Err(error)) => redis_failed(&app, started, &error),
        Err(_) => failed(
            &app,
            started,
            StatusCode::INTERNAL_SERVER_ERROR,
            "redis_error",
            "the read's worker stopped: ask again",
        ),
    }
}
