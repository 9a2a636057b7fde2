//! What one invocation of `seckill` gets from below the command line: its
//! [`context`] (the global flags, the campaign, the Redis target, opening
//! them), the one output path for its [`report`] (table or JSON envelope),
//! the [`help`] texts every `--help` ends with, and
//! [`notify`], the events posted to `--notify` webhooks.
//!
//! May import: domain, redis_client, model, util.

pub(crate) mod context;
pub(crate) mod failure;
pub mod help;
pub(crate) mod notify;
pub mod report;
