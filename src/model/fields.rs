//! A campaign file's field values: where one came from (`file:line:column`
//! in every error, [`at`]) and how its texts parse (RFC 3339 times,
//! durations), shared by the campaign and its waiting room.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use serde_saphyr::Spanned;

use crate::model::error::usage;

/// Most units one item may hold.
pub const MAX_STOCK: i64 = 100_000_000;

/// Ids go into Redis keys and database rows: keep them to a safe alphabet.
pub(crate) fn is_valid_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// A usage error that names the field's place in the file.
pub(crate) fn at<T>(
    path: &Path,
    spanned: &Spanned<T>,
    message: impl std::fmt::Display,
) -> anyhow::Error {
    usage(format!(
        "{}:{}:{}: {message}",
        path.display(),
        spanned.referenced.line(),
        spanned.referenced.column()
    ))
}

/// An RFC 3339 time as Unix milliseconds.
pub(crate) fn parse_time(path: &Path, text: &Spanned<String>, field: &str) -> Result<i64> {
    chrono::DateTime::parse_from_rfc3339(text.value.trim())
        .map(|t| t.timestamp_millis())
        .map_err(|e| {
            at(
                path,
                text,
                format!(
                    "{field} {:?} is not an RFC 3339 time like 2026-11-11T10:00:00+08:00 ({e})",
                    text.value
                ),
            )
        })
}

/// Longest duration a campaign may give (`keep_after_end`, `rate_limit.window`):
/// ten years in milliseconds still fits an `i64` added to any `ends_at`, and
/// a Lua number (a double) exactly.
pub const MAX_DURATION: Duration = Duration::from_secs(3650 * 24 * 3600);

pub(crate) fn parse_duration(path: &Path, text: &Spanned<String>, field: &str) -> Result<Duration> {
    let duration = humantime::parse_duration(text.value.trim()).map_err(|e| {
        at(
            path,
            text,
            format!(
                "{field} {:?} is not a duration like 1s, 30m or 1h ({e})",
                text.value
            ),
        )
    })?;
    if duration > MAX_DURATION {
        return Err(at(
            path,
            text,
            format!(
                "{field} {:?} is longer than the largest allowed duration, {} days",
                text.value,
                MAX_DURATION.as_secs() / 86_400
            ),
        ));
    }
    Ok(duration)
}

/// Parse a decimal money amount ("1499", "1499.5", "1499.00") to integer cents.
pub(crate) fn parse_price(text: &str) -> std::result::Result<i64, String> {
    let text = text.trim();
    if text.starts_with('-') {
        return Err("must not be negative".into());
    }
    let (whole, fraction) = match text.split_once('.') {
        Some((whole, fraction)) => (whole, fraction),
        None => (text, ""),
    };
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return Err("must be a decimal amount like 1499.00".into());
    }
    if fraction.len() > 2 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return Err("must have at most two decimal places".into());
    }
    let whole: i64 = whole
        .parse()
        .ok()
        .filter(|w| *w <= 1_000_000_000_000)
        .ok_or("is too large")?;
    let cents: i64 = format!("{fraction:0<2}").parse().unwrap_or(0);
    Ok(whole * 100 + cents)
}
