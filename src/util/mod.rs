//! Small utilities with no knowledge of sales: [`output`] (tables, stdout,
//! quiet), [`error_text`] (an error on one line), [`log`] (timestamped lines), [`retry`] (backoff, stoppable
//! sleep), [`text`] (times and durations), [`identity`] (account and host).
//!
//! May import: nothing of the crate.

pub mod error_text;
pub mod identity;
pub mod log;
pub mod output;
pub mod retry;
pub mod text;
