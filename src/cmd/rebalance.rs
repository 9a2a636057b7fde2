//! `seckill rebalance`: move stock of bucketed items from full buckets to
//! draining ones (and settle stale transfers), once or, with `--watch`, every
//! interval until SIGINT/SIGTERM. Optional: buys sell out completely without
//! it (docs/buckets.md).
//!
//! A stop signal ends the wait between passes at once (within 50 ms), and a
//! call it interrupted (EINTR) is made again on a fresh connection: the pass
//! reads everything afresh, and a debit whose reply was lost is a transfer
//! in transit that the next sweep settles, as after a crash.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Result;
use serde::Serialize;

use crate::domain::item::{Pass, SaleItem};
use crate::http::service::{self, parse_listen};
use crate::invocation::context::{Context, Opened};
use crate::invocation::report::Report;
use crate::model::error::usage;
use crate::redis_client::conn::{Conn, RedisTarget};
use crate::util::retry::{interrupted, parse_interval_arg, sleep_unless_stopped};
use crate::util::{log, output};

/// Flags of `seckill rebalance`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Only this item (default: every bucketed item of the campaign).
    #[arg(long, value_name = "ID")]
    pub(crate) item: Option<String>,

    /// Keep going, one pass per interval, until SIGINT/SIGTERM.
    #[arg(long)]
    pub(crate) watch: bool,

    /// Pause between passes with --watch (at least 100ms).
    #[arg(long, default_value = "200ms", value_parser = parse_interval_arg, value_name = "DURATION")]
    pub(crate) interval: Duration,

    /// With --watch: serve http://ADDR/metrics and /healthz (200 while Redis answers);
    /// :PORT for every interface, or HOST:PORT.
    #[arg(long, value_name = "ADDR", value_parser = parse_listen, requires = "watch")]
    pub(crate) metrics_listen: Option<SocketAddr>,

    /// A bucket holding less than this fraction of the mean is refilled up to the mean.
    #[arg(long, default_value_t = 0.5, value_name = "FRACTION")]
    pub(crate) low_water: f64,
}

/// `seckill rebalance`'s report: the last pass per item, and totals.
#[derive(Debug, Serialize)]
pub(crate) struct RebalanceReport {
    /// Passes made (1 without --watch).
    pub(crate) passes: u64,
    /// Transfers made over all passes.
    pub(crate) moves: u64,
    /// Stale transfers of others settled over all passes.
    pub(crate) settled: u64,
    /// The last pass, per item.
    pub(crate) items: Vec<Pass>,
}

impl Report for RebalanceReport {
    fn render(&self) -> String {
        let list = |s: &[i64]| s.iter().map(i64::to_string).collect::<Vec<_>>().join(" ");
        let rows = self
            .items
            .iter()
            .map(|p| {
                let moves: Vec<String> = p
                    .moves
                    .iter()
                    .map(|m| format!("{}→{} {}", m.from, m.to, m.units))
                    .collect();
                vec![
                    p.item.clone(),
                    list(&p.stock_before),
                    if moves.is_empty() {
                        "-".into()
                    } else {
                        moves.join(", ")
                    },
                    list(&p.stock_after),
                    p.settled.to_string(),
                ]
            })
            .collect();
        let table = output::grid(
            &["item", "stock before", "moves", "stock after", "settled"],
            rows,
            &[1, 2, 3],
        );
        format!(
            "{} pass(es), {} transfer(s), {} stale transfer(s) settled; last pass:\n{table}",
            self.passes, self.moves, self.settled
        )
    }
}

/// One pass (or passes until SIGINT/SIGTERM with --watch).
pub(crate) fn run(ctx: &Context, args: &Args) -> Result<RebalanceReport> {
    if !(0.0..=1.0).contains(&args.low_water) {
        return Err(usage("--low-water must be between 0 and 1"));
    }
    let Opened {
        campaign,
        target,
        mut conn,
    } = ctx.open()?;
    let items: Vec<SaleItem> = SaleItem::select(&campaign, args.item.as_deref())?
        .into_iter()
        .filter(SaleItem::moves_stock_between_slots)
        .collect();
    if items.is_empty() {
        return Err(usage(format!(
            "campaign {} has no bucketed item to rebalance (items say `buckets: N` with N > 1)",
            campaign.id
        )));
    }
    let stop = ctx.stop_on_signals()?;
    let state = service::start(args.metrics_listen, "rebalance", &campaign, &target, None)?;
    let mut report = RebalanceReport {
        passes: 0,
        moves: 0,
        settled: 0,
        items: Vec::new(),
    };
    loop {
        report.items.clear();
        for item in &items {
            let Some(pass) = pass_of(item, &mut conn, args.low_water, &target)? else {
                continue;
            };
            report.moves += pass.moves.len() as u64;
            report.settled += u64::from(pass.settled);
            if args.watch && (!pass.moves.is_empty() || pass.settled > 0) {
                log_pass(&pass);
            }
            report.items.push(pass);
        }
        report.passes += 1;
        state.succeeded();
        if !args.watch || stop.load(Ordering::SeqCst) {
            return Ok(report);
        }
        sleep_unless_stopped(args.interval, &stop);
        if stop.load(Ordering::SeqCst) {
            return Ok(report);
        }
    }
}

/// One item's pass; a call a signal interrupted (EINTR) is made again once
/// on a fresh connection (the old one may still owe a reply).
fn pass_of(
    item: &SaleItem,
    conn: &mut Conn,
    low_water: f64,
    target: &RedisTarget,
) -> Result<Option<Pass>> {
    match item.rebalance(conn, low_water) {
        Err(error) if interrupted(&error) => {
            *conn = target.connect()?;
            item.rebalance(conn, low_water)
        }
        done => done,
    }
}

fn log_pass(pass: &Pass) {
    let moves: Vec<String> = pass
        .moves
        .iter()
        .map(|m| format!("{} → {}: {} ({})", m.from, m.to, m.units, m.transfer_id))
        .collect();
    log::line(
        "rebalance",
        format!(
            "{}: moved {}; settled {}",
            pass.item,
            if moves.is_empty() {
                "nothing".into()
            } else {
                moves.join(", ")
            },
            pass.settled
        ),
    );
}
