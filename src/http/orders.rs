//! `GET /v1/items/{item}/orders/{user}[?request_id=R]`: did I get it? From
//! the slot the user's orders live in, one read-only script
//! (`lua/order_lookup.lua`), no database; `pending` while this instance still
//! runs that request id's attempt.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use anyhow::Result;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::{Deserialize, Serialize};

use super::api;
use super::app::{App, admit, counted, error_answer, json_answer};
use crate::domain::item::SaleItem;
use crate::model::keys::ItemKeys;

/// `GET /v1/items/{item}/orders/{user}`'s query.
#[derive(Debug, Deserialize)]
pub(crate) struct LookupQuery {
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

pub(crate) async fn order_of(
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
