//! The operator endpoints `POST /v1/orders/{order}/pay|cancel`: only with
//! `--operator-token-file` (else 404, as if absent), the bearer token
//! compared in constant time; the same calls as `seckill pay` / `cancel`.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use serde::Deserialize;

use super::api;
use super::app::{App, MAX_BODY, admit, counted, error_answer, json_answer};
use super::probes::not_found;
use crate::domain::reservations::{self, OrderOutcome, OrderResult};

/// The body of `POST /v1/orders/{order}/cancel` (optional).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CancelBody {
    #[serde(default)]
    reason: String,
}

pub(crate) async fn pay(
    State(app): State<Arc<App>>,
    Path(order): Path<String>,
    headers: HeaderMap,
) -> Response {
    operator_call(app, "pay", order, headers, String::new()).await
}

pub(crate) async fn cancel(
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
