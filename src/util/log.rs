//! Log lines of the long-running commands on stderr, timestamped; silent
//! under `-q`, except the line of the error that ends the command
//! ([`stamped`]), which carries the same timestamp as the lines before it.

use std::sync::atomic::{AtomicBool, Ordering};

/// A log line was asked for: this process logs, so its last words (the
/// error that ends it) are timestamped like the rest.
static LOGGING: AtomicBool = AtomicBool::new(false);

/// A log line on stderr: `<UTC time> seckill <command>: <message>`; nothing
/// under `-q` (cron and quiet services read the exit code and the last error).
pub(crate) fn line(command: &str, message: impl std::fmt::Display) {
    LOGGING.store(true, Ordering::Relaxed);
    if crate::util::output::quiet() {
        return;
    }
    crate::util::output::say(format!("{} seckill {command}: {message}", now()));
}

/// `line` as the error that ends the command prints it: with the log
/// lines' timestamp in front when this process has logged (a loop, a
/// retry), as is otherwise; said whatever `-q` says.
pub(crate) fn stamped(line: &str) -> String {
    if LOGGING.load(Ordering::Relaxed) {
        format!("{} {line}", now())
    } else {
        line.to_string()
    }
}

/// Now, as the log lines write it: RFC 3339 UTC to the millisecond.
fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
