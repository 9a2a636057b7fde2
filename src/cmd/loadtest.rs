//! `seckill loadtest`: reproduce the reference chapter's V1–V4 comparison (plus
//! the toolkit's real buy script and a lock-based design) against a real
//! Redis, driving it as hard as it goes, in a namespace of its own.
//!
//! The scenarios are `crate::operator::loadtest`, on the engine crate
//! `seckill_loadgen`; this file turns flags into a plan, shows progress and
//! hands the comparison to `report::emit` (table, JSON, CSV).

use std::io::IsTerminal;
use std::time::Duration;

use anyhow::Result;
use clap::builder::{PossibleValue, RangedU64ValueParser};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use seckill_loadgen::Pace;

use crate::invocation::context::Context;
use crate::invocation::help;
use crate::invocation::report::Report;
use crate::model::campaign::{Campaign, MAX_STOCK};
use crate::model::error::usage;
use crate::model::exit_codes;
use crate::operator::loadtest::buckets::{BucketReport, BucketRun};
use crate::operator::loadtest::limit_group::{self, GroupReport, GroupRun};
use crate::operator::loadtest::namespace::LoadtestKeys;
use crate::operator::loadtest::queue::{QueueReport, QueueRun};
use crate::operator::loadtest::report::{Thresholds, VariantReport};
use crate::operator::loadtest::reservations::{RaceReport, RaceSettings};
use crate::operator::loadtest::seats::{SeatReport, SeatRun};
use crate::operator::loadtest::target::{RoomKind, TargetReport, TargetRun};
use crate::operator::loadtest::{Settings, Variant, export, scenarios, table, variants};
use crate::redis_client::conn::{RedisTarget, parse_duration_arg};
use crate::util::output;

/// Flags of `seckill loadtest`.
#[derive(Debug, clap::Args)]
#[command(after_help = format!(
    "{}\n\n{}\n\n{}",
    help::LOADTEST_HELP,
    exit_codes::help("loadtest"),
    help::THRESHOLD_NOTE
))]
pub(crate) struct Args {
    /// Which design to run (several: `v1,v3`); `all` runs each in turn on a
    /// fresh state and prints one table; `queue` rehearses the item's waiting
    /// room (docs/waiting-room.md).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "all")]
    pub(crate) variant: Vec<VariantChoice>,

    /// Item whose settings to use (default: the campaign's first item).
    #[arg(long, value_name = "ID")]
    pub(crate) item: Option<String>,

    /// Connections to Redis, over all worker threads (redis-benchmark's -c);
    /// with --buckets, the bucket run's threads, one connection each.
    #[arg(long, default_value_t = 100, value_parser = RangedU64ValueParser::<usize>::new().range(1..=10_000))]
    pub(crate) connections: usize,

    /// Worker threads. On a plain-TCP standalone Redis each runs an event loop
    /// over its share of the connections [default: half the cores, at least 1,
    /// leaving the rest to a Redis on the same machine]; on TLS and Cluster
    /// targets each connection has its own thread and this is ignored.
    #[arg(long, value_parser = RangedU64ValueParser::<usize>::new().range(1..=1024))]
    pub(crate) threads: Option<usize>,

    /// Attempts per variant (closed loop: spread over the connections; open
    /// loop: sent at --rate).
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) requests: u64,

    /// Open loop: attempts per second over all connections, sent on schedule
    /// whatever Redis does; latency is measured from the planned send time.
    /// With `--variant queue`: the shoppers' arrival rate at the room
    /// (default: twice its admission rate, so a queue forms).
    #[arg(long, value_name = "PER_SECOND", value_parser = parse_rate)]
    pub(crate) rate: Option<f64>,

    /// Open loop: run for this long at --rate (instead of --requests), e.g. 30s.
    #[arg(long, requires = "rate", conflicts_with = "requests", value_parser = parse_duration_arg, value_name = "DURATION")]
    pub(crate) duration: Option<Duration>,

    /// Distinct synthetic shoppers; request n is user `u<n mod users>` (default: = --requests,
    /// so stock, not the per-user limit, runs out). With `--variant queue`: the
    /// number of arrivals, each joining once and buying once admitted
    /// (default: --rate × --duration).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) users: Option<u64>,

    /// Units in stock at the start of each variant (the campaign file's stock is not used).
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(i64).range(1..=MAX_STOCK))]
    pub(crate) stock: i64,

    /// Script calls per round trip per connection (v3 and full only; the others are
    /// multi-step by design and always send one request at a time).
    #[arg(long, default_value_t = 1, value_parser = RangedU64ValueParser::<usize>::new().range(1..=1000))]
    pub(crate) pipeline: usize,

    /// Keep the campaign's rate limit in the `full` variant (default: off, so
    /// synthetic shoppers measure the stock path, not the throttle).
    #[arg(long)]
    pub(crate) rate_limit: bool,

    /// `full` only: after every buy, WAIT on the same connection until N replicas
    /// confirmed it; a buy fewer confirmed within --wait-timeout counts as
    /// `unreplicated` (sold all the same). Costs one more command per buy.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=16))]
    pub(crate) wait_replicas: Option<u32>,

    /// Longest WAIT for --wait-replicas (shorter than --response-timeout).
    #[arg(long, default_value = "1s", requires = "wait_replicas", value_parser = parse_duration_arg, value_name = "DURATION")]
    pub(crate) wait_timeout: Duration,

    /// Leave the load-test keys in Redis afterwards (the last variant's state), for inspection.
    #[arg(long)]
    pub(crate) keep: bool,

    /// Show every column (default: variant, qps, succeeded, oversold, p99, verdict).
    #[arg(long)]
    pub(crate) wide: bool,

    /// Write one HdrHistogram percentile-distribution file per variant,
    /// PREFIX<variant>.hgrm (corrected latency; in open loop also
    /// PREFIX<variant>.service.hgrm), for HdrHistogram's plotter.
    #[arg(long, value_name = "PREFIX")]
    pub(crate) hdr_out: Option<String>,

    /// Fail (exit 4) when a variant's p99 latency (corrected) exceeds this, e.g. 5ms.
    #[arg(long, value_parser = parse_duration_arg, value_name = "DURATION", help_heading = "Thresholds (exit 4 when one fails)")]
    pub(crate) max_p99: Option<Duration>,

    /// Fail (exit 4) when a variant answers fewer attempts per second than this.
    #[arg(long, value_name = "PER_SECOND", value_parser = parse_rate, help_heading = "Thresholds (exit 4 when one fails)")]
    pub(crate) min_qps: Option<f64>,

    /// Fail (exit 4) on any oversold unit, v1's too. Oversold, undersold or
    /// stock drift in any other variant always fails.
    #[arg(long, help_heading = "Thresholds (exit 4 when one fails)")]
    pub(crate) fail_on_oversell: bool,

    /// Split the stock into N buckets (docs/buckets.md) and run the bucket buy
    /// path (`--variant full` or `queue` only); reports round trips per buy,
    /// the transfer share and per-bucket figures.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub(crate) buckets: u32,

    /// With --buckets: skewed demand, every synthetic user's home is one of the
    /// first K buckets (default: uniform).
    #[arg(long, value_name = "K", requires = "buckets", value_parser = clap::value_parser!(u32).range(1..=256))]
    pub(crate) hot_buckets: Option<u32>,

    /// Instead of the variants: buys with a payment timeout, then payments
    /// racing expiry (--pay-share of the reservations paid, half of them
    /// right at the deadline) while two expirers run; reports the final
    /// states and whether initial = left + reserved + paid holds.
    #[arg(long, conflicts_with_all = ["rate", "buckets", "variant"])]
    pub(crate) reservations: bool,

    /// --reservations: the payment timeout of every reservation (each of
    /// --connections is a thread with its own connection; closed loop only).
    #[arg(long, default_value = "2s", value_parser = crate::redis_client::conn::parse_duration_arg, value_name = "DURATION", requires = "reservations")]
    pub(crate) payment_timeout: std::time::Duration,

    /// --reservations: share of the reservations paid (0..=1), half of them at the deadline.
    #[arg(long, default_value_t = 0.5, value_parser = parse_share, value_name = "SHARE", requires = "reservations")]
    pub(crate) pay_share: f64,

    /// Drive running `seckill serve` instances over HTTP instead of Redis
    /// directly (several: comma-separated, each shopper's requests
    /// alternating between them): the same attempts, through the shop's
    /// front door (closed or open loop, --connections keep-alive
    /// connections); an item with a waiting room is joined, polled and
    /// bought once admitted (a ticket room's ticket sent along). It buys the
    /// targets' real stock for synthetic users (`loadtest-<run>-u…`): only
    /// with --rehearsal.
    #[arg(long, value_name = "http://HOST:PORT[,…]", value_parser = parse_target,
          conflicts_with_all = ["variant", "pipeline", "buckets", "reservations", "wait_replicas", "rate_limit", "keep", "hdr_out"])]
    pub(crate) target: Option<String>,

    /// With --target: the target sells a rehearsal's stock, which this run
    /// may buy (a production sale's buyers would lose those units).
    #[arg(long, requires = "target")]
    pub(crate) rehearsal: bool,

    /// Print the EVALSHA command line the v3 or full variant sends per request
    /// (for redis-benchmark; `__rand_int__` marks the per-request numbers) and exit.
    #[arg(long, value_name = "VARIANT", hide = true)]
    pub(crate) print_command: Option<Variant>,
}

fn parse_target(text: &str) -> std::result::Result<String, String> {
    crate::operator::loadtest::target::parse_target(text)
}

/// clap value parser for a positive rate.
fn parse_rate(text: &str) -> std::result::Result<f64, String> {
    match text.parse::<f64>() {
        Ok(rate) if rate.is_finite() && rate > 0.0 => Ok(rate),
        _ => Err(format!("{text:?} is not a positive number")),
    }
}

/// `--variant`: one [`Variant`], `all`, or `queue`. Help texts come from [`Variant`]'s docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VariantChoice {
    One(Variant),
    /// `--variant all`.
    All,
    /// `--variant queue`: the waiting room, a scenario of its own.
    Queue,
    /// `--variant limit-group`: a limit group's SKUs hammered at once (docs/limits.md).
    LimitGroup,
    /// `--variant seats`: a seat item's sale, a scenario of its own.
    Seats,
}

impl Args {
    /// The variants chosen, each once, in the order given (`all`: every one).
    fn variants(&self) -> Vec<Variant> {
        let mut chosen = Vec::new();
        for choice in &self.variant {
            let more = match choice {
                VariantChoice::One(variant) => vec![*variant],
                VariantChoice::All
                | VariantChoice::Queue
                | VariantChoice::LimitGroup
                | VariantChoice::Seats => Variant::ALL.to_vec(),
            };
            for variant in more {
                if !chosen.contains(&variant) {
                    chosen.push(variant);
                }
            }
        }
        chosen
    }

    /// `--variant queue` (alone: the waiting room is a scenario of its own).
    pub(crate) fn queue(&self) -> Result<bool> {
        let queue = self.variant.contains(&VariantChoice::Queue);
        if queue && self.variant.len() > 1 {
            return Err(usage(
                "--variant queue runs alone (the waiting room is a scenario of its own)",
            ));
        }
        Ok(queue)
    }

    /// `--variant limit-group` (alone: a scenario of its own).
    pub(crate) fn limit_group(&self) -> Result<bool> {
        let chosen = self.variant.contains(&VariantChoice::LimitGroup);
        if chosen && self.variant.len() > 1 {
            return Err(usage(
                "--variant limit-group runs alone (a limit group's SKUs are a scenario of their own)",
            ));
        }
        Ok(chosen)
    }

    /// `--variant seats` (alone: a seat item's sale is a scenario of its own).
    pub(crate) fn seats(&self) -> Result<bool> {
        let seats = self.variant.contains(&VariantChoice::Seats);
        if seats && self.variant.len() > 1 {
            return Err(usage(
                "--variant seats runs alone (a seat item's sale is a scenario of its own)",
            ));
        }
        Ok(seats)
    }
}

impl clap::ValueEnum for VariantChoice {
    fn value_variants<'a>() -> &'a [Self] {
        const CHOICES: [VariantChoice; 10] = [
            VariantChoice::One(Variant::V1),
            VariantChoice::One(Variant::V2),
            VariantChoice::One(Variant::V3),
            VariantChoice::One(Variant::V4),
            VariantChoice::One(Variant::Full),
            VariantChoice::One(Variant::Lock),
            VariantChoice::All,
            VariantChoice::Queue,
            VariantChoice::LimitGroup,
            VariantChoice::Seats,
        ];
        &CHOICES
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        match self {
            VariantChoice::One(variant) => variant.to_possible_value(),
            VariantChoice::All => {
                Some(PossibleValue::new("all").help("Every variant in turn, one comparison table"))
            }
            VariantChoice::Seats => Some(PossibleValue::new("seats").help(
                "A seat item: best-available and named-seat buyers; seats/s, conflicts, holes, no seat sold twice",
            )),
            VariantChoice::Queue => Some(PossibleValue::new("queue").help(
                "The item's waiting room: arrivals at --rate, admissions, buys; fairness and waits",
            )),
            VariantChoice::LimitGroup => Some(PossibleValue::new("limit-group").help(
                "A limit group of 6 SKUs (--stock each, limit 1): --users users buy every SKU at once; users over the limit must be 0",
            )),
        }
    }
}

/// `seckill loadtest`'s report: one entry per variant run.
#[derive(serde::Serialize)]
pub(crate) struct LoadtestReport {
    /// The variants in the order they ran (none with `--buckets`).
    pub(crate) variants: Vec<VariantReport>,
    /// `--buckets N`: the bucketed `full` run (docs/buckets.md).
    #[serde(rename = "buckets", skip_serializing_if = "Option::is_none")]
    pub(crate) split: Option<BucketReport>,
    /// `--target URL`: the run through a `seckill serve`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) target: Option<TargetReport>,
    /// Thresholds that failed (`--target` runs; variants keep theirs).
    #[serde(skip)]
    target_failed: Vec<String>,
    #[serde(skip)]
    heading: String,
    /// `--wide`: every column in the table.
    #[serde(skip)]
    wide: bool,
}

impl Report for LoadtestReport {
    fn render(&self) -> String {
        if let Some(split) = &self.split {
            return format!("{}{}\n", wrapped(&self.heading), table::buckets(split));
        }
        if let Some(target) = &self.target {
            return format!("{}{}", wrapped(&self.heading), table::target(target));
        }
        table::variants(&self.heading, &self.variants, self.wide)
    }

    fn csv(&self) -> Option<String> {
        if self.split.is_some() || self.target.is_some() {
            return None;
        }
        let mut text = Vec::new();
        export::csv(&mut text, &self.variants).ok()?;
        String::from_utf8(text).ok()
    }

    fn exit_code(&self) -> i32 {
        if !self.target_failed.is_empty()
            || self
                .variants
                .iter()
                .any(|v| !v.thresholds_failed.is_empty())
        {
            exit_codes::THRESHOLD_FAILED
        } else {
            exit_codes::SUCCESS
        }
    }

    /// Each failed threshold, named with its variant.
    fn failure(&self) -> Option<String> {
        let failed: Vec<String> = self
            .variants
            .iter()
            .flat_map(|v| {
                v.thresholds_failed
                    .iter()
                    .map(|f| format!("{}: {f}", v.variant.as_str()))
            })
            .chain(self.target_failed.iter().cloned())
            .collect();
        (!failed.is_empty()).then(|| format!("threshold failed: {}", failed.join("; ")))
    }
}

/// Each line of a heading wrapped between words to the terminal's width.
fn wrapped(heading: &str) -> String {
    heading.lines().map(output::paragraph).collect()
}

/// `--item`, or the campaign's first item.
fn chosen_item(campaign: &Campaign, args: &Args) -> Result<String> {
    Ok(match &args.item {
        Some(id) => campaign.item(id)?.id.clone(),
        None => campaign.items[0].id.clone(),
    })
}

/// `--print-command VARIANT`: print the exact script call (one line, for the
/// bench scripts) instead of running anything; not a report.
pub(crate) fn print_command(ctx: &Context, args: &Args, variant: Variant) -> Result<i32> {
    let campaign = ctx.campaign()?;
    let item_id = chosen_item(&campaign, args)?;
    let keys = LoadtestKeys::new(&campaign.id, &item_id);
    let Some(line) = variants::print_command(variant, &keys, &campaign.id, &item_id) else {
        return Err(usage(format!(
            "--print-command: {} is not one script call (use v3 or full)",
            variant.as_str()
        )));
    };
    output::write_stdout(&format!("{line}\n"))?;
    Ok(exit_codes::SUCCESS)
}

/// Run the chosen variants and compare them; the exit code says whether a
/// threshold failed (a Redis failure is an error).
pub(crate) fn run(ctx: &Context, args: &Args) -> Result<LoadtestReport> {
    let campaign = ctx.campaign()?;
    let item_id = chosen_item(&campaign, args)?;
    let variants = args.variants();
    if let Some(prefix) = &args.hdr_out {
        let dir = std::path::Path::new(prefix)
            .parent()
            .filter(|d| !d.as_os_str().is_empty());
        if let Some(dir) = dir.filter(|d| !d.is_dir()) {
            return Err(usage(format!(
                "--hdr-out {prefix}: the directory {} does not exist (checked before the run, \
                 so no run is lost for want of it)",
                dir.display()
            )));
        }
    }
    if args.pipeline > 1 && !variants.iter().any(|v| v.pipelines()) {
        return Err(usage(format!(
            "--pipeline applies to the script variants (v3, full) only; {} is multi-step by design",
            variants[0].as_str()
        )));
    }
    if args.wait_replicas.is_some() {
        if !variants.contains(&Variant::Full) {
            return Err(usage(format!(
                "--wait-replicas applies to the full variant only (the toolkit's buy); {} writes no order",
                variants[0].as_str()
            )));
        }
        crate::redis_client::replicas::check_timeout(
            args.wait_timeout,
            ctx.connection.response_timeout,
        )?;
    }
    let settings = settings(args)?;
    if let Some(address) = &args.target {
        let stall_limit = ctx.connection.response_timeout;
        return run_target(
            ctx,
            args,
            &campaign,
            &item_id,
            address,
            &settings,
            stall_limit,
        );
    }
    let target = ctx.redis(&campaign)?;
    if args.buckets > 1 || args.hot_buckets.is_some() {
        return run_split(ctx, args, &campaign, &item_id, &target);
    }
    let thresholds = Thresholds {
        max_p99: args.max_p99,
        min_qps: args.min_qps,
        fail_on_oversell: args.fail_on_oversell,
    };
    let done = scenarios::variants(
        &target,
        &campaign,
        &item_id,
        settings,
        &variants,
        (args.keep, &thresholds),
        &progress_bar,
    )?;
    if let Some(prefix) = &args.hdr_out {
        export::hgrm_files(prefix, &done.runs)?;
    }
    Ok(LoadtestReport {
        heading: done.heading,
        variants: scenarios::reports(done.runs),
        split: None,
        target: None,
        target_failed: Vec::new(),
        wide: args.wide,
    })
}

/// `--target URL`: the attempts through a running `seckill serve`; no
/// answer for `stall_limit` (--response-timeout) while attempts are in
/// flight ends the run.
fn run_target(
    ctx: &Context,
    args: &Args,
    campaign: &Campaign,
    item_id: &str,
    address: &str,
    settings: &Settings,
    stall_limit: Duration,
) -> Result<LoadtestReport> {
    if !args.rehearsal {
        return Err(usage(format!(
            "loadtest --target buys the real stock of item {item_id} through the serve at {address}: \
             pass --rehearsal when that serve sells a rehearsal (its buyers are synthetic, \
             `loadtest-<run>-u…`; `seckill -c {} init --yes` resets it afterwards)",
            campaign.path.display()
        )));
    }
    let run_id = ulid::Ulid::generate().to_string();
    let item = campaign.item(item_id)?;
    let room = item.waiting_room.as_ref().map(|room| {
        if room.is_ticket() {
            RoomKind::Ticket {
                admit_rate: room.per_second().unwrap_or(0.0),
                campaign: campaign.id.clone(),
            }
        } else {
            RoomKind::Exact
        }
    });
    // Redis is read (commandstats, the room hash) only when the run was
    // told where it is: the default URL may be another Redis than the
    // targets'.
    let redis = match &room {
        Some(RoomKind::Ticket { .. }) => ctx
            .redis(campaign)
            .ok()
            .filter(|t| t.source != crate::redis_client::conn::UrlSource::Default),
        _ => None,
    };
    let run = TargetRun {
        addresses: address.split(',').map(str::to_string).collect(),
        item: item_id.to_string(),
        connections: args.connections,
        threads: settings.threads,
        requests: settings.requests,
        pace: settings.pace,
        users: settings.users,
        user_prefix: format!("loadtest-{}-", &run_id[run_id.len() - 6..].to_lowercase()),
        room,
        run_id,
        stall_limit,
    };
    let report = crate::operator::loadtest::target::run(&run, redis.as_ref())?;
    let mut failed = Vec::new();
    if report.succeeded + report.sold_out == 0 {
        let most = report
            .outcomes
            .iter()
            .max_by_key(|(_, n)| **n)
            .map(|(outcome, n)| format!("{n} × {outcome}"))
            .unwrap_or_else(|| "no answer".into());
        failed.push(format!(
            "target: no attempt reached the sale (no ok, no sold_out; {most}): is the item preheated, is the serve selling it?"
        ));
    }
    if let Some(room) = &report.ticket_room
        && room.ok_without_admission > 0
    {
        failed.push(format!(
            "target: {} ok without admission (the ticket room let a buy through before the cursor passed its ticket)",
            room.ok_without_admission
        ));
    }
    if let Some(limit) = args.max_p99
        && report.latency.p99_ms > limit.as_secs_f64() * 1000.0
    {
        failed.push(format!(
            "target: p99 {:.2} ms over --max-p99 {}",
            report.latency.p99_ms,
            humantime::format_duration(limit)
        ));
    }
    if let Some(min) = args.min_qps
        && report.qps < min
    {
        failed.push(format!(
            "target: {:.0} answers/s under --min-qps {min}",
            report.qps
        ));
    }
    Ok(LoadtestReport {
        heading: format!(
            "load test of campaign {} item {item_id} through {}, users {}u…\n{}, {} connections, {} requests, {} users",
            campaign.id,
            report.targets.join(","),
            run.user_prefix,
            match settings.pace {
                Pace::Closed => "closed loop".to_string(),
                Pace::Open { rate } => format!("open loop at {rate} attempts/s"),
            },
            run.connections,
            run.requests,
            run.users
        ),
        variants: Vec::new(),
        split: None,
        target: Some(report),
        target_failed: failed,
        wide: false,
    })
}

/// `--buckets N` (docs/buckets.md): the real bucket buy path, one closed-loop run.
fn run_split(
    ctx: &Context,
    args: &Args,
    campaign: &Campaign,
    item_id: &str,
    target: &RedisTarget,
) -> Result<LoadtestReport> {
    let unsplit_only = args.rate.is_some()
        || args.hdr_out.is_some()
        || args.max_p99.is_some()
        || args.min_qps.is_some()
        || args.fail_on_oversell
        || args.wait_replicas.is_some()
        || ctx.format == crate::util::output::Format::Csv;
    if unsplit_only {
        return Err(usage(
            "--rate, --hdr-out, the thresholds, --wait-replicas and --format csv apply to \
             the unbucketed load test, not to --buckets",
        ));
    }
    if args.variant != [VariantChoice::One(Variant::Full)] {
        return Err(usage(
            "--buckets runs the real buy path: pass --variant full",
        ));
    }
    if args.hot_buckets.is_some_and(|k| k > args.buckets) {
        return Err(usage("--hot-buckets must not exceed --buckets"));
    }
    if i64::from(args.buckets) > args.stock {
        return Err(usage(
            "--buckets must not exceed --stock (every bucket needs a unit)",
        ));
    }
    let run = BucketRun {
        threads: args.connections,
        requests: args.requests,
        users: args.users.unwrap_or(args.requests),
        stock: args.stock,
        buckets: args.buckets,
        hot_buckets: args.hot_buckets,
        rate_limit: args.rate_limit,
    };
    let (heading, report) = scenarios::buckets(target, campaign, item_id, &run, args.keep)?;
    Ok(LoadtestReport {
        heading,
        variants: Vec::new(),
        split: Some(report),
        target: None,
        target_failed: Vec::new(),
        wide: false,
    })
}

/// `seckill loadtest --variant queue`'s report: the waiting room rehearsed.
#[derive(serde::Serialize)]
pub(crate) struct QueueLoadReport {
    #[serde(flatten)]
    pub(crate) run: QueueReport,
    #[serde(skip)]
    heading: String,
}

impl Report for QueueLoadReport {
    /// 0 when positions, orders and impostors all check out, else 4
    /// (`threshold_failed`: the run broke a promise).
    fn exit_code(&self) -> i32 {
        if self.run.verdict == "exact" {
            exit_codes::SUCCESS
        } else {
            exit_codes::THRESHOLD_FAILED
        }
    }

    fn failure(&self) -> Option<String> {
        (self.run.verdict != "exact")
            .then(|| format!("the waiting room broke a promise: {}", self.run.verdict))
    }

    fn render(&self) -> String {
        let r = &self.run;
        let ms = |v: f64| format!("{v:.0}");
        let rows = [
            (
                "arrivals",
                format!(
                    "{} at {:.0}/s asked, {:.0}/s sent",
                    r.arrivals, r.arrival_rate, r.arrival_rate_achieved
                ),
            ),
            (
                "admission rate",
                match r.admit_rate {
                    Some(rate) => {
                        format!("{rate:.0}/s asked, {:.0}/s achieved", r.admit_rate_achieved)
                    }
                    None => format!("{:.0}/s achieved (max_active)", r.admit_rate_achieved),
                },
            ),
            (
                "positions",
                format!(
                    "{} joined · {} duplicates · {} holes",
                    r.joined, r.duplicates, r.holes
                ),
            ),
            (
                "kendall τ-b",
                format!("{:.4} arrival vs admission", r.kendall_tau_b),
            ),
            (
                "",
                format!(
                    "{:.4} Redis join order vs admission",
                    r.kendall_tau_b_positions
                ),
            ),
            (
                "wait ms",
                format!(
                    "p50 {} · p99 {} · max {}",
                    ms(r.wait_p50_ms),
                    ms(r.wait_p99_ms),
                    ms(r.wait_max_ms)
                ),
            ),
            (
                "wait error ms",
                format!(
                    "p50 {} · p99 {} · max {} (against position / rate)",
                    ms(r.wait_error_p50_ms),
                    ms(r.wait_error_p99_ms),
                    ms(r.wait_error_max_ms)
                ),
            ),
            ("buys", format!("{} ok · {} sold out", r.ok, r.sold_out)),
            (
                "refused buys",
                format!(
                    "{} admissions expired · {} not_admitted answers",
                    r.admission_expired, r.not_admitted_answers
                ),
            ),
            (
                "ok without admission",
                format!(
                    "{} · impostors refused {} of {}",
                    r.ok_without_admission, r.impostors_refused, r.impostor_buys
                ),
            ),
            ("verdict", r.verdict.clone()),
        ];
        format!("{}{}", wrapped(&self.heading), table::record(&rows))
    }
}

/// `--variant queue`: the item's waiting room, rehearsed in the load test's namespace.
pub(crate) fn run_queue(ctx: &Context, args: &Args) -> Result<QueueLoadReport> {
    let campaign = ctx.campaign()?;
    let item_id = chosen_item(&campaign, args)?;
    let item = campaign.item(&item_id)?;
    let Some(room) = &item.waiting_room else {
        return Err(crate::operator::loadtest::queue::no_room(
            &campaign, &item_id,
        ));
    };
    let admit = room.per_second().unwrap_or(1000.0);
    // Arrivals faster than admissions, so a queue forms: twice the room's rate.
    let rate = args.rate.unwrap_or((2.0 * admit).max(1.0));
    let duration = args.duration.unwrap_or(Duration::from_secs(3));
    let arrivals = args
        .users
        .unwrap_or_else(|| (rate * duration.as_secs_f64()).ceil().max(1.0) as u64);
    let run = QueueRun {
        arrivals,
        rate,
        threads: args.threads.unwrap_or(8),
        stock: args.stock,
        buckets: args.buckets,
    };
    let target = ctx.redis(&campaign)?;
    let (heading, report) = scenarios::queue(&target, &campaign, &item_id, &run, args.keep)?;
    Ok(QueueLoadReport {
        run: report,
        heading,
    })
}

/// `seckill loadtest --variant limit-group`'s report: the run and its proof.
#[derive(serde::Serialize)]
pub(crate) struct LimitGroupReport {
    #[serde(flatten)]
    pub(crate) run: GroupReport,
    #[serde(skip)]
    heading: String,
}

impl Report for LimitGroupReport {
    /// 0 when the limit held exactly, else 4 (a threshold: users over the limit must be 0).
    fn exit_code(&self) -> i32 {
        match self.run.verdict == "exact" {
            true => exit_codes::SUCCESS,
            false => exit_codes::THRESHOLD_FAILED,
        }
    }

    fn render(&self) -> String {
        let r = &self.run;
        let rows = [
            (
                "group",
                format!(
                    "{} SKUs × {} units, per_user_limit {}",
                    r.skus, r.stock_per_sku, r.per_user_limit
                ),
            ),
            (
                "attempts",
                format!(
                    "{} ({} users × {} SKUs) in {:.2} s, {:.0}/s",
                    r.attempts, r.users, r.skus, r.elapsed_s, r.attempts_per_s
                ),
            ),
            (
                "outcomes",
                format!(
                    "ok {} · limit_reached {} · sold_out {} · other {}",
                    r.ok, r.limit_reached, r.sold_out, r.other
                ),
            ),
            (
                "sold",
                format!(
                    "{} units to {} distinct buyers",
                    r.units_sold, r.distinct_buyers
                ),
            ),
            ("users over the limit", r.users_over_limit.to_string()),
            ("group counts off", r.counts_off.to_string()),
            ("verdict", r.verdict.clone()),
        ];
        format!("{}{}", wrapped(&self.heading), table::record(&rows))
    }

    fn failure(&self) -> Option<String> {
        (self.run.verdict != "exact")
            .then(|| format!("threshold failed: limit-group: {}", self.run.verdict))
    }
}

/// `--variant limit-group`: a limit group's SKUs hammered at once, in the
/// load test's namespace, and the proof that nobody passed the limit.
pub(crate) fn run_limit_group(ctx: &Context, args: &Args) -> Result<LimitGroupReport> {
    let campaign = ctx.campaign()?;
    let target = ctx.redis(&campaign)?;
    let run = GroupRun {
        skus: 6,
        users: args.users.unwrap_or(1_000),
        threads: args.threads.unwrap_or(16),
        stock: args.stock,
    };
    let report = limit_group::run(&target, &campaign, &run, args.keep)?;
    Ok(LimitGroupReport {
        heading: format!(
            "limit-group load test on {} (namespace seckill-loadtest:{{{}:lg-N}}): {} users buy \
             each of {} SKUs at once, {} threads\n",
            target.display, campaign.id, run.users, run.skus, run.threads
        ),
        run: report,
    })
}

/// `seckill loadtest --variant seats`'s report: the sale and its proof.
#[derive(serde::Serialize)]
pub(crate) struct SeatsLoadReport {
    #[serde(flatten)]
    pub(crate) run: SeatReport,
    #[serde(skip)]
    heading: String,
}

impl Report for SeatsLoadReport {
    /// 0 when no seat was sold twice and every section's state matches its
    /// orders and its stock, else 3.
    fn exit_code(&self) -> i32 {
        if self.run.verdict == "exact" {
            exit_codes::SUCCESS
        } else {
            exit_codes::DRIFT_FOUND
        }
    }

    fn render(&self) -> String {
        let r = &self.run;
        let rows = [
            ("seats", format!("{} in {} sections", r.seats, r.sections)),
            (
                "sold",
                format!(
                    "{} seats in {:.2} s · {:.0} seats/s",
                    r.seats_sold, r.elapsed_s, r.seats_per_s
                ),
            ),
            (
                "attempts",
                format!(
                    "{} · best ok {} · named ok {} · sold_out {} · other {}",
                    r.attempts, r.best_ok, r.named_ok, r.sold_out, r.other
                ),
            ),
            (
                "conflicts",
                format!("seat_taken {} · no_block {}", r.seat_taken, r.no_block),
            ),
            (
                "left",
                format!(
                    "{} free seats · {} holes (single seats stranded in a row)",
                    r.free_left, r.holes
                ),
            ),
            (
                "proof",
                format!(
                    "{} orders checked · {} seats sold twice",
                    r.orders_checked, r.sold_twice
                ),
            ),
            ("verdict", r.verdict.clone()),
        ];
        format!("{}{}", wrapped(&self.heading), table::record(&rows))
    }
}

/// `--variant seats`: a seat item's sale rehearsed in the load test's namespace.
pub(crate) fn run_seats(ctx: &Context, args: &Args) -> Result<SeatsLoadReport> {
    let campaign = ctx.campaign()?;
    let item_id = chosen_item(&campaign, args)?;
    let run = SeatRun {
        threads: args.connections,
        requests: args.requests,
    };
    let target = ctx.redis(&campaign)?;
    let (heading, run) = scenarios::seats(&target, &campaign, &item_id, &run, args.keep)?;
    Ok(SeatsLoadReport { run, heading })
}

/// `--pay-share`: a fraction from 0 to 1.
fn parse_share(text: &str) -> std::result::Result<f64, String> {
    match text.parse::<f64>() {
        Ok(share) if (0.0..=1.0).contains(&share) => Ok(share),
        _ => Err(format!(
            "{text:?} is not a share between 0 and 1 (e.g. 0.5)"
        )),
    }
}

/// `seckill loadtest --reservations`'s report: the race and its proof.
#[derive(serde::Serialize)]
pub(crate) struct ReservationsReport {
    #[serde(flatten)]
    pub(crate) race: RaceReport,
    #[serde(skip)]
    heading: String,
}

impl Report for ReservationsReport {
    /// 0 when every order ended once and the identity holds, else 3.
    fn exit_code(&self) -> i32 {
        if self.race.verdict == "exact" {
            crate::model::exit_codes::SUCCESS
        } else {
            crate::model::exit_codes::DRIFT_FOUND
        }
    }

    fn render(&self) -> String {
        table::reservations(&self.heading, &self.race)
    }
}

/// `--reservations`: buys with a payment timeout, payments racing expiry, the proof.
pub(crate) fn run_reservations(ctx: &Context, args: &Args) -> Result<ReservationsReport> {
    if args.wait_replicas.is_some() {
        return Err(usage(
            "--wait-replicas applies to --variant full, not to --reservations",
        ));
    }
    let campaign = ctx.campaign()?;
    let item_id = chosen_item(&campaign, args)?;
    let target = ctx.redis(&campaign)?;
    let settings = settings(args)?;
    let race = RaceSettings {
        threads: args.connections,
        requests: args.requests,
        users: settings.users,
        payment_timeout: args.payment_timeout,
        pay_share: args.pay_share,
    };
    let (heading, race) =
        scenarios::reservations(&target, &campaign, &item_id, &settings, &race, args.keep)?;
    Ok(ReservationsReport { heading, race })
}

/// The run's settings from the flags: connections and threads, closed or open loop.
fn settings(args: &Args) -> Result<Settings> {
    let threads = args.threads.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, |cores| (cores.get() / 2).max(1))
    });
    let (pace, requests) = match (args.rate, args.duration) {
        (None, _) => (Pace::Closed, args.requests),
        (Some(rate), None) => (Pace::Open { rate }, args.requests),
        (Some(rate), Some(duration)) => {
            let attempts = (rate * duration.as_secs_f64()).ceil();
            if attempts < 1.0 {
                return Err(usage(format!(
                    "--rate {rate} for --duration {} makes no attempt at all",
                    humantime::format_duration(duration)
                )));
            }
            (Pace::Open { rate }, attempts as u64)
        }
    };
    Ok(Settings {
        connections: args.connections,
        threads,
        requests,
        pace,
        users: args.users.unwrap_or(requests),
        stock: args.stock,
        pipeline: args.pipeline,
        rate_limit: args.rate_limit,
        wait_replicas: args.wait_replicas,
        wait_timeout: args.wait_timeout,
    })
}

/// A bar on stderr: requests done and the live rate; hidden when stderr is not a terminal.
fn progress_bar(variant: Variant, requests: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(requests), ProgressDrawTarget::stderr());
    let template = "{prefix:>5} [{bar:30}] {pos}/{len} requests  {qps}  {elapsed}";
    if let Ok(style) = ProgressStyle::with_template(template) {
        let qps = |state: &ProgressState, out: &mut dyn std::fmt::Write| {
            let _ = write!(out, "{:.0} req/s", state.per_sec());
        };
        bar.set_style(style.with_key("qps", qps).progress_chars("=> "));
    }
    bar.set_prefix(variant.as_str());
    bar
}
