//! `GET /v1/items/{item}/orders/{user}[?request_id=R]`: did I get it? The
//! lookup operation (`domain::operation::lookup`), and `pending` while this
//! instance still runs that request id's attempt.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;

use super::api::LookupQuery;
use super::app::App;
use super::error::json_answer;
use crate::domain::operation::lookup::Lookup;
use crate::domain::operation::{Failure, Retry};

pub(crate) async fn order_of(
    State(app): State<Arc<App>>,
    Path((item, user)): Path<(String, String)>,
    Query(query): Query<LookupQuery>,
) -> Result<Response, Failure> {
    let lookup = Lookup {
        item: &item,
        user: &user,
        request_id: query.request_id.as_deref(),
    };
    lookup.check(&app.campaign)?;
    let (item_id, user_id, request_id) = (item.clone(), user.clone(), query.request_id.clone());
    let mut found = app
        .on_redis(false, Retry::Repeat, move |app, conn| {
            Lookup {
                item: &item_id,
                user: &user_id,
                request_id: request_id.as_deref(),
            }
            .run(&app.campaign, conn, &app.target.display)
        })
        .await?;
    app.metrics.round_trips.fetch_add(1, Ordering::Relaxed);
    if found.result == "none"
        && let Some(request_id) = query.request_id
        && app
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&(item, user, request_id))
    {
        found.result = "pending";
    }
    Ok(json_answer(StatusCode::OK, found.result, &found))
}
