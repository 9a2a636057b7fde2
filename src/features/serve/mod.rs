//! `seckill serve`: the shop's front door — an HTTP/1.1 JSON API that runs
//! shoppers' attempts through the same item layer and scripts as `seckill
//! buy`, stateless, as many instances as the sale needs behind the shop's
//! load balancer (`docs/serve.md` has the API with examples).
//!
//! - `POST /v1/items/{item}/buy` `{"user", "qty", "request_id"}` → the
//!   outcome as `seckill buy --format json` says it, with its HTTP status
//!   ([`api::status_of`]); `request_id` is required, so a retry is safe.
//! - `GET /v1/items/{item}/orders/{user}[?request_id=R]` → `ok` with the
//!   order, `none`, or `pending` while this instance still runs that attempt.
//! - `POST /v1/items/{item}/queue` `{"user"}` and `GET
//!   /v1/items/{item}/queue/{user}`: the waiting room's door ([`queue`]).
//! - `POST /v1/orders/{order}/pay|cancel`: operator endpoints, only with
//!   `--operator-token-file` (a bearer token compared in constant time).
//! - `GET /healthz`, `GET /metrics`.
//!
//! Cheap refusals: an item sold out for good, or outside its window, is
//! refused from memory with no Redis call ([`cache`]). Bad input is refused
//! before Redis is touched: 400 (malformed JSON, unknown or missing fields,
//! ids too long, qty out of range), 413 (a body over [`MAX_BODY`]), 415 (not
//! JSON), 408 (a body slower than `--body-timeout`); a client slower than
//! `--header-timeout` sending its headers is disconnected. At most
//! `--max-in-flight` requests are answered at once; the rest get 503 with
//! `Retry-After` at once instead of queueing without bound. SIGTERM stops
//! accepting, lets requests in flight finish within `--shutdown-grace`, and
//! answers 503 to any that still arrive.
//!
//! Redis: attempts run on blocking worker threads, each with a connection of
//! its own from a pool (a connection that failed is never reused: it may
//! still owe a reply). A reply lost after the attempt was sent answers 504,
//! "retry with the same request_id"; a refusal that proves nothing ran, 503.

pub(crate) mod api;
pub(crate) mod cache;
pub(crate) mod metrics;
mod queue;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::{Deserialize, Serialize};

use api::{BuyAnswer, BuyBody, ErrorBody, ErrorField, Refusal};
use cache::Cache;
use metrics::Metrics;

use crate::domain::item::SaleItem;
use crate::domain::reservations::{self, OrderOutcome, OrderResult};
use crate::domain::slot::{BuyRequest, Outcome};
use crate::model::campaign::Campaign;
use crate::model::keys::ItemKeys;
use crate::redis_client::conn::{Conn, RedisTarget};
use crate::redis_client::failure::{self, Failure};
use crate::redis_client::replicas;
use crate::util::log;

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

/// What a `serve` run did, when it stopped.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Served {
    /// Where it listened.
    pub(crate) listened_on: String,
    /// Requests answered.
    pub(crate) answered: u64,
    /// Requests still in flight when the shutdown grace ran out (answered
    /// by nobody: their clients saw the connection close).
    pub(crate) cut_at_shutdown: u64,
}

/// Shared by every request.
struct App {
    campaign: Campaign,
    target: RedisTarget,
    settings: Settings,
    cache: Cache,
    pool: Pool,
    permits: Arc<tokio::sync::Semaphore>,
    draining: AtomicBool,
    metrics: Metrics,
    answered: AtomicU64,
    /// Attempts this instance is running: (item, user, request id).
    running: Mutex<HashSet<(String, String, String)>>,
}

/// A connection could not be made: nothing was sent, a new attempt is safe.
#[derive(Debug)]
struct NotSent;

impl std::fmt::Display for NotSent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("nothing was sent")
    }
}

/// Blocking Redis connections, one per worker thread at a time.
struct Pool {
    target: RedisTarget,
    idle: Mutex<Vec<Conn>>,
}

impl Pool {
    /// Run `call` on an idle connection (or a new one); a connection whose
    /// call failed is dropped, never reused.
    fn with<T>(&self, call: impl FnOnce(&mut Conn) -> Result<T>) -> Result<T> {
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

/// Serve until SIGTERM or SIGINT; `ready` gets the bound address first.
pub(crate) fn run(
    campaign: Campaign,
    target: RedisTarget,
    settings: Settings,
    ready: impl FnOnce(SocketAddr),
) -> Result<Served> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(settings.workers.max(1))
        .thread_name("serve")
        .enable_all()
        .build()
        .context("cannot start the HTTP runtime")?;
    let app = Arc::new(App {
        cache: Cache::new(&campaign),
        pool: Pool {
            target: target.clone(),
            idle: Mutex::new(Vec::new()),
        },
        permits: Arc::new(tokio::sync::Semaphore::new(settings.max_in_flight)),
        draining: AtomicBool::new(false),
        metrics: Metrics::default(),
        answered: AtomicU64::new(0),
        running: Mutex::new(HashSet::new()),
        campaign,
        target,
        settings,
    });
    // The first refresh before the first request: a cache that knows the
    // window and any sell-out from the start.
    app.pool
        .with(|conn| cache::refresh(conn, &app.cache, &app.campaign))
        .context("cannot read the campaign's state from Redis")?;
    let refresher = spawn_refresher(Arc::clone(&app));
    let served = runtime.block_on(accept(Arc::clone(&app), ready));
    app.draining.store(true, Ordering::SeqCst);
    let _ = refresher.join();
    served
}

/// Re-read every item's state every `--recheck` until the shutdown.
fn spawn_refresher(app: Arc<App>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut failing = false;
        while !app.draining.load(Ordering::SeqCst) {
            std::thread::sleep(app.settings.recheck);
            let refreshed = app
                .pool
                .with(|conn| cache::refresh(conn, &app.cache, &app.campaign));
            match (refreshed, failing) {
                (Err(error), false) => {
                    failing = true;
                    log::line(
                        "serve",
                        format!(
                            "cannot refresh the cache from Redis (retrying every {:?}): {}",
                            app.settings.recheck,
                            crate::util::error_text::render(&error)
                        ),
                    );
                }
                (Ok(()), true) => {
                    failing = false;
                    log::line("serve", "the cache is refreshed from Redis again");
                }
                _ => {}
            }
        }
    })
}

/// Accept connections until a signal, then drain.
async fn accept(app: Arc<App>, ready: impl FnOnce(SocketAddr)) -> Result<Served> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use hyper_util::server::graceful::GracefulShutdown;
    use hyper_util::service::TowerToHyperService;

    let listener = tokio::net::TcpListener::bind(app.settings.listen)
        .await
        .with_context(|| format!("cannot listen on {}", app.settings.listen))?;
    let bound = listener.local_addr().context("the listening address")?;
    ready(bound);
    let router = routes(Arc::clone(&app));
    let graceful = GracefulShutdown::new();
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("cannot watch SIGTERM")?;
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                let service = TowerToHyperService::new(router.clone());
                let connection = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(app.settings.header_timeout)
                    .keep_alive(true)
                    .serve_connection(TokioIo::new(stream), service);
                let watched = graceful.watch(connection);
                tokio::spawn(async move {
                    let _ = watched.await;
                });
            }
            _ = terminate.recv() => break,
            _ = tokio::signal::ctrl_c() => break,
        }
    }
    app.draining.store(true, Ordering::SeqCst);
    drop(listener);
    log::line(
        "serve",
        format!(
            "stopping: no new connections; requests in flight get {:?}",
            app.settings.shutdown_grace
        ),
    );
    let cut_at_shutdown =
        match tokio::time::timeout(app.settings.shutdown_grace, graceful.shutdown()).await {
            Ok(()) => 0,
            Err(_) => app.metrics.in_flight.load(Ordering::SeqCst),
        };
    Ok(Served {
        listened_on: format!("http://{bound}"),
        answered: app.answered.load(Ordering::SeqCst),
        cut_at_shutdown,
    })
}

fn routes(app: Arc<App>) -> Router {
    Router::new()
        .route("/v1/items/{item}/buy", post(buy))
        .route("/v1/items/{item}/orders/{user}", get(order_of))
        .route("/v1/items/{item}/queue", post(queue::join))
        .route("/v1/items/{item}/queue/{user}", get(queue::position))
        .route("/v1/orders/{order}/pay", post(pay))
        .route("/v1/orders/{order}/cancel", post(cancel))
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics_text))
        .fallback(not_found)
        .with_state(app)
}

/// A JSON answer with `status`.
fn json_answer(status: StatusCode, body: &impl Serialize) -> Response {
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
fn error_answer(
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
fn admit(app: &App) -> Result<tokio::sync::OwnedSemaphorePermit, Box<Response>> {
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
async fn json_body(
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
fn counted(
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

async fn buy(
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
    let answer = |outcome: Outcome, reply: Option<Reply>, acked, from_cache| {
        let (order_id, stock_left, problem, waiting) = reply.unwrap_or_default();
        BuyAnswer {
            outcome,
            order_id,
            stock_left,
            item: item.clone(),
            user: body.user.clone(),
            qty: body.qty,
            request_id: body.request_id.clone(),
            replicas_acked: acked,
            problem,
            from_cache,
            waiting,
        }
    };
    if let Some(outcome) = app.cache.refusal(&item, &body.user) {
        app.metrics.cache_hit(outcome.as_str());
        let shown = answer(outcome, None, None, true);
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
    let attempt = {
        let app = Arc::clone(app);
        let (item, user, request_id, qty) = (
            item.clone(),
            body.user.clone(),
            body.request_id.clone(),
            body.qty,
        );
        tokio::task::spawn_blocking(move || attempt(&app, &item, &user, &request_id, qty)).await
    };
    app.running
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&running);
    match attempt {
        Ok(Ok((outcome, reply, acked))) => {
            let shown = answer(outcome, Some(reply), acked, false);
            counted(
                app,
                "buy",
                outcome.as_str(),
                started,
                outcome_answer(app, &shown),
            )
        }
        Ok(Err(error)) => {
            let (status, kind, message) = explain(&error, &app.target.display, &body.request_id);
            counted(
                app,
                "buy",
                kind,
                started,
                error_answer(status, kind, &message, Some(&body.request_id)),
            )
        }
        Err(_) => counted(
            app,
            "buy",
            "outcome_unknown",
            started,
            error_answer(
                StatusCode::GATEWAY_TIMEOUT,
                "outcome_unknown",
                "the attempt's worker stopped: retry with the same request_id, never a new one",
                Some(&body.request_id),
            ),
        ),
    }
}

type Reply = (
    Option<String>,
    Option<i64>,
    Option<String>,
    Option<crate::redis_client::scripts::buy::Waiting>,
);

/// One attempt on a worker thread: the buy, then WAIT when asked.
fn attempt(
    app: &App,
    item: &str,
    user: &str,
    request_id: &str,
    qty: u32,
) -> Result<(Outcome, Reply, Option<i64>)> {
    let campaign = &app.campaign;
    let sale = SaleItem::live(campaign, campaign.item(item)?);
    let request = BuyRequest {
        campaign: &campaign.id,
        item,
        user,
        qty,
        request_id: Some(request_id),
    };
    app.pool.with(|conn| {
        let done = sale.reserve(conn, &request, campaign.payment_timeout_ms())?;
        app.metrics
            .round_trips
            .fetch_add(u64::from(done.cost.round_trips), Ordering::Relaxed);
        let reply = done.reply;
        let mut outcome = reply.outcome;
        let mut acked = None;
        if let (Some((wanted, timeout)), Outcome::Ok) = (app.settings.wait_replicas, outcome) {
            let written: Vec<&str> = done.written.iter().map(String::as_str).collect();
            let confirmed = replicas::wait_after_buy(conn, &written, wanted, timeout)?;
            app.metrics
                .round_trips
                .fetch_add(written.len() as u64, Ordering::Relaxed);
            acked = Some(confirmed);
            if confirmed < i64::from(wanted) {
                outcome = Outcome::Unreplicated;
            }
        }
        Ok((
            outcome,
            (
                reply.order_id,
                reply.stock_left,
                reply.problem,
                reply.waiting,
            ),
            acked,
        ))
    })
}

/// A buy answer with its status (and `Retry-After` on `rate_limited`).
fn outcome_answer(app: &App, shown: &BuyAnswer) -> Response {
    let mut answer = json_answer(api::status_of(shown.outcome), shown);
    if shown.outcome == Outcome::RateLimited {
        let seconds = app
            .campaign
            .rate_limit
            .map_or(1, |r| r.window.as_secs().max(1));
        if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
            answer.headers_mut().insert(header::RETRY_AFTER, value);
        }
    }
    if let Some(waiting) = shown
        .waiting
        .as_ref()
        .filter(|_| shown.outcome == Outcome::NotAdmitted)
    {
        queue::retry_after(&mut answer, waiting.eta_ms);
    }
    answer
}

/// What a failed attempt means for the client: refused before running
/// (503, a new attempt is safe), unknown (504, retry with the same request
/// id), or failed at the server (500, retry with the same request id).
fn explain(
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

/// `GET /v1/items/{item}/orders/{user}`'s query.
#[derive(Debug, Deserialize)]
struct LookupQuery {
    request_id: Option<String>,
}

/// A user's result for an item.
#[derive(Debug, Serialize)]
struct Lookup {
    item: String,
    user: String,
    /// `ok` (bought), `none`, or `pending` (this instance runs that attempt now).
    result: &'static str,
    /// Units the user holds of the item.
    units: i64,
    /// The user's latest order.
    order_id: Option<String>,
    /// The order of `request_id`, when it bought.
    request_order_id: Option<String>,
    /// `confirmed`, or a reservation's `reserved` / `paid` / `expired` / `cancelled`.
    state: Option<String>,
    /// A reservation's payment deadline (Unix ms, Redis clock).
    deadline_ms: Option<i64>,
}

async fn order_of(
    State(app): State<Arc<App>>,
    Path((item, user)): Path<(String, String)>,
    Query(query): Query<LookupQuery>,
) -> Response {
    let started = Instant::now();
    let _permit = match admit(&app) {
        Ok(permit) => permit,
        Err(answer) => return counted(&app, "orders", "refused", started, *answer),
    };
    for (what, id) in [
        ("user", Some(&user)),
        ("request_id", query.request_id.as_ref()),
    ] {
        if let Some(id) = id
            && let Err(r) = api::check_id(what, id)
        {
            return counted(
                &app,
                "orders",
                r.kind,
                started,
                error_answer(r.status, r.kind, &r.message, None),
            );
        }
    }
    if app.campaign.items.iter().all(|i| i.id != item) {
        let message = format!("campaign {} has no item {item:?}", app.campaign.id);
        return counted(
            &app,
            "orders",
            "unknown_item",
            started,
            error_answer(StatusCode::NOT_FOUND, "unknown_item", &message, None),
        );
    }
    let looked = {
        let app = Arc::clone(&app);
        let (item, user, request_id) = (item.clone(), user.clone(), query.request_id.clone());
        tokio::task::spawn_blocking(move || lookup(&app, &item, &user, request_id.as_deref())).await
    };
    match looked {
        Ok(Ok(mut found)) => {
            if found.result == "none"
                && let Some(request_id) = &query.request_id
                && app
                    .running
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .contains(&(item.clone(), user.clone(), request_id.clone()))
            {
                found.result = "pending";
            }
            counted(
                &app,
                "orders",
                found.result,
                started,
                json_answer(StatusCode::OK, &found),
            )
        }
        Ok(Err(error)) => {
            let message = crate::util::error_text::render(&error);
            counted(
                &app,
                "orders",
                "redis_error",
                started,
                error_answer(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "redis_error",
                    &message,
                    None,
                ),
            )
        }
        Err(_) => counted(
            &app,
            "orders",
            "redis_error",
            started,
            error_answer(
                StatusCode::SERVICE_UNAVAILABLE,
                "redis_error",
                "the lookup's worker stopped",
                None,
            ),
        ),
    }
}

/// The user's result, read from the slot their orders live in.
fn lookup(app: &App, item: &str, user: &str, request_id: Option<&str>) -> Result<Lookup> {
    let campaign = &app.campaign;
    let sale = SaleItem::live(campaign, campaign.item(item)?);
    let keys: ItemKeys = sale.layout().home(user).keys;
    let found = app
        .pool
        .with(|conn| crate::domain::lookup::look_up(conn, &keys, user, request_id))?;
    app.metrics.round_trips.fetch_add(1, Ordering::Relaxed);
    Ok(Lookup {
        item: item.to_string(),
        user: user.to_string(),
        result: if found.units > 0 || found.request_order_id.is_some() {
            "ok"
        } else {
            "none"
        },
        units: found.units,
        order_id: found.latest_order_id,
        request_order_id: found.request_order_id,
        state: found.state,
        deadline_ms: found.deadline_ms,
    })
}

/// The body of `POST /v1/orders/{order}/cancel` (optional).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CancelBody {
    #[serde(default)]
    reason: String,
}

async fn pay(
    State(app): State<Arc<App>>,
    Path(order): Path<String>,
    headers: HeaderMap,
) -> Response {
    operator_call(app, "pay", order, headers, String::new()).await
}

async fn cancel(
    State(app): State<Arc<App>>,
    Path(order): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let started = Instant::now();
    let reason = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(bytes) if bytes.is_empty() => String::new(),
        Ok(bytes) => match serde_json::from_slice::<CancelBody>(&bytes) {
            Ok(body) => body.reason,
            Err(e) => {
                let message = format!("the body is not a cancel: {e}");
                return counted(
                    &app,
                    "cancel",
                    "bad_request",
                    started,
                    error_answer(StatusCode::BAD_REQUEST, "bad_request", &message, None),
                );
            }
        },
        Err(_) => {
            let message = format!("the body is over {MAX_BODY} bytes");
            return counted(
                &app,
                "cancel",
                "payload_too_large",
                started,
                error_answer(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "payload_too_large",
                    &message,
                    None,
                ),
            );
        }
    };
    operator_call(app, "cancel", order, headers, reason).await
}

/// `pay` or `cancel`, for a caller with the operator token.
async fn operator_call(
    app: Arc<App>,
    action: &'static str,
    order: String,
    headers: HeaderMap,
    reason: String,
) -> Response {
    let started = Instant::now();
    let Some(token) = &app.settings.operator_token else {
        return not_found().await;
    };
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    if !api::same_token(presented.as_bytes(), token) {
        return counted(
            &app,
            action,
            "unauthorized",
            started,
            error_answer(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "the operator endpoints need Authorization: Bearer <the --operator-token-file token>",
                None,
            ),
        );
    }
    let _permit = match admit(&app) {
        Ok(permit) => permit,
        Err(answer) => return counted(&app, action, "refused", started, *answer),
    };
    let done = {
        let app = Arc::clone(&app);
        tokio::task::spawn_blocking(move || {
            app.pool.with(|conn| match action {
                "pay" => reservations::pay(conn, &app.campaign, None, &order),
                _ => reservations::cancel(conn, &app.campaign, None, &order, &reason),
            })
        })
        .await
    };
    match done {
        Ok(Ok(result)) => {
            let status = order_status(&result);
            counted(
                &app,
                action,
                result.reply.outcome.as_str(),
                started,
                json_answer(status, &result),
            )
        }
        Ok(Err(error)) => {
            let usage = error.chain().any(|c| {
                c.downcast_ref::<crate::model::error::UsageError>()
                    .is_some()
            });
            let message = crate::util::error_text::render(&error);
            match usage {
                true => counted(
                    &app,
                    action,
                    "bad_request",
                    started,
                    error_answer(StatusCode::BAD_REQUEST, "bad_request", &message, None),
                ),
                false => counted(
                    &app,
                    action,
                    "outcome_unknown",
                    started,
                    error_answer(
                        StatusCode::GATEWAY_TIMEOUT,
                        "outcome_unknown",
                        &format!("{message}; the call is safe to repeat"),
                        None,
                    ),
                ),
            }
        }
        Err(_) => counted(
            &app,
            action,
            "outcome_unknown",
            started,
            error_answer(
                StatusCode::GATEWAY_TIMEOUT,
                "outcome_unknown",
                "the call's worker stopped; the call is safe to repeat",
                None,
            ),
        ),
    }
}

/// The HTTP status of a pay/cancel outcome.
fn order_status(result: &OrderResult) -> StatusCode {
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

/// 200 while Redis answers and the instance is not stopping, else 503.
async fn healthz(State(app): State<Arc<App>>) -> Response {
    if app.draining.load(Ordering::SeqCst) {
        return error_answer(
            StatusCode::SERVICE_UNAVAILABLE,
            "shutting_down",
            "stopping",
            None,
        );
    }
    let probe = {
        let app = Arc::clone(&app);
        tokio::task::spawn_blocking(move || {
            app.pool
                .with(|conn| Ok(redis::cmd("PING").query::<String>(conn)?))
        })
        .await
    };
    match probe {
        Ok(Ok(_)) => json_answer(StatusCode::OK, &serde_json::json!({"status": "ok"})),
        Ok(Err(e)) => error_answer(
            StatusCode::SERVICE_UNAVAILABLE,
            "redis_unreachable",
            &crate::util::error_text::render(&e),
            None,
        ),
        Err(_) => error_answer(
            StatusCode::SERVICE_UNAVAILABLE,
            "redis_unreachable",
            "the probe's worker stopped",
            None,
        ),
    }
}

async fn metrics_text(State(app): State<Arc<App>>) -> Response {
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static(crate::util::prometheus::CONTENT_TYPE),
        )],
        app.metrics.render(&app.campaign.id),
    )
        .into_response()
}

async fn not_found() -> Response {
    error_answer(
        StatusCode::NOT_FOUND,
        "not_found",
        "no such endpoint: POST /v1/items/{item}/buy, GET /v1/items/{item}/orders/{user}, GET /healthz, GET /metrics (docs/serve.md)",
        None,
    )
}
