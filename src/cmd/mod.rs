//! One file per subcommand, each with its own `Args` (the flags), a `run`
//! that gets its context from below and returns a named report, and the
//! report's table.
//!
//! May import: invocation, features, domain, redis_client, model, util —
//! never the command line above (`cli`); `completions` and `man` get the
//! clap definition from the context.

pub mod buy;
pub mod cancel;
pub mod completions;
pub mod consume;
pub mod dead_letter;
pub mod expire;
pub mod init;
pub mod loadtest;
pub mod man;
pub mod pay;
pub mod pending_claim;
pub mod preheat;
pub mod rebalance;
pub mod reconcile;
pub mod shutdown_switch;
pub mod status;
