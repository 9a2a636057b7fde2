//! Small utilities with no knowledge of sales: [`output`] (tables, stdout,
//! quiet), [`error_text`] (an error on one line), [`log`] (timestamped lines), [`retry`] (backoff, stoppable
//! sleep, loop intervals), [`streak`] (the
//! failures being retried, for the stall watch), [`progress`] (a bar on a terminal), [`text`]
//! (times and durations), [`identity`] (account and host).
//!
//! May import: nothing of the crate.

pub(crate) mod columns;
pub(crate) mod error_text;
pub(crate) mod identity;
pub(crate) mod log;
pub(crate) mod output;
pub(crate) mod progress;
pub(crate) mod prometheus;
pub(crate) mod retry;
pub(crate) mod streak;
pub(crate) mod text;
