//! The command line: global flags, one subcommand per file in `cmd/`, and
//! the dispatch that builds each command's context and reports its result.
//!
//! May import: cmd, http, invocation, redis_client, model, util.

use std::path::PathBuf;

use anyhow::Result;
use clap::{CommandFactory, Parser, Subcommand};

use crate::cmd;
use crate::invocation::context::Context;
use crate::invocation::notify::NotifyArgs;
use crate::invocation::report::{emit, emit_error};
use crate::redis_client::conn::ConnectionArgs;
use crate::util::output::Format;

/// Run a flash sale (秒杀) on Redis without ever selling one item too many.
///
/// Typical launch day: `seckill preheat -c campaigns/moutai.yaml` an hour
/// before, `seckill consume` running beside the sale, `seckill shutdown-switch on`
/// if anything goes wrong, `seckill reconcile` at night.
#[derive(Debug, Parser)]
#[command(
    name = "seckill",
    version = env!("SECKILL_VERSION"),
    propagate_version = true,
    after_long_help = crate::invocation::help::root(),
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
    pub(crate) campaign: Option<PathBuf>,

    /// Output format: a table for people, JSON for scripts; csv (loadtest only),
    /// prometheus (status only) for monitoring.
    #[arg(long, global = true, value_enum, default_value_t = Format::Table, env = "SECKILL_FORMAT")]
    pub(crate) format: Format,

    /// Print nothing for people on success (for cron): no table, no warning, no
    /// log or retry line; errors, drift and refused outcomes still print, and so
    /// does the output of --format json, csv or prometheus. The exit code is the
    /// same either way.
    #[arg(
        short,
        long,
        global = true,
        env = "SECKILL_QUIET",
        value_parser = clap::builder::BoolishValueParser::new(),
        overrides_with = "quiet"
    )]
    pub(crate) quiet: bool,

    /// Say on stderr where each setting came from, then each Redis command sent (script
    /// name, first key, slot, node) with its latency: what the command does, without a
    /// packet capture. Never values or passwords.
    #[arg(
        short,
        long,
        global = true,
        env = "SECKILL_DEBUG",
        value_parser = clap::builder::BoolishValueParser::new(),
        overrides_with = "verbose"
    )]
    pub(crate) verbose: bool,

    /// Where the times in tables are: `file` (the offset the campaign file writes
    /// starts_at in, e.g. +08:00; UTC for a file without times), `utc`, or an
    /// offset like +08:00. JSON is always UTC.
    #[arg(
        long,
        global = true,
        env = "SECKILL_TZ",
        value_name = "ZONE",
        default_value = "file",
        allow_hyphen_values = true,
        value_parser = crate::util::text::parse_tz_arg
    )]
    pub(crate) tz: crate::util::text::Tz,

    #[command(flatten)]
    pub(crate) connection: ConnectionArgs,

    #[command(flatten)]
    pub(crate) notify: NotifyArgs,

    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Reset a campaign's Redis state to the file's values (rehearsals, load tests).
    #[command(after_long_help = crate::invocation::help::long("init"))]
    Init(cmd::init::Args),
    /// Load stock, item data and the sale window into Redis before launch; never clobbers a live sale.
    #[command(after_long_help = crate::invocation::help::long("preheat"))]
    Preheat(cmd::preheat::Args),
    /// One purchase attempt through the buy script; the exit code tells the outcome.
    #[command(after_long_help = crate::invocation::help::long("buy"))]
    Buy(cmd::buy::Args),
    /// The kill switch: `on` refuses every buy from the next call, `off` reopens, `status` shows.
    #[command(after_long_help = crate::invocation::help::long("shutdown-switch"))]
    ShutdownSwitch(cmd::shutdown_switch::Args),
    /// Print a shell completion script (bash, zsh, fish, ...).
    #[command(after_long_help = crate::invocation::help::long("completions"))]
    Completions(cmd::completions::Args),
    /// Print the manual page (roff), or write every page with --out DIR.
    #[command(after_long_help = crate::invocation::help::long("man"))]
    Man(cmd::man::Args),
    /// Carry orders from the item streams into the order database: commit, then ack.
    #[command(after_long_help = crate::invocation::help::long("consume"))]
    Consume(cmd::consume::Args),
    /// Recover idle pending orders (store them, or dead-letter the ones that cannot be stored).
    #[command(after_long_help = crate::invocation::help::long("pending-claim"))]
    PendingClaim(cmd::pending_claim::Args),
    /// List dead-lettered entries with their reasons, or re-drive them into the order database.
    #[command(after_long_help = crate::invocation::help::long("dead-letter"))]
    DeadLetter(cmd::dead_letter::Args),
    /// Prove initial stock = database + in flight + dead-lettered + left; exit 0 balanced, 3 drift, 1 not checked.
    #[command(after_long_help = crate::invocation::help::long("reconcile"))]
    Reconcile(cmd::reconcile::Args),
    /// Pay one reserved order (campaigns with payment_timeout); exit 0 paid, 30 already paid, 31 expired, 32 cancelled, 33 unknown.
    #[command(after_long_help = crate::invocation::help::long("pay"))]
    Pay(cmd::pay::Args),
    /// Cancel one reserved order: its units go back on sale; a paid order is never released.
    #[command(after_long_help = crate::invocation::help::long("cancel"))]
    Cancel(cmd::cancel::Args),
    /// Release every reservation past its payment deadline (Redis clock), once or in a loop.
    #[command(after_long_help = crate::invocation::help::long("expire"))]
    Expire(cmd::expire::Args),
    /// Live view of a sale per item: stock, rate, window, kill switch, consumer lag, key expiry (read only).
    #[command(after_long_help = crate::invocation::help::long("status"))]
    Status(cmd::status::Args),
    /// Go / no-go before launch: eviction, persistence, replicas, cluster, clocks, window, database, permissions.
    #[command(after_long_help = crate::invocation::help::long("doctor"))]
    Doctor(cmd::doctor::Args),
    /// The campaigns live on a Redis (recorded by preheat), to see which sale a command would
    /// touch; `campaigns drop ID` removes one (its keys and its registry entry).
    #[command(after_long_help = crate::invocation::help::long("campaigns"))]
    Campaigns(cmd::campaigns::Args),
    /// The shop's front door: an HTTP buy API through the same scripts (docs/serve.md); runs until SIGTERM.
    #[command(after_long_help = crate::invocation::help::long("serve"))]
    Serve(cmd::serve::Args),
    /// The waiting room in front of the buy script: join, position, status, pause/resume, admit, shuffle, penalize.
    #[command(after_long_help = crate::invocation::help::long("queue"))]
    Queue(cmd::queue::Args),
    /// Pre-register a user on a device for the waiting rooms that take registered users only (预约).
    #[command(after_long_help = crate::invocation::help::long("register"))]
    Register(cmd::register::Args),
    /// Move stock of bucketed items from full buckets to draining ones (optional; see docs/buckets.md).
    #[command(after_long_help = crate::invocation::help::long("rebalance"))]
    Rebalance(cmd::rebalance::Args),
    /// A sale over several Redis deployments: status, the scheduler (rebalance), move, home.
    #[command(after_long_help = crate::invocation::help::long("regions"))]
    Regions(cmd::regions::Args),
    /// The ACL SETUSER line of a buyer, consumer or operator user for this campaign; --apply writes and proves it.
    #[command(after_long_help = crate::invocation::help::long("acl"))]
    Acl(cmd::acl::Args),
    /// Load-test stock-decrement designs (V1–V4, full buy script, lock) in a private namespace; never touches a sale.
    #[command(after_long_help = crate::invocation::help::long("loadtest"))]
    Loadtest(cmd::loadtest::Args),
    /// Print a Lua script as Redis runs it (its lua/lib/ helpers pasted in), or list them with their KEYS and ARGV.
    #[command(after_long_help = crate::invocation::help::long("scripts"))]
    Scripts(cmd::scripts::Args),
}

/// The whole command line as clap sees it: handed down in the context to the
/// commands generated from it (completions, man pages).
pub fn definition() -> clap::Command {
    Cli::command()
}

impl Cli {
    /// Run the chosen subcommand and report its outcome (or error) once;
    /// returns the process exit code.
    pub fn run(self) -> i32 {
        crate::util::output::set_quiet(self.quiet);
        if self.verbose {
            crate::redis_client::trace::enable();
            say_settings();
        }
        let ctx = Context::new(
            definition,
            self.command.name(),
            self.campaign,
            self.format,
            self.connection,
            self.tz,
        )
        .with_notify(self.notify);
        match self.command.run(&ctx) {
            Ok(code) => code,
            Err(error) => emit_error(&ctx, &error),
        }
    }
}

/// `-v`: every flag of the command line as clap resolved it, and from where
/// (command line, environment, default); URLs without their password.
fn say_settings() {
    let Ok(matches) = definition().try_get_matches_from(std::env::args_os()) else {
        return;
    };
    let root = definition();
    let mut levels = vec![(&root, &matches)];
    if let Some((name, sub)) = matches.subcommand()
        && let Some(command) = root.find_subcommand(name)
    {
        levels.push((command, sub));
    }
    for (command, matches) in levels {
        for arg in command.get_arguments() {
            let id = arg.get_id().as_str();
            let (Some(source), Ok(Some(values))) =
                (matches.value_source(id), matches.try_get_raw(id))
            else {
                continue;
            };
            let value: Vec<String> = values
                .map(|v| {
                    let v = v.to_string_lossy();
                    if v.contains("://") {
                        // Each seed of a list, each password hidden.
                        crate::redis_client::conn::split_urls(&v)
                            .iter()
                            .map(|url| crate::redis_client::conn::redact(url))
                            .collect::<Vec<_>>()
                            .join(",")
                    } else {
                        v.into_owned()
                    }
                })
                .collect();
            let from = match source {
                clap::parser::ValueSource::CommandLine => "command line".to_string(),
                clap::parser::ValueSource::EnvVariable => format!(
                    "environment {}",
                    arg.get_env()
                        .map_or_else(String::new, |e| e.to_string_lossy().into_owned())
                ),
                _ => "default".to_string(),
            };
            let name = arg
                .get_long()
                .map_or_else(|| id.to_string(), |l| format!("--{l}"));
            crate::redis_client::trace::say(format!(
                "setting {name} = {} ({from})",
                value.join(",")
            ));
        }
    }
}

impl Command {
    /// The subcommand as typed.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Command::Init(_) => "init",
            Command::Preheat(_) => "preheat",
            Command::Buy(_) => "buy",
            Command::ShutdownSwitch(_) => "shutdown-switch",
            Command::Completions(_) => "completions",
            Command::Man(_) => "man",
            Command::Consume(_) => "consume",
            Command::PendingClaim(_) => "pending-claim",
            Command::DeadLetter(_) => "dead-letter",
            Command::Reconcile(_) => "reconcile",
            Command::Status(_) => "status",
            Command::Loadtest(_) => "loadtest",
            Command::Pay(_) => "pay",
            Command::Cancel(_) => "cancel",
            Command::Expire(_) => "expire",
            Command::Rebalance(_) => "rebalance",
            Command::Regions(_) => "regions",
            Command::Doctor(_) => "doctor",
            Command::Campaigns(_) => "campaigns",
            Command::Serve(_) => "serve",
            Command::Acl(_) => "acl",
            Command::Queue(_) => "queue",
            Command::Register(_) => "register",
            Command::Scripts(_) => "scripts",
        }
    }

    fn run(self, ctx: &Context) -> Result<i32> {
        // Refused before anything runs: a buy must not happen and then fail to print.
        if ctx.format == Format::Csv && !matches!(self, Command::Loadtest(_)) {
            return Err(crate::model::error::usage(format!(
                "--format csv applies to loadtest only; use table or json for {}",
                self.name()
            )));
        }
        // Completion scripts and man pages have no format to choose.
        let prints_a_report = !matches!(self, Command::Completions(_) | Command::Man(_));
        if ctx.format == Format::Prometheus
            && prints_a_report
            && !matches!(self, Command::Status(_))
        {
            return Err(crate::model::error::usage(
                "--format prometheus works only with `seckill status` \
                 (a running `consume` serves the same metrics with --metrics-listen ADDR)",
            ));
        }
        match self {
            Command::Init(args) => emit(ctx, &cmd::init::run(ctx, &args)?),
            Command::Preheat(args) => cmd::preheat::run_anywhere(ctx, &args),
            Command::Buy(args) => emit(ctx, &cmd::buy::run(ctx, &args)?),
            Command::ShutdownSwitch(args) => emit(ctx, &cmd::shutdown_switch::run(ctx, &args)?),
            Command::Completions(args) => cmd::completions::run(ctx, &args),
            Command::Man(args) => cmd::man::run(ctx, &args),
            Command::Consume(args) => emit(ctx, &cmd::consume::run(ctx, &args)?),
            Command::PendingClaim(args) => emit(ctx, &cmd::pending_claim::run(ctx, &args)?),
            Command::DeadLetter(args) => emit(ctx, &cmd::dead_letter::run(ctx, &args)?),
            Command::Reconcile(args) if args.regions => emit(
                ctx,
                &cmd::regions::status(
                    ctx,
                    &cmd::regions::Items {
                        item: args.item.clone(),
                    },
                    true,
                )?,
            ),
            Command::Reconcile(args) => emit(ctx, &cmd::reconcile::run(ctx, &args)?),
            Command::Status(args) => cmd::status::run(ctx, &args),
            Command::Rebalance(args) => emit(ctx, &cmd::rebalance::run(ctx, &args)?),
            Command::Regions(args) => cmd::regions::run(ctx, &args),
            Command::Doctor(args) => cmd::doctor::run_anywhere(ctx, &args),
            Command::Campaigns(args) => match &args.action {
                Some(cmd::campaigns::Action::Drop(drop)) => {
                    emit(ctx, &cmd::campaigns::drop(ctx, drop)?)
                }
                None => emit(ctx, &cmd::campaigns::run(ctx, &args)?),
            },
            Command::Serve(args) => emit(ctx, &cmd::serve::run(ctx, &args)?),
            Command::Queue(args) => emit(ctx, &cmd::queue::run(ctx, &args)?),
            Command::Register(args) => emit(ctx, &cmd::register::run(ctx, &args)?),
            Command::Loadtest(args) => match args.print_command {
                Some(variant) => cmd::loadtest::print_command(ctx, &args, variant),
                None if args.reservations => {
                    emit(ctx, &cmd::loadtest::run_reservations(ctx, &args)?)
                }
                None if args.queue()? => emit(ctx, &cmd::loadtest::run_queue(ctx, &args)?),
                None if args.limit_group()? => {
                    emit(ctx, &cmd::loadtest::run_limit_group(ctx, &args)?)
                }
                None if args.seats()? => emit(ctx, &cmd::loadtest::run_seats(ctx, &args)?),
                None => emit(ctx, &cmd::loadtest::run(ctx, &args)?),
            },
            Command::Pay(args) => emit(ctx, &cmd::pay::run(ctx, &args)?),
            Command::Cancel(args) => emit(ctx, &cmd::cancel::run(ctx, &args)?),
            Command::Expire(args) => emit(ctx, &cmd::expire::run(ctx, &args)?),
            Command::Acl(args) => emit(ctx, &cmd::acl::run(ctx, &args)?),
            Command::Scripts(args) => emit(ctx, &cmd::scripts::run(ctx, &args)?),
        }
    }
}
