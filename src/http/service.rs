//! The probes of the long-running commands (`consume`, `expire --loop`,
//! `rebalance --watch`, `regions rebalance --watch`) at `--metrics-listen`: `GET /metrics` and
//! `GET /healthz`, served on the door's HTTP stack (axum on a small tokio
//! runtime of its own) from the pages `operator::monitor::service` computes.
//!
//! The pages run on a thread of their own, one request at a time: they hold
//! a Redis and a database connection that need not be `Send`, and a scraper
//! and a probe every few seconds need no more. Each page is computed afresh
//! per request, so what it says is current, not the worker's last view.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::sync::mpsc;

use anyhow::{Context, Result};
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::domain::orders::StoreLocation;
use crate::model::campaign::{Campaign, Item};
use crate::operator::monitor::service::{
    MoverState, Pages, RegionsResponder, Responder, ServiceState,
};
use crate::redis_client::conn::RedisTarget;

/// Content type of the classic Prometheus text exposition format.
const METRICS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";
const TEXT: &str = "text/plain; charset=utf-8";
/// What `serve` answers JSON with, `/healthz` included.
const JSON: &str = "application/json";

/// A listen address as operators write it: `:PORT` listens on every IPv4
/// interface (0.0.0.0, as node_exporter's `:9100`), `HOST:PORT` on the
/// address HOST resolves to first (`127.0.0.1:9464`, `[::1]:9464`,
/// `localhost:9464`). Port 0 picks a free one. `serve --listen` and every
/// `--metrics-listen` read it the same way.
pub(crate) fn parse_listen(text: &str) -> std::result::Result<SocketAddr, String> {
    let hint = "expected :PORT or HOST:PORT, e.g. :9464 or 127.0.0.1:9464";
    let (host, port) = text
        .rsplit_once(':')
        .ok_or_else(|| format!("{text:?} has no port ({hint})"))?;
    let port: u16 = port
        .parse()
        .map_err(|_| format!("{text:?}: {port:?} is not a port number ({hint})"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let host = if host.is_empty() { "0.0.0.0" } else { host };
    (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("{text:?}: cannot resolve {host:?}: {e}"))?
        .next()
        .ok_or_else(|| format!("{text:?}: {host:?} resolves to no address"))
}

/// The state `command`'s worker shares with its probes, served at `listen`
/// when given (`--metrics-listen`; a log line says where).
pub(crate) fn start(
    listen: Option<SocketAddr>,
    command: &'static str,
    campaign: &Campaign,
    target: &RedisTarget,
    store: Option<StoreLocation>,
) -> Result<Arc<ServiceState>> {
    let state = Arc::new(ServiceState::default());
    if let Some(listen) = listen {
        let (campaign, target, shared) = (campaign.clone(), target.clone(), Arc::clone(&state));
        let bound = serve(listen, move || {
            Responder::new(command, &campaign, &target, store, shared)
        })?;
        crate::util::log::line(
            command,
            format!("metrics at http://{bound}/metrics, health at /healthz"),
        );
    }
    Ok(state)
}

/// The state the regions' mover (`regions rebalance --watch`) shares with
/// its probes, served at `listen` when given: `items` over every region of
/// `targets` (name, Redis), a region waited for at most `patience`.
pub(crate) fn start_regions(
    listen: Option<SocketAddr>,
    campaign: &Campaign,
    items: Vec<Item>,
    targets: Vec<(String, RedisTarget)>,
    patience: std::time::Duration,
) -> Result<Arc<MoverState>> {
    let state = Arc::new(MoverState::default());
    if let Some(listen) = listen {
        let (campaign, shared) = (campaign.clone(), Arc::clone(&state));
        let bound = serve(listen, move || {
            RegionsResponder::new(&campaign, items, targets, shared, patience)
        })?;
        crate::util::log::line(
            "regions",
            format!("metrics at http://{bound}/metrics, health at /healthz"),
        );
    }
    Ok(state)
}

/// What a probe asks the pages' thread, and where the answer goes.
type Ask = (Page, tokio::sync::oneshot::Sender<Result<String, String>>);

#[derive(Debug, Clone, Copy)]
enum Page {
    Metrics,
    Health,
}

/// Bind `listen` and serve the pages `make` builds on their own thread;
/// returns the bound address.
fn serve<P: Pages>(
    listen: SocketAddr,
    make: impl FnOnce() -> P + Send + 'static,
) -> Result<SocketAddr> {
    let listener = std::net::TcpListener::bind(listen)
        .with_context(|| format!("cannot listen for metrics on {listen}"))?;
    let bound = listener.local_addr().context("metrics listener address")?;
    listener.set_nonblocking(true).context("metrics listener")?;
    let (asks, asked) = mpsc::channel::<Ask>();
    std::thread::Builder::new()
        .name("metrics-pages".into())
        .spawn(move || {
            let mut pages = make();
            for (page, reply) in asked {
                let answer = match page {
                    Page::Metrics => Ok(pages.metrics()),
                    Page::Health => pages.health(),
                };
                let _ = reply.send(answer);
            }
        })
        .context("cannot start the metrics thread")?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the metrics runtime")?;
    std::thread::Builder::new()
        .name("metrics-http".into())
        .spawn(move || {
            runtime.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                    return;
                };
                let router = Router::new()
                    .route("/metrics", get(metrics))
                    .route("/healthz", get(healthz))
                    .fallback(not_found)
                    .with_state(Arc::new(std::sync::Mutex::new(asks)));
                answer_each(listener, router).await;
            });
        })
        .context("cannot start the metrics thread")?;
    Ok(bound)
}

/// Why a page has no answer when its thread is gone.
const PAGES_STOPPED: &str = "the pages' thread stopped";

type Asks = Arc<std::sync::Mutex<mpsc::Sender<Ask>>>;

async fn ask(asks: &Asks, page: Page) -> Result<String, String> {
    let (reply, answer) = tokio::sync::oneshot::channel();
    let sent = asks
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .send((page, reply));
    if sent.is_err() {
        return Err(PAGES_STOPPED.into());
    }
    answer.await.unwrap_or_else(|_| Err(PAGES_STOPPED.into()))
}

/// Answer each connection's one request, then close it: a scraper and a
/// probe every few seconds need no keep-alive, and a client that reads to
/// the end gets its end. Header names are written as the text format's
/// examples write them (`Content-Type`).
async fn answer_each(listener: tokio::net::TcpListener, router: Router) {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use hyper_util::service::TowerToHyperService;

    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of file descriptors, say: a pause instead of a busy loop.
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            continue;
        };
        let service = TowerToHyperService::new(router.clone());
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(std::time::Duration::from_secs(5))
            .keep_alive(false)
            .title_case_headers(true)
            .serve_connection(TokioIo::new(stream), service);
        tokio::spawn(connection);
    }
}

fn text(status: StatusCode, content_type: &'static str, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, HeaderValue::from_static(content_type))],
        body,
    )
        .into_response()
}

async fn metrics(State(asks): State<Asks>) -> Response {
    match ask(&asks, Page::Metrics).await {
        Ok(body) => text(StatusCode::OK, METRICS_CONTENT_TYPE, body),
        Err(failed) => text(StatusCode::SERVICE_UNAVAILABLE, TEXT, format!("{failed}\n")),
    }
}

/// `/healthz` in `serve`'s shape, so one probe config reads every seckill
/// process: 200 `{"status": "ok", "message": "Redis at … answered; …"}`, 503
/// `{"error": {"kind": "redis_unreachable" | "database_unreachable" |
/// "unhealthy", "message": "…"}}`.
async fn healthz(State(asks): State<Asks>) -> Response {
    let (status, body) = health_answer(ask(&asks, Page::Health).await);
    let mut body = body.to_string();
    body.push('\n');
    text(status, JSON, body)
}

/// The status and JSON body of a health page's answer.
fn health_answer(answer: Result<String, String>) -> (StatusCode, serde_json::Value) {
    match answer {
        Ok(said) => (
            StatusCode::OK,
            serde_json::json!({ "status": "ok", "message": said }),
        ),
        Err(failed) => {
            // The pages name the database first when it failed; every
            // other failure but a stopped thread is Redis's.
            let kind = if failed.starts_with("database ") {
                "database_unreachable"
            } else if failed == PAGES_STOPPED {
                "unhealthy"
            } else {
                "redis_unreachable"
            };
            (
                StatusCode::SERVICE_UNAVAILABLE,
                serde_json::json!({ "error": { "kind": kind, "message": failed } }),
            )
        }
    }
}

async fn not_found() -> Response {
    text(
        StatusCode::NOT_FOUND,
        TEXT,
        "seckill serves /metrics and /healthz\n".to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses_read_like_node_exporters() {
        assert_eq!(
            parse_listen(":9464").unwrap(),
            "0.0.0.0:9464".parse().unwrap()
        );
        assert_eq!(
            parse_listen("127.0.0.1:9464").unwrap(),
            "127.0.0.1:9464".parse().unwrap()
        );
        assert_eq!(parse_listen("[::1]:0").unwrap(), "[::1]:0".parse().unwrap());
        assert!(parse_listen("localhost:9464").unwrap().ip().is_loopback());
        for bad in ["9464", "127.0.0.1", ":http", ":99999"] {
            assert!(parse_listen(bad).is_err(), "{bad}");
        }
    }
}
