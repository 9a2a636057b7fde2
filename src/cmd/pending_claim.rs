//! `seckill pending-claim`: recover entries a dead or stuck consumer left
//! pending, and dead-letter the ones that can never be stored.
//!
//! A thin shell: the flags and the report. The claim and settle steps (and
//! the rules for when an entry is dead-lettered) are `orders::claimer`.

use std::time::Duration;

use anyhow::Result;

use crate::context::Globals;
use crate::exit_codes;
use crate::orders::claimer::{ClaimSettings, Claimer};
use crate::orders::pipeline::Session;
use crate::orders::{StoreArgs, default_consumer_name};
use crate::output::{self, Format};
use crate::redis_conn::parse_duration_arg;

/// Flags of `seckill pending-claim`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Claim entries pending at least this long (e.g. 30s, 5m; 0s claims everything pending).
    #[arg(long, default_value = "30s", value_parser = parse_duration_arg, value_name = "DURATION")]
    pub min_idle: Duration,

    /// Dead-letter a valid order delivered this many times if the database still refuses it
    /// (entries that are not orders are dead-lettered at once).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..), value_name = "N")]
    pub max_deliveries: u64,

    /// Entries claimed per XAUTOCLAIM call and stored per transaction.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=10_000), value_name = "N")]
    pub batch: u64,

    /// Consumer name the entries are claimed to (default: pending-claim-HOST-PID).
    #[arg(long, value_name = "NAME")]
    pub consumer: Option<String>,

    /// The order database (`--orders-db`).
    #[command(flatten)]
    pub store: StoreArgs,
}

const COMMAND: &str = "pending-claim";

/// Claim, store or dead-letter every idle pending entry of the campaign; exit 0.
pub fn run(globals: &Globals, args: &Args) -> Result<i32> {
    let Session {
        campaign,
        target,
        conn,
        mut store,
        stop,
    } = Session::open(COMMAND, globals, &args.store)?;
    let consumer = args
        .consumer
        .clone()
        .unwrap_or_else(|| default_consumer_name("pending-claim"));
    let settings = ClaimSettings {
        consumer: consumer.clone(),
        min_idle: args.min_idle,
        max_deliveries: args.max_deliveries,
        batch: args.batch,
    };
    let reports = Claimer::new(&campaign, &target, conn, store.as_mut(), &stop, settings).run()?;
    match globals.format {
        Format::Json => output::print_json(&serde_json::json!({
            "campaign": campaign.id,
            "consumer": consumer,
            "database": store.display(),
            "min_idle_ms": args.min_idle.as_millis() as u64,
            "max_deliveries": args.max_deliveries,
            "items": reports,
        }))?,
        Format::Table => {
            let mut table =
                output::table(["item", "claimed", "stored", "dead-lettered", "deleted"]);
            for r in &reports {
                table.add_row(vec![
                    r.item.clone(),
                    r.claimed.to_string(),
                    r.stored.to_string(),
                    r.dead_lettered.to_string(),
                    r.deleted.to_string(),
                ]);
            }
            println!("{table}");
        }
    }
    Ok(exit_codes::SUCCESS)
}
