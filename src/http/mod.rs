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
//! - `GET /v1/items/{item}/seats?section=A`: a seat item's section for the
//!   shop's seat page, from a snapshot at most 100 ms old ([`seats`]).
//! - `POST /v1/orders/{order}/pay|cancel`: operator endpoints, only with
//!   `--operator-token-file` (a bearer token compared in constant time),
//!   on their own credential (`--operator-redis`), proven at start able to
//!   run the pay and release scripts ([`check_operator_credential`]).
//! - `GET /healthz`, `GET /metrics`.
//!
//! Cheap refusals: an item sold out for good, or outside its window, is
//! refused from memory with no Redis call ([`cache`]), learned from the
//! instance's own `sold_out` reply and from the sell-out broadcast
//! ([`broadcast`]) as soon as it is true, and forgotten as soon as a unit
//! comes back. Bad input is refused
//! before Redis is touched: 400 (malformed JSON, unknown or missing fields,
//! ids too long, qty out of range), 413 (a body over [`app::MAX_BODY`]), 415 (not
//! JSON), 408 (a body slower than `--body-timeout`); a client slower than
//! `--header-timeout` sending its headers is disconnected. At most
//! `--max-in-flight` requests are answered at once; the rest get 503 with
//! `Retry-After` at once instead of queueing without bound. SIGTERM stops
//! accepting, lets requests in flight finish within `--shutdown-grace`, and
//! answers 503 to any that still arrive.
//!
//! Redis: attempts share one multiplexed async connection (standalone) or
//! one cluster router (a connection per master, opened when first needed;
//! a master that stops answering refused unsent until its replica takes
//! over), so the commands of requests in flight are pipelined
//! ([`crate::redis_client::multiplexed`]); a
//! bucketed item's sweep, `--wait-replicas`, lookups, the operator calls and
//! the cache's refresh use blocking connections from a pool. A connection
//! that broke is replaced, never reused (it may still owe replies). A reply
//! lost after the attempt was sent answers 504, "retry with the same
//! request_id"; a connection that could not be made or a refusal that
//! proves nothing ran, 503.
//!
//! May import: operator, domain, redis_client, model, util.

pub(crate) mod api;
mod app;
mod broadcast;
mod buy;
pub(crate) mod cache;
mod error;
mod extract;
mod layer;
pub(crate) mod metrics;
mod operator;
mod orders;
mod probes;
mod queue;
mod seat_pages;
mod seats;
pub(crate) mod service;
mod ticket_door;
mod ticket_room;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use axum::Router;
use axum::routing::{get, post};
use serde::Serialize;

pub(crate) use app::Settings;
use app::{App, Pool};
use cache::Cache;
use metrics::Metrics;

use crate::domain::item::SaleItem;
use crate::domain::waiting_room::ticket;
use crate::model::campaign::Campaign;
use crate::model::error::usage;
use crate::redis_client::conn::RedisTarget;
use crate::redis_client::failure;
use crate::redis_client::multiplexed::Multiplexed;
use crate::redis_client::scripts::acl_probe::{self, AclProbe};
use crate::redis_client::scripts::{pay, release};
use crate::util::log;

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
    let redis = runtime
        .block_on(Multiplexed::connect(&target))
        .map(Arc::new)
        .context("cannot start serve's Redis connection")?;
    let operator = match (&settings.operator_token, &settings.operator_redis) {
        (None, _) => None,
        (Some(_), None) => {
            check_operator_credential(&campaign, &target, false)?;
            None
        }
        (Some(_), Some(operator)) => {
            check_operator_credential(&campaign, operator, true)?;
            let redis = runtime
                .block_on(Multiplexed::connect(operator))
                .map(Arc::new)
                .context("cannot start the operator endpoints' Redis connection")?;
            Some((operator.clone(), redis))
        }
    };
    let tickets = ticket_room::Tickets::of(&campaign, settings.room_secret.clone())
        .map_err(|e| usage(format!("{e:#}")))?;
    let app = Arc::new(App {
        cache: Cache::new(&campaign),
        seat_pages: seat_pages::SeatPages::new(&campaign),
        tickets,
        redis,
        operator,
        pool: Pool {
            target: target.clone(),
            idle: Mutex::new(Vec::new()),
        },
        permits: Arc::new(tokio::sync::Semaphore::new(settings.max_in_flight)),
        draining: AtomicBool::new(false),
        redis_up: AtomicBool::new(true),
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
        .with(
            |e| e,
            |conn| cache::refresh(conn, &app.cache, &app.campaign),
        )
        .context("cannot read the campaign's state from Redis")?;
    // A ticket room counts on this instance's mark before its first ticket:
    // the cursor never passes an arrival nobody has counted yet.
    if let Some(tickets) = &app.tickets {
        app.pool
            .with(
                |e| e,
                |conn| tickets.beat(conn, app.cache.redis_now_ms(), false),
            )
            .context("cannot start the ticket rooms in Redis")?;
        log::line(
            "serve",
            format!(
                "ticket rooms on; this instance signs as key {}",
                tickets.instance
            ),
        );
    }
    let refresher = spawn_refresher(Arc::clone(&app));
    let beater = app
        .tickets
        .is_some()
        .then(|| spawn_beater(Arc::clone(&app)));
    let copiers: Vec<_> = match app.tickets.as_ref().is_some_and(|t| t.copies_to_buckets()) {
        true => [false, true]
            .map(|slow| spawn_copier(Arc::clone(&app), slow))
            .into(),
        false => Vec::new(),
    };
    // Not joined at the end: it notices the shutdown within its tick.
    broadcast::spawn_listener(Arc::clone(&app))
        .context("cannot start the sell-out broadcast's listener")?;
    let served = runtime.block_on(accept(Arc::clone(&app), ready));
    app.draining.store(true, Ordering::SeqCst);
    let _ = refresher.join();
    if let Some(beater) = beater {
        let _ = beater.join();
    }
    for copier in copiers {
        let _ = copier.join();
    }
    served
}

/// Copy the lease holder's cursor to a bucketed ticket room's buckets every
/// [`ticket::TICK_MS`] until the shutdown: the fast lane (`slow` false) for
/// buckets whose copies work, the slow lane for those whose master failed
/// or hangs (`Tickets::copy_lane`), each on its own connection.
fn spawn_copier(app: Arc<App>, slow: bool) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let Some(tickets) = &app.tickets else {
            return;
        };
        let every = std::time::Duration::from_millis(ticket::TICK_MS);
        let lane = if slow { "retrying" } else { "copying" };
        let (mut failing, mut beats) = (false, 0);
        while !app.draining.load(Ordering::SeqCst) {
            let started = std::time::Instant::now();
            let copied = app.pool.with(|e| e, |conn| tickets.copy_lane(conn, slow));
            match (copied, failing) {
                (Err(error), false) => {
                    failing = true;
                    log::line(
                        "serve",
                        format!(
                            "{lane} the ticket cursor to the buckets: {} (the other buckets \
                             go on; retrying every {every:?})",
                            crate::util::error_text::render(&error)
                        ),
                    );
                }
                (Ok(()), true) => {
                    failing = false;
                    log::line("serve", format!("{lane} the ticket cursor works again"));
                }
                _ => {}
            }
            // The fast lane copies as soon as a beat moved the cursor.
            match slow {
                true => std::thread::sleep(every.saturating_sub(started.elapsed())),
                false => beats = tickets.wait_for_beat(beats, every),
            }
        }
    })
}

/// Beat every ticket room every [`ticket::TICK_MS`] until the shutdown,
/// then once more leaving (the last counts flushed, the mark dropped so the
/// cursor does not wait for this instance).
fn spawn_beater(app: Arc<App>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let Some(tickets) = &app.tickets else {
            return;
        };
        let every = std::time::Duration::from_millis(ticket::TICK_MS);
        let mut failing = false;
        loop {
            let leaving = app.draining.load(Ordering::SeqCst);
            let started = std::time::Instant::now();
            let beat = app.pool.with(
                |e| e,
                |conn| tickets.beat(conn, app.cache.redis_now_ms(), leaving),
            );
            match (beat, failing) {
                (Err(error), false) => {
                    failing = true;
                    log::line(
                        "serve",
                        format!(
                            "cannot beat the ticket rooms (retrying every {every:?}): {}",
                            crate::util::error_text::render(&error)
                        ),
                    );
                }
                (Ok(()), true) => {
                    failing = false;
                    log::line("serve", "the ticket rooms beat again");
                }
                _ => {}
            }
            if leaving {
                return;
            }
            std::thread::sleep(every.saturating_sub(started.elapsed()));
        }
    })
}

/// Refuse to start (a usage error, exit 2) when the operator endpoints'
/// credential may not run the pay and release scripts: every payment would
/// then be refused. Asked of Redis's own ACL with `lua/acl_probe.lua` on
/// every slot of every item (the keys of those scripts, and the commands
/// they send on them), nothing run or written. `own`: the credential is
/// `--operator-redis`'s, else the door's.
fn check_operator_credential(campaign: &Campaign, target: &RedisTarget, own: bool) -> Result<()> {
    let mut checks = acl_probe::checks_of(&[&pay::SPEC, &release::SPEC]);
    // The sell-out broadcast is advice (the scripts publish with pcall): a
    // credential without channel rights still pays and cancels.
    checks.retain(|check| check.split(' ').next() != Some("SPUBLISH"));
    // A promoted replica, a restarted Redis: the scripts are loaded again.
    checks.push("SCRIPT LOAD return".to_string());
    let mut conn = target
        .connect()
        .context("cannot check the operator endpoints' Redis credential")?;
    let mut refused: Vec<String> = Vec::new();
    let mut note = |what: String| {
        if !refused.contains(&what) {
            refused.push(what);
        }
    };
    for item in SaleItem::select(campaign, None)? {
        for slot in item.slots() {
            let keys = &slot.keys;
            let probe = AclProbe {
                reservations: keys.reservations.clone(),
                deadlines: keys.deadlines.clone(),
                meta: keys.meta.clone(),
                stock: keys.stock.clone(),
                buyers: keys.buyers.clone(),
                buyer_orders: keys.buyer_orders.clone(),
                orders: keys.orders.clone(),
                reservation_counts: keys.reservation_counts.clone(),
                checks: checks.clone(),
            };
            match probe.refused(&mut conn) {
                Ok(checks) => checks
                    .iter()
                    .for_each(|check| note(acl_probe::spelled(check))),
                Err(error)
                    if failure::refused_for_credentials(&anyhow::Error::new(error.clone())) =>
                {
                    note(format!(
                        "EVALSHA on the keys of item {}: {error}",
                        item.id()
                    ));
                }
                Err(error) => {
                    return Err(anyhow::Error::new(error).context(
                        "cannot ask Redis whether the operator endpoints may pay and cancel",
                    ));
                }
            }
        }
    }
    if refused.is_empty() {
        return Ok(());
    }
    let whose = match own {
        true => "--operator-redis",
        false => "--redis (no --operator-redis was given)",
    };
    Err(usage(format!(
        "the operator endpoints (--operator-token-file) would refuse every payment: Redis user \
         {} of {whose} may not run the pay and cancel scripts ({}); start serve with \
         --operator-redis URL as the operator's user (`seckill acl --role operator`), or \
         without --operator-token-file",
        target.user(),
        refused.join(", ")
    )))
}

/// Re-read every item's state every `--recheck` until the shutdown.
fn spawn_refresher(app: Arc<App>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut failing = false;
        while !app.draining.load(Ordering::SeqCst) {
            std::thread::sleep(app.settings.recheck);
            let refreshed = app.pool.with(
                |e| e,
                |conn| cache::refresh(conn, &app.cache, &app.campaign),
            );
            app.redis_up.store(refreshed.is_ok(), Ordering::Relaxed);
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
                let Ok((stream, _)) = accepted else {
                    // Out of file descriptors, say: a pause, not a busy loop.
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                };
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

/// The endpoints: `/v1` behind the door's one layer (`layer::DoorLayer`); the
/// operator's behind the token check first, so a caller without the token
/// is refused before its body is read or a place is taken; the probes and
/// the 404 beside them.
fn routes(app: Arc<App>) -> Router {
    let door = || layer::DoorLayer(Arc::clone(&app));
    let shop = Router::new()
        .route("/v1/items/{item}/buy", post(buy::buy))
        .route("/v1/items/{item}/orders/{user}", get(orders::order_of))
        .route("/v1/items/{item}/queue", post(queue::join))
        .route("/v1/items/{item}/queue/{user}", get(queue::position))
        .route("/v1/items/{item}/register", post(queue::register))
        .route("/v1/items/{item}/seats", get(seats::seats_of))
        .route_layer(door());
    let operator = Router::new()
        .route("/v1/orders/{order}/pay", post(operator::pay))
        .route("/v1/orders/{order}/cancel", post(operator::cancel))
        .route_layer(door())
        .route_layer(axum::middleware::from_fn_with_state(
            Arc::clone(&app),
            operator::token,
        ));
    Router::new()
        .merge(shop)
        .merge(operator)
        .route("/healthz", get(probes::healthz))
        .route("/metrics", get(probes::metrics_text))
        .fallback(probes::not_found)
        .with_state(app)
}
