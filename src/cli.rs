//! The command line: global flags and one subcommand per file in `cmd/`.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, Subcommand};

use crate::cmd;
use crate::context::Globals;
use crate::output::Format;
use crate::redis_conn::ConnectionArgs;

/// Run a flash sale (秒杀) on Redis without ever selling one item too many.
///
/// Typical launch day: `seckill preheat -c campaigns/moutai.yaml` an hour
/// before, `seckill consume` running beside the sale, `seckill shutdown-switch on`
/// if anything goes wrong, `seckill reconcile` at night.
#[derive(Debug, Parser)]
#[command(
    name = "seckill",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    /// Campaign file (YAML) to work on.
    #[arg(
        short,
        long,
        global = true,
        env = "SECKILL_CAMPAIGN",
        value_name = "FILE"
    )]
    pub campaign: Option<PathBuf>,

    /// Output format: a table for people or JSON for scripts.
    #[arg(long, global = true, value_enum, default_value_t = Format::Table)]
    pub format: Format,

    #[command(flatten)]
    pub connection: ConnectionArgs,

    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Reset a campaign's Redis state to the file's values (rehearsals, load tests).
    Init(cmd::init::Args),
    /// Load stock, item data and the sale window into Redis before launch; never clobbers a live sale.
    Preheat(cmd::preheat::Args),
    /// One purchase attempt through the buy script; the exit code tells the outcome.
    #[command(
        after_help = "Exit codes: 0 ok, 10 sold_out, 11 duplicate, 12 rate_limited, 13 closed, \
14 not_started, 15 ended, 16 not_preheated; 1 runtime error, 2 usage error.\n\
Example: seckill -c campaigns/moutai.yaml buy --item 1001 --user alice --request-id r-1"
    )]
    Buy(cmd::buy::Args),
    /// The kill switch: `on` refuses every buy from the next call, `off` reopens, `status` shows.
    ShutdownSwitch(cmd::shutdown_switch::Args),
    /// Print a shell completion script (bash, zsh, fish, ...).
    Completions(cmd::completions::Args),
    /// Carry orders from the item streams into the order database: commit, then ack.
    Consume(cmd::consume::Args),
    /// Recover idle pending orders (store them, or dead-letter the ones that cannot be stored).
    PendingClaim(cmd::pending_claim::Args),
    /// Prove initial stock = database + in flight + dead-lettered + left; exit 0 balanced, 3 drift, 1 not checked.
    Reconcile(cmd::reconcile::Args),
    /// Pay one reserved order (campaigns with payment_timeout); exit 0 paid, 30 already paid, 31 expired, 32 cancelled, 33 unknown.
    Pay(cmd::pay::Args),
    /// Cancel one reserved order: its units go back on sale; a paid order is never released.
    Cancel(cmd::cancel::Args),
    /// Release every reservation past its payment deadline (Redis clock), once or in a loop.
    Expire(cmd::expire::Args),
    /// Load-test stock-decrement designs (V1–V4, full buy script, lock) in a private namespace; never touches a sale.
    Loadtest(cmd::loadtest::Args),
}

impl Cli {
    /// Run the chosen subcommand; returns the process exit code.
    pub fn run(self) -> Result<i32> {
        let globals = Globals {
            campaign: self.campaign,
            format: self.format,
            connection: self.connection,
        };
        match self.command {
            Command::Init(args) => cmd::init::run(&globals, &args),
            Command::Preheat(args) => cmd::preheat::run(&globals, &args),
            Command::Buy(args) => cmd::buy::run(&globals, &args),
            Command::ShutdownSwitch(args) => cmd::shutdown_switch::run(&globals, &args),
            Command::Completions(args) => cmd::completions::run(&args),
            Command::Consume(args) => cmd::consume::run(&globals, &args),
            Command::PendingClaim(args) => cmd::pending_claim::run(&globals, &args),
            Command::Reconcile(args) => cmd::reconcile::run(&globals, &args),
            Command::Loadtest(args) => cmd::loadtest::run(&globals, &args),
            Command::Pay(args) => cmd::pay::run(&globals, &args),
            Command::Cancel(args) => cmd::cancel::run(&globals, &args),
            Command::Expire(args) => cmd::expire::run(&globals, &args),
        }
    }
}
