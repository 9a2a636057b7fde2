//! Small utilities.

pub mod identity;
pub mod log;
pub mod output;
pub mod retry;
