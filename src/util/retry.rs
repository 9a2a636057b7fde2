//! Retrying with bounded exponential backoff, sleeping that a stop request
//! (SIGINT/SIGTERM) cuts short, the shortest interval a loop may pause, and
//! [`Reconnecting`], a connection made afresh after any failed call: the
//! long-running commands' patience.

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

/// Shortest pause of a loop that calls Redis every round (`status --watch`,
/// `expire --loop`, `rebalance --watch`): a shorter one only busies the
/// selling master (`--interval 0s` made 2,600–15,000 script calls a second).
pub(crate) const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// clap value parser for a loop's interval: a duration of at least [`MIN_INTERVAL`].
pub(crate) fn parse_interval_arg(text: &str) -> std::result::Result<Duration, String> {
    let interval =
        humantime::parse_duration(text).map_err(|e| format!("{e} (examples: 500ms, 2s, 1m)"))?;
    if interval < MIN_INTERVAL {
        return Err(format!(
            "{text} is too short: at least {} (each round calls Redis; a shorter pause only busies the selling master)",
            humantime::format_duration(MIN_INTERVAL)
        ));
    }
    Ok(interval)
}

/// True when `error` is a system call cut short by a signal (EINTR): a
/// socket read with a timeout returns it even under `SA_RESTART`, so the
/// SIGTERM that asks a loop to stop interrupts the call in flight. Waiting
/// cannot be the fix and it is no failure: the call is simply made again.
pub(crate) fn interrupted(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::Interrupted)
            // Wrapped (redis-rs keeps the io::Error behind an Arc): its words.
            || cause.to_string().contains("(os error 4)")
    })
}

/// Run `attempt` until it succeeds or fails with an error `retriable` says
/// waiting cannot fix, waiting 100 ms, 200 ms, … up to 5 s between failures
/// with a log line each; once `stop` is set, gives up after a few more
/// attempts, and once `deadline` has passed at the next failure. A call a
/// signal interrupted ([`interrupted`]) is made again at once, without a log
/// line (a few times at most: a signal per attempt is a storm, not a stop).
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
    let mut interruptions = 0u32;
    // Listed for the stall watch (`util::streak`) from the first failure until this returns.
    let mut streak: Option<crate::util::streak::Streak> = None;
    loop {
        let began = Instant::now();
        match attempt() {
            Err(error) if interrupted(&error) && interruptions < ATTEMPTS_AFTER_STOP => {
                interruptions += 1;
            }
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
                streak
                    .get_or_insert_with(|| crate::util::streak::Streak::begin(began, what))
                    .failed(&crate::util::error_text::render(&error));
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

/// Marks an error met while opening a connection (not while using one), so
/// a retry rule can tell the two apart: a connect that fails is waited out.
#[derive(Debug)]
pub(crate) struct Connecting;

impl std::fmt::Display for Connecting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("reconnecting")
    }
}

/// A connection opened on demand with `open`, and opened afresh before the
/// next call after any failed one: a call that failed (a timeout, a reset, a
/// signal cutting its read short) may still owe a reply, which the next
/// command on that connection would read as its own.
pub(crate) struct Reconnecting<C, O> {
    conn: Option<C>,
    open: O,
}

impl<C, O: FnMut() -> Result<C>> Reconnecting<C, O> {
    /// `conn` (a working connection, if there is one), and how to open another.
    pub(crate) fn new(conn: Option<C>, open: O) -> Reconnecting<C, O> {
        Reconnecting { conn, open }
    }

    /// Run `call` until it succeeds, with [`retry_while`]'s backoff, log lines
    /// and stop rules. A failed connect is waited out unless `refused` says
    /// no wait can fix it (credentials); a failed call is retried only when
    /// `transient` says waiting may fix it (no answer in time, a connection
    /// lost, a server loading or failing over), not when the server answered
    /// with an error the same call would meet again (a corrupt value).
    pub(crate) fn retry<T>(
        &mut self,
        command: &str,
        what: &str,
        stop: &AtomicBool,
        transient: impl Fn(&anyhow::Error) -> bool,
        refused: impl Fn(&anyhow::Error) -> bool,
        mut call: impl FnMut(&mut C) -> Result<T>,
    ) -> Result<T> {
        let retriable = |error: &anyhow::Error| {
            if error.downcast_ref::<Connecting>().is_some() {
                !refused(error)
            } else {
                transient(error)
            }
        };
        retry_while(command, what, stop, None, retriable, || {
            let conn = match &mut self.conn {
                Some(conn) => conn,
                None => self
                    .conn
                    .insert((self.open)().map_err(|e| e.context(Connecting))?),
            };
            let result = call(conn);
            if result.is_err() {
                self.conn = None;
            }
            result
        })
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
