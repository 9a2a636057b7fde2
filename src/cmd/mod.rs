//! One file per subcommand, each with its own `Args` (the flags), a `run`
//! that gets its context from below and returns a named report, and the
//! report's table. This is the command-line door: operations
//! (`domain::operation`) are checked and run below it, a command only turns
//! flags into one and its result into a table, JSON and an exit code. The
//! command line above (`cli`) is never imported: `completions` and `man`
//! get the clap definition from the context.
//!
//! May import: http, invocation, operator, domain, redis_client, model, util.

pub(crate) mod acl;
pub(crate) mod buy;
pub(crate) mod campaigns;
pub(crate) mod cancel;
pub mod completions;
pub(crate) mod consume;
pub(crate) mod dead_letter;
pub(crate) mod doctor;
pub(crate) mod expire;
pub(crate) mod init;
pub(crate) mod loadtest;
pub mod man;
pub(crate) mod pay;
pub(crate) mod pending_claim;
pub(crate) mod preheat;
pub(crate) mod queue;
pub(crate) mod rebalance;
pub(crate) mod reconcile;
pub(crate) mod regions;
pub(crate) mod register;
pub(crate) mod scripts;
pub(crate) mod serve;
pub(crate) mod shutdown_switch;
pub(crate) mod status;
