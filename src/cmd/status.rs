//! `seckill status`: the operator's view of a live sale, per item — stock,
//! sales rate, window, kill switch, order stream, consumer group and its
//! consumers, dead letters, key expiry — read only (see
//! `crate::operator::monitor::status`). `--watch 1s` refreshes it in place
//! on a terminal (one line per item when the full view does not fit; "stale
//! since" when Redis stops answering) and prints one block (or one JSON
//! line) per sample when piped; `--check` is a probe: one line per problem
//! and an exit code per kind; `--format prometheus` writes the metrics for
//! node_exporter's textfile collector.

use std::sync::atomic::Ordering;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::Serialize;

use crate::domain::item::SaleItem;
use crate::domain::reservations::Totals;
use crate::invocation::context::{Context, Opened};
use crate::invocation::report::{Report, emit, envelope_line};
use crate::model::campaign::Campaign;
use crate::model::error::usage;
use crate::model::exit_codes;
use crate::operator::monitor::check::{self, Problem, Thresholds};
use crate::operator::monitor::metrics::{self, Exposition};
use crate::operator::monitor::status::{ItemStatus, StatusReader, WindowState};
use crate::operator::monitor::watch::{self, Sample};
use crate::redis_client::conn::RedisTarget;
use crate::util::output::{self, Format};
use crate::util::retry::parse_interval_arg;
use crate::util::text;
use crate::util::text::human_duration_ms;

/// Flags of `seckill status`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Only this item (default: every item of the campaign).
    #[arg(long, value_name = "ID")]
    pub(crate) item: Option<String>,

    /// Refresh every DURATION until Ctrl-C (at least 100ms): in place on a terminal, one
    /// line per item when the full view does not fit; one block per sample when piped.
    #[arg(long, value_name = "DURATION", value_parser = parse_interval_arg, conflicts_with = "check")]
    pub(crate) watch: Option<Duration>,

    /// A probe for cron or nagios: one line per problem and an exit code per kind (40 not
    /// preheated, 41 kill switch ON, 42 keys expire before --reconcile-at, 43 lag or pending
    /// above --max-lag; the lowest wins), 0 and "ok" when there is none.
    #[arg(long)]
    pub(crate) check: bool,

    /// With --check: lag (never delivered) or pending (delivered, not acked) above N is a problem.
    #[arg(long, value_name = "N", requires = "check")]
    pub(crate) max_lag: Option<u64>,

    /// With --check: keys that expire before the next reconcile are a problem. HH:MM is the
    /// next such time of day on this machine's clock and time zone (as cron reads it), or an
    /// RFC 3339 time.
    #[arg(long, value_name = "TIME", value_parser = parse_reconcile_at, requires = "check")]
    pub(crate) reconcile_at: Option<ReconcileAt>,
}

/// `--reconcile-at`: a time of day (the next one), or one instant.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ReconcileAt {
    Daily(chrono::NaiveTime),
    At(chrono::DateTime<chrono::FixedOffset>),
}

impl ReconcileAt {
    /// Unix ms of the next reconcile from now (local time for a time of day).
    fn next_ms(self) -> i64 {
        match self {
            ReconcileAt::At(at) => at.timestamp_millis(),
            ReconcileAt::Daily(time) => {
                let now = chrono::Local::now();
                let mut day = now.date_naive();
                loop {
                    // A time that does not exist today (a DST gap) is tomorrow's.
                    if let Some(at) = day
                        .and_time(time)
                        .and_local_timezone(chrono::Local)
                        .earliest()
                        && at > now
                    {
                        return at.timestamp_millis();
                    }
                    day = day.succ_opt().unwrap_or(day);
                }
            }
        }
    }
}

fn parse_reconcile_at(text: &str) -> std::result::Result<ReconcileAt, String> {
    if let Ok(time) = chrono::NaiveTime::parse_from_str(text, "%H:%M") {
        return Ok(ReconcileAt::Daily(time));
    }
    chrono::DateTime::parse_from_rfc3339(text)
        .map(ReconcileAt::At)
        .map_err(|_| format!("{text:?} is neither HH:MM (e.g. 03:00) nor an RFC 3339 time (e.g. 2026-11-12T03:00:00+08:00)"))
}

/// A single status (no `--watch`) samples twice this far apart for the
/// rate; `--format prometheus` and `--check` sample once (Prometheus
/// computes rates, and a probe must be quick).
const ONE_SHOT_RATE_INTERVAL: Duration = Duration::from_secs(1);

/// `seckill status`'s report: every selected item at one instant.
#[derive(Debug, Serialize)]
pub(crate) struct StatusReport {
    /// Redis server time of the sample, RFC 3339.
    pub(crate) redis_time: String,
    /// One entry per selected item.
    pub(crate) items: Vec<ItemStatus>,
    /// `--check`: what is wrong (empty when nothing is); absent without `--check`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) problems: Option<Vec<Problem>>,
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
            problems: None,
            campaign_id: campaign.id.clone(),
            campaign_file: campaign.path.display().to_string(),
            redis: target.display.clone(),
        }
    }

    fn heading(&self) -> String {
        format!(
            "campaign {} on {} · Redis time {}",
            self.campaign_id,
            self.redis,
            seconds(self.items.first().map(|s| s.redis_time_ms))
        )
    }
}

impl Report for StatusReport {
    fn render(&self) -> String {
        match &self.problems {
            Some(problems) => check_text(self, problems),
            None => frame(self),
        }
    }

    /// `--check` is a probe: its first line is its first problem (or "OK").
    fn names_redis(&self) -> bool {
        self.problems.is_none()
    }

    fn exposition(&self) -> Option<String> {
        let mut exposition = Exposition::default();
        metrics::add_statuses(&mut exposition, &self.campaign_id, &self.items);
        metrics::add_build_info(&mut exposition);
        Some(exposition.render())
    }

    fn exit_code(&self) -> i32 {
        self.problems
            .as_deref()
            .map_or(exit_codes::SUCCESS, check::exit_code)
    }
}

/// Show the status once, check it, or watch it until interrupted.
pub(crate) fn run(ctx: &Context, args: &Args) -> Result<i32> {
    if ctx.format == Format::Prometheus && (args.watch.is_some() || args.check) {
        return Err(usage(
            "--format prometheus writes one sample: not with --watch or --check (write the file \
             from cron, or scrape `consume --metrics-listen`)",
        ));
    }
    let Opened {
        campaign,
        target,
        mut conn,
    } = ctx.open()?;
    if let Some(every) = args.watch {
        return watch(ctx, campaign, args.item.clone(), target, conn, every);
    }
    let items = SaleItem::select(&campaign, args.item.as_deref())?;
    let mut reader = StatusReader::default();
    let mut statuses = reader.read_items(&mut conn, &items)?;
    if ctx.format != Format::Prometheus && !args.check {
        std::thread::sleep(ONE_SHOT_RATE_INTERVAL);
        statuses = reader.read_items(&mut conn, &items)?;
    }
    let mut report = StatusReport::new(&campaign, &target, statuses);
    if args.check {
        let thresholds = Thresholds {
            max_lag: args.max_lag.map(|n| i64::try_from(n).unwrap_or(i64::MAX)),
            reconcile_at_ms: args.reconcile_at.map(ReconcileAt::next_ms),
        };
        report.problems = Some(check::problems(&report.items, &thresholds));
    }
    emit(ctx, &report)
}

/// `--check`'s text: one line per problem, or one "ok" line.
fn check_text(report: &StatusReport, problems: &[Problem]) -> String {
    if problems.is_empty() {
        return format!(
            "ok: {} item(s) of campaign {} on {}: no problem found\n",
            report.items.len(),
            report.campaign_id,
            report.redis
        );
    }
    problems
        .iter()
        .map(|p| format!("{}: {}\n", p.item, p.message))
        .collect()
}

/// Sample every `every` until SIGINT/SIGTERM. Sampling runs on a thread of
/// its own (`features::monitor::watch`); this loop draws what arrives and
/// checks for a stop every 50 ms. A failed sample is said — on a terminal
/// as "stale since" above the last view, otherwise on stderr — and the next
/// one opens a fresh connection: a Redis blip must not close the console.
fn watch(
    ctx: &Context,
    campaign: Campaign,
    item: Option<String>,
    target: RedisTarget,
    conn: crate::redis_client::conn::Conn,
    every: Duration,
) -> Result<i32> {
    let stop = ctx.stop_on_signals()?;
    let in_place = ctx.format == Format::Table && output::terminal_size().is_some();
    let samples = watch::start(campaign.clone(), item, target.clone(), conn, every)?;
    if in_place && !output::write_stdout("\x1b[2J")? {
        return Ok(exit_codes::SUCCESS);
    }
    // Without a sample for this long, the view is stale even if no read failed yet (a hung Redis).
    let silence = every + Duration::from_secs(1);
    let mut last_view: Option<StatusReport> = None;
    let mut last_sample = Instant::now();
    let mut stale_since: Option<chrono::DateTime<chrono::Utc>> = None;
    while !stop.load(Ordering::SeqCst) {
        let text = match samples.recv_timeout(Duration::from_millis(50)) {
            Ok(Sample::Read(statuses)) => {
                last_sample = Instant::now();
                stale_since = None;
                let report = StatusReport::new(&campaign, &target, statuses);
                let text = match ctx.format {
                    Format::Json => envelope_line(ctx, &report)?,
                    _ if in_place => screen(&fitted(&report)),
                    _ => format!("{}\n", frame(&report)),
                };
                last_view = Some(report);
                text
            }
            Ok(Sample::Failed(error)) => {
                last_sample = Instant::now();
                let since = *stale_since.get_or_insert_with(chrono::Utc::now);
                if in_place {
                    screen(&stale_view(since, &error, last_view.as_ref()))
                } else {
                    output::say(format!(
                        "seckill: status: {error} (retrying every {})",
                        humantime::format_duration(every)
                    ));
                    String::new()
                }
            }
            Err(RecvTimeoutError::Timeout) if in_place && last_sample.elapsed() > silence => {
                let since = *stale_since.get_or_insert_with(chrono::Utc::now);
                let waited = format!(
                    "no answer for {}",
                    human_duration_ms(last_sample.elapsed().as_millis() as i64)
                );
                screen(&stale_view(since, &waited, last_view.as_ref()))
            }
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        if !output::write_stdout(&text)? {
            // The reader went away (`| head`): nothing more to show.
            break;
        }
    }
    Ok(exit_codes::SUCCESS)
}

/// Lines drawn over the screen in place: cursor home, each line cleared to
/// its end, everything below cleared. No newline after the last line, so a
/// view exactly as tall as the terminal never scrolls it.
fn screen(lines: &[String]) -> String {
    format!("\x1b[H{}\x1b[K\x1b[J", lines.join("\x1b[K\n"))
}

/// The terminal's (rows, columns); 24 × 80 when it cannot tell.
fn terminal() -> (u16, u16) {
    let (rows, columns) = output::terminal_size().unwrap_or((24, 80));
    (rows, output::width().unwrap_or(columns))
}

/// The view that fits the terminal: the full one, or one line per item.
fn fitted(report: &StatusReport) -> Vec<String> {
    let (rows, columns) = terminal();
    let full: Vec<String> = frame(report).lines().map(str::to_string).collect();
    if full.len() <= usize::from(rows) {
        return full;
    }
    let mut lines = vec![output::truncate(
        &format!("{} · {} items", report.heading(), report.items.len()),
        columns,
    )];
    let id_width = report
        .items
        .iter()
        .map(|s| output::display_width(&s.item))
        .max()
        .unwrap_or(0);
    let room = usize::from(rows).saturating_sub(1);
    let shown = if report.items.len() > room {
        room.saturating_sub(1)
    } else {
        report.items.len()
    };
    for s in &report.items[..shown] {
        lines.push(output::truncate(&item_line(s, id_width), columns));
    }
    if shown < report.items.len() {
        lines.push(output::truncate(
            &format!(
                "… {} more item(s): --item ID shows one, a taller terminal shows more",
                report.items.len() - shown
            ),
            columns,
        ));
    }
    lines
}

/// "stale since HH:MM:SS UTC — Redis unreachable: why", then the last view
/// (as old as it says), cut to the terminal.
fn stale_view(
    since: chrono::DateTime<chrono::Utc>,
    why: &str,
    last: Option<&StatusReport>,
) -> Vec<String> {
    let (rows, columns) = terminal();
    let mut lines = vec![output::truncate(
        &format!(
            "stale since {} UTC — Redis unreachable: {why}",
            since.format("%H:%M:%S")
        ),
        columns,
    )];
    if let Some(last) = last {
        lines.push(output::truncate("last sample, no longer current:", columns));
        let room = usize::from(rows).saturating_sub(lines.len());
        lines.extend(fitted(last).into_iter().take(room));
    }
    lines
}

/// One item on one line (its id padded to `id_width`): the compact view
/// when the full one does not fit.
fn item_line(s: &ItemStatus, id_width: u16) -> String {
    let pad = usize::from(id_width.saturating_sub(output::display_width(&s.item)));
    let mut parts = vec![format!("{}{}", s.item, " ".repeat(pad))];
    match (s.stock_left, s.initial_stock) {
        (Some(left), Some(initial)) => {
            parts.push(format!("{left}/{initial} left"));
            parts.push(match s.rate_per_s {
                Some(rate) => format!("{rate:.1}/s"),
                None => "-/s".to_string(),
            });
        }
        _ => parts.push("not preheated".to_string()),
    }
    parts.push(match s.window.state {
        WindowState::NotPreheated => "-".to_string(),
        _ => s.window.describe(),
    });
    parts.push(if s.kill_switch.on {
        "switch ON".to_string()
    } else {
        "switch off".to_string()
    });
    parts.push(format!(
        "lag {}",
        s.stream
            .lag
            .map_or_else(|| "?".to_string(), |l| l.to_string())
    ));
    parts.push(format!("pending {}", s.stream.pending));
    if s.dead_letter > 0 {
        parts.push(format!("{} dead", s.dead_letter));
    }
    parts.push(s.name.clone());
    parts.join("  ")
}

/// The text view: a heading, then a few lines per item.
fn frame(report: &StatusReport) -> String {
    let mut out = output::hanging(&report.heading(), 0);
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
    if !s.consumers.is_empty() {
        line("consumer", consumers_text(s));
    }
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

/// "worker-1 (2 pending, idle 0s), host-a (0 pending, idle 3h 2m)": the
/// first few, busiest first; `pending-claim --delete-consumers` removes idle
/// empty ones.
fn consumers_text(s: &ItemStatus) -> String {
    const SHOWN: usize = 4;
    let mut text: Vec<String> = s
        .consumers
        .iter()
        .take(SHOWN)
        .map(|c| {
            format!(
                "{} ({} pending, idle {})",
                c.name,
                c.pending,
                human_duration_ms(c.idle_ms)
            )
        })
        .collect();
    if s.consumers.len() > SHOWN {
        text.push(format!("and {} more", s.consumers.len() - SHOWN));
    }
    text.join(", ")
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
