//! What is built on the domain: the launch-day [`doctor`], the nightly [`reconcile`] proof, the
//! [`loadtest`] engine and its scenarios, and [`monitor`] (a live sale's
//! status and its Prometheus metrics).
//!
//! May import: domain, redis_client, model, util; features do not import
//! each other.

pub(crate) mod doctor;
pub(crate) mod loadtest;
pub(crate) mod monitor;
pub(crate) mod reconcile;
pub(crate) mod serve;
