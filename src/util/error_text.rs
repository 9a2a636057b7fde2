//! An error as people read it: its causes on one line, in sentences (the
//! Debug text some libraries put in their messages taken out), and what a
//! Redis timeout means in terms of the flag to change.

use std::time::Duration;

/// The error and its causes on one line, `a: b: c`, skipping a cause that
/// only repeats the text before it (I/O errors wrapped by redis-rs do).
pub(crate) fn render(error: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in error.chain() {
        let text = in_words(&cause.to_string());
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

/// The variants the mysql crate writes around its message, `MySqlError {
/// ERROR 1644 (45000): … }`: Rust names, not words.
const MYSQL_WRAPPERS: [&str; 6] = [
    "IoError",
    "CodecError",
    "MySqlError",
    "DriverError",
    "UrlError",
    "TlsError",
];

/// `text` with the Debug text of the libraries taken out: mysql's
/// `MySqlError { ERROR 1644 (45000): banned }` → `ERROR 1644 (45000):
/// banned`, redis-rs's `No connections found - ClusterConnectionNotFound`
/// → `No connections found` and `… - TypeError: detail` → `…: detail` (its
/// error kind's Rust name after the sentence).
pub(crate) fn in_words(text: &str) -> String {
    let mut out = text.to_string();
    for wrapper in MYSQL_WRAPPERS {
        let open = format!("{wrapper} {{ ");
        while let Some(start) = out.find(&open) {
            let inner_start = start + open.len();
            let Some(end) = out[inner_start..].rfind(" }").map(|i| inner_start + i) else {
                break;
            };
            out = format!(
                "{}{}{}",
                &out[..start],
                &out[inner_start..end],
                &out[end + 2..]
            );
        }
    }
    let mut from = 0;
    while let Some(at) = out[from..].find(" - ").map(|i| from + i) {
        let rest = &out[at + 3..];
        let name_len = rest
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(rest.len());
        let name = &rest[..name_len];
        let after = &rest[name_len..];
        // A Rust name has two humps at least (`TypeError`): a sentence's
        // own capitalized word after a dash (`… - Sale`) stays.
        let rust_name = name.starts_with(|c: char| c.is_ascii_uppercase())
            && name.chars().filter(char::is_ascii_uppercase).count() >= 2
            && name.chars().any(|c| c.is_ascii_lowercase())
            && !name.contains(|c: char| c.is_ascii_digit());
        if rust_name && (after.is_empty() || after.starts_with(':')) {
            out = format!("{}{after}", &out[..at]);
        }
        from = at + 1;
        if from >= out.len() {
            break;
        }
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

#[cfg(test)]
mod tests {
    use super::in_words;

    #[test]
    fn library_debug_text_becomes_words() {
        assert_eq!(
            in_words("MySqlError { ERROR 1644 (45000): user banned by the fraud team }"),
            "ERROR 1644 (45000): user banned by the fraud team"
        );
        assert_eq!(
            in_words("cannot store: DriverError { Could not connect to address `h:3306' }"),
            "cannot store: Could not connect to address `h:3306'"
        );
        assert_eq!(
            in_words("No connections found - ClusterConnectionNotFound"),
            "No connections found"
        );
        assert_eq!(
            in_words("Response was of incompatible type - TypeError: \"x\" (response was nil)"),
            "Response was of incompatible type: \"x\" (response was nil)"
        );
        // Words that only look alike stay.
        for kept in [
            "Moved: 12992 127.0.0.1:21003",
            "a - b",
            "sale 2026 - Sale",
            "ids 1 - 3: x",
        ] {
            assert_eq!(in_words(kept), kept);
        }
    }
}
