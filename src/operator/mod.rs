//! Operator tools: what an operator runs around a sale, built on the domain
//! — the load test's sale scenarios over the engine crate `seckill-loadgen`
//! ([`loadtest`]).
//!
//! May import: domain, redis_client, model, util.

pub(crate) mod loadtest;
