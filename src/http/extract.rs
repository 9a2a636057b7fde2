//! [`JsonBody`]: the request's JSON body as a typed value, or the one
//! [`Rejection`] that says why not (not JSON: 415; not the expected fields:
//! 400). The body itself was read whole, within its size and time limits,
//! by the door's layer (`layer.rs`) before the request took its place.

use axum::extract::{FromRequest, Request};
use axum::http::{HeaderMap, header};
use serde::de::DeserializeOwned;

use super::error::Rejection;

/// A JSON body of type `T`; an empty body is refused unless `T` has a default
/// ([`JsonBody::optional`]).
pub(crate) struct JsonBody<T>(pub(crate) T);

/// An optional JSON body: an empty one is `T::default()`.
pub(crate) struct OptionalJsonBody<T>(pub(crate) T);

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"))
}

fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Rejection> {
    serde_json::from_slice(bytes)
        .map_err(|e| Rejection::bad_request(format!("the body is not a {}: {e}", what::<T>())))
}

/// `buy`, `join`, … from the body type's name.
fn what<T>() -> String {
    let name = std::any::type_name::<T>();
    let short = name.rsplit("::").next().unwrap_or(name);
    short.trim_end_matches("Body").to_lowercase()
}

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = Rejection;

    async fn from_request(request: Request, state: &S) -> Result<Self, Rejection> {
        if !is_json(request.headers()) {
            return Err(Rejection {
                status: axum::http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
                kind: "unsupported_media_type",
                message: "send the body as JSON (Content-Type: application/json)".into(),
            });
        }
        let bytes = axum::body::Bytes::from_request(request, state)
            .await
            .map_err(|e| Rejection::bad_request(format!("cannot read the body: {e}")))?;
        parse(&bytes).map(JsonBody)
    }
}

impl<S: Send + Sync, T: DeserializeOwned + Default> FromRequest<S> for OptionalJsonBody<T> {
    type Rejection = Rejection;

    async fn from_request(request: Request, state: &S) -> Result<Self, Rejection> {
        let bytes = axum::body::Bytes::from_request(request, state)
            .await
            .map_err(|e| Rejection::bad_request(format!("cannot read the body: {e}")))?;
        if bytes.is_empty() {
            return Ok(OptionalJsonBody(T::default()));
        }
        parse(&bytes).map(OptionalJsonBody)
    }
}
