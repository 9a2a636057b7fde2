//! The ticket room's answers at the door (docs/waiting-room.md, "Ticket
//! mode"), all from memory ([`super::ticket_room`]): the join, the poll, and
//! the check a buy passes before its script runs. The shopper's ticket
//! travels in the `Seckill-Ticket` header.
//!
//! Statuses: 200 `joined` / `queued` / a standing; 403 `blocked` (the
//! operator's risk list); 410 `sold_out` (the cache knows it), `ended`; 425
//! `not_started`; 428 `not_queued` (no ticket, or one that is not this
//! user's, forged, altered or revoked: join again). A waiting holder's
//! answer carries `Retry-After`.

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Serialize;

use super::app::App;
use super::error::{json_answer, retry_after};
use super::ticket_room::TicketLine;
use crate::domain::slot::{Outcome, TicketClaim};
use crate::domain::waiting_room::ticket::Ticket;

/// The header a shopper's ticket travels in.
pub(crate) const TICKET_HEADER: &str = "seckill-ticket";

/// A refusal the door answers for a ticket room.
#[derive(Debug, Serialize)]
struct Refusal<'a> {
    outcome: &'static str,
    item: &'a str,
    user: &'a str,
    message: String,
}

fn refusal(
    status: StatusCode,
    outcome: &'static str,
    item: &str,
    user: &str,
    message: String,
) -> Response {
    json_answer(
        status,
        outcome,
        &Refusal {
            outcome,
            item,
            user,
            message,
        },
    )
}

/// The ticket the request carries, if any.
fn presented(headers: &HeaderMap) -> Option<&str> {
    headers.get(TICKET_HEADER).and_then(|v| v.to_str().ok())
}

/// A standing, with its status and `Retry-After`.
fn answered(line: TicketLine) -> Response {
    let (status, outcome) = match line.state {
        "blocked" => (StatusCode::FORBIDDEN, "blocked"),
        state => (StatusCode::OK, line.outcome.unwrap_or(state)),
    };
    let wait = line.wait_ms();
    let mut response = json_answer(status, outcome, &line);
    if let Some(eta_ms) = wait {
        retry_after(&mut response, eta_ms);
    }
    response
}

/// What memory refuses for `item` now, before any ticket: outside the
/// window (before the start only without a pre-queue). A sell-out memory
/// knows was answered before, for every room mode alike
/// (`super::queue::sold_out_from_memory`).
fn closed_now(app: &App, item: &str, user: &str, now_ms: i64) -> Option<Response> {
    let early_ok = app.tickets.as_ref().is_some_and(|t| t.queues_early(item));
    if let Some(starts) = app
        .campaign
        .starts_at_ms
        .filter(|s| now_ms < *s && !early_ok)
    {
        let mut answer = refusal(
            StatusCode::TOO_EARLY,
            "not_started",
            item,
            user,
            format!(
                "the sale starts at {}",
                crate::util::text::time_or_dash(Some(starts))
            ),
        );
        retry_after(&mut answer, starts - now_ms);
        return Some(answer);
    }
    if app.campaign.ends_at_ms.is_some_and(|e| now_ms >= e) {
        return Some(refusal(
            StatusCode::GONE,
            "ended",
            item,
            user,
            "the sale has ended".to_string(),
        ));
    }
    None
}

/// `POST /v1/items/{item}/queue` for a ticket room; `None`: not one.
pub(crate) fn join(app: &App, item: &str, user: &str, headers: &HeaderMap) -> Option<Response> {
    let tickets = app.tickets.as_ref().filter(|t| t.has(item))?;
    let now_ms = app.cache.redis_now_ms();
    if let Some(closed) = closed_now(app, item, user, now_ms) {
        return Some(closed);
    }
    let line = tickets.join(item, user, presented(headers), now_ms)?;
    Some(answered(line))
}

/// `GET /v1/items/{item}/queue/{user}` for a ticket room; `None`: not one.
pub(crate) fn poll(app: &App, item: &str, user: &str, headers: &HeaderMap) -> Option<Response> {
    let tickets = app.tickets.as_ref().filter(|t| t.has(item))?;
    let now_ms = app.cache.redis_now_ms();
    if let Some(closed) = closed_now(app, item, user, now_ms) {
        return Some(closed);
    }
    let ticket = match checked(app, item, user, headers) {
        Ok(ticket) => ticket,
        Err(refused) => return Some(*refused),
    };
    tickets.standing(&ticket, now_ms).map(answered)
}

/// A buy's ticket for a ticket room: `Ok(None)` when `item` has none,
/// `Ok(Some(claim))` to pass to the buy script (the arrival it checks: a
/// pre-queue ticket's rank's place), `Err` the answer from memory
/// (`not_queued`, or `not_admitted` / `blocked` while the cursor this
/// instance mirrors has not reached the ticket: nothing sent to Redis).
pub(crate) fn for_buy(
    app: &App,
    item: &str,
    user: &str,
    headers: &HeaderMap,
) -> Result<Option<TicketClaim>, Box<Response>> {
    let Some(tickets) = app.tickets.as_ref().filter(|t| t.has(item)) else {
        return Ok(None);
    };
    let ticket = checked(app, item, user, headers)?;
    let now_ms = app.cache.redis_now_ms();
    let Some(line) = tickets.standing(&ticket, now_ms) else {
        return Ok(None);
    };
    let point = tickets.admission_point(&ticket);
    match line.state {
        "blocked" | "waiting" => {
            let outcome = Outcome::NotAdmitted;
            let wait = line.wait_ms();
            let mut answer = json_answer(
                super::api::status_of(outcome),
                outcome.as_str(),
                &NotYet {
                    outcome: outcome.as_str(),
                    line,
                },
            );
            if let Some(eta_ms) = wait {
                retry_after(&mut answer, eta_ms);
            }
            Err(Box::new(answer))
        }
        _ => Ok(point.map(|arrival_ms| TicketClaim {
            arrival_ms,
            key_id: ticket.key_id,
        })),
    }
}

/// A buy refused from memory before the holder's turn.
#[derive(Debug, Serialize)]
struct NotYet {
    outcome: &'static str,
    #[serde(flatten)]
    line: TicketLine,
}

/// The request's ticket, verified for `user` on `item`, or the 428 answer.
fn checked(
    app: &App,
    item: &str,
    user: &str,
    headers: &HeaderMap,
) -> Result<Ticket, Box<Response>> {
    let Some(tickets) = &app.tickets else {
        return Err(Box::new(not_queued(
            item,
            user,
            "this item takes no tickets",
        )));
    };
    let Some(text) = presented(headers) else {
        return Err(Box::new(not_queued(
            item,
            user,
            "no ticket: send the ticket of your join (POST /v1/items/{item}/queue) as the Seckill-Ticket header",
        )));
    };
    tickets.verify(item, user, text).map_err(|refused| {
        Box::new(not_queued(
            item,
            user,
            &format!("{}: join the queue again", refused.says()),
        ))
    })
}

fn not_queued(item: &str, user: &str, why: &str) -> Response {
    refusal(
        StatusCode::PRECONDITION_REQUIRED,
        Outcome::NotQueued.as_str(),
        item,
        user,
        why.to_string(),
    )
}
