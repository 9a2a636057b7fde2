//! `POST /v1/items/{item}/buy`: the buy operation (`domain::operation::buy`)
//! behind the door — checked, refused from the cache when memory knows the
//! answer (no Redis call), else run, and answered with its HTTP status.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;

use super::api::{self, BuyAnswer, BuyBody};
use super::app::App;
use super::cache;
use super::error::{json_answer, retry_after};
use super::extract::JsonBody;
use super::ticket_door;
use crate::domain::item::answer::PurchaseAnswer;
use crate::domain::operation::buy::{Bought, Buy, SeatWish};
use crate::domain::operation::{Failure, Retry};
use crate::domain::slot::{Outcome, TicketClaim};

pub(crate) async fn buy(
    State(app): State<Arc<App>>,
    Path(item): Path<String>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<BuyBody>,
) -> Result<Response, Failure> {
    let buy = Buy {
        item: &item,
        user: &body.user,
        qty: SeatWish::qty_of(body.qty, &body.seats),
        request_id: &body.request_id,
        wait: app.settings.wait_replicas,
        ticket: None,
        seats: body.seat_wish(),
        identity: body.identity.as_deref(),
        attendees: &body.attendees,
    };
    buy.check(&app.campaign)?;
    if let Some(outcome) = app.cache.refusal(&item, &body.user) {
        app.metrics.cache_hit(outcome.as_str());
        let answer = PurchaseAnswer::refused(&buy.request(&app.campaign), outcome)
            .opening(app.campaign.starts_at_ms);
        return Ok(outcome_answer(&app, answer, true));
    }
    let ticket = match ticket_door::for_buy(&app, &item, &body.user, &headers) {
        Ok(ticket) => ticket,
        Err(answer) => return Ok(*answer),
    };
    let running = (item.clone(), body.user.clone(), body.request_id.clone());
    let _running = Running::start(&app, running);
    let retry = Retry::SameRequestId(body.request_id.clone());
    let buy = Buy { ticket, ..buy };
    // Boxed: the attempt's state is large; inline, it would make every buy
    // request's future that large, cached refusals included, and a large
    // allocation costs glibc far more than a small one (measured: about 2 µs
    // of serve CPU per cached answer, docs/perf.md).
    let bought = if buy.is_one_call(&app.campaign) {
        let mut conn = app.shared_async(retry).await?;
        Box::pin(buy.run_async(&app.campaign, &mut conn, &app.target.display)).await?
    } else {
        let ticket = buy.ticket.clone();
        Box::pin(blocking_buy(&app, item.clone(), body, ticket, retry)).await?
    };
    let answer = &bought.answer;
    if answer.outcome == Outcome::SoldOut
        && answer.stock_left.is_some_and(|left| left <= 0)
        && !cache::knows_sold_out(&app.cache, &item)
    {
        // Its own proof: the next attempt here is answered from memory, not
        // after the recheck (a failure leaves it to that).
        let learner = Arc::clone(&app);
        let _ = tokio::task::spawn_blocking(move || {
            learner.pool.with(
                |e| e,
                |conn| cache::learn_sold_out(conn, &learner.cache, &learner.campaign, &item),
            )
        })
        .await;
    }
    app.metrics
        .round_trips
        .fetch_add(u64::from(bought.round_trips), Ordering::Relaxed);
    Ok(outcome_answer(&app, bought.answer, false))
}

/// A buy that sweeps buckets or waits for replicas: on a blocking worker
/// (with `--wait-replicas`, on a connection of its own).
async fn blocking_buy(
    app: &Arc<App>,
    item: String,
    body: BuyBody,
    ticket: Option<TicketClaim>,
    retry: Retry,
) -> Result<Bought, Failure> {
    let own = app.settings.wait_replicas.is_some();
    app.on_redis(own, retry, move |app, conn| {
        let buy = Buy {
            item: &item,
            user: &body.user,
            qty: SeatWish::qty_of(body.qty, &body.seats),
            request_id: &body.request_id,
            wait: app.settings.wait_replicas,
            ticket,
            seats: body.seat_wish(),
            identity: body.identity.as_deref(),
            attendees: &body.attendees,
        };
        buy.run(&app.campaign, conn, &app.target.display)
    })
    .await
}

/// An attempt this instance is running, known to the order lookup
/// (`pending`) until it is answered or dropped.
struct Running<'a> {
    app: &'a App,
    key: (String, String, String),
}

impl<'a> Running<'a> {
    fn start(app: &'a App, key: (String, String, String)) -> Running<'a> {
        app.running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key.clone());
        Running { app, key }
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.app
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.key);
    }
}

/// A buy answer with its status (and `Retry-After` on `rate_limited` and
/// `not_admitted`).
fn outcome_answer(app: &App, answer: PurchaseAnswer, from_cache: bool) -> Response {
    let outcome = answer.outcome;
    let waiting = answer.waiting.clone();
    let opens_at_ms = answer.opens_at_ms;
    let mut response = json_answer(
        api::status_of(outcome),
        outcome.as_str(),
        &BuyAnswer { answer, from_cache },
    );
    if outcome == Outcome::RateLimited {
        let seconds = app
            .campaign
            .rate_limit
            .map_or(1, |r| r.window.as_secs().max(1));
        if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
    }
    if let Some(waiting) = waiting.filter(|_| outcome == Outcome::NotAdmitted) {
        retry_after(&mut response, waiting.eta_ms);
    }
    if let Some(opens_at_ms) = opens_at_ms {
        retry_after(&mut response, opens_at_ms - app.cache.redis_now_ms());
    }
    response
}
