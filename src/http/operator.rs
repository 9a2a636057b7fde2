//! The operator endpoints `POST /v1/orders/{order}/pay|cancel`: only with
//! `--operator-token-file` (else 404, as if absent), the bearer token
//! compared in constant time; the same operation as `seckill pay` / `cancel`
//! (`domain::operation::order`).

use std::sync::Arc;

use axum::extract::{MatchedPath, Path, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::api::{self, CancelBody};
use super::app::App;
use super::error::{Rejection, json_answer};
use super::extract::OptionalJsonBody;
use crate::domain::operation::Retry;
use crate::domain::operation::order::{Change, OrderChange};

/// The operator routes' first layer: without `--operator-token-file` they
/// do not exist (404); without the token they answer 401, before the body
/// is read and before the request takes a place.
pub(crate) async fn token(
    State(app): State<Arc<App>>,
    route: Option<MatchedPath>,
    request: Request,
    next: Next,
) -> Response {
    let started = std::time::Instant::now();
    match unauthorized(&app, request.headers()) {
        Some(refused) => {
            let endpoint = super::layer::endpoint(route.as_ref().map(MatchedPath::as_str));
            super::layer::counted(&app, endpoint, started, refused)
        }
        None => next.run(request).await,
    }
}

pub(crate) async fn pay(State(app): State<Arc<App>>, Path(order): Path<String>) -> Response {
    change(app, order, None).await
}

pub(crate) async fn cancel(
    State(app): State<Arc<App>>,
    Path(order): Path<String>,
    OptionalJsonBody(body): OptionalJsonBody<CancelBody>,
) -> Response {
    change(app, order, Some(body.reason)).await
}

/// Pay (`reason` none) or cancel, for a caller with the operator token.
async fn change(app: Arc<App>, order: String, reason: Option<String>) -> Response {
    let done = app
        .on_operator_redis(Retry::Repeat, move |app, conn| {
            let change = match &reason {
                None => Change::Pay,
                Some(reason) => Change::Cancel { reason },
            };
            OrderChange {
                order: &order,
                item: None,
                change,
            }
            .run(&app.campaign, conn, app.operator_display())
        })
        .await;
    match done {
        Ok(result) => json_answer(
            api::order_status(&result),
            result.reply.outcome.as_str(),
            &result,
        ),
        Err(failure) => failure.into_response(),
    }
}

/// The operator endpoints exist only with a token, and answer only its
/// holder: the refusal for anyone else.
fn unauthorized(app: &App, headers: &HeaderMap) -> Option<Response> {
    let Some(token) = &app.settings.operator_token else {
        return Some(super::probes::not_found_answer());
    };
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    if !api::same_token(presented.as_bytes(), token) {
        return Some(Rejection {
            status: StatusCode::UNAUTHORIZED,
            kind: "unauthorized",
            message:
                "the operator endpoints need Authorization: Bearer <the --operator-token-file token>"
                    .into(),
        }
        .into_response());
    }
    None
}
