//! The load test's engine and scenarios, on their way to their own crate.
//!
//! May import: domain, redis_client, model, util.

pub(crate) mod loadtest;
