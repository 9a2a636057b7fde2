//! The door's one layer, around every `/v1` request whatever its kind:
//! refuse it while stopping (503 `shutting_down`), read its body whole
//! within `--body-timeout` and [`MAX_BODY`] (408, 413) *before* it takes a
//! place, take a place under `--max-in-flight` (503 `overloaded` with
//! `Retry-After`, never a queue), count it in flight while it runs, then
//! count its answer (endpoint, outcome, status, latency). A handler only
//! answers; it cannot forget any of this.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{MatchedPath, Request};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;

use super::app::App;
use super::error::{Counted, error_answer};

/// Largest request body accepted (a buy is well under 1 KiB).
pub(crate) const MAX_BODY: usize = 16 * 1024;

/// The metrics' endpoint label of a route.
pub(crate) fn endpoint(route: Option<&str>) -> &'static str {
    match route.unwrap_or("") {
        "/v1/items/{item}/buy" => "buy",
        "/v1/items/{item}/orders/{user}" => "orders",
        "/v1/items/{item}/queue" | "/v1/items/{item}/queue/{user}" => "queue",
        "/v1/items/{item}/register" => "register",
        "/v1/items/{item}/seats" => "seats",
        "/v1/orders/{order}/pay" => "pay",
        "/v1/orders/{order}/cancel" => "cancel",
        _ => "other",
    }
}

/// The layer (`route_layer(DoorLayer(app))`). Written as a service of its
/// own rather than `axum::middleware::from_fn`: that one builds and boxes a
/// `Next` and runs the extractors per request, which measured as a share of a
/// cached answer's CPU (docs/perf.md).
#[derive(Clone)]
pub(crate) struct DoorLayer(pub(crate) Arc<App>);

impl<S> tower_layer::Layer<S> for DoorLayer {
    type Service = Door<S>;

    fn layer(&self, inner: S) -> Door<S> {
        Door {
            app: Arc::clone(&self.0),
            inner,
        }
    }
}

/// The door around one route's handler.
#[derive(Clone)]
pub(crate) struct Door<S> {
    app: Arc<App>,
    inner: S,
}

impl<S> tower_service::Service<Request> for Door<S>
where
    S: tower_service::Service<Request, Response = Response, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let started = Instant::now();
        let endpoint = endpoint(
            request
                .extensions()
                .get::<MatchedPath>()
                .map(MatchedPath::as_str),
        );
        let app = Arc::clone(&self.app);
        // The service made ready is the one called; a clone stays for the
        // next request (tower's rule for services called from a future).
        let spare = self.inner.clone();
        let ready = std::mem::replace(&mut self.inner, spare);
        Box::pin(async move {
            let answer = admit_and_run(&app, request, ready).await;
            Ok(counted(&app, endpoint, started, answer))
        })
    }
}

/// Count `answer` to a request of `endpoint` that arrived at `started`.
pub(crate) fn counted(
    app: &App,
    endpoint: &'static str,
    started: Instant,
    answer: Response,
) -> Response {
    let outcome = answer
        .extensions()
        .get::<Counted>()
        .map_or("answered", |c| c.0);
    app.metrics.answered(
        endpoint,
        outcome,
        answer.status().as_u16(),
        started.elapsed(),
    );
    app.answered.fetch_add(1, Ordering::Relaxed);
    answer
}

async fn admit_and_run<S>(app: &Arc<App>, request: Request, mut handler: S) -> Response
where
    S: tower_service::Service<Request, Response = Response, Error = Infallible>,
{
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
        return answer;
    }
    let (parts, body) = request.into_parts();
    let bytes = match read_body(body, app.settings.body_timeout).await {
        Err(_) => {
            return error_answer(
                StatusCode::REQUEST_TIMEOUT,
                "request_timeout",
                &format!(
                    "the body did not arrive within {:?} (--body-timeout)",
                    app.settings.body_timeout
                ),
                None,
            );
        }
        Ok(Err(_)) => {
            return error_answer(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                &format!("the body is over {MAX_BODY} bytes"),
                None,
            );
        }
        Ok(Ok(bytes)) => bytes,
    };
    let Ok(_place) = Arc::clone(&app.permits).try_acquire_owned() else {
        let mut answer = error_answer(
            StatusCode::SERVICE_UNAVAILABLE,
            "overloaded",
            "too many requests in flight on this instance: retry shortly",
            None,
        );
        answer
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return answer;
    };
    let _in_flight = InFlight::enter(app);
    match handler
        .call(Request::from_parts(parts, Body::from(bytes)))
        .await
    {
        Ok(answer) => answer,
        Err(never) => match never {},
    }
}

/// The body whole, within `limit` of time and [`MAX_BODY`] of size: `Err`
/// when the time ran out, `Ok(Err)` when it is too large. A body that is
/// already here (a buy's arrives with its headers) is read at the first poll,
/// without arming a timer; only one still on its way is timed.
async fn read_body(
    body: Body,
    limit: Duration,
) -> Result<Result<Bytes, axum::Error>, tokio::time::error::Elapsed> {
    let mut read = std::pin::pin!(axum::body::to_bytes(body, MAX_BODY));
    let first = std::future::poll_fn(|cx| Poll::Ready(read.as_mut().poll(cx))).await;
    match first {
        Poll::Ready(bytes) => Ok(bytes),
        Poll::Pending => tokio::time::timeout(limit, read).await,
    }
}

/// One request in flight, counted until it is dropped (answered, or its
/// client gone and the handler dropped with it).
struct InFlight<'a>(&'a App);

impl<'a> InFlight<'a> {
    fn enter(app: &'a App) -> InFlight<'a> {
        app.metrics.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(app)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.metrics.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}
