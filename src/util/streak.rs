//! Failure streaks in progress: every [`super::retry::retry_while`] that is
//! waiting out a failure (Redis or the database not answering) is listed
//! here from its first failed attempt until it succeeds or gives up, so a
//! watcher of its own (`--notify`'s stall watch) can tell that a loop has
//! been retrying for too long without the retrying code knowing about it.
//!
//! May import: nothing of the crate.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// One streak, as a watcher reads it.
#[derive(Debug, Clone)]
pub(crate) struct Failing {
    /// When the first failed attempt of the streak began.
    pub(crate) since: Instant,
    /// What is being retried (`reading the order streams`).
    pub(crate) what: String,
    /// The last failure, on one line.
    pub(crate) last_error: String,
    /// Failed attempts so far.
    pub(crate) attempts: u32,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(0);
static STREAKS: Mutex<Vec<(u64, Failing)>> = Mutex::new(Vec::new());

/// A streak in progress; listed until dropped (the retry returned).
pub(crate) struct Streak {
    id: u64,
}

impl Streak {
    /// A streak whose first failed attempt began at `since`.
    pub(crate) fn begin(since: Instant, what: &str) -> Streak {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let failing = Failing {
            since,
            what: what.to_string(),
            last_error: String::new(),
            attempts: 0,
        };
        lock().push((id, failing));
        Streak { id }
    }

    /// One more failed attempt, with its error.
    pub(crate) fn failed(&self, error: &str) {
        if let Some((_, failing)) = lock().iter_mut().find(|(id, _)| *id == self.id) {
            failing.attempts += 1;
            failing.last_error = error.to_string();
        }
    }
}

impl Drop for Streak {
    fn drop(&mut self) {
        lock().retain(|(id, _)| *id != self.id);
    }
}

/// The oldest streak in progress, if any.
pub(crate) fn oldest() -> Option<Failing> {
    lock()
        .iter()
        .map(|(_, failing)| failing)
        .min_by_key(|failing| failing.since)
        .cloned()
}

fn lock() -> std::sync::MutexGuard<'static, Vec<(u64, Failing)>> {
    // A panic while holding the list leaves it consistent (each change is one call).
    STREAKS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_streak_is_listed_until_dropped() {
        let since = Instant::now();
        let streak = Streak::begin(since, "reading the order streams");
        streak.failed("no answer within 2s");
        let listed = oldest_after(since).expect("listed");
        assert_eq!(
            (listed.attempts, listed.last_error.as_str()),
            (1, "no answer within 2s")
        );
        assert!(oldest().is_some_and(|o| o.since <= since));
        drop(streak);
        assert!(oldest_after(since).is_none());
    }

    /// Other unit tests may run retries in parallel: only this test's streaks count.
    fn oldest_after(since: Instant) -> Option<Failing> {
        lock()
            .iter()
            .map(|(_, f)| f)
            .filter(|f| f.since >= since)
            .min_by_key(|f| f.since)
            .cloned()
    }
}
