//! `seckill status`: the operator's view of a live sale, per item — stock,
//! sales rate, window, kill switch, order stream and consumer group, dead
//! letters, key expiry — read only, one round trip per item (see
//! `crate::status`). `--watch 1s` refreshes it in place on a terminal and
//! prints one block (or one JSON line) per sample when piped;
//! `--format prometheus` writes the metrics for node_exporter's textfile
//! collector.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::campaign::{Campaign, Item};
use crate::context::Globals;
use crate::error::usage;
use crate::exit_codes;
use crate::metrics::Exposition;
use crate::output::{self, Format};
use crate::redis_conn::{Conn, RedisTarget, parse_duration_arg};
use crate::status::{ItemStatus, StatusReader, WindowState, human_duration_ms};

/// Flags of `seckill status`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    seckill -c campaigns/moutai.yaml status\n  \
    seckill -c campaigns/moutai.yaml status --watch 1s\n  \
    seckill -c campaigns/moutai.yaml status --format json --item 1001\n  \
    seckill -c campaigns/moutai.yaml status --format prometheus > /var/lib/node_exporter/textfile/seckill.prom")]
pub struct Args {
    /// Only this item (default: every item of the campaign).
    #[arg(long, value_name = "ID")]
    pub item: Option<String>,

    /// Refresh every DURATION until Ctrl-C (in place on a terminal, one block per sample when piped).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    pub watch: Option<Duration>,
}

/// Shortest `--watch` interval: each sample costs Redis one script per item.
const MIN_WATCH: Duration = Duration::from_millis(100);
/// The rate's interval of a single status (no `--watch`).
const ONE_SHOT_RATE_INTERVAL_MS: i64 = 10_000;

#[derive(Debug, Serialize)]
struct StatusOutput<'a> {
    campaign: &'a str,
    redis: &'a str,
    redis_time: String,
    items: &'a [ItemStatus],
}

/// Show the status once, or every `--watch` until interrupted; exit 0.
pub fn run(globals: &Globals, args: &Args) -> Result<i32> {
    let campaign = globals.campaign()?;
    let items = campaign.select_items(args.item.as_deref())?;
    let target = globals.redis(&campaign)?;
    let Some(every) = args.watch else {
        let mut conn = target.connect()?;
        let statuses = StatusReader::default().read_campaign(
            &mut conn,
            &campaign,
            &items,
            ONE_SHOT_RATE_INTERVAL_MS,
        )?;
        print_once(globals.format, &campaign, &target, &statuses)?;
        return Ok(exit_codes::SUCCESS);
    };
    if every < MIN_WATCH {
        return Err(usage(format!(
            "--watch {} is too short: at least {}",
            humantime::format_duration(every),
            humantime::format_duration(MIN_WATCH)
        )));
    }
    if globals.format == Format::Prometheus {
        return Err(usage(
            "--watch cannot be combined with --format prometheus: write the file from cron, \
             or scrape `consume --metrics-listen`",
        ));
    }
    watch(globals.format, &campaign, &items, &target, every)
}

fn print_once(
    format: Format,
    campaign: &Campaign,
    target: &RedisTarget,
    statuses: &[ItemStatus],
) -> Result<()> {
    match format {
        Format::Json => output::print_json(&envelope(campaign, target, statuses)),
        Format::Prometheus => {
            let mut exposition = Exposition::default();
            exposition.add_statuses(&campaign.id, statuses);
            print!("{}", exposition.render());
            Ok(())
        }
        Format::Table => {
            print!("{}", frame(campaign, target, statuses));
            Ok(())
        }
    }
}

fn envelope<'a>(
    campaign: &'a Campaign,
    target: &'a RedisTarget,
    statuses: &'a [ItemStatus],
) -> StatusOutput<'a> {
    StatusOutput {
        campaign: &campaign.id,
        redis: &target.display,
        redis_time: output::time_or_dash(statuses.first().map(|s| s.redis_time_ms)),
        items: statuses,
    }
}

/// Sample every `every` until SIGINT/SIGTERM. A failed sample is shown and
/// retried on a fresh connection: a Redis blip must not close the console.
fn watch(
    format: Format,
    campaign: &Campaign,
    items: &[&Item],
    target: &RedisTarget,
    every: Duration,
) -> Result<i32> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .context("cannot install signal handler")?;
    }
    let in_place = format == Format::Table && std::io::stdout().is_terminal();
    let interval_ms = every.as_millis() as i64;
    let mut reader = StatusReader::default();
    let mut conn: Option<Conn> = None;
    let mut stdout = std::io::stdout().lock();
    if in_place {
        write!(stdout, "\x1b[2J")?;
    }
    while !stop.load(Ordering::SeqCst) {
        let started = Instant::now();
        let sample = (|| -> Result<Vec<ItemStatus>> {
            let conn = match &mut conn {
                Some(conn) => conn,
                None => conn.insert(target.connect()?),
            };
            reader.read_campaign(conn, campaign, items, interval_ms)
        })();
        let text = match (&sample, format) {
            (Ok(statuses), Format::Json) => {
                let mut line = serde_json::to_string(&envelope(campaign, target, statuses))?;
                line.push('\n');
                line
            }
            (Ok(statuses), _) => frame(campaign, target, statuses),
            (Err(error), Format::Json) => format!(
                "{}\n",
                serde_json::json!({"campaign": campaign.id, "redis": target.display,
                    "error": crate::error::render(error)})
            ),
            (Err(error), _) => format!(
                "campaign {} on {}: {} (retrying every {})\n",
                campaign.id,
                target.display,
                crate::error::render(error),
                humantime::format_duration(every)
            ),
        };
        if sample.is_err() {
            // The old connection may still owe a reply.
            conn = None;
        }
        let written = if in_place {
            // Home, each line cleared to its end, then everything below cleared.
            let body = text.replace('\n', "\x1b[K\n");
            write!(stdout, "\x1b[H{body}\x1b[J")
        } else if format == Format::Table {
            writeln!(stdout, "{text}")
        } else {
            write!(stdout, "{text}")
        };
        if written.and_then(|()| stdout.flush()).is_err() {
            // The reader went away (`| head`): nothing more to show.
            break;
        }
        crate::orders::pipeline::sleep_unless_stopped(
            every.saturating_sub(started.elapsed()),
            &stop,
        );
    }
    Ok(exit_codes::SUCCESS)
}

/// The text view: a heading, then five lines per item.
fn frame(campaign: &Campaign, target: &RedisTarget, statuses: &[ItemStatus]) -> String {
    let mut out = format!(
        "campaign {} on {} · Redis time {}\n",
        campaign.id,
        target.display,
        seconds(statuses.first().map(|s| s.redis_time_ms))
    );
    for s in statuses {
        out.push_str(&item_block(campaign, s));
    }
    out
}

fn item_block(campaign: &Campaign, s: &ItemStatus) -> String {
    let mut out = format!("item {}  {}\n", s.item, s.name);
    // Short lines (a label, then at most ~70 columns): the view fits 80 columns.
    let mut line = |label: &str, text: String| {
        out.push_str(&format!("  {label:<8} {text}\n"));
    };
    match (s.stock_left, s.initial_stock) {
        (Some(left), Some(initial)) => {
            line(
                "stock",
                format!(
                    "{left} left of {initial} · {} sold to {} buyer{}",
                    s.sold.unwrap_or(0),
                    s.buyers,
                    if s.buyers == 1 { "" } else { "s" }
                ),
            );
            line("rate", rate_text(s));
        }
        _ => line(
            "stock",
            format!(
                "not preheated: run `seckill -c {} preheat`",
                campaign.path.display()
            ),
        ),
    }
    line("window", s.window.describe());
    let switch = &s.kill_switch;
    line(
        "switch",
        if switch.on {
            "ON — every buy is refused (closed)".to_string()
        } else {
            "off".to_string()
        },
    );
    if switch.switched_at_ms.is_some() {
        let mut text = format!("set {}", seconds(switch.switched_at_ms));
        if let Some(by) = &switch.switched_by {
            text.push_str(&format!(" by {by}"));
        }
        if let Some(reason) = &switch.reason {
            text.push_str(&format!(": \"{reason}\""));
        }
        line("", text);
    }
    let stream = &s.stream;
    line(
        "stream",
        format!(
            "{} order{} · {} dead-lettered",
            stream.length,
            if stream.length == 1 { "" } else { "s" },
            s.dead_letter
        ),
    );
    line(
        "group",
        if stream.group_exists {
            format!(
                "{}: {} pending, lag {}",
                crate::keys::ORDER_GROUP,
                stream.pending,
                stream
                    .lag
                    .map_or_else(|| "unknown".to_string(), |l| l.to_string())
            )
        } else {
            "none yet (preheat or consume creates it)".to_string()
        },
    );
    line(
        "expiry",
        match s.expires_in_ms {
            Some(ms) => format!(
                "keys expire in {}, at {}: reconcile before",
                human_duration_ms(ms),
                seconds(Some(s.redis_time_ms + ms))
            ),
            None if s.window.state == WindowState::NotPreheated => "no keys".to_string(),
            None => "keys never expire (no ends_at)".to_string(),
        },
    );
    out
}

/// RFC 3339 to the second: precise enough for people, and shorter.
fn seconds(ms: Option<i64>) -> String {
    ms.and_then(chrono::DateTime::from_timestamp_millis)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_else(|| "-".to_string())
}

fn rate_text(s: &ItemStatus) -> String {
    match s.rate_per_s {
        Some(rate) => format!(
            "{}{rate:.1} orders/s (last {})",
            if s.rate_is_lower_bound { "≥ " } else { "" },
            human_duration_ms(s.rate_interval_ms)
        ),
        None => "rate: next sample".to_string(),
    }
}
