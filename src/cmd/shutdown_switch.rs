//! `seckill shutdown-switch`: the kill switch. The buy script reads it on
//! every call, so `on` refuses the very next attempt with `closed`. Each flip
//! records who (`--by`, `SECKILL_OPERATOR`, else the OS account) and is kept
//! in a capped history per item (`status --history`).

use anyhow::Result;
use serde::Serialize;

use crate::domain::item::{SaleItem, SlotsView};
use crate::domain::kill_switch::{self, Flip, HISTORY_CAP};
use crate::domain::registry;
use crate::domain::slot;
use crate::invocation::context::{Context, Opened};
use crate::invocation::notify::Event;
use crate::invocation::report::Report;
use crate::model::error::usage;
use crate::operator::monitor::status::{StatusReader, Window};
use crate::util::output;
use crate::util::text;

/// What to do with the switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Action {
    /// Close the sale: every buy returns `closed` from its next call; the item's waiting room pauses (nobody new is admitted).
    On,
    /// Reopen the sale (and let its waiting room go, unless `queue pause` holds it).
    Off,
    /// Show switch state, sale window, when, why and by whom it was set, and stock left, per item.
    Status,
}

/// Flags of `seckill shutdown-switch`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "A bucketed item (docs/buckets.md) is closed in every bucket before `on` returns; \
a bucket that cannot be written fails the command, naming it."
)]
pub(crate) struct Args {
    /// on, off or status.
    #[arg(value_enum)]
    pub(crate) action: Action,

    /// Only this item (default: every item of the campaign).
    #[arg(long, value_name = "ID")]
    pub(crate) item: Option<String>,

    /// Why (kept with the switch, shown by status).
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub(crate) reason: String,

    /// Also show each bucket of a bucketed item (switch, slot, stock, pending transfers).
    #[arg(long)]
    pub(crate) buckets: bool,

    /// Who flips the switch, kept with it [default: the OS account, as user@host].
    #[arg(long, value_name = "NAME", env = "SECKILL_OPERATOR")]
    pub(crate) by: Option<String>,

    /// With `status`: also list the last flips of each item (newest first; the last
    /// 1000 are kept).
    #[arg(long)]
    pub(crate) history: bool,

    /// With --history: list this many flips per item.
    #[arg(long, value_name = "N", default_value_t = 20, requires = "history",
          value_parser = clap::value_parser!(u32).range(1..=i64::from(HISTORY_CAP)))]
    pub(crate) limit: u32,

    /// With --history: leave out the N newest flips (the next page: --skip 20).
    #[arg(long, value_name = "N", default_value_t = 0, requires = "history",
          value_parser = clap::value_parser!(u32).range(0..i64::from(HISTORY_CAP)))]
    pub(crate) skip: u32,

    /// With `on` or `off`: show what would change, write nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
}

/// `seckill shutdown-switch`'s report: the switch of each item after the action.
#[derive(Debug, Serialize)]
pub(crate) struct SwitchReport {
    /// One entry per selected item.
    pub(crate) items: Vec<SwitchRow>,
    /// `--dry-run`: nothing was written; `items` is the switch as it stands.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) dry_run: bool,
    /// `--dry-run`: the items `on`/`off` would flip.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) would_flip: Vec<String>,
    #[serde(skip)]
    campaign: String,
    /// `--skip`, for the history's heading.
    #[serde(skip)]
    history_skip: u32,
}

/// One item's switch.
#[derive(Debug, Serialize)]
pub(crate) struct SwitchRow {
    /// The item id.
    pub(crate) item: String,
    /// How the item's slots stand (a bucketed item's buckets, docs/buckets.md).
    #[serde(flatten)]
    pub(crate) slots: SlotsView,
    /// The switch is on: every buy returns `closed` (in every bucket).
    pub(crate) closed: bool,
    /// The item's stock is in Redis.
    pub(crate) preheated: bool,
    /// The sale window on the Redis clock (`state`: not_preheated, not_started,
    /// open, ended): whether buys go through depends on it as much as on the switch.
    pub(crate) window: Window,
    /// Units left; null when not preheated.
    pub(crate) stock_left: Option<i64>,
    /// `--reason` of the last switch, if any.
    pub(crate) reason: Option<String>,
    /// When the switch was last set, RFC 3339.
    pub(crate) switched_at: Option<String>,
    /// Who set it (`--by`, `SECKILL_OPERATOR`, else `user@host`).
    pub(crate) switched_by: Option<String>,
    /// The last flips, newest first (`--history` only; of bucket 0 for a
    /// bucketed item: every flip goes to every bucket): `--limit` of them
    /// after the `--skip` newest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) history: Option<Vec<Flip>>,
    /// `--history`: how many flips are kept for the item in all (at most 1000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) history_kept: Option<u64>,
    /// `on`/`off` of an item whose switch already stood that way: what it
    /// said before this flip replaced its reason and who (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) already: Option<Already>,
}

/// The switch as it stood before a flip that found it already so.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Already {
    pub(crate) since: Option<String>,
    pub(crate) by: Option<String>,
    pub(crate) reason: Option<String>,
}

/// `flips 21–40 of 57 of item 1, newest first; the next: --skip 40`.
fn history_heading(item: &str, shown: usize, skip: u32, kept: u64) -> String {
    let (first, last) = (u64::from(skip) + 1, u64::from(skip) + shown as u64);
    let mut heading = match shown {
        0 => format!("no flip of item {item} after the {skip} newest ({kept} kept)"),
        _ => format!("flips {first}–{last} of {kept} of item {item}, newest first"),
    };
    if last < kept {
        heading.push_str(&format!("; the next: --skip {last}"));
    }
    heading.push('\n');
    heading
}

/// RFC 3339 to the second: precise enough for people, and narrower.
fn to_seconds(at: &str) -> String {
    text::without_fraction(at)
}

impl Report for SwitchReport {
    fn render(&self) -> String {
        let mut table = output::table([
            "item",
            "switch\nsale window",
            "stock\nleft",
            "reason",
            "switched",
        ]);
        for row in &self.items {
            // Seconds are precise enough for people, and 4 columns narrower.
            let at = row.switched_at.as_deref().map(to_seconds);
            let switched = match (at, &row.switched_by) {
                (Some(at), Some(by)) => format!("{at} by {by}"),
                (Some(at), None) => at,
                _ => "-".into(),
            };
            table.add_row(vec![
                row.item.clone(),
                // "off" alone never says "open": the window under it does, on the Redis clock.
                format!(
                    "{}\n{}",
                    row.slots.switch_text(row.closed),
                    row.window.describe()
                ),
                match (row.preheated, row.stock_left) {
                    (true, Some(s)) => s.to_string(),
                    _ => "not preheated".to_string(),
                },
                row.reason.clone().unwrap_or_else(|| "-".into()),
                switched,
            ]);
            for part in row.slots.per_bucket.iter().flatten() {
                table.add_row(vec![
                    format!("  bucket {} (slot {})", part.bucket, part.slot),
                    if part.closed { "ON (closed)" } else { "off" }.to_string(),
                    match (part.preheated, part.stock_left) {
                        (true, Some(s)) => s.to_string(),
                        _ => "not preheated".to_string(),
                    },
                    // A bucket has no reason of its own; what it can add is
                    // stock on its way out (units in transit still count).
                    match part.transfers_pending {
                        0 => "-".to_string(),
                        n => format!("{n} transfers in transit"),
                    },
                    String::new(),
                ]);
            }
        }
        output::fit(&mut table, &[1, 3, 4]);
        let mut text = match self.dry_run {
            true => format!(
                "dry run, nothing written: kill switch of campaign {} as it stands; \
                 the flip would change {}\n{table}\n",
                self.campaign,
                match self.would_flip.is_empty() {
                    true => "no item".to_string(),
                    false => format!("item(s) {}", self.would_flip.join(", ")),
                }
            ),
            false => format!("kill switch of campaign {}\n{table}\n", self.campaign),
        };
        for row in &self.items {
            if let Some(already) = &row.already {
                let state = if row.closed { "ON" } else { "off" };
                let was = format!(
                    "item {} was already {state} since {} by {} (reason: {})",
                    row.item,
                    already.since.as_deref().map_or("-".into(), to_seconds),
                    already.by.as_deref().unwrap_or("-"),
                    already
                        .reason
                        .as_deref()
                        .filter(|r| !r.is_empty())
                        .unwrap_or("-"),
                );
                let now = match self.dry_run {
                    true => "; this flip would record the new reason and who".to_string(),
                    false => "; the new reason and who replace them".to_string(),
                };
                text.push_str(&output::hanging(&format!("{was}{now}"), 2));
            }
        }
        for row in &self.items {
            let Some(history) = &row.history else {
                continue;
            };
            text.push_str(&history_heading(
                &row.item,
                history.len(),
                self.history_skip,
                row.history_kept.unwrap_or_default(),
            ));
            let rows = history.iter().map(|flip| {
                vec![
                    text::seconds_or_dash(Some(flip.at_ms)),
                    if flip.closed { "ON" } else { "off" }.to_string(),
                    flip.by.clone(),
                    if flip.reason.is_empty() {
                        "-".to_string()
                    } else {
                        flip.reason.clone()
                    },
                ]
            });
            text.push_str(&output::grid(
                &["at", "switch", "by", "reason"],
                rows.collect(),
                &[2, 3],
            ));
        }
        text
    }
}

/// Flip or show the switch; the report is the per-item status afterwards.
pub(crate) fn run(ctx: &Context, args: &Args) -> Result<SwitchReport> {
    if args.history && args.action != Action::Status {
        return Err(usage("--history goes with `shutdown-switch status`"));
    }
    if args.dry_run && args.action == Action::Status {
        return Err(usage("--dry-run goes with `shutdown-switch on` or `off`"));
    }
    let by = kill_switch::operator(args.by.as_deref())?;
    let Opened {
        campaign,
        target,
        mut conn,
    } = ctx.open()?;
    let items = SaleItem::select(&campaign, args.item.as_deref())?;
    let mut already = Vec::new();
    if args.action != Action::Status {
        refuse_unless_live(&mut conn, &campaign, &items, &target.display)?;
        let closing = args.action == Action::On;
        for item in &items {
            // Only a note: a slot that cannot be read (a master down) must
            // never keep the switch from being flipped everywhere else.
            let before = item.state(&mut conn).ok();
            already.push(
                before
                    .filter(|b| b.preheated && b.closed == closing)
                    .map(|b| Already {
                        since: b.switched_at_ms.map(|ms| text::time_or_dash(Some(ms))),
                        by: b.switched_by,
                        reason: b.switch_reason,
                    }),
            );
        }
        if !args.dry_run {
            let flip = Flip {
                closed: closing,
                reason: args.reason.clone(),
                by,
                at_ms: slot::redis_now_ms(&mut conn)?,
            };
            for item in &items {
                item.set_switch(&mut conn, &flip, campaign.expire_at_ms())?;
            }
            ctx.notifier().send(flip_event(
                &campaign.id,
                args.item.as_deref(),
                &items,
                &flip,
            ));
        }
    }
    let mut rows = Vec::new();
    let mut reader = StatusReader::default();
    let mut already = already.into_iter();
    for item in &items {
        let window = reader.read_item(&mut conn, item)?.window;
        let (history, history_kept) = match args.history {
            true => {
                let page = item.switch_history(&mut conn, args.skip, args.limit)?;
                (Some(page.flips), Some(page.kept))
            }
            false => (None, None),
        };
        let slots = item.slots_view(&mut conn, args.buckets)?;
        let s = item.state(&mut conn)?;
        rows.push(SwitchRow {
            item: item.id().to_string(),
            slots,
            closed: s.closed,
            preheated: s.preheated,
            window,
            stock_left: s.stock,
            reason: s.switch_reason,
            switched_at: s.switched_at_ms.map(|ms| text::time_or_dash(Some(ms))),
            switched_by: s.switched_by,
            history,
            history_kept,
            already: already.next().flatten(),
        });
    }
    let would_flip = match (args.dry_run, args.action) {
        (true, Action::On | Action::Off) => rows
            .iter()
            .filter(|r| r.preheated && r.closed != (args.action == Action::On))
            .map(|r| r.item.clone())
            .collect(),
        _ => Vec::new(),
    };
    Ok(SwitchReport {
        items: rows,
        dry_run: args.dry_run,
        would_flip,
        campaign: campaign.id.clone(),
        history_skip: args.skip,
    })
}

/// `--notify`'s event for a flip written to every selected item.
fn flip_event(campaign: &str, item: Option<&str>, items: &[SaleItem], flip: &Flip) -> Event {
    let switch = if flip.closed { "on" } else { "off" };
    let ids: Vec<&str> = items.iter().map(SaleItem::id).collect();
    let scope = match item {
        Some(item) => format!("item {item}"),
        None => format!("every item ({})", ids.join(", ")),
    };
    let effect = match flip.closed {
        true => "buys are refused",
        false => "buys go through again",
    };
    let reason = match flip.reason.as_str() {
        "" => String::new(),
        reason => format!(": {reason}"),
    };
    Event::new(
        "kill_switch",
        campaign,
        item,
        serde_json::json!({
            "switch": switch,
            "by": flip.by,
            "reason": flip.reason,
            "scope": if item.is_some() { "item" } else { "campaign" },
            "items": ids,
            "at_ms": flip.at_ms,
        }),
        format!(
            "Kill switch {} for campaign {campaign}, {scope}, by {}{reason}; {effect}.",
            switch.to_uppercase(),
            flip.by
        ),
    )
}

/// Flip only a sale that is live on this Redis: a wrong campaign file (a
/// sale never preheated here) must not print `ON (closed)` and exit 0 while
/// the real sale keeps selling, nor leave keys behind. Live: recorded by
/// preheat in the registry, or (sales preheated before the registry) an item
/// whose stock is in Redis.
fn refuse_unless_live(
    conn: &mut crate::redis_client::conn::Conn,
    campaign: &crate::model::campaign::Campaign,
    items: &[SaleItem],
    at: &str,
) -> Result<()> {
    let now = slot::redis_now_ms(conn)?;
    if registry::find(conn, &campaign.id, now)?.is_some() {
        return Ok(());
    }
    for item in items {
        if item.state(conn)?.preheated {
            return Ok(());
        }
    }
    let live = registry::live(conn, now)?;
    Err(usage(format!(
        "campaign {} is not live on Redis at {at} (never preheated there, or its keys expired): \
         nothing was switched. Live there: {}. Check the campaign file (-c) and the Redis URL",
        campaign.id,
        registry::describe(&live)
    )))
}
