//! `seckill expire`: release every reservation whose payment deadline has
//! passed (Redis clock), in bounded batches; once, or in a loop beside the
//! sale. Any number may run at once and any may be killed at any moment:
//! each release re-checks the order inside one script (see `reservations`).

use std::time::Duration;

use anyhow::Result;
use serde::Serialize;

use crate::domain::reservations::{self, ExpireSettings, ItemExpiry};
use crate::invocation::context::Context;
use crate::invocation::report::Report;
use crate::redis_client::conn::parse_duration_arg;
use crate::util::log;
use crate::util::output;

/// Flags of `seckill expire`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Keep running: a pass every --interval until SIGINT/SIGTERM.
    #[arg(long = "loop")]
    pub(crate) repeat: bool,

    /// Pause between passes with --loop (e.g. 500ms, 1s).
    #[arg(long, default_value = "1s", value_parser = parse_duration_arg, value_name = "DURATION")]
    pub(crate) interval: Duration,

    /// Orders released per script call (bounds how long Redis is busy per call).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=10_000), value_name = "N")]
    pub(crate) batch: u64,
}

/// `seckill expire`'s report: what was released, per item.
#[derive(Debug, Serialize)]
pub(crate) struct ExpireReport {
    /// One entry per item of the campaign.
    pub(crate) items: Vec<ItemExpiry>,
    #[serde(skip)]
    heading: String,
}

impl Report for ExpireReport {
    fn render(&self) -> String {
        let rows = self
            .items
            .iter()
            .map(|item| {
                vec![
                    item.item.clone(),
                    item.released.to_string(),
                    item.units.to_string(),
                    item.calls.to_string(),
                    item.stuck.to_string(),
                ]
            })
            .collect();
        let header = [
            "item",
            "released",
            "units back in stock",
            "calls",
            "not released (no stock key)",
        ];
        format!("{}\n{}", self.heading, output::grid(&header, rows, &[]))
    }
}

/// Release due reservations (once, or until SIGINT/SIGTERM with --loop).
pub(crate) fn run(ctx: &Context, args: &Args) -> Result<ExpireReport> {
    let stop = ctx.stop_on_signals()?;
    let opened = ctx.open()?;
    let campaign = &opened.campaign;
    if campaign.payment_timeout.is_none() {
        log::line(
            ctx.command,
            format!(
                "campaign {} has no payment_timeout: nothing new is ever due (releasing reservations left from an earlier file, if any)",
                campaign.id
            ),
        );
    }
    let settings = ExpireSettings {
        batch: args.batch,
        repeat: args.repeat.then_some(args.interval),
    };
    if args.repeat {
        log::line(
            ctx.command,
            format!(
                "releasing due reservations of campaign {} on {} every {:?} until stopped",
                campaign.id, opened.target.display, args.interval
            ),
        );
    }
    let items = reservations::expire(&opened.target, opened.conn, campaign, &settings, &stop)?;
    Ok(ExpireReport {
        heading: format!(
            "expired reservations of campaign {} on {}",
            campaign.id, opened.target.display
        ),
        items,
    })
}
