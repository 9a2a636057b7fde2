//! Watching a live sale.

pub mod metrics;
pub mod status;
