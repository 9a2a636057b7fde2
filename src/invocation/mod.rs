//! What one invocation of `seckill` gets from below the command line: its
//! [`context`] (the global flags, the campaign, the Redis target, opening
//! them), the one output path for its [`report`] (table or JSON envelope),
//! and the [`help`] texts every `--help` ends with.
//!
//! May import: domain, redis_client, model, util.

pub(crate) mod context;
pub(crate) mod failure;
pub mod help;
pub mod report;
