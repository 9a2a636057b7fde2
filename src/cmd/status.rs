//! `seckill status`: the operator's view of a live sale, per item — stock,
//! sales rate, window, kill switch, order stream and consumer group, dead
//! letters, key expiry — read only, one round trip per item (see
//! `crate::features::monitor::status`). `--watch 1s` refreshes it in place on a terminal and
//! prints one block (or one JSON line) per sample when piped;
//! `--format prometheus` writes the metrics for node_exporter's textfile
//! collector.

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use serde::Serialize;

use crate::domain::item::SaleItem;
use crate::domain::reservations::Totals;
use crate::features::monitor::metrics::Exposition;
use crate::features::monitor::status::{ItemStatus, StatusReader, WindowState};
use crate::invocation::context::{Context, Opened};
use crate::invocation::report::{Report, emit, envelope_line};
use crate::model::campaign::Campaign;
use crate::model::error::usage;
use crate::model::exit_codes;
use crate::redis_client::conn::{Conn, RedisTarget, parse_duration_arg};
use crate::util::output::{self, Format};
use crate::util::text;
use crate::util::text::human_duration_ms;

/// Flags of `seckill status`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Only this item (default: every item of the campaign).
    #[arg(long, value_name = "ID")]
    pub(crate) item: Option<String>,

    /// Refresh every DURATION until Ctrl-C (in place on a terminal, one block per sample when piped).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    pub(crate) watch: Option<Duration>,
}

/// Shortest `--watch` interval: each sample costs Redis one script per item.
const MIN_WATCH: Duration = Duration::from_millis(100);
/// A single status (no `--watch`) samples twice this far apart for the
/// rate; `--format prometheus` samples once (Prometheus computes rates).
const ONE_SHOT_RATE_INTERVAL: Duration = Duration::from_secs(1);

/// `seckill status`'s report: every selected item at one instant.
#[derive(Debug, Serialize)]
pub(crate) struct StatusReport {
    /// Redis server time of the sample, RFC 3339.
    pub(crate) redis_time: String,
    /// One entry per selected item.
    pub(crate) items: Vec<ItemStatus>,
    #[serde(skip)]
    campaign_id: String,
    #[serde(skip)]
    campaign_file: String,
    #[serde(skip)]
    redis: String,
}

impl StatusReport {
    fn new(campaign: &Campaign, target: &RedisTarget, items: Vec<ItemStatus>) -> StatusReport {
        StatusReport {
            redis_time: text::time_or_dash(items.first().map(|s| s.redis_time_ms)),
            items,
            campaign_id: campaign.id.clone(),
            campaign_file: campaign.path.display().to_string(),
            redis: target.display.clone(),
        }
    }
}

impl Report for StatusReport {
    fn render(&self) -> String {
        frame(self)
    }

    fn exposition(&self) -> Option<String> {
        let mut exposition = Exposition::default();
        crate::features::monitor::metrics::add_statuses(
            &mut exposition,
            &self.campaign_id,
            &self.items,
        );
        Some(exposition.render())
    }
}

/// Show the status once, or every `--watch` until interrupted; exit 0.
pub(crate) fn run(ctx: &Context, args: &Args) -> Result<i32> {
    if let Some(every) = args.watch {
        if every < MIN_WATCH {
            return Err(usage(format!(
                "--watch {} is too short: at least {}",
                humantime::format_duration(every),
                humantime::format_duration(MIN_WATCH)
            )));
        }
        if ctx.format == Format::Prometheus {
            return Err(usage(
                "--watch cannot be combined with --format prometheus: write the file from cron, \
                 or scrape `consume --metrics-listen`",
            ));
        }
    }
    let Opened {
        campaign,
        target,
        mut conn,
    } = ctx.open()?;
    let items = SaleItem::select(&campaign, args.item.as_deref())?;
    let Some(every) = args.watch else {
        let mut reader = StatusReader::default();
        let mut statuses = reader.read_items(&mut conn, &items)?;
        if ctx.format != Format::Prometheus {
            std::thread::sleep(ONE_SHOT_RATE_INTERVAL);
            statuses = reader.read_items(&mut conn, &items)?;
        }
        return emit(ctx, &StatusReport::new(&campaign, &target, statuses));
    };
    watch(ctx, &campaign, &items, &target, conn, every)
}

/// Sample every `every` until SIGINT/SIGTERM. A failed sample is shown and
/// retried on a fresh connection: a Redis blip must not close the console.
fn watch(
    ctx: &Context,
    campaign: &Campaign,
    items: &[SaleItem],
    target: &RedisTarget,
    conn: Conn,
    every: Duration,
) -> Result<i32> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .context("cannot install signal handler")?;
    }
    let in_place = ctx.format == Format::Table && std::io::stdout().is_terminal();
    let mut reader = StatusReader::default();
    let mut conn = Some(conn);
    if in_place && !output::write_stdout("\x1b[2J")? {
        return Ok(exit_codes::SUCCESS);
    }
    while !stop.load(Ordering::SeqCst) {
        let started = Instant::now();
        let sample = (|| -> Result<Vec<ItemStatus>> {
            let conn = match &mut conn {
                Some(conn) => conn,
                None => conn.insert(target.connect()?),
            };
            reader.read_items(conn, items)
        })();
        let text = match (sample, ctx.format) {
            (Ok(statuses), Format::Json) => {
                envelope_line(ctx, &StatusReport::new(campaign, target, statuses))?
            }
            (Ok(statuses), _) => {
                let text = frame(&StatusReport::new(campaign, target, statuses));
                if in_place {
                    // Home, each line cleared to its end, then everything below cleared.
                    format!("\x1b[H{}\x1b[J", text.replace('\n', "\x1b[K\n"))
                } else {
                    format!("{text}\n")
                }
            }
            (Err(error), _) => {
                // The old connection may still owe a reply.
                conn = None;
                output::say(format!(
                    "seckill: status: {} (retrying every {})",
                    crate::util::error_text::render(&error),
                    humantime::format_duration(every)
                ));
                String::new()
            }
        };
        if !output::write_stdout(&text)? {
            // The reader went away (`| head`): nothing more to show.
            break;
        }
        crate::util::retry::sleep_unless_stopped(every.saturating_sub(started.elapsed()), &stop);
    }
    Ok(exit_codes::SUCCESS)
}

/// The text view: a heading, then five lines per item.
fn frame(report: &StatusReport) -> String {
    let mut out = output::hanging(
        &format!(
            "campaign {} on {} · Redis time {}",
            report.campaign_id,
            report.redis,
            seconds(report.items.first().map(|s| s.redis_time_ms))
        ),
        0,
    );
    for s in &report.items {
        out.push_str(&item_block(&report.campaign_file, s));
    }
    out
}

fn item_block(campaign_file: &str, s: &ItemStatus) -> String {
    let mut out = output::hanging(&format!("item {}  {}", s.item, s.name), 2);
    // A label, then text wrapped under itself: the view fits the terminal.
    let mut line = |label: &str, text: String| {
        out.push_str(&output::hanging(
            &format!("  {label:<8} {text}"),
            LABEL_WIDTH,
        ));
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
            format!("not preheated: run `seckill -c {campaign_file} preheat`"),
        ),
    }
    let r = &s.reservations;
    if r != &Totals::default() {
        line(
            "orders",
            format!(
                "{} reserved ({} units) · {} paid ({}) · {} released ({}): {} expired, {} cancelled",
                r.reserved_orders,
                r.reserved_units,
                r.paid_orders,
                r.paid_units,
                r.released_orders(),
                r.released_units(),
                r.expired_orders,
                r.cancelled_orders
            ),
        );
    }
    line("window", s.window.describe());
    if let Some(room) = &s.room {
        line("room", room.describe());
    }
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
                crate::model::keys::ORDER_GROUP,
                stream.pending,
                stream
                    .lag
                    .map_or_else(|| "unknown".to_string(), |l| l.to_string())
            )
        } else {
            "none yet (preheat or consume creates it)".to_string()
        },
    );
    for (b, part) in s.slots.iter().enumerate() {
        line(
            &format!("bucket {b}"),
            format!(
                "{} left · {} pending, lag {} · switch {}",
                part.stock_left
                    .map_or_else(|| "-".to_string(), |l| l.to_string()),
                part.stream.pending,
                part.stream
                    .lag
                    .map_or_else(|| "unknown".to_string(), |l| l.to_string()),
                if part.kill_switch.on { "ON" } else { "off" }
            ),
        );
    }
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

/// Columns before a line's text (`  label    `).
const LABEL_WIDTH: u16 = 11;

/// RFC 3339 to the second: precise enough for people, and shorter.
fn seconds(ms: Option<i64>) -> String {
    ms.and_then(chrono::DateTime::from_timestamp_millis)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_else(|| "-".to_string())
}

fn rate_text(s: &ItemStatus) -> String {
    match s.rate_per_s {
        Some(rate) => format!(
            "{rate:.1} orders/s (last {})",
            human_duration_ms(s.rate_interval_ms)
        ),
        None => "- (from the next sample)".to_string(),
    }
}
