//! `POST /v1/items/{item}/buy`: the body checked, a refusal from the cache
//! when one applies (no Redis call), else the attempt — its first round
//! trip on the shared async connection, a bucketed item's rare sweep and
//! `--wait-replicas` on a blocking one — and its answer and HTTP status.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use anyhow::Result;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;

use super::api::{self, BuyAnswer, BuyBody, Refusal};
use super::app::{App, admit, counted, error_answer, explain, json_answer, json_body, retry_after};
use crate::domain::item::answer::PurchaseAnswer;
use crate::domain::item::{Attempt, FirstCall, SaleItem};
use crate::domain::slot::{BuyRequest, Outcome};
use crate::redis_client::conn::Conn;
use crate::redis_client::failure;
use crate::redis_client::replicas;

pub(crate) async fn buy(
    State(app): State<Arc<App>>,
    Path(item): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let started = Instant::now();
    let permit = match admit(&app) {
        Ok(permit) => permit,
        Err(answer) => return counted(&app, "buy", "refused", started, *answer),
    };
    app.metrics.in_flight.fetch_add(1, Ordering::SeqCst);
    let answer = buy_answer(&app, item, &headers, body, started).await;
    app.metrics.in_flight.fetch_sub(1, Ordering::SeqCst);
    drop(permit);
    answer
}

async fn buy_answer(
    app: &Arc<App>,
    item: String,
    headers: &HeaderMap,
    body: Body,
    started: Instant,
) -> Response {
    let refused = |r: Refusal| {
        counted(
            app,
            "buy",
            r.kind,
            started,
            error_answer(r.status, r.kind, &r.message, None),
        )
    };
    let bytes = match json_body(app, headers, body).await {
        Ok(bytes) => bytes,
        Err(r) => return refused(r),
    };
    let body: BuyBody = match serde_json::from_slice(&bytes) {
        Ok(body) => body,
        Err(e) => return refused(Refusal::bad_request(format!("the body is not a buy: {e}"))),
    };
    if app.campaign.items.iter().all(|i| i.id != item) {
        return refused(Refusal {
            status: StatusCode::NOT_FOUND,
            kind: "unknown_item",
            message: format!("campaign {} has no item {item:?}", app.campaign.id),
        });
    }
    if let Err(r) = body.validate(app.campaign.per_user_limit) {
        return refused(r);
    }
    let request = BuyRequest {
        campaign: &app.campaign.id,
        item: &item,
        user: &body.user,
        qty: body.qty,
        request_id: Some(&body.request_id),
    };
    if let Some(outcome) = app.cache.refusal(&item, &body.user) {
        app.metrics.cache_hit(outcome.as_str());
        let shown = BuyAnswer {
            answer: PurchaseAnswer::refused(&request, outcome),
            from_cache: true,
        };
        return counted(
            app,
            "buy",
            outcome.as_str(),
            started,
            outcome_answer(app, &shown),
        );
    }
    let running = (item.clone(), body.user.clone(), body.request_id.clone());
    app.running
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(running.clone());
    let attempt = attempt(app, &request).await;
    app.running
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&running);
    match attempt {
        Ok(answer) => {
            let outcome = answer.outcome;
            let shown = BuyAnswer {
                answer,
                from_cache: false,
            };
            counted(
                app,
                "buy",
                outcome.as_str(),
                started,
                outcome_answer(app, &shown),
            )
        }
        Err(error) => {
            let (status, kind, message) = explain(&error, &app.target.display, &body.request_id);
            counted(
                app,
                "buy",
                kind,
                started,
                error_answer(status, kind, &message, Some(&body.request_id)),
            )
        }
    }
}

/// One attempt: its first round trip on the shared async connection; a
/// bucketed item's sweep, and `--wait-replicas` (WAIT must follow the write
/// on the connection that made it), on a blocking one.
async fn attempt(app: &Arc<App>, request: &BuyRequest<'_>) -> Result<PurchaseAnswer> {
    let campaign = &app.campaign;
    let sale = SaleItem::live(campaign, campaign.item(request.item)?);
    let timeout = campaign.payment_timeout_ms();
    if app.settings.wait_replicas.is_some() {
        return blocking(app, request, move |app, sale, request| {
            app.pool
                .with(|conn| replicated(app, conn, sale, request, timeout))
        })
        .await;
    }
    let mut handle = app.redis.handle().await?;
    let first = sale.reserve_first(&mut handle, request, timeout).await;
    if let Err(error) = &first
        && let Some(redis_error) = failure::find(error)
    {
        app.redis.failed(&handle, redis_error);
    }
    let done = match first? {
        FirstCall::Done(done) => done,
        FirstCall::Short { order_id, cost } => {
            let so_far = (order_id, cost);
            return blocking(app, request, move |app, sale, request| {
                let done = app
                    .pool
                    .with(|conn| sale.finish_short(conn, request, timeout, so_far))?;
                Ok(counted_attempt(app, request, done, None))
            })
            .await;
        }
    };
    Ok(counted_attempt(app, request, done, None))
}

/// `work` on a blocking thread, with the item and the request rebuilt there.
async fn blocking(
    app: &Arc<App>,
    request: &BuyRequest<'_>,
    work: impl FnOnce(&App, &SaleItem, &BuyRequest) -> Result<PurchaseAnswer> + Send + 'static,
) -> Result<PurchaseAnswer> {
    let app = Arc::clone(app);
    let (item, user, request_id, qty) = (
        request.item.to_string(),
        request.user.to_string(),
        request.request_id.unwrap_or("").to_string(),
        request.qty,
    );
    tokio::task::spawn_blocking(move || {
        let campaign = &app.campaign;
        let sale = SaleItem::live(campaign, campaign.item(&item)?);
        let request = BuyRequest {
            campaign: &campaign.id,
            item: &item,
            user: &user,
            qty,
            request_id: Some(&request_id),
        };
        work(&app, &sale, &request)
    })
    .await
    .unwrap_or_else(|_| {
        Err(anyhow::anyhow!(
            "the attempt's worker stopped: retry with the same request_id, never a new one"
        ))
    })
}

/// The attempt on `conn`, then WAIT for `--wait-replicas` after an `ok`.
fn replicated(
    app: &App,
    conn: &mut Conn,
    sale: &SaleItem,
    request: &BuyRequest,
    timeout: u64,
) -> Result<PurchaseAnswer> {
    let done = sale.reserve(conn, request, timeout)?;
    let Some((wanted, wait)) = app.settings.wait_replicas else {
        return Ok(counted_attempt(app, request, done, None));
    };
    if done.reply.outcome != Outcome::Ok {
        return Ok(counted_attempt(app, request, done, None));
    }
    let written: Vec<&str> = done.written.iter().map(String::as_str).collect();
    let confirmed = replicas::wait_after_buy(conn, &written, wanted, wait)?;
    app.metrics
        .round_trips
        .fetch_add(written.len() as u64, Ordering::Relaxed);
    Ok(counted_attempt(
        app,
        request,
        done,
        Some((confirmed, wanted)),
    ))
}

/// The answer of a finished attempt, its round trips counted; `waited`:
/// the replicas that confirmed it, and how many were asked for.
fn counted_attempt(
    app: &App,
    request: &BuyRequest,
    done: Attempt,
    waited: Option<(i64, u32)>,
) -> PurchaseAnswer {
    app.metrics
        .round_trips
        .fetch_add(u64::from(done.cost.round_trips), Ordering::Relaxed);
    let outcome = match waited {
        Some((confirmed, wanted)) if confirmed < i64::from(wanted) => Outcome::Unreplicated,
        _ => done.reply.outcome,
    };
    PurchaseAnswer::of(request, done.reply, outcome, waited.map(|(c, _)| c))
}

/// A buy answer with its status (and `Retry-After` on `rate_limited` and
/// `not_admitted`).
fn outcome_answer(app: &App, shown: &BuyAnswer) -> Response {
    let outcome = shown.answer.outcome;
    let mut answer = json_answer(api::status_of(outcome), shown);
    if outcome == Outcome::RateLimited {
        let seconds = app
            .campaign
            .rate_limit
            .map_or(1, |r| r.window.as_secs().max(1));
        if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
            answer.headers_mut().insert(header::RETRY_AFTER, value);
        }
    }
    if let Some(waiting) = shown
        .answer
        .waiting
        .as_ref()
        .filter(|_| outcome == Outcome::NotAdmitted)
    {
        retry_after(&mut answer, waiting.eta_ms);
    }
    answer
}
