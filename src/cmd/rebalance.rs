//! `seckill rebalance`: move stock of bucketed items from full buckets to
//! draining ones (and settle stale transfers), once or, with `--watch`, every
//! interval until SIGINT/SIGTERM. Optional: buys sell out completely without
//! it (docs/buckets.md).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::buckets::{Layout, rebalance};
use crate::context::Globals;
use crate::error::usage;
use crate::exit_codes;
use crate::output::{self, Format};
use crate::redis_conn::parse_duration_arg;

/// Flags of `seckill rebalance`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
seckill -c campaigns/moutai-cluster.yaml --cluster rebalance\n  \
seckill -c campaigns/moutai-cluster.yaml --cluster rebalance --watch --interval 200ms")]
pub struct Args {
    /// Only this item (default: every bucketed item of the campaign).
    #[arg(long, value_name = "ID")]
    pub item: Option<String>,

    /// Keep going, one pass per interval, until SIGINT/SIGTERM.
    #[arg(long)]
    pub watch: bool,

    /// Pause between passes with --watch.
    #[arg(long, default_value = "200ms", value_parser = parse_duration_arg, value_name = "DURATION")]
    pub interval: Duration,

    /// A bucket holding less than this fraction of the mean is refilled up to the mean.
    #[arg(long, default_value_t = 0.5, value_name = "FRACTION")]
    pub low_water: f64,
}

/// One pass (or passes until stopped); exit 0.
pub fn run(globals: &Globals, args: &Args) -> Result<i32> {
    let campaign = globals.campaign()?;
    if !(0.0..=1.0).contains(&args.low_water) {
        return Err(usage("--low-water must be between 0 and 1"));
    }
    let layouts: Vec<Layout> = campaign
        .select_items(args.item.as_deref())?
        .into_iter()
        .map(|item| Layout::live(&campaign.id, item))
        .filter(Layout::is_bucketed)
        .collect();
    if layouts.is_empty() {
        return Err(usage(format!(
            "campaign {} has no bucketed item to rebalance (items say `buckets: N` with N > 1)",
            campaign.id
        )));
    }
    let target = globals.redis(&campaign)?;
    let mut conn = target.connect()?;
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .context("cannot install the signal handler")?;
    }
    loop {
        let mut passes = Vec::new();
        for layout in &layouts {
            passes.push(rebalance::pass(&mut conn, layout, args.low_water)?);
        }
        if !args.watch {
            print(globals.format, &passes)?;
            return Ok(exit_codes::SUCCESS);
        }
        for pass in passes
            .iter()
            .filter(|p| !p.moves.is_empty() || p.settled > 0)
        {
            let moves: Vec<String> = pass
                .moves
                .iter()
                .map(|m| format!("{} → {}: {} ({})", m.from, m.to, m.units, m.transfer_id))
                .collect();
            crate::orders::log(
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
        if stop.load(Ordering::SeqCst) {
            return Ok(exit_codes::SUCCESS);
        }
        std::thread::sleep(args.interval);
    }
}

fn print(format: Format, passes: &[rebalance::Pass]) -> Result<()> {
    match format {
        Format::Json => output::print_json(&passes),
        Format::Table => {
            let mut table =
                output::table(["item", "stock before", "moves", "stock after", "settled"]);
            for p in passes {
                let list = |s: &[i64]| s.iter().map(i64::to_string).collect::<Vec<_>>().join(" ");
                let moves: Vec<String> = p
                    .moves
                    .iter()
                    .map(|m| format!("{}→{} {}", m.from, m.to, m.units))
                    .collect();
                table.add_row(vec![
                    p.item.clone(),
                    list(&p.stock_before),
                    if moves.is_empty() {
                        "-".into()
                    } else {
                        moves.join(", ")
                    },
                    list(&p.stock_after),
                    p.settled.to_string(),
                ]);
            }
            println!("{table}");
            Ok(())
        }
    }
}
