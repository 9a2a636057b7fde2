//! `seckill pending-claim`: recover entries a dead or stuck consumer left
//! pending, and dead-letter the ones that can never be stored.
//!
//! A thin shell: the flags and the report. The claim and settle steps (and
//! the rules for when an entry is dead-lettered) are `orders::claimer`.

use std::time::Duration;

use anyhow::Result;

use crate::domain::orders::claimer::{ClaimSettings, Claimer, ItemClaims};
use crate::domain::orders::{StoreArgs, default_consumer_name};
use crate::invocation::context::{Context, Opened};
use crate::invocation::notify::Event;
use crate::invocation::report::Report;
use crate::model::exit_codes;
use crate::redis_client::conn::parse_duration_arg;
use crate::util::output;

/// Flags of `seckill pending-claim`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Claim entries pending at least this long (e.g. 30s, 5m; 0s claims everything pending).
    #[arg(long, default_value = "30s", value_parser = parse_duration_arg, value_name = "DURATION")]
    pub(crate) min_idle: Duration,

    /// Dead-letter a valid order delivered this many times if the database still refuses it
    /// (entries that are not orders are dead-lettered at once).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..), value_name = "N")]
    pub(crate) max_deliveries: u64,

    /// Entries claimed per XAUTOCLAIM call and stored per transaction.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=10_000), value_name = "N")]
    pub(crate) batch: u64,

    /// Afterwards, delete the group's consumers idle at least this long that hold nothing
    /// pending (e.g. 1h: names of consumers that are gone); one with pending entries is
    /// never deleted.
    #[arg(long, value_parser = parse_duration_arg, value_name = "IDLE")]
    pub(crate) delete_consumers: Option<Duration>,

    /// Consumer name the entries are claimed to (default: pending-claim-HOST, the same every run).
    #[arg(long, value_name = "NAME")]
    pub(crate) consumer: Option<String>,

    /// The order database (`--orders-db`).
    #[command(flatten)]
    pub(crate) store: StoreArgs,
}

/// `seckill pending-claim`'s report.
#[derive(Debug, serde::Serialize)]
pub(crate) struct PendingClaimReport {
    /// The consumer name entries were claimed to.
    pub(crate) consumer: String,
    /// The order database (password hidden).
    pub(crate) database: String,
    /// `--min-idle` in milliseconds.
    pub(crate) min_idle_ms: u64,
    /// `--max-deliveries`.
    pub(crate) max_deliveries: u64,
    /// One entry per item of the campaign.
    pub(crate) items: Vec<ItemClaims>,
}

impl PendingClaimReport {
    /// Orders the database refused, every item.
    fn refused(&self) -> u64 {
        self.items.iter().map(|r| r.refused).sum()
    }
}

impl Report for PendingClaimReport {
    fn render(&self) -> String {
        let rows = self.items.iter().map(|r| {
            vec![
                r.item.clone(),
                r.claimed.to_string(),
                r.stored.to_string(),
                r.refused.to_string(),
                r.dead_lettered.to_string(),
                r.deleted.to_string(),
            ]
        });
        let mut text = output::grid(
            &[
                "item",
                "claimed",
                "stored",
                "refused by\nthe database",
                "dead-lettered",
                "deleted",
            ],
            rows.collect(),
            &[],
        );
        let mut gone: Vec<&str> = Vec::new();
        for name in self.items.iter().flat_map(|r| &r.consumers_deleted) {
            if !gone.contains(&name.as_str()) {
                gone.push(name);
            }
        }
        if !gone.is_empty() {
            text.push_str(&output::paragraph(&format!(
                "deleted {} idle consumer(s) with nothing pending: {}",
                gone.len(),
                gone.join(", ")
            )));
        }
        text
    }

    /// 6 (`orders_refused`) when the database refused an order: like drift,
    /// an outcome the table shows (and `-q` does not hide), not an error.
    fn exit_code(&self) -> i32 {
        if self.refused() > 0 {
            exit_codes::ORDERS_REFUSED
        } else {
            exit_codes::SUCCESS
        }
    }
}

/// Claim, store or dead-letter every idle pending entry of the campaign; exit 0.
pub(crate) fn run(ctx: &Context, args: &Args) -> Result<PendingClaimReport> {
    let stop = ctx.stop_on_signals()?;
    let (
        Opened {
            campaign,
            target,
            conn,
        },
        mut store,
    ) = ctx.open_with_store(&args.store, &stop)?;
    let consumer = args
        .consumer
        .clone()
        .unwrap_or_else(|| default_consumer_name("pending-claim"));
    let settings = ClaimSettings {
        consumer: consumer.clone(),
        min_idle: args.min_idle,
        max_deliveries: args.max_deliveries,
        batch: args.batch,
        delete_consumers: args.delete_consumers,
    };
    let reports = Claimer::new(&campaign, &target, conn, store.as_mut(), &stop, settings).run()?;
    for claims in reports.iter().filter(|c| c.dead_lettered > 0) {
        ctx.notifier()
            .send(dead_letter_event(&campaign.id, &consumer, args, claims));
    }
    Ok(PendingClaimReport {
        consumer,
        database: store.display(),
        min_idle_ms: args.min_idle.as_millis() as u64,
        max_deliveries: args.max_deliveries,
        items: reports,
    })
}

/// `--notify`'s event for the entries of one item this run dead-lettered.
fn dead_letter_event(campaign: &str, consumer: &str, args: &Args, claims: &ItemClaims) -> Event {
    let item = claims.item.as_str();
    Event::new(
        "dead_letter",
        campaign,
        Some(item),
        serde_json::json!({
            "dead_lettered": claims.dead_lettered,
            "claimed": claims.claimed,
            "stored": claims.stored,
            "refused": claims.refused,
            "consumer": consumer,
            "max_deliveries": args.max_deliveries,
        }),
        format!(
            "pending-claim moved {} of item {item} (campaign {campaign}) to the dead-letter \
             stream; see why with `seckill dead-letter list --item {item}`.",
            match claims.dead_lettered {
                1 => "1 entry".to_string(),
                n => format!("{n} entries"),
            }
        ),
    )
}
