//! `seckill`: run a flash sale on Redis without ever selling one item too many.
//!
//! The binary is a thin shell around this library: `cli` parses, `cmd::*`
//! runs one subcommand each with the `context` it gets from below and hands
//! a named report to `report::emit`; the pieces below are shared.

pub mod buckets;
pub mod buy;
pub mod campaign;
pub mod cli;
pub mod cmd;
pub mod context;
pub mod error;
pub mod exit_codes;
pub mod keys;
pub mod kill_switch;
pub mod loadtest;
pub mod metrics;
pub mod orders;
pub mod output;
pub mod recovery;
pub mod redis_conn;
pub mod redis_failure;
pub mod report;
pub mod reservations;
pub mod scripts;
pub mod state;
pub mod status;
