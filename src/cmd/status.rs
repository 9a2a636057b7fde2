//! `seckill status`: the operator's view of a live sale, per item — stock,
//! sales rate, window, kill switch, order stream, consumer group and its
//! consumers, dead letters, key expiry — read only (see
//! `crate::operator::monitor::status`). `--watch 1s` refreshes it in place
//! on a terminal (one line per item when the full view does not fit; "stale
//! since" when Redis stops answering) and prints one block (or one JSON
//! line) per sample when piped; `--check` is a probe: one line per problem
//! and an exit code per kind (`--nagios`: Nagios' 0–3 and its plugin
//! format); `--format prometheus` writes the metrics for node_exporter's
//! textfile collector.

use std::sync::atomic::Ordering;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::Serialize;

use crate::domain::item::SaleItem;
use crate::domain::item::shape::Shape;
use crate::domain::reservations::Totals;
use crate::domain::seats::view::{self as seat_view, SectionView};
use crate::invocation::context::{Context, Opened};
use crate::invocation::report::{Report, emit, envelope_line};
use crate::model::campaign::Campaign;
use crate::model::error::usage;
use crate::model::exit_codes;
use crate::operator::monitor::check::{self, NagiosState, Problem, Thresholds};
use crate::operator::monitor::metrics::{self, Exposition};
use crate::operator::monitor::status::{ItemStatus, StatusReader, WindowState};
use crate::operator::monitor::watch::{self, Sample};
use crate::redis_client::conn::RedisTarget;
use crate::redis_client::conn::parse_duration_arg;
use crate::util::output::{self, Format};
use crate::util::retry::parse_interval_arg;
use crate::util::text;
use crate::util::text::human_duration_ms;

/// Flags of `seckill status`.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("probe").args(["check", "nagios"]).multiple(true)))]
pub(crate) struct Args {
    /// Only this item (default: every item of the campaign).
    #[arg(long, value_name = "ID")]
    pub(crate) item: Option<String>,

    /// Refresh every DURATION until Ctrl-C (at least 100ms): in place on a terminal (a table
    /// of one row per item when the full view does not fit); one block per sample when piped.
    #[arg(long, value_name = "DURATION", value_parser = parse_interval_arg, conflicts_with = "probe")]
    pub(crate) watch: Option<Duration>,

    /// A probe for cron: one line per problem and an exit code per kind (40 not preheated, 41
    /// kill switch ON, 42 keys expire before --reconcile-at, 43 lag or pending above --max-lag,
    /// 44 reservations overdue, 45 dead letters, 46 the room's admitter late; the lowest
    /// wins), 0 and "ok" when there is none. For Nagios, use --nagios.
    #[arg(long)]
    pub(crate) check: bool,

    /// The probe for Nagios (and Icinga, Sensu): --check's problems as a plugin's output and
    /// exit code — 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (Redis could not be read) — one
    /// status line with performance data per item, then one line per problem.
    #[arg(long)]
    pub(crate) nagios: bool,

    /// With --check/--nagios: lag (never delivered) or pending (delivered, not acked) above N
    /// is a problem.
    #[arg(long, value_name = "N", requires = "probe")]
    pub(crate) max_lag: Option<u64>,

    /// With --check/--nagios: keys that expire before the next reconcile are a problem. HH:MM
    /// is the next such time of day on this machine's clock and time zone (as cron reads it),
    /// or an RFC 3339 time.
    #[arg(long, value_name = "TIME", value_parser = parse_reconcile_at, requires = "probe")]
    pub(crate) reconcile_at: Option<ReconcileAt>,

    /// With --check/--nagios: how late a loop's work may be before it is a problem — a
    /// reservation past its payment deadline (expire), the room's shuffle or fan-out (queue
    /// admit).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration_arg, requires = "probe")]
    pub(crate) grace: Duration,

    /// The seat map of section SECTION of --item (a seat item): one line per row, at most 80
    /// columns, `.` free, `h` held, `s` sold, `x` blocked.
    #[arg(long, value_name = "SECTION", requires = "item", conflicts_with_all = ["watch", "probe"])]
    pub(crate) map: Option<String>,
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
    if ctx.connection.region.is_none() && !ctx.campaign_everywhere()?.regions.is_empty() {
        if args.watch.is_some() || args.check || args.nagios {
            return Err(usage(
                "a campaign with regions: --watch, --check and --nagios work in one region \
                 (--region NAME); without it `status` shows every region once",
            ));
        }
        let items = crate::cmd::regions::Items {
            item: args.item.clone(),
        };
        return crate::invocation::report::emit(
            ctx,
            &crate::cmd::regions::status(ctx, &items, false)?,
        );
    }
    if args.nagios {
        return nagios(ctx, args);
    }
    if let (Some(section), Some(item)) = (&args.map, &args.item) {
        return seat_map(ctx, item, section);
    }
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
    for (status, item) in statuses.iter_mut().zip(&items) {
        status.fenced = fenced(&mut conn, item);
    }
    let mut report = StatusReport::new(&campaign, &target, statuses);
    if args.check {
        report.problems = Some(check::problems(&report.items, &thresholds(args)));
    }
    emit(ctx, &report)
}

/// `--map SECTION`: one section's seat map.
#[derive(Debug, Serialize)]
struct SeatMapReport {
    item: String,
    /// The section's geometry, counts and state string (one byte per seat).
    section: SectionView,
    /// The map as drawn, line by line.
    map: Vec<String>,
}

impl Report for SeatMapReport {
    fn render(&self) -> String {
        let mut text = format!("item {}\n", self.item);
        for line in &self.map {
            text.push_str(line);
            text.push('\n');
        }
        text
    }
}

/// `--map SECTION`: the campaign file says whether the item has seats and
/// that section (a usage error otherwise, before Redis is asked), then one
/// GET reads the section.
fn seat_map(ctx: &Context, item: &str, section: &str) -> Result<i32> {
    if ctx.format == Format::Prometheus {
        return Err(usage(
            "--map draws a seat map: not with --format prometheus (the metrics count the seats \
             per section without it)",
        ));
    }
    let index = {
        let campaign = ctx.campaign()?;
        let sale = SaleItem::select(&campaign, Some(item))?.remove(0);
        section_index(&sale, section)?
    };
    let Opened {
        campaign, mut conn, ..
    } = ctx.open()?;
    let sale = SaleItem::select(&campaign, Some(item))?.remove(0);
    let Shape::Seated(layout, seating) = sale.shape() else {
        return Err(usage(format!("--map: item {item} has no seats")));
    };
    let view = seat_view::read_section(&mut conn, layout, seating, index)?;
    let report = SeatMapReport {
        item: item.to_string(),
        map: seat_view::map_lines(&view),
        section: view,
    };
    emit(ctx, &report)
}

/// The position of `section` among `sale`'s sections; a usage error naming
/// them when it has none of that id, or no seats at all.
fn section_index(sale: &SaleItem, section: &str) -> Result<usize> {
    let Shape::Seated(_, seating) = sale.shape() else {
        return Err(usage(format!(
            "--map {section}: item {} has no seats (a seat map is drawn for an item with \
             `seats:` in the campaign file)",
            sale.id()
        )));
    };
    seating
        .sections
        .iter()
        .position(|s| s.id == section)
        .ok_or_else(|| {
            let ids: Vec<&str> = seating.sections.iter().map(|s| s.id.as_str()).collect();
            usage(format!(
                "--map {section}: item {} has no section {section:?}; its sections are {}",
                sale.id(),
                ids.join(", ")
            ))
        })
}

/// Why `item` is fenced (docs/failover.md, "The fence"); `None` when it is
/// not, or when this user may not read the fence (it runs `lua/fence.lua`,
/// the operator's).
fn fenced(conn: &mut crate::redis_client::conn::Conn, item: &SaleItem) -> Option<String> {
    // A role refused INFO (the consumer) is not made to leave a refusal
    // in the ACL log: its status says nothing of the fence.
    if !crate::operator::acl::dryrun::may_send(conn, &["INFO", "server"]).unwrap_or(false) {
        return None;
    }
    let states = crate::domain::reconcile::fence::states(conn, item).ok()?;
    let state = states.into_iter().find(|s| s.is_fenced())?;
    Some(format!(
        "preheated on Redis process {}, {} holds it now",
        state.recorded_run_id, state.seen_run_id
    ))
}

/// The thresholds `--check` and `--nagios` were given.
fn thresholds(args: &Args) -> Thresholds {
    Thresholds {
        max_lag: args.max_lag.map(|n| i64::try_from(n).unwrap_or(i64::MAX)),
        reconcile_at_ms: args.reconcile_at.map(ReconcileAt::next_ms),
        grace_ms: i64::try_from(args.grace.as_millis()).unwrap_or(i64::MAX),
    }
}

/// `--nagios`: one sample checked, written as a Nagios plugin writes (always,
/// `-q` or not: the first line is what Nagios shows), exit 0–3. Anything
/// that keeps the sample from being read — Redis, the campaign file, an
/// unknown `--item` — is UNKNOWN (3), never a code Nagios reads as a state
/// of the sale.
fn nagios(ctx: &Context, args: &Args) -> Result<i32> {
    let checked = (|| -> Result<(NagiosState, String)> {
        if ctx.format != Format::Table {
            return Err(usage(
                "--nagios writes the Nagios plugin format: not with --format (use --check --format json for scripts)",
            ));
        }
        let Opened {
            campaign, mut conn, ..
        } = ctx.open()?;
        let items = SaleItem::select(&campaign, args.item.as_deref())?;
        let statuses = StatusReader::default().read_items(&mut conn, &items)?;
        let thresholds = thresholds(args);
        let problems = check::problems(&statuses, &thresholds);
        Ok((
            check::nagios_state(&problems),
            check::nagios_text(&campaign.id, &statuses, &problems, &thresholds),
        ))
    })();
    let (code, text) = checked.unwrap_or_else(|error| {
        (
            NagiosState::Unknown,
            format!(
                "SECKILL UNKNOWN - cannot check: {}\n",
                crate::util::error_text::render(&error).replace(['\n', '|'], " ")
            ),
        )
    });
    output::write_stdout(&text)?;
    Ok(code as i32)
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
                    output::warn(format!(
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
    if in_place {
        // The view ends without a newline (so it never scrolls): what the
        // shell prints next starts on a line of its own.
        output::write_stdout("\n")?;
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

/// The view that fits the terminal: the full one, or the compact one.
fn fitted(report: &StatusReport) -> Vec<String> {
    let (rows, columns) = terminal();
    let full: Vec<String> = frame(report).lines().map(str::to_string).collect();
    if full.len() <= usize::from(rows) {
        return full;
    }
    compact(report, usize::from(rows), columns)
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

/// The columns of the compact view, after the item id; NAME is last.
const COMPACT_HEADER: [&str; 8] = [
    "LEFT", "RATE", "WINDOW", "SW", "LAG", "PEND", "RESV", "ROOM",
];

/// The compact view, `rows` × `columns`: the heading, then a table of one
/// row per item under a header (like `kubectl get -w`) — ITEM, units LEFT of
/// the initial stock, sales RATE, WINDOW, kill switch (SW), LAG, PENDing,
/// units RESerVed and unpaid, the ROOM's admitted/joined, and NAME — then,
/// in the rows left, a note per thing that needs a person. Only the name is
/// cut to make the table fit (then the id); every figure is shown whole.
fn compact(report: &StatusReport, rows: usize, columns: u16) -> Vec<String> {
    let mut lines = vec![output::truncate(
        &format!("{} · {} items", report.heading(), report.items.len()),
        columns,
    )];
    // The heading, the header, and a line for "… more" when items are left out.
    let room = rows.saturating_sub(2);
    let shown = if report.items.len() > room {
        room.saturating_sub(1)
    } else {
        report.items.len()
    };
    let cells: Vec<Vec<String>> = report.items[..shown].iter().map(compact_row).collect();
    lines.extend(compact_table(&report.items[..shown], cells, columns));
    if shown < report.items.len() {
        lines.push(output::truncate(
            &format!(
                "… {} more item(s): --item ID shows one, a taller terminal shows more",
                report.items.len() - shown
            ),
            columns,
        ));
        return lines;
    }
    let notes: Vec<String> = report
        .items
        .iter()
        .flat_map(|s| notes(s, &report.campaign_file))
        .collect();
    let free = rows.saturating_sub(lines.len());
    if notes.len() <= free {
        lines.extend(notes.iter().map(|n| output::truncate(n, columns)));
    } else if free > 0 {
        lines.extend(
            notes[..free - 1]
                .iter()
                .map(|n| output::truncate(n, columns)),
        );
        lines.push(output::truncate(
            &format!(
                "… {} more note(s): `seckill status --item ID` shows an item in full",
                notes.len() - (free - 1)
            ),
            columns,
        ));
    }
    lines
}

/// The header and the rows, columns padded to their widest cell, two
/// spaces apart, cut to `columns`: the NAME column shrinks first (down to
/// nothing), then ITEM; the figures never.
fn compact_table(items: &[ItemStatus], cells: Vec<Vec<String>>, columns: u16) -> Vec<String> {
    const GAP: usize = 2;
    let width = |text: &str| usize::from(output::display_width(text));
    let widest = |header: &str, column: &dyn Fn(usize) -> String| -> usize {
        (0..items.len())
            .map(|i| width(&column(i)))
            .max()
            .unwrap_or(0)
            .max(width(header))
    };
    let mut id_width = widest("ITEM", &|i| items[i].item.clone());
    let figure_widths: Vec<usize> = COMPACT_HEADER
        .iter()
        .enumerate()
        .map(|(c, header)| widest(header, &|i| cells[i][c].clone()))
        .collect();
    let figures: usize = figure_widths.iter().map(|w| w + GAP).sum();
    let name_full = widest("NAME", &|i| items[i].name.clone());
    let columns = usize::from(columns);
    let mut name_width = columns
        .saturating_sub(id_width + figures + GAP)
        .min(name_full);
    if name_width < width("NAME") {
        name_width = 0;
        id_width = id_width.min(columns.saturating_sub(figures).max(width("ITEM")));
    }
    let pad = |text: &str, to: usize| -> String {
        let text = output::truncate(text, u16::try_from(to).unwrap_or(u16::MAX));
        let fill = to.saturating_sub(width(&text));
        format!("{text}{}", " ".repeat(fill))
    };
    let line = |id: &str, figures: &[String], name: &str| -> String {
        let mut out = pad(id, id_width);
        for (text, w) in figures.iter().zip(&figure_widths) {
            out.push_str(&" ".repeat(GAP));
            // Figures read right-aligned, like every table of numbers.
            out.push_str(&format!(
                "{}{text}",
                " ".repeat(w.saturating_sub(width(text)))
            ));
        }
        if name_width > 0 {
            out.push_str(&" ".repeat(GAP));
            out.push_str(&pad(name, name_width));
        }
        output::truncate(out.trim_end(), u16::try_from(columns).unwrap_or(u16::MAX))
    };
    let header: Vec<String> = COMPACT_HEADER.iter().map(|h| h.to_string()).collect();
    let mut lines = vec![line("ITEM", &header, "NAME")];
    for (s, row) in items.iter().zip(&cells) {
        lines.push(line(&s.item, row, &s.name));
    }
    lines
}

/// One item's cells under [`COMPACT_HEADER`].
fn compact_row(s: &ItemStatus) -> Vec<String> {
    let dash = || "-".to_string();
    let left = match (s.stock_left, s.initial_stock) {
        (Some(left), Some(initial)) => format!("{}/{}", count(left), count(initial)),
        _ => dash(),
    };
    let rate = match s.rate_per_s {
        Some(rate) if rate >= 100.0 => format!("{rate:.0}/s"),
        Some(rate) => format!("{rate:.1}/s"),
        None => dash(),
    };
    let window = match s.window.state {
        WindowState::NotPreheated => dash(),
        WindowState::NotStarted => {
            format!("in {}", short_duration(s.window.opens_in_ms.unwrap_or(0)))
        }
        WindowState::Open => match s.window.closes_in_ms {
            Some(ms) => format!("open {}", short_duration(ms)),
            None => "open".to_string(),
        },
        WindowState::Ended => format!(
            "ended {}",
            short_duration(s.window.ended_ms_ago.unwrap_or(0))
        ),
    };
    let reserved = match s.overdue {
        None => dash(),
        Some(overdue) if overdue.orders > 0 => format!("{}!", count(s.reservations.reserved_units)),
        Some(_) => count(s.reservations.reserved_units),
    };
    let room = match &s.room {
        None => dash(),
        Some(room) if room.paused => format!("{}/{} P", count(room.serving), count(room.joined)),
        Some(room) => format!("{}/{}", count(room.serving), count(room.joined)),
    };
    vec![
        left,
        rate,
        window,
        if s.kill_switch.on { "ON" } else { "off" }.to_string(),
        s.stream.lag.map_or_else(|| "?".to_string(), count),
        count(s.stream.pending),
        reserved,
        room,
    ]
}

/// What needs a person about `s`, one line each, for under the compact table.
fn notes(s: &ItemStatus, campaign_file: &str) -> Vec<String> {
    let id = &s.item;
    let mut notes = Vec::new();
    if !s.preheated {
        notes.push(format!(
            "{id}: not preheated: `seckill -c {campaign_file} preheat`"
        ));
        return notes;
    }
    if let Some(why) = &s.fenced {
        notes.push(format!(
            "{id}: FENCED ({why}): every buy answers `fenced` until `seckill -c \
             {campaign_file} reconcile --fence`"
        ));
    }
    if s.kill_switch.on {
        let mut text = format!("{id}: kill switch ON");
        if let Some(by) = &s.kill_switch.switched_by {
            text.push_str(&format!(" by {by}"));
        }
        if let Some(reason) = &s.kill_switch.reason {
            text.push_str(&format!(": \"{reason}\""));
        }
        notes.push(text);
    }
    if let Some(overdue) = s.overdue
        && let Some(oldest) = overdue.oldest_ms
    {
        notes.push(format!(
            "{id}: {} reservation(s) overdue (RESV !), the oldest by {}: is `expire --loop` running?",
            overdue.orders,
            human_duration_ms(oldest)
        ));
    }
    if s.dead_letter > 0 {
        notes.push(format!(
            "{id}: {} dead-lettered: `seckill dead-letter list`",
            s.dead_letter
        ));
    }
    if s.stream.group_exists && s.stream.lag.unwrap_or(0) > 0 && s.consumers.is_empty() {
        notes.push(format!(
            "{id}: orders wait and the group has no consumer: start `seckill consume`"
        ));
    }
    if let Some(room) = &s.room {
        if room.paused {
            notes.push(format!(
                "{id}: waiting room PAUSED (ROOM … P): `seckill queue resume`"
            ));
        }
        match &room.admitter_behind {
            Some(why) => notes.push(format!("{id}: {why}")),
            None if !room.needs_admitter.is_empty() => notes.push(format!(
                "{id}: its room needs `seckill queue admit --loop` ({})",
                room.needs_admitter.join(", ")
            )),
            None => {}
        }
    }
    if s.carried_over.units > 0 {
        notes.push(format!(
            "{id}: {} unit(s) carried over by preheat --recover (in LEFT's total)",
            s.carried_over.units
        ));
    }
    notes
}

/// A count in at most six columns: 12345, 123k, 12.3M.
fn count(n: i64) -> String {
    match n.abs() {
        0..100_000 => n.to_string(),
        100_000..1_000_000 => format!("{}k", n / 1000),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

/// A duration in a few columns: 850ms → 0s, 41s, 12m, 2h13m, 3d4h.
fn short_duration(ms: i64) -> String {
    let secs = ms.max(0) / 1000;
    match (secs / 86_400, secs / 3600 % 24, secs / 60 % 60) {
        (0, 0, 0) => format!("{secs}s"),
        (0, 0, m) => format!("{m}m"),
        (0, h, m) => format!("{h}h{m}m"),
        (d, h, _) => format!("{d}d{h}h"),
    }
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
            if s.carried_over.units > 0 {
                line(
                    "carried",
                    format!(
                        "{} of them: {} order{} stored before Redis lost its data, carried over \
                         by preheat --recover (not loaded again)",
                        s.carried_over.units,
                        s.carried_over.orders,
                        if s.carried_over.orders == 1 { "" } else { "s" }
                    ),
                );
            }
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
                "{} reserved ({}) · {} paid ({}) · {} released ({}): {} expired, {} cancelled",
                r.reserved_orders,
                crate::util::text::counted(r.reserved_units, "unit"),
                r.paid_orders,
                r.paid_units,
                r.released_orders(),
                r.released_units(),
                r.expired_orders,
                r.cancelled_orders
            ),
        );
    }
    if let Some(overdue) = s.overdue
        && let Some(oldest) = overdue.oldest_ms
    {
        line(
            "overdue",
            format!(
                "{} reservation{} past the payment deadline, the oldest by {}: nothing released \
                 them — is `seckill expire --loop` running?",
                overdue.orders,
                if overdue.orders == 1 { "" } else { "s" },
                human_duration_ms(oldest)
            ),
        );
    }
    line("window", s.window.describe());
    if let Some(room) = &s.room {
        line("room", room.describe());
        if let Some(admitter) = room.describe_admitter() {
            line("admitter", admitter);
        }
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
    if let Some(why) = &s.fenced {
        line(
            "fence",
            format!(
                "FENCED — every buy answers `fenced` ({why}); run `seckill -c {campaign_file} \
                 reconcile --fence`"
            ),
        );
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
    // A seat item's slots are its sections: their seats say more than
    // bucket rows would (the stock of each is its free seats).
    let buckets = if s.sections.is_empty() {
        &s.slots[..]
    } else {
        &[][..]
    };
    for (b, part) in buckets.iter().enumerate() {
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
    for (i, row) in section_rows(s).into_iter().enumerate() {
        line(if i == 0 { "seats" } else { "" }, row);
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

/// A seat item's sections as a table under the `seats` label: a header,
/// then one row per section (seats by state, figures right-aligned), a
/// corrupt or unloaded section's problem after its row, and where the map is.
fn section_rows(s: &ItemStatus) -> Vec<String> {
    if s.sections.is_empty() {
        return Vec::new();
    }
    let header = [
        "SECTION", "TIER", "FREE", "HELD", "SOLD", "BLOCKED", "SEATS",
    ];
    let cells: Vec<[String; 7]> = s
        .sections
        .iter()
        .map(|c| {
            [
                c.section.clone(),
                c.tier.clone(),
                c.free.to_string(),
                c.held.to_string(),
                c.sold.to_string(),
                c.blocked.to_string(),
                c.seats.to_string(),
            ]
        })
        .collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|k| {
            cells
                .iter()
                .map(|row| output::display_width(&row[k]) as usize)
                .chain([header[k].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |row: &[String]| -> String {
        let text: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(k, (cell, width))| {
                let fill = " ".repeat(width.saturating_sub(output::display_width(cell) as usize));
                // Names read left-aligned, figures right-aligned.
                if k < 2 {
                    format!("{cell}{fill}")
                } else {
                    format!("{fill}{cell}")
                }
            })
            .collect();
        text.join("  ").trim_end().to_string()
    };
    let mut lines = vec![line(&header.map(str::to_string))];
    for (c, row) in s.sections.iter().zip(&cells) {
        lines.push(line(row));
        if let Some(problem) = &c.problem {
            lines.push(format!("  section {}: {problem}", c.section));
        }
    }
    lines.push(format!(
        "map: seckill status --item {} --map {}",
        s.item, s.sections[0].section
    ));
    lines
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
    text::seconds_or_dash(ms)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operator::monitor::status::{StreamStatus, Switch, Window};

    fn item(id: &str, name: &str, left: i64) -> ItemStatus {
        ItemStatus {
            item: id.to_string(),
            name: name.to_string(),
            redis_time_ms: 0,
            preheated: true,
            initial_stock: Some(1_000_000),
            stock_left: Some(left),
            sold: Some(1_000_000 - left),
            carried_over: Default::default(),
            buyers: 0,
            rate_per_s: Some(1234.5),
            rate_interval_ms: 1000,
            window: Window {
                state: WindowState::Open,
                starts_at_ms: None,
                ends_at_ms: Some(3_600_000),
                opens_in_ms: None,
                closes_in_ms: Some(2 * 3_600_000 + 13 * 60_000),
                ended_ms_ago: None,
            },
            kill_switch: Switch::default(),
            stream: StreamStatus {
                lag: Some(123_456),
                ..StreamStatus::default()
            },
            dead_letter: 0,
            consumers: Vec::new(),
            expires_in_ms: None,
            reservations: Totals::default(),
            overdue: None,
            slots: Vec::new(),
            room: None,
            fenced: None,
            sections: Vec::new(),
        }
    }

    /// (start, end) columns of each word of a header line.
    fn columns_of(header: &str) -> Vec<(usize, usize)> {
        let mut spans = Vec::new();
        let mut start = None;
        for (i, c) in header.char_indices().chain([(header.len(), ' ')]) {
            match (c == ' ', start) {
                (false, None) => start = Some(i),
                (true, Some(s)) => {
                    spans.push((s, i));
                    start = None;
                }
                _ => {}
            }
        }
        spans
    }

    #[test]
    fn the_compact_table_cuts_the_name_first_then_the_id_and_never_a_figure() {
        let items = [
            item("sku-1", "A long name that will not fit", 999_999),
            item("a-very-long-item-id", "Short", 12),
        ];
        let cells: Vec<Vec<String>> = items.iter().map(compact_row).collect();
        assert_eq!(
            cells[0],
            [
                "999k/1.0M",
                "1234/s",
                "open 2h13m",
                "off",
                "123k",
                "0",
                "-",
                "-"
            ]
        );
        // Wide: everything whole.
        let wide = compact_table(&items, cells.clone(), 200);
        assert!(
            wide[1].ends_with("A long name that will not fit"),
            "{wide:?}"
        );
        // 100 columns: the name is cut, the id and the figures are whole.
        let cut = compact_table(&items, cells.clone(), 100);
        assert!(
            cut.iter().all(|l| output::display_width(l) <= 100),
            "{cut:?}"
        );
        assert!(cut[1].ends_with("A long name that w…"), "{cut:?}");
        assert!(cut[2].starts_with("a-very-long-item-id "), "{cut:?}");
        // 80: no room for a name, so no NAME column; the id is whole.
        let narrow = compact_table(&items, cells.clone(), 80);
        assert!(!narrow[0].contains("NAME"), "{narrow:?}");
        assert!(narrow[2].starts_with("a-very-long-item-id "), "{narrow:?}");
        // Narrower still: the id is cut; the figures stay whole and
        // right-aligned under their headers.
        let tight = compact_table(&items, cells.clone(), 70);
        assert!(
            tight.iter().all(|l| output::display_width(l) <= 70),
            "{tight:?}"
        );
        assert!(tight[2].starts_with("a-very-lo… "), "{tight:?}");
        let header = columns_of(&tight[0]);
        for (line, row) in tight[1..].iter().zip(&cells) {
            let line: Vec<char> = line.chars().collect();
            for ((_, end), cell) in header[1..].iter().zip(row) {
                let shown: String = line[end - cell.len()..*end].iter().collect();
                assert_eq!(&shown, cell, "{tight:?}");
            }
        }
    }

    #[test]
    fn counts_and_durations_stay_short() {
        assert_eq!(count(99_999), "99999");
        assert_eq!(count(100_000), "100k");
        assert_eq!(count(12_345_678), "12.3M");
        assert_eq!(short_duration(850), "0s");
        assert_eq!(short_duration(41_000), "41s");
        assert_eq!(short_duration(12 * 60_000 + 5_000), "12m");
        assert_eq!(short_duration((2 * 3600 + 13 * 60) * 1000), "2h13m");
        assert_eq!(short_duration((3 * 86_400 + 4 * 3600) * 1000), "3d4h");
    }
}
