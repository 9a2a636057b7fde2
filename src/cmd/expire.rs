//! `seckill expire`: release every reservation whose payment deadline has
//! passed (Redis clock), in bounded batches; once, or in a loop beside the
//! sale. Any number may run at once and any may be killed at any moment:
//! each release re-checks the order inside one script (see `reservations`).
//!
//! The loop is here, one `reservations::expire` pass per round, so each
//! completed pass is what `/metrics` reports as the last success; a stop
//! signal ends the wait between passes at once. Redis not answering (a
//! stall, a restart) is waited out with backoff and timestamped log lines,
//! in the loop and once alike; a value no wait can fix (a corrupt counter)
//! leaves its item unreleased, named, and the command exits 1 (a pass that
//! left an item so is no success for `/metrics`); a refusal for credentials
//! ends the command at once.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Result;
use serde::Serialize;

use crate::domain::reservations::{self, ExpireConn, ExpireSettings, ItemExpiry};
use crate::http::service::{self, parse_listen};
use crate::invocation::context::Context;
use crate::invocation::report::Report;
use crate::model::exit_codes;
use crate::util::columns::{self, Column};
use crate::util::error_text;
use crate::util::log;
use crate::util::output;
use crate::util::retry::{parse_interval_arg, sleep_unless_stopped};

/// Flags of `seckill expire`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Keep running: a pass every --interval until SIGINT/SIGTERM.
    #[arg(long = "loop")]
    pub(crate) repeat: bool,

    /// Pause between passes with --loop (e.g. 500ms, 1s; at least 100ms).
    #[arg(long, default_value = "1s", value_parser = parse_interval_arg, value_name = "DURATION")]
    pub(crate) interval: Duration,

    /// With --loop: serve http://ADDR/metrics and /healthz (200 while Redis answers);
    /// :PORT for every interface, or HOST:PORT.
    #[arg(long, value_name = "ADDR", value_parser = parse_listen, requires = "repeat")]
    pub(crate) metrics_listen: Option<SocketAddr>,

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

impl ExpireReport {
    fn failed(&self) -> Vec<String> {
        self.items
            .iter()
            .filter_map(|item| {
                let why = item.failed.as_ref()?;
                Some(format!("item {}: {why}", item.item))
            })
            .collect()
    }
}

impl Report for ExpireReport {
    fn exit_code(&self) -> i32 {
        if self.failed().is_empty() {
            exit_codes::SUCCESS
        } else {
            exit_codes::RUNTIME_ERROR
        }
    }

    fn failure(&self) -> Option<String> {
        let failed = self.failed();
        (!failed.is_empty()).then(|| {
            format!(
                "due reservations NOT released (a stored value no wait can fix; repair it and run again): {}",
                failed.join("; ")
            )
        })
    }

    /// One line per item (ITEM cut first on a narrow terminal, figures
    /// whole), and what the short headers count.
    fn render(&self) -> String {
        let rows: Vec<Vec<String>> = self
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
        let columns = [
            Column::cut("ITEM"),
            Column::figure("RELEASED"),
            Column::figure("UNITS"),
            Column::figure("CALLS"),
            Column::figure("STUCK"),
        ];
        format!(
            "{}{}{}",
            output::paragraph(&self.heading),
            columns::list(&columns, &rows).text,
            output::paragraph(
                "RELEASED reservations, UNITS back in stock, CALLS of the release script; \
                 STUCK: due but not released (no stock key)"
            )
        )
    }
}

/// Release due reservations (once, or until SIGINT/SIGTERM with --loop).
pub(crate) fn run(ctx: &Context, args: &Args) -> Result<ExpireReport> {
    let stop = ctx.stop_on_signals()?;
    let opened = ctx.open()?;
    let campaign = &opened.campaign;
    let target = &opened.target;
    if campaign.payment_timeout.is_none() {
        log::line(
            ctx.command,
            format!(
                "campaign {} has no payment_timeout: nothing new is ever due (releasing reservations left from an earlier file, if any)",
                campaign.id
            ),
        );
    }
    let state = service::start(args.metrics_listen, "expire", campaign, target, None)?;
    let _stall_watch = ctx.notifier().watch_stalls(ctx.command, &campaign.id);
    if args.repeat {
        log::line(
            ctx.command,
            format!(
                "releasing due reservations of campaign {} on {} every {} until stopped",
                campaign.id,
                target.display,
                humantime::format_duration(args.interval)
            ),
        );
    }
    let settings = ExpireSettings { batch: args.batch };
    let mut conn = ExpireConn::new(target, opened.conn);
    let mut totals: Vec<ItemExpiry> = Vec::new();
    loop {
        let pass =
            reservations::expire(&mut conn, campaign, &settings, &stop).inspect_err(|e| {
                if args.repeat {
                    log::line(ctx.command, format!("stopping: {}", error_text::render(e)));
                }
            })?;
        if pass.iter().all(|item| item.failed.is_none()) {
            state.succeeded();
        }
        for item in &pass {
            if args.repeat && item.released > 0 {
                log::line(
                    ctx.command,
                    format!(
                        "item {}: released {} reservation(s), {} unit(s) back in stock",
                        item.item, item.released, item.units
                    ),
                );
            }
        }
        add_pass(&mut totals, pass);
        if !args.repeat || stop.load(Ordering::SeqCst) {
            break;
        }
        sleep_unless_stopped(args.interval, &stop);
        if stop.load(Ordering::SeqCst) {
            break;
        }
    }
    Ok(ExpireReport {
        heading: format!(
            "expired reservations of campaign {} on {}",
            campaign.id, target.display
        ),
        items: totals,
    })
}

/// Add one pass's counts to the totals of the passes before (item by item).
fn add_pass(totals: &mut Vec<ItemExpiry>, pass: Vec<ItemExpiry>) {
    if totals.is_empty() {
        *totals = pass;
        return;
    }
    for (total, item) in totals.iter_mut().zip(pass) {
        total.released += item.released;
        total.units += item.units;
        total.calls += item.calls;
        total.stuck = item.stuck;
        total.unreadable.extend(item.unreadable);
        total.failed = item.failed;
    }
}
