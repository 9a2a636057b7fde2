//! One module per subcommand, each with its own `Args` and `run`.

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
