//! An error as people read it: its causes on one line, and what a Redis
//! timeout means in terms of the flag to change.

use std::time::Duration;

/// The error and its causes on one line, `a: b: c`, skipping a cause that
/// only repeats the text before it (I/O errors wrapped by redis-rs do).
pub(crate) fn render(error: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if out.ends_with(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    if let Some(hint) = timeout_hint(error) {
        out.push_str(": ");
        out.push_str(&hint);
    }
    out
}

/// `--response-timeout` of this process, for [`timeout_hint`] (set once the
/// Redis target is resolved).
static RESPONSE_TIMEOUT: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();

/// When a Redis reply timed out somewhere in `error`: what that means in
/// terms of the flag the operator can change.
fn timeout_hint(error: &anyhow::Error) -> Option<String> {
    let timed_out = error
        .chain()
        .filter_map(|c| c.downcast_ref::<redis::RedisError>())
        .any(redis::RedisError::is_timeout);
    let timeout = RESPONSE_TIMEOUT.get()?;
    timed_out.then(|| {
        format!(
            "no reply from Redis within --response-timeout {} (a busy or blocked server? raise the flag)",
            humantime::format_duration(*timeout)
        )
    })
}

/// Remember `--response-timeout`, so a timed-out reply names the flag to raise.
pub(crate) fn remember_response_timeout(timeout: Duration) {
    let _ = RESPONSE_TIMEOUT.set(timeout);
}
