//! `GET /v1/items/{item}/seats?section=A`: the shop's seat page — one
//! section of a seat item (docs/seats.md), its geometry, tier, price,
//! counts and one state byte per seat — answered from a snapshot in memory.
//!
//! A page view never costs a Redis call of its own: each section's snapshot
//! is read again (one GET of its state string) only when a view finds it
//! older than [`FRESH_FOR`], and the views of one section wait on one lock
//! while that read runs, so the first stale view reads and the others answer
//! from what it read. One section costs Redis at most one read per 100 ms
//! per instance however many shoppers look; a seat sold shows on the page
//! within 100 ms plus that read. Nobody looking costs nothing (no
//! background task). When the read fails, the last snapshot is answered
//! (its `read_at_ms` says how old) until the next attempt 100 ms later;
//! with none, 503 — the same rule, never a read per view.
//!
//! An unknown item, an item without seats and an unknown section are 404
//! (`unknown_item`, `no_seats`, `unknown_section`), no section asked 400,
//! all in the error shape of every answer (`error::error_answer`), decided
//! from the campaign file before anything is read.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use super::app::App;
use super::error::{Counted, Rejection, error_answer};
use super::seat_pages::{FRESH_FOR, Place, Shown};
use crate::domain::item::SaleItem;
use crate::domain::item::shape::Shape;
use crate::domain::operation::{Failure, Retry};
use crate::domain::seats::view::{self, SectionView};

/// `?section=A`.
#[derive(Debug, Deserialize)]
pub(crate) struct SeatsQuery {
    section: Option<String>,
}

/// The page's JSON.
#[derive(Debug, Serialize)]
struct SeatPage<'a> {
    item: &'a str,
    section: &'a str,
    tier: &'a str,
    /// The section's price, as the campaign file's `price` ("1880.00").
    price: String,
    price_cents: i64,
    rows: u32,
    seats_per_row: u32,
    free: u32,
    held: u32,
    sold: u32,
    blocked: u32,
    /// One byte per seat, row after row (row r, seat s at index
    /// (r-1)*seats_per_row + s-1): `.` free, `h` held, `s` sold, `x`
    /// blocked; empty while the section is not preheated.
    state: &'a str,
    /// When the snapshot was read, on the Redis clock (Unix ms).
    read_at_ms: i64,
    /// Not preheated, or a corrupt state string (what is wrong).
    #[serde(skip_serializing_if = "Option::is_none")]
    problem: Option<&'a str>,
}

/// The handler.
pub(crate) async fn seats_of(
    State(app): State<Arc<App>>,
    Path(item): Path<String>,
    Query(query): Query<SeatsQuery>,
) -> Response {
    let place = match find(&app, &item, query.section.as_deref()) {
        Ok(place) => place,
        Err(refusal) => return refusal.into_response(),
    };
    match place.shown(|| read(&app, &place.item, place.index)).await {
        Shown::Page(body) => json_bytes(body),
        Shown::Failed(failure) => failure.into_response(),
        Shown::Unread(why) => error_answer(
            StatusCode::SERVICE_UNAVAILABLE,
            "redis_unreachable",
            &format!(
                "the seats of {item} cannot be read from Redis (read again within {} ms): {why}",
                FRESH_FOR.as_millis()
            ),
            None,
        ),
    }
}

/// The section asked for, or the answer refusing it (from the campaign file).
fn find<'a>(app: &'a App, item: &str, section: Option<&str>) -> Result<&'a Place, Rejection> {
    let refused = |status, kind, message: String| Rejection {
        status,
        kind,
        message,
    };
    let Some(known) = app.campaign.items.iter().find(|i| i.id == item) else {
        return Err(refused(
            StatusCode::NOT_FOUND,
            "unknown_item",
            format!("campaign {} has no item {item:?}", app.campaign.id),
        ));
    };
    let Some(seating) = &known.seating else {
        return Err(refused(
            StatusCode::NOT_FOUND,
            "no_seats",
            format!("item {item} has no seats: it is sold by quantity (docs/serve.md)"),
        ));
    };
    let ids = || {
        seating
            .sections
            .iter()
            .map(|s| s.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some(section) = section else {
        return Err(Rejection::bad_request(format!(
            "say which section: ?section=ID (item {item} has {})",
            ids()
        )));
    };
    app.seat_pages.place(item, section).ok_or_else(|| {
        refused(
            StatusCode::NOT_FOUND,
            "unknown_section",
            format!(
                "item {item} has no section {section:?}; its sections are {}",
                ids()
            ),
        )
    })
}

/// One GET of the section's state on the shared connection, rendered as the page.
async fn read(app: &Arc<App>, item: &str, index: usize) -> Result<Vec<u8>, Failure> {
    let item = item.to_string();
    app.on_redis(false, Retry::Repeat, move |app, conn| {
        let at = app.target.display.clone();
        let failed = |error: anyhow::Error| Failure::of(error, &at, Retry::Repeat);
        let sale = SaleItem::select(&app.campaign, Some(&item))
            .map_err(failed)?
            .remove(0);
        let Shape::Seated(layout, seating) = sale.shape() else {
            return Err(failed(anyhow::anyhow!("item {item} has no seats")));
        };
        let read_at_ms = app.cache.redis_now_ms();
        let view = view::read_section(conn, layout, seating, index).map_err(failed)?;
        Ok(page(&item, &view, read_at_ms))
    })
    .await
}

/// The page's JSON bytes.
fn page(item: &str, view: &SectionView, read_at_ms: i64) -> Vec<u8> {
    let cents = view.price_cents;
    let page = SeatPage {
        item,
        section: &view.section,
        tier: &view.tier,
        price: format!(
            "{}{}.{:02}",
            if cents < 0 { "-" } else { "" },
            cents.abs() / 100,
            cents.abs() % 100
        ),
        price_cents: cents,
        rows: view.rows,
        seats_per_row: view.seats_per_row,
        free: view.free,
        held: view.held,
        sold: view.sold,
        blocked: view.blocked,
        state: &view.state,
        read_at_ms,
        problem: view.problem.as_deref().or(view
            .state
            .is_empty()
            .then_some("not preheated (no seat state in Redis)")),
    };
    serde_json::to_vec(&page).unwrap_or_else(|_| b"{}".to_vec())
}

/// A 200 with the snapshot's bytes (shared, not copied, per view).
fn json_bytes(body: Arc<Vec<u8>>) -> Response {
    let mut answer = (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        Body::from(Bytes::from_owner(ArcBytes(body))),
    )
        .into_response();
    answer.extensions_mut().insert(Counted("ok"));
    answer
}

/// The snapshot's bytes as a body owner.
struct ArcBytes(Arc<Vec<u8>>);

impl AsRef<[u8]> for ArcBytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}
