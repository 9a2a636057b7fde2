//! The waiting room's HTTP door (docs/waiting-room.md, docs/serve.md), the
//! queue operations (`domain::operation::queue`) and registration:
//!
//! - `POST /v1/items/{item}/queue` `{"user"}` → the join: `joined` (a new
//!   position) or `queued` (the same one again), with where the user stands;
//! - `GET /v1/items/{item}/queue/{user}` → where the user stands, what the
//!   queue page polls ("N people ahead of you, about M s");
//! - `POST /v1/items/{item}/register` `{"user", "device", "ip"}` → the
//!   pre-registration a room with `registration:` takes.
//!
//! Statuses: 200 joined / queued / any standing, 403 `not_registered`, 425
//! `not_started` (a room without a pre-queue, before starts_at), 410
//! `ended`, 410 `sold_out` from memory (no Redis call) once the instance
//! knows the item is sold out for good, to anyone who did not buy it; 503
//! `not_preheated`; 404 for an item without a room. A waiting user's answer
//! carries `Retry-After` (the wait, whole seconds, at least 1).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Serialize;

use super::api::{self, JoinBody, RegisterBody};
use super::app::App;
use super::error::{json_answer, retry_after};
use super::extract::JsonBody;
use super::ticket_door;
use crate::domain::operation::queue::{InLine, Join, Position};
use crate::domain::operation::register::Register;
use crate::domain::operation::{Failure, Retry, check_id};
use crate::domain::slot::Outcome;

fn answered(line: InLine) -> Response {
    let status = api::join_status(line.outcome);
    let outcome = line.outcome.map_or_else(|| line.state(), |o| o.as_str());
    let wait = line.wait_ms();
    let mut response = json_answer(status, outcome, &line);
    if let Some(eta_ms) = wait {
        retry_after(&mut response, eta_ms);
    }
    response
}

/// The answer to a join or a poll when the item is gone.
#[derive(Serialize)]
struct SoldOut<'a> {
    item: &'a str,
    user: &'a str,
    outcome: &'static str,
    from_cache: bool,
}

/// A newcomer's join or poll of a room item this instance knows is sold out
/// for good (its own `sold_out` reply, the broadcast, the recheck):
/// `sold_out` from memory, no Redis call, instead of a place in a line for
/// nothing. A buyer's, and anything memory does not know, go to Redis.
fn sold_out_from_memory(app: &App, item: &str, user: &str) -> Option<Response> {
    let has_room = app
        .campaign
        .items
        .iter()
        .any(|i| i.id == item && i.waiting_room.is_some());
    let known = has_room
        && check_id("user", user, true).is_ok()
        && app.cache.refusal(item, user) == Some(Outcome::SoldOut);
    known.then(|| {
        let answer = SoldOut {
            item,
            user,
            outcome: Outcome::SoldOut.as_str(),
            from_cache: true,
        };
        json_answer(StatusCode::GONE, answer.outcome, &answer)
    })
}

/// `POST /v1/items/{item}/queue`: a sell-out or a ticket room's from memory,
/// else the room's script.
pub(crate) async fn join(
    State(app): State<Arc<App>>,
    Path(item): Path<String>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<JoinBody>,
) -> Result<Response, Failure> {
    check_id("user", &body.user, true)?;
    if let Some(gone) = sold_out_from_memory(&app, &item, &body.user) {
        app.metrics.cache_hit(Outcome::SoldOut.as_str());
        return Ok(gone);
    }
    if let Some(answer) = ticket_door::join(&app, &item, &body.user, &headers) {
        return Ok(answer);
    }
    let line = app
        .on_redis(false, Retry::Repeat, move |app, conn| {
            Join {
                item: &item,
                user: &body.user,
            }
            .run(&app.campaign, conn, &app.target.display)
        })
        .await?;
    Ok(answered(line))
}

/// `GET /v1/items/{item}/queue/{user}`: a ticket room's from memory, else the room's script.
pub(crate) async fn position(
    State(app): State<Arc<App>>,
    Path((item, user)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, Failure> {
    check_id("user", &user, true)?;
    if let Some(gone) = sold_out_from_memory(&app, &item, &user) {
        app.metrics.cache_hit(Outcome::SoldOut.as_str());
        return Ok(gone);
    }
    if let Some(answer) = ticket_door::poll(&app, &item, &user, &headers) {
        return Ok(answer);
    }
    let (_, mut lines) = app
        .on_redis(false, Retry::Repeat, move |app, conn| {
            Position {
                item: &item,
                users: &[user.as_str()],
            }
            .run(&app.campaign, conn, &app.target.display)
        })
        .await?;
    let line = lines.pop().ok_or_else(|| {
        Failure::of(
            anyhow::anyhow!("the room answered for no user"),
            &app.target.display,
            Retry::Repeat,
        )
    })?;
    Ok(answered(line))
}

/// `POST /v1/items/{item}/register`.
pub(crate) async fn register(
    State(app): State<Arc<App>>,
    Path(item): Path<String>,
    JsonBody(body): JsonBody<RegisterBody>,
) -> Result<Response, Failure> {
    let registered = app
        .on_redis(false, Retry::Repeat, move |app, conn| {
            Register {
                item: &item,
                user: &body.user,
                device: &body.device,
                ip: body.ip.as_deref(),
            }
            .run(&app.campaign, conn, &app.target.display)
        })
        .await?;
    Ok(json_answer(
        api::register_status(registered.outcome),
        registered.outcome.as_str(),
        &registered,
    ))
}
