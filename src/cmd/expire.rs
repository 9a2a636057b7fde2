//! `seckill expire`: release every reservation whose payment deadline has
//! passed (Redis clock), in bounded batches; once, or in a loop beside the
//! sale. Any number may run at once and any may be killed at any moment:
//! each release re-checks the order inside one script (see `reservations`).

use std::time::Duration;

use anyhow::Result;
use serde::Serialize;

use crate::context::Globals;
use crate::exit_codes;
use crate::orders::log;
use crate::output::{self, Format};
use crate::redis_conn::parse_duration_arg;
use crate::reservations::{self, ExpireSettings, ItemExpiry};

/// Flags of `seckill expire`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Run it beside the sale (several are fine) or from cron; it catches up on everything due.
Exit codes: 0 done (or stopped by SIGINT/SIGTERM); 1 Redis unreachable; 2 usage error.
Examples:
  seckill -c campaigns/moutai.yaml expire                      # one pass
  seckill -c campaigns/moutai.yaml expire --loop --interval 1s # until Ctrl-C")]
pub struct Args {
    /// Keep running: a pass every --interval until SIGINT/SIGTERM.
    #[arg(long = "loop")]
    pub repeat: bool,

    /// Pause between passes with --loop (e.g. 500ms, 1s).
    #[arg(long, default_value = "1s", value_parser = parse_duration_arg, value_name = "DURATION")]
    pub interval: Duration,

    /// Orders released per script call (bounds how long Redis is busy per call).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=10_000), value_name = "N")]
    pub batch: u64,
}

#[derive(Serialize)]
struct Summary<'a> {
    campaign: &'a str,
    redis: &'a str,
    items: &'a [ItemExpiry],
    exit_code: i32,
}

const COMMAND: &str = "expire";

/// Release due reservations; exit 0.
pub fn run(globals: &Globals, args: &Args) -> Result<i32> {
    let campaign = globals.campaign()?;
    if campaign.payment_timeout.is_none() {
        log(
            COMMAND,
            format!(
                "campaign {} has no payment_timeout: nothing is ever due (releasing reservations left from an earlier file, if any)",
                campaign.id
            ),
        );
    }
    let target = globals.redis(&campaign)?;
    let stop = crate::orders::pipeline::stop_flag()?;
    let conn = target.connect()?;
    let settings = ExpireSettings {
        batch: args.batch,
        repeat: args.repeat.then_some(args.interval),
    };
    if args.repeat {
        log(
            COMMAND,
            format!(
                "releasing due reservations of campaign {} on {} every {:?} until stopped",
                campaign.id, target.display, args.interval
            ),
        );
    }
    let items = reservations::expire(&target, conn, &campaign, &settings, &stop)?;
    let code = exit_codes::SUCCESS;
    match globals.format {
        Format::Json => output::print_json(&Summary {
            campaign: &campaign.id,
            redis: &target.display,
            items: &items,
            exit_code: code,
        })?,
        Format::Table => {
            println!(
                "expired reservations of campaign {} on {}",
                campaign.id, target.display
            );
            let mut table = output::table([
                "item",
                "released",
                "units back in stock",
                "calls",
                "not released (no stock key)",
            ]);
            for item in &items {
                table.add_row(vec![
                    item.item.clone(),
                    item.released.to_string(),
                    item.units.to_string(),
                    item.calls.to_string(),
                    item.stuck.to_string(),
                ]);
            }
            println!("{table}");
        }
    }
    Ok(code)
}
