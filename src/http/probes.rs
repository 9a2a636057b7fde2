//! `GET /healthz` (200 while Redis answers and the instance is not
//! stopping), `GET /metrics` (Prometheus text) and the 404 that names the
//! endpoints there are.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::app::App;
use super::error::{error_answer, json_answer};

/// 200 while Redis answers and the instance is not stopping, else 503.
pub(crate) async fn healthz(State(app): State<Arc<App>>) -> Response {
    if app.draining.load(Ordering::SeqCst) {
        return error_answer(
            StatusCode::SERVICE_UNAVAILABLE,
            "shutting_down",
            "stopping",
            None,
        );
    }
    match ping(&app).await {
        Ok(()) => json_answer(StatusCode::OK, "ok", &serde_json::json!({"status": "ok"})),
        Err(why) => error_answer(
            StatusCode::SERVICE_UNAVAILABLE,
            "redis_unreachable",
            &why,
            None,
        ),
    }
}

/// `PING` on a pooled connection, on a blocking worker.
async fn ping(app: &Arc<App>) -> Result<(), String> {
    let probe = {
        let app = Arc::clone(app);
        tokio::task::spawn_blocking(move || {
            app.pool
                .with(|e| e, |conn| Ok(redis::cmd("PING").query::<String>(conn)?))
        })
        .await
    };
    match probe {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(crate::util::error_text::render(&e)),
        Err(_) => Err("the probe's worker stopped".to_string()),
    }
}

/// The instance's counters, and whether its last refresh of the cache
/// reached Redis: a scrape never waits on Redis (a frozen server must not
/// freeze the metrics that would show it).
pub(crate) async fn metrics_text(State(app): State<Arc<App>>) -> Response {
    let redis_up = app.redis_up.load(std::sync::atomic::Ordering::Relaxed);
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static(crate::util::prometheus::CONTENT_TYPE),
        )],
        app.metrics.render(&app.campaign.id, redis_up),
    )
        .into_response()
}

/// The 404 that names every endpoint.
pub(crate) fn not_found_answer() -> Response {
    error_answer(
        StatusCode::NOT_FOUND,
        "not_found",
        "no such endpoint: POST /v1/items/{item}/buy, GET /v1/items/{item}/orders/{user}, \
         POST /v1/items/{item}/queue, GET /v1/items/{item}/queue/{user}, \
         POST /v1/items/{item}/register, GET /v1/items/{item}/seats?section=ID, \
         POST /v1/orders/{order}/pay, \
         POST /v1/orders/{order}/cancel (with --operator-token-file), GET /healthz, \
         GET /metrics (docs/serve.md)",
        None,
    )
}

pub(crate) async fn not_found() -> Response {
    not_found_answer()
}
