//! `seckill loadtest`: reproduce the reference chapter's V1–V4 comparison (plus
//! the toolkit's real buy script and a lock-based design) against a real
//! Redis, driving it as hard as it goes, in a namespace of its own.
//!
//! The engine is `crate::features::loadtest`; this file turns flags into a plan, shows
//! progress and hands the comparison to `report::emit` (table, JSON, CSV).

use std::io::IsTerminal;
use std::time::Duration;

use anyhow::{Context as _, Result};
use clap::builder::{PossibleValue, RangedU64ValueParser};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use crate::domain::buckets;
use crate::features::loadtest::export::csv;
use crate::features::loadtest::export::hgrm;
use crate::features::loadtest::namespace::{self, LoadtestKeys};
use crate::features::loadtest::report::{Thresholds, VariantReport};
use crate::features::loadtest::schedule::Pace;
use crate::features::loadtest::{self, Plan, Settings, Variant, VariantRun, variants};
use crate::invocation::context::Context;
use crate::invocation::help;
use crate::invocation::report::Report;
use crate::model::campaign::{Campaign, MAX_STOCK};
use crate::model::error::usage;
use crate::model::exit_codes;
use crate::redis_client::conn::{RedisTarget, parse_duration_arg};
use crate::redis_client::scripts;
use crate::util::output;

/// Flags of `seckill loadtest`.
#[derive(Debug, clap::Args)]
#[command(after_help = format!(
    "{}\n\n{}\n\n{}",
    help::LOADTEST_HELP,
    exit_codes::help("loadtest"),
    help::THRESHOLD_NOTE
))]
pub struct Args {
    /// Which design to run; `all` runs each in turn on a fresh state and prints one table.
    #[arg(long, value_enum, default_value_t = VariantChoice::ALL)]
    pub variant: VariantChoice,

    /// Item whose settings to use (default: the campaign's first item).
    #[arg(long, value_name = "ID")]
    pub item: Option<String>,

    /// Connections to Redis, over all worker threads (redis-benchmark's -c);
    /// with --buckets, the bucket run's threads, one connection each.
    #[arg(long, default_value_t = 100, value_parser = RangedU64ValueParser::<usize>::new().range(1..=10_000))]
    pub connections: usize,

    /// Worker threads. On a plain-TCP standalone Redis each runs an event loop
    /// over its share of the connections [default: half the cores, at least 1,
    /// leaving the rest to a Redis on the same machine]; on TLS and Cluster
    /// targets each connection has its own thread and this is ignored.
    #[arg(long, value_parser = RangedU64ValueParser::<usize>::new().range(1..=1024))]
    pub threads: Option<usize>,

    /// Attempts per variant (closed loop: spread over the connections; open
    /// loop: sent at --rate).
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub requests: u64,

    /// Open loop: attempts per second over all connections, sent on schedule
    /// whatever Redis does; latency is measured from the planned send time.
    #[arg(long, value_name = "PER_SECOND", value_parser = parse_rate)]
    pub rate: Option<f64>,

    /// Open loop: run for this long at --rate (instead of --requests), e.g. 30s.
    #[arg(long, requires = "rate", conflicts_with = "requests", value_parser = parse_duration_arg, value_name = "DURATION")]
    pub duration: Option<Duration>,

    /// Distinct synthetic shoppers; request n is user `u<n mod users>` (default: = --requests,
    /// so stock, not the per-user limit, runs out).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub users: Option<u64>,

    /// Units in stock at the start of each variant (the campaign file's stock is not used).
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(i64).range(1..=MAX_STOCK))]
    pub stock: i64,

    /// Script calls per round trip per connection (v3 and full only; the others are
    /// multi-step by design and always send one request at a time).
    #[arg(long, default_value_t = 1, value_parser = RangedU64ValueParser::<usize>::new().range(1..=1000))]
    pub pipeline: usize,

    /// Keep the campaign's rate limit in the `full` variant (default: off, so
    /// synthetic shoppers measure the stock path, not the throttle).
    #[arg(long)]
    pub rate_limit: bool,

    /// `full` only: after every buy, WAIT on the same connection until N replicas
    /// confirmed it; a buy fewer confirmed within --wait-timeout counts as
    /// `unreplicated` (sold all the same). Costs one more command per buy.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=16))]
    pub wait_replicas: Option<u32>,

    /// Longest WAIT for --wait-replicas (shorter than --response-timeout).
    #[arg(long, default_value = "1s", requires = "wait_replicas", value_parser = parse_duration_arg, value_name = "DURATION")]
    pub wait_timeout: Duration,

    /// Leave the load-test keys in Redis afterwards (the last variant's state), for inspection.
    #[arg(long)]
    pub keep: bool,

    /// Show every column (default: variant, qps, succeeded, oversold, p99, verdict).
    #[arg(long)]
    pub wide: bool,

    /// Write one HdrHistogram percentile-distribution file per variant,
    /// PREFIX<variant>.hgrm (corrected latency; in open loop also
    /// PREFIX<variant>.service.hgrm), for HdrHistogram's plotter.
    #[arg(long, value_name = "PREFIX")]
    pub hdr_out: Option<String>,

    /// Fail (exit 4) when a variant's p99 latency (corrected) exceeds this, e.g. 5ms.
    #[arg(long, value_parser = parse_duration_arg, value_name = "DURATION", help_heading = "Thresholds (exit 4 when one fails)")]
    pub max_p99: Option<Duration>,

    /// Fail (exit 4) when a variant answers fewer attempts per second than this.
    #[arg(long, value_name = "PER_SECOND", value_parser = parse_rate, help_heading = "Thresholds (exit 4 when one fails)")]
    pub min_qps: Option<f64>,

    /// Fail (exit 4) on any oversold unit, v1's too. Oversold, undersold or
    /// stock drift in any other variant always fails.
    #[arg(long, help_heading = "Thresholds (exit 4 when one fails)")]
    pub fail_on_oversell: bool,

    /// Split the stock into N buckets (docs/buckets.md) and run the bucket buy
    /// path (`--variant full` only); reports round trips per buy, the transfer
    /// share and per-bucket figures.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub buckets: u32,

    /// With --buckets: skewed demand, every synthetic user's home is one of the
    /// first K buckets (default: uniform).
    #[arg(long, value_name = "K", requires = "buckets", value_parser = clap::value_parser!(u32).range(1..=256))]
    pub hot_buckets: Option<u32>,

    /// Instead of the variants: buys with a payment timeout, then payments
    /// racing expiry (--pay-share of the reservations paid, half of them
    /// right at the deadline) while two expirers run; reports the final
    /// states and whether initial = left + reserved + paid holds.
    #[arg(long, conflicts_with_all = ["rate", "buckets", "variant"])]
    pub reservations: bool,

    /// --reservations: the payment timeout of every reservation (each of
    /// --connections is a thread with its own connection; closed loop only).
    #[arg(long, default_value = "2s", value_parser = crate::redis_client::conn::parse_duration_arg, value_name = "DURATION", requires = "reservations")]
    pub payment_timeout: std::time::Duration,

    /// --reservations: share of the reservations paid (0..=1), half of them at the deadline.
    #[arg(long, default_value_t = 0.5, value_parser = parse_share, value_name = "SHARE", requires = "reservations")]
    pub pay_share: f64,

    /// Print the EVALSHA command line the v3 or full variant sends per request
    /// (for redis-benchmark; `__rand_int__` marks the per-request numbers) and exit.
    #[arg(long, value_name = "VARIANT", hide = true)]
    pub print_command: Option<Variant>,
}

/// clap value parser for a positive rate.
fn parse_rate(text: &str) -> std::result::Result<f64, String> {
    match text.parse::<f64>() {
        Ok(rate) if rate.is_finite() && rate > 0.0 => Ok(rate),
        _ => Err(format!("{text:?} is not a positive number")),
    }
}

/// `--variant`: one [`Variant`] or `all`. Help texts come from [`Variant`]'s docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VariantChoice(Option<Variant>);

impl VariantChoice {
    /// `--variant all`.
    pub const ALL: VariantChoice = VariantChoice(None);

    fn variants(self) -> Vec<Variant> {
        match self.0 {
            Some(variant) => vec![variant],
            None => Variant::ALL.to_vec(),
        }
    }
}

impl clap::ValueEnum for VariantChoice {
    fn value_variants<'a>() -> &'a [Self] {
        const CHOICES: [VariantChoice; 7] = [
            VariantChoice(Some(Variant::V1)),
            VariantChoice(Some(Variant::V2)),
            VariantChoice(Some(Variant::V3)),
            VariantChoice(Some(Variant::V4)),
            VariantChoice(Some(Variant::Full)),
            VariantChoice(Some(Variant::Lock)),
            VariantChoice::ALL,
        ];
        &CHOICES
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        match self.0 {
            Some(variant) => variant.to_possible_value(),
            None => {
                Some(PossibleValue::new("all").help("Every variant in turn, one comparison table"))
            }
        }
    }
}

/// `seckill loadtest`'s report: one entry per variant run.
#[derive(serde::Serialize)]
pub struct LoadtestReport {
    /// The variants in the order they ran (none with `--buckets`).
    pub variants: Vec<VariantReport>,
    /// `--buckets N`: the bucketed `full` run (docs/buckets.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buckets: Option<crate::features::loadtest::buckets::BucketReport>,
    #[serde(skip)]
    heading: String,
    /// `--wide`: every column in the table.
    #[serde(skip)]
    wide: bool,
}

impl Report for LoadtestReport {
    fn render(&self) -> String {
        if let Some(bucketed) = &self.buckets {
            return format!("{}\n{}\n", self.heading, bucket_tables(bucketed));
        }
        render(&self.heading, &self.variants, self.wide)
    }

    fn csv(&self) -> Option<String> {
        if self.buckets.is_some() {
            return None;
        }
        let mut text = Vec::new();
        csv::write(&mut text, &self.variants).ok()?;
        String::from_utf8(text).ok()
    }

    fn exit_code(&self) -> i32 {
        if self
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
            .collect();
        (!failed.is_empty()).then(|| format!("threshold failed: {}", failed.join("; ")))
    }
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
pub fn print_command(ctx: &Context, args: &Args, variant: Variant) -> Result<i32> {
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
pub fn run(ctx: &Context, args: &Args) -> Result<LoadtestReport> {
    let campaign = ctx.campaign()?;
    let item_id = chosen_item(&campaign, args)?;
    let variants = args.variant.variants();
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
    let target = ctx.redis(&campaign)?;
    let keys = LoadtestKeys::new(&campaign.id, &item_id);
    let mut control = target.connect()?;
    namespace::ensure_free(&mut control, &keys, &campaign)?;
    if args.buckets > 1 || args.hot_buckets.is_some() {
        let unbucketed_only = args.rate.is_some()
            || args.hdr_out.is_some()
            || args.max_p99.is_some()
            || args.min_qps.is_some()
            || args.fail_on_oversell
            || args.wait_replicas.is_some()
            || ctx.format == crate::util::output::Format::Csv;
        if unbucketed_only {
            return Err(usage(
                "--rate, --hdr-out, the thresholds, --wait-replicas and --format csv apply to \
                 the unbucketed load test, not to --buckets",
            ));
        }
        return run_buckets(args, &campaign, &item_id, &target, &mut control);
    }

    let plan = Plan {
        campaign: loadtest_campaign(&campaign, &item_id, &settings),
        keys,
        campaign_id: campaign.id.clone(),
        item_id,
        run_id: ulid::Ulid::generate().to_string(),
        // Loaded once, before any timing: the workers send bare EVALSHA and never see NOSCRIPT.
        buy_sha: scripts::buy::SPEC.load(&mut control)?,
        v3_sha: scripts::v3_decr::SPEC.load(&mut control)?,
        lock_release_sha: scripts::lock_release::SPEC.load(&mut control)?,
        settings,
    };

    let outcome = run_variants(&target, &plan, &variants);
    let mut runs = if args.keep {
        outcome?
    } else {
        // Clean up after a failed variant too; its error matters more than a cleanup error.
        let cleaned = namespace::remove(&mut control, &plan.keys);
        let runs = outcome?;
        cleaned?;
        runs
    };
    let thresholds = Thresholds {
        max_p99: args.max_p99,
        min_qps: args.min_qps,
        fail_on_oversell: args.fail_on_oversell,
    };
    for run in &mut runs {
        run.report.thresholds_failed = thresholds.check(&run.report);
    }
    if let Some(prefix) = &args.hdr_out {
        write_hgrm_files(prefix, &runs)?;
    }
    Ok(LoadtestReport {
        heading: heading(&campaign, &plan, &target.display, args.keep),
        variants: runs.into_iter().map(|run| run.report).collect(),
        buckets: None,
        wide: args.wide,
    })
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
pub struct ReservationsReport {
    #[serde(flatten)]
    pub race: crate::features::loadtest::reservations::RaceReport,
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

    /// One figure per line: fits any terminal.
    fn render(&self) -> String {
        let r = &self.race;
        let fields = output::fields(&[
            ("reserved (buy ok)", r.reserved.to_string()),
            (
                "sold out / refused",
                format!("{} / {}", r.sold_out, r.rejected),
            ),
            ("payments sent", r.pay_attempts.to_string()),
            (
                "  aimed at the deadline",
                r.paid_at_deadline_attempts.to_string(),
            ),
            ("  answered paid", r.paid.to_string()),
            ("  refused: expired", r.pay_refused_expired.to_string()),
            ("final: paid", r.final_paid.to_string()),
            ("final: expired", r.final_expired.to_string()),
            ("final: still reserved", r.final_reserved.to_string()),
            ("final stock", r.final_stock.to_string()),
            (
                "buy + race",
                format!("{:.2} s + {:.2} s", r.buy_elapsed_s, r.race_elapsed_s),
            ),
            ("identity", r.identity.clone()),
            ("verdict", r.verdict.clone()),
        ]);
        format!("{}{fields}", output::paragraph(&self.heading))
    }
}

/// `--reservations`: buys with a payment timeout, payments racing expiry, the proof.
pub fn run_reservations(ctx: &Context, args: &Args) -> Result<ReservationsReport> {
    if args.wait_replicas.is_some() {
        return Err(usage(
            "--wait-replicas applies to --variant full, not to --reservations",
        ));
    }
    let campaign = ctx.campaign()?;
    let item_id = chosen_item(&campaign, args)?;
    let target = ctx.redis(&campaign)?;
    let keys = LoadtestKeys::new(&campaign.id, &item_id);
    let mut control = target.connect()?;
    namespace::ensure_free(&mut control, &keys, &campaign)?;
    let settings = settings(args)?;
    let mut copy = loadtest_campaign(&campaign, &item_id, &settings);
    copy.payment_timeout = Some(args.payment_timeout);
    let race = crate::features::loadtest::reservations::RaceSettings {
        threads: args.connections,
        requests: args.requests,
        users: settings.users,
        payment_timeout: args.payment_timeout,
        pay_share: args.pay_share,
    };
    namespace::reset(&mut control, &keys, &ulid::Ulid::generate().to_string())?;
    let outcome = crate::features::loadtest::reservations::run(&target, &copy, &keys.item, &race);
    let race_report = if args.keep {
        outcome?
    } else {
        let cleaned = namespace::remove(&mut control, &keys);
        let report = outcome?;
        cleaned?;
        report
    };
    Ok(ReservationsReport {
        heading: format!(
            "reservations load test of campaign {} item {item_id} on {}: {} connections (a thread each), {} requests, stock {}, payment timeout {:?}, pay share {}",
            campaign.id,
            target.display,
            args.connections,
            args.requests,
            args.stock,
            args.payment_timeout,
            args.pay_share
        ),
        race: race_report,
    })
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

/// `--hdr-out`: one `.hgrm` per variant (and the service time's in open loop).
fn write_hgrm_files(prefix: &str, runs: &[VariantRun]) -> Result<()> {
    for run in runs {
        let name = run.report.variant.as_str();
        hgrm::write_file(&hgrm::path(prefix, name, ""), &run.corrected)?;
        if run.report.mode == "open" {
            hgrm::write_file(&hgrm::path(prefix, name, ".service"), &run.service)?;
        }
    }
    Ok(())
}

/// Run `variants` in turn, each with its own progress bar; stop at the first failure.
fn run_variants(
    target: &RedisTarget,
    plan: &Plan,
    variants: &[Variant],
) -> Result<Vec<VariantRun>> {
    let mut reports = Vec::new();
    for &variant in variants {
        let progress = progress_bar(variant, plan.settings.requests);
        let outcome = loadtest::run_variant(target, plan, variant, &progress);
        progress.finish_and_clear();
        reports.push(outcome.with_context(|| format!("variant {} failed", variant.as_str()))?);
    }
    Ok(reports)
}

/// The campaign as the `full` variant preheats it: only the chosen item, with
/// --stock; no sale window (the real sale's dates say nothing about when a
/// rehearsal runs); the rate limit only with --rate-limit.
fn loadtest_campaign(campaign: &Campaign, item_id: &str, settings: &Settings) -> Campaign {
    let mut copy = campaign.clone();
    copy.starts_at_ms = None;
    copy.ends_at_ms = None;
    if !settings.rate_limit {
        copy.rate_limit = None;
    }
    copy.items.retain(|item| item.id == item_id);
    for item in &mut copy.items {
        item.stock = settings.stock;
    }
    copy
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

/// The lines above the table; short, so they fit an 80-column terminal like the table.
fn heading(campaign: &Campaign, plan: &Plan, redis: &str, kept: bool) -> String {
    let settings = &plan.settings;
    let pace = match settings.pace {
        Pace::Closed => "closed loop".to_string(),
        Pace::Open { rate } => format!("open loop at {rate} attempts/s"),
    };
    format!(
        "load test of campaign {} item {} on {redis}\n\
         {pace}, {} connections, pipeline {}\n\
         {} requests, stock {}, {} users{}{}",
        campaign.id,
        plan.item_id,
        settings.connections,
        settings.pipeline,
        settings.requests,
        settings.stock,
        settings.users,
        match settings.wait_replicas {
            Some(n) => format!(
                "\nfull: WAIT for {n} replica(s) after every buy, at most {}",
                humantime::format_duration(settings.wait_timeout)
            ),
            None => String::new(),
        },
        if kept {
            format!(" (keys kept under {}*)", plan.keys.item.base)
        } else {
            String::new()
        }
    )
}

/// The heading, the comparison table (narrow, or every column with `--wide`),
/// in open loop the latency table, on a cluster each master's share.
fn render(heading: &str, reports: &[VariantReport], wide: bool) -> String {
    let mut text = format!("{heading}\n{}\n", comparison_table(reports, wide));
    if reports.iter().any(|r| r.requested_rate.is_some()) {
        text.push_str(&latency_table(reports));
    }
    for r in reports {
        for master in r.masters.iter().flatten() {
            text.push_str(&format!(
                "{} on master {}: {:.1}% of the commands ({})\n",
                r.variant.as_str(),
                master.node,
                100.0 * master.share,
                master.commands
            ));
        }
    }
    text
}

fn comparison_table(reports: &[VariantReport], wide: bool) -> comfy_table::Table {
    let ms = |value: f64| format!("{value:.2}");
    let mut table = if wide {
        output::table([
            "variant",
            "requests",
            "elapsed s",
            "qps",
            "succeeded",
            "unreplicated",
            "sold out",
            "rejected",
            "oversold",
            "undersold",
            "final stock",
            "stream",
            "p50 ms",
            "p90 ms",
            "p95 ms",
            "p99 ms",
            "p99.9 ms",
            "max ms",
            "service p99 ms",
            "late",
            "dropped",
            "retries",
            "verdict",
        ])
    } else {
        output::table([
            "variant",
            "qps",
            "succeeded",
            "oversold",
            "p99 ms",
            "verdict",
        ])
    };
    for r in reports {
        let row = if wide {
            vec![
                r.variant.as_str().to_string(),
                r.requests.to_string(),
                format!("{:.2}", r.elapsed_s),
                format!("{:.0}", r.qps),
                r.succeeded.to_string(),
                r.unreplicated.to_string(),
                r.sold_out.to_string(),
                r.rejected.to_string(),
                r.oversold.to_string(),
                r.undersold.to_string(),
                r.final_stock.to_string(),
                r.stream_len.to_string(),
                ms(r.p50_ms),
                ms(r.p90_ms),
                ms(r.p95_ms),
                ms(r.p99_ms),
                ms(r.p99_9_ms),
                ms(r.max_ms),
                ms(r.service.p99_ms),
                r.late_sends.to_string(),
                r.dropped.to_string(),
                retries_text(r),
                r.verdict.clone(),
            ]
        } else {
            vec![
                r.variant.as_str().to_string(),
                format!("{:.0}", r.qps),
                r.succeeded.to_string(),
                r.oversold.to_string(),
                ms(r.p99_ms),
                r.verdict.clone(),
            ]
        };
        table.add_row(row);
    }
    // Only the free-text columns wrap (between words): retries and verdict.
    let free_text: &[usize] = if wide { &[21, 22] } else { &[5] };
    output::fit(&mut table, free_text);
    table
}

/// Open loop: corrected latency (from the planned send) beside service time
/// (from the actual send), and whether the plan was kept.
fn latency_table(reports: &[VariantReport]) -> String {
    let mut table = output::table([
        "variant", "latency", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms",
    ]);
    let ms = |value: f64| format!("{value:.2}");
    for r in reports {
        table.add_row(vec![
            r.variant.as_str().to_string(),
            "corrected".to_string(),
            ms(r.p50_ms),
            ms(r.p90_ms),
            ms(r.p99_ms),
            ms(r.p99_9_ms),
            ms(r.max_ms),
        ]);
        let s = &r.service;
        table.add_row(vec![
            String::new(),
            "service".to_string(),
            ms(s.p50_ms),
            ms(s.p90_ms),
            ms(s.p99_ms),
            ms(s.p99_9_ms),
            ms(s.max_ms),
        ]);
    }
    output::fit(&mut table, &[]);
    let mut text = format!("{table}\n");
    for r in reports {
        text.push_str(&format!(
            "{}: {:.0}/s requested, {:.0}/s achieved, {} sent late (> 2 ms), {} dropped\n",
            r.variant.as_str(),
            r.requested_rate.unwrap_or(0.0),
            r.achieved_rate,
            r.late_sends,
            r.dropped
        ));
    }
    text
}

/// What `retries` counts depends on the variant; say it in the cell.
fn retries_text(report: &VariantReport) -> String {
    match report.variant {
        Variant::V2 => format!("{} aborts", report.retries),
        Variant::V4 => match report.lowest_stock_seen {
            Some(lowest) => format!("{} below 0 (min {lowest})", report.retries),
            None => "0 below 0".to_string(),
        },
        Variant::Lock => format!("{} waits", report.retries),
        _ => report.retries.to_string(),
    }
}

/// `--buckets N`: the bucket buy path, one run (see `buckets::loadtest`).
fn run_buckets(
    args: &Args,
    campaign: &Campaign,
    item_id: &str,
    target: &RedisTarget,
    control: &mut crate::redis_client::conn::Conn,
) -> Result<LoadtestReport> {
    if args.variant != VariantChoice(Some(Variant::Full)) {
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
    for item in campaign.items.iter().filter(|i| i.buckets > 1) {
        let live = buckets::Layout::live(&campaign.id, item).marker();
        let preheated: bool = redis::Commands::exists(control, &live)
            .with_context(|| format!("cannot check {live}"))?;
        if preheated {
            return Err(usage(format!(
                "refusing to load-test: campaign {} item {} is preheated on this Redis ({live}); \
                 use a rehearsal Redis (--redis URL)",
                campaign.id, item.id
            )));
        }
    }
    let run = crate::features::loadtest::buckets::BucketRun {
        threads: args.connections,
        requests: args.requests,
        users: args.users.unwrap_or(args.requests),
        stock: args.stock,
        buckets: args.buckets,
        hot_buckets: args.hot_buckets,
        rate_limit: args.rate_limit,
    };
    let report =
        crate::features::loadtest::buckets::run(target, campaign, item_id, &run, args.keep)?;
    let heading = format!(
        "load test of campaign {} item {item_id} on {}: {} buckets, {} demand, {} threads, {} requests, stock {}, {} users",
        campaign.id,
        target.display,
        report.buckets,
        report.demand,
        report.threads,
        report.requests,
        report.stock,
        report.users
    );
    Ok(LoadtestReport {
        heading,
        variants: Vec::new(),
        buckets: Some(report),
        wide: false,
    })
}

/// The bucketed run as people read it: the figures, then one row per bucket.
fn bucket_tables(report: &crate::features::loadtest::buckets::BucketReport) -> String {
    let figures = output::fields(&[
        (
            "variant",
            format!("{} ({} buckets)", report.variant, report.buckets),
        ),
        ("buys/s", format!("{:.0}", report.qps)),
        ("succeeded", report.succeeded.to_string()),
        ("sold out", report.sold_out.to_string()),
        ("rejected", report.rejected.to_string()),
        ("oversold", report.oversold.to_string()),
        ("undersold", report.undersold.to_string()),
        ("final stock", report.final_stock.to_string()),
        ("orders in streams", report.stream_len.to_string()),
        (
            "p50 / p99 ms",
            format!("{:.2} / {:.2}", report.p50_ms, report.p99_ms),
        ),
        (
            "round trips per ok",
            format!(
                "mean {:.2}, p99 {}",
                report.round_trips_per_ok_mean, report.round_trips_per_ok_p99
            ),
        ),
        (
            "transfer share",
            format!(
                "{:.1}% ({} transfers)",
                report.transfer_share * 100.0,
                report.transfers
            ),
        ),
        ("verdict", report.verdict.clone()),
    ]);
    let rows = report
        .per_bucket
        .iter()
        .map(|b| {
            vec![
                b.bucket.to_string(),
                b.slot.to_string(),
                b.initial_stock.to_string(),
                b.final_stock.to_string(),
                b.orders.to_string(),
                b.transfers_out.to_string(),
                b.transfers_in.to_string(),
            ]
        })
        .collect();
    let table = output::grid(
        &[
            "bucket",
            "slot",
            "initial",
            "final stock",
            "orders",
            "transfers out",
            "transfers in",
        ],
        rows,
        &[],
    );
    format!("{figures}\n{table}")
}
