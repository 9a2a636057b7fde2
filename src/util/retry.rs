//! Retrying with bounded exponential backoff, and sleeping that a stop
//! request (SIGINT/SIGTERM) cuts short: the long-running commands' patience.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;

/// First wait after a failure.
pub(crate) const BACKOFF_START: Duration = Duration::from_millis(100);
/// Longest wait between two attempts.
pub(crate) const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// Attempts still made once `stop` is set: enough to ride out a call the
/// signal itself interrupted (EINTR), few enough not to hang on a dead server.
pub(crate) const ATTEMPTS_AFTER_STOP: u32 = 3;

/// Run `attempt` until it succeeds or fails with an error `retriable` says
/// waiting cannot fix, waiting 100 ms, 200 ms, … up to 5 s between failures
/// with a log line each; once `stop` is set, gives up after a few more
/// attempts, and once `deadline` has passed at the next failure.
pub(crate) fn retry_while<T>(
    command: &str,
    what: &str,
    stop: &AtomicBool,
    deadline: Option<Instant>,
    retriable: impl Fn(&anyhow::Error) -> bool,
    mut attempt: impl FnMut() -> Result<T>,
) -> Result<T> {
    let mut delay = BACKOFF_START;
    let mut failures = 0u32;
    let mut failures_after_stop = 0u32;
    loop {
        match attempt() {
            Ok(value) => {
                if failures > 0 {
                    crate::util::log::line(
                        command,
                        format!("{what}: succeeded after {failures} failed attempt(s)"),
                    );
                }
                return Ok(value);
            }
            Err(error) if !retriable(&error) => {
                return Err(error.context(format!(
                    "{what} failed (not retried: waiting would not fix this)"
                )));
            }
            Err(error) => {
                failures += 1;
                if stop.load(Ordering::SeqCst) {
                    failures_after_stop += 1;
                }
                let past_deadline = deadline.is_some_and(|d| Instant::now() >= d);
                if failures_after_stop >= ATTEMPTS_AFTER_STOP || past_deadline {
                    return Err(
                        error.context(format!("{what}: giving up after {failures} attempt(s)"))
                    );
                }
                let wait = if failures_after_stop > 0 {
                    BACKOFF_START
                } else {
                    delay
                };
                crate::util::log::line(
                    command,
                    format!(
                        "{what} failed (attempt {failures}), retrying in {wait:?}: {}",
                        crate::util::error_text::render(&error)
                    ),
                );
                if failures_after_stop > 0 {
                    // Stopping: a short pause only, to ride out a call the signal interrupted.
                    std::thread::sleep(wait);
                } else {
                    sleep_unless_stopped(wait, stop);
                }
                delay = (delay * 2).min(BACKOFF_MAX);
            }
        }
    }
}

/// Sleep `total`, waking early when `stop` is set.
pub(crate) fn sleep_unless_stopped(total: Duration, stop: &AtomicBool) {
    let until = Instant::now() + total;
    while !stop.load(Ordering::SeqCst) {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}
