//! Features above the domain.

pub mod loadtest;
pub mod monitor;
pub mod reconcile;
