//! One module per subcommand, each with its own `Args` and `run`.

pub mod buy;
pub mod completions;
pub mod init;
pub mod loadtest;
pub mod preheat;
pub mod shutdown_switch;
