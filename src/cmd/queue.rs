//! `seckill queue join|position|status|pause|resume|admit|shuffle|penalize`:
//! an item's waiting room (docs/waiting-room.md). Shoppers join and read
//! their position (what the shop's queue page shows); operators read the
//! room, pause and resume it, run what a room needs beside the sale
//! (max_active's admitter, the pre-queue's shuffle, a bucketed item's
//! fan-out) and keep the risk list. The work is `domain::waiting_room`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Result;
use serde::Serialize;

use crate::domain::item::SaleItem;
use crate::domain::operation::check_id;
use crate::domain::operation::queue::{Join, Position};
use crate::domain::waiting_room::admit::{Pass, Shuffled, Verified};
use crate::domain::waiting_room::ticket::{Issued, RoomSecret, TicketFigures};
use crate::domain::waiting_room::{
    Clock, ClockChange, JoinOutcome, Penalty, Room, RoomFigures, Standing, State,
};
use crate::http::service::{self, parse_listen};
use crate::invocation::context::{Context, Opened};
use crate::invocation::failure;
use crate::invocation::report::Report;
use crate::model::campaign::Campaign;
use crate::model::error::usage;
use crate::model::exit_codes;
use crate::redis_client::conn::{Conn, RedisTarget, parse_duration_arg};
use crate::redis_client::failure as redis_failure;
use crate::util::retry::{Reconnecting, parse_interval_arg, sleep_unless_stopped};
use crate::util::text::{human_duration_ms, time_or_dash};
use crate::util::{error_text, log, output};

/// Flags of `seckill queue`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    pub(crate) action: Action,
}

/// What to do with the waiting room.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Action {
    /// Join the item's room (a repeat join returns the same position); exit code: the first refused join's outcome.
    Join(Users),
    /// Where users stand: position, serving position, wait; exit code: the first user's refusal a buy would get.
    Position(Users),
    /// The room of each item: joined, admitted, active, rate, pauses, the wait at the tail, the pre-queue and its seed.
    Status(Items),
    /// Pause the room: nobody not admitted yet is admitted until the resume (rate mode: the clock stops). The kill switch pauses it too.
    Pause(Items),
    /// Resume a room you paused (one the kill switch holds resumes with `shutdown-switch off`).
    Resume(Items),
    /// What a room needs beside the sale: max_active's admitter, the pre-queue's shuffle at the start, a bucketed item's fan-out; once, or --loop (a service: it waits out Redis stalls, and each pass leaves a heartbeat the buy and preheat read).
    Admit(AdmitArgs),
    /// Shuffle the pre-queue once starts_at has passed (Redis clock), or --verify a shuffle from its revealed seed.
    Shuffle(ShuffleArgs),
    /// The risk list: delay a user's admission, block a user for good, or clear the entry.
    Penalize(PenalizeArgs),
    /// A ticket room: revoke a signing key by its id (each serve instance signs with its own,
    /// logged at its start): every ticket it signed is refused from then on.
    RevokeKey(RevokeArgs),
}

/// Flags of `seckill queue revoke-key`.
#[derive(Debug, clap::Args)]
pub(crate) struct RevokeArgs {
    #[command(flatten)]
    pub(crate) items: Items,

    /// The key id (a ticket's `k`; serve logs its own at the start).
    #[arg(long, value_name = "ID")]
    pub(crate) key_id: String,
}

/// An item and users.
#[derive(Debug, clap::Args)]
pub(crate) struct Users {
    /// The item (an `id` from the campaign's `items`, with a waiting room).
    #[arg(long, value_name = "ID")]
    pub(crate) item: String,

    /// A shopper's user id (repeat the flag for several).
    #[arg(long = "user", value_name = "UID", required = true)]
    pub(crate) users: Vec<String>,

    /// A ticket room: the file holding the campaign's secret (as `serve
    /// --room-key-file`); `queue join` then prints each user's signed ticket.
    #[arg(long, value_name = "FILE", env = "SECKILL_ROOM_KEY_FILE")]
    pub(crate) room_key_file: Option<std::path::PathBuf>,
}

/// Which items.
#[derive(Debug, clap::Args)]
pub(crate) struct Items {
    /// Only this item (default: every item with a waiting room).
    #[arg(long, value_name = "ID")]
    pub(crate) item: Option<String>,
}

/// Flags of `seckill queue admit`.
#[derive(Debug, clap::Args)]
pub(crate) struct AdmitArgs {
    #[command(flatten)]
    pub(crate) items: Items,

    /// Keep running: a pass every --interval until SIGINT/SIGTERM.
    #[arg(long = "loop")]
    pub(crate) repeat: bool,

    /// Pause between passes with --loop (at least 100ms).
    #[arg(long, default_value = "100ms", value_parser = parse_interval_arg, value_name = "DURATION")]
    pub(crate) interval: Duration,

    /// With --loop: serve http://ADDR/metrics and /healthz (200 while Redis answers);
    /// :PORT for every interface, or HOST:PORT.
    #[arg(long, value_name = "ADDR", value_parser = parse_listen, requires = "repeat")]
    pub(crate) metrics_listen: Option<SocketAddr>,

    /// Positions per script call (bounds how long Redis is busy per call).
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..=10_000), value_name = "N")]
    pub(crate) batch: u64,
}

/// Flags of `seckill queue shuffle`.
#[derive(Debug, clap::Args)]
pub(crate) struct ShuffleArgs {
    #[command(flatten)]
    pub(crate) items: Items,

    /// Wait until starts_at (Redis clock) instead of answering not_started.
    #[arg(long, conflicts_with = "verify")]
    pub(crate) wait: bool,

    /// Re-run the shuffle from the revealed seed and compare every position with Redis's.
    #[arg(long)]
    pub(crate) verify: bool,
}

/// Flags of `seckill queue penalize`.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("penalty").required(true).args(["delay", "block", "clear"])))]
pub(crate) struct PenalizeArgs {
    /// The item.
    #[arg(long, value_name = "ID")]
    pub(crate) item: String,

    /// The user.
    #[arg(long, value_name = "UID")]
    pub(crate) user: String,

    /// Admit the user this much later than its turn (e.g. 2s).
    #[arg(long, value_parser = parse_duration_arg, value_name = "DURATION")]
    pub(crate) delay: Option<Duration>,

    /// Never admit the user (an admission already granted is taken back); the
    /// user still sees `not_admitted`, like anyone at the tail.
    #[arg(long)]
    pub(crate) block: bool,

    /// Take the user off the risk list.
    #[arg(long)]
    pub(crate) clear: bool,
}

/// The item's room, or a usage error saying how to turn one on.
fn room_of(campaign: &Campaign, item: &str) -> Result<Room> {
    let sale = SaleItem::live(campaign, campaign.item(item)?);
    sale.into_room().ok_or_else(|| {
        usage(format!(
            "item {item} of {} has no waiting room: give it (or the campaign) a `waiting_room:` \
             and preheat (docs/waiting-room.md)",
            campaign.path.display()
        ))
    })
}

/// The rooms of `--item`, or of every item that has one.
fn rooms(campaign: &Campaign, item: Option<&str>) -> Result<Vec<Room>> {
    if let Some(item) = item {
        return Ok(vec![room_of(campaign, item)?]);
    }
    let rooms: Vec<Room> = SaleItem::select(campaign, None)?
        .into_iter()
        .filter_map(SaleItem::into_room)
        .collect();
    if rooms.is_empty() {
        return Err(usage(format!(
            "no item of {} has a waiting room: add `waiting_room:` (docs/waiting-room.md)",
            campaign.path.display()
        )));
    }
    Ok(rooms)
}

/// Run `seckill queue ...`.
pub(crate) fn run(ctx: &Context, args: &Args) -> Result<QueueReport> {
    if let Action::Join(users) | Action::Position(users) = &args.action {
        for user in &users.users {
            check_id("user", user, true).map_err(|f| failure::say(f, "the request"))?;
        }
    }
    let Opened {
        campaign,
        target,
        mut conn,
    } = ctx.open()?;
    let at = &target.display;
    let report = match &args.action {
        Action::Join(users) if room_of(&campaign, &users.item)?.settings.is_ticket() => {
            join_tickets(&mut conn, &campaign, users)?
        }
        Action::Join(users) => join(&mut conn, &campaign, at, users)?,
        Action::Position(users) if room_of(&campaign, &users.item)?.settings.is_ticket() => {
            return Err(usage(format!(
                "item {} has a ticket room: a shopper's standing is read with the ticket, from \
                 the door (GET /v1/items/{}/queue/USER with Seckill-Ticket); `seckill queue \
                 status` shows the room",
                users.item, users.item
            )));
        }
        Action::Position(users) => position(&mut conn, &campaign, at, users)?,
        Action::RevokeKey(revoke) => {
            let mut revoked = Vec::new();
            for room in rooms(&campaign, revoke.items.item.as_deref())?
                .into_iter()
                .filter(|r| r.settings.is_ticket())
            {
                let (status, list) = room.revoke_key(&mut conn, &revoke.key_id)?;
                revoked.push(RevokedRow {
                    item: room.item.clone(),
                    status,
                    revoked_keys: list.split_whitespace().map(str::to_string).collect(),
                });
            }
            if revoked.is_empty() {
                return Err(usage(
                    "no item of this campaign has a ticket room (mode: ticket)",
                ));
            }
            QueueReport::Revoked {
                key_id: revoke.key_id.clone(),
                rooms: revoked,
            }
        }
        Action::Status(items) => status(&mut conn, &rooms(&campaign, items.item.as_deref())?)?,
        Action::Pause(items) | Action::Resume(items) => {
            let change = match args.action {
                Action::Pause(_) => Clock::Pause,
                _ => Clock::Resume,
            };
            let mut changes = Vec::new();
            for room in rooms(&campaign, items.item.as_deref())? {
                changes.push(ClockRow {
                    item: room.item.clone(),
                    change: room.clock(&mut conn, change)?,
                });
            }
            QueueReport::Clock { changes }
        }
        Action::Admit(admit) => run_admit(ctx, conn, &target, &campaign, admit)?,
        Action::Shuffle(shuffle) => run_shuffle(&mut conn, &campaign, shuffle)?,
        Action::Penalize(p) => {
            check_id("user", &p.user, true).map_err(|f| failure::say(f, "the request"))?;
            let penalty = match (p.delay, p.block) {
                (Some(delay), _) => Penalty::Delay(delay.as_millis().max(1) as u64),
                (None, true) => Penalty::Block,
                _ => Penalty::Clear,
            };
            let room = room_of(&campaign, &p.item)?;
            let (status, previous) = room.penalize(&mut conn, &p.user, penalty)?;
            QueueReport::Penalized {
                item: room.item,
                user: p.user.clone(),
                status,
                previous: (!previous.is_empty()).then_some(previous),
            }
        }
    };
    Ok(report)
}

/// One user's join.
#[derive(Debug, Serialize)]
pub(crate) struct JoinRow {
    pub(crate) user: String,
    /// `joined`, `queued` (a repeat: the same position), or a refusal.
    pub(crate) outcome: JoinOutcome,
    /// Where the user stands now.
    pub(crate) standing: Option<Standing>,
    /// Redis time of the join, Unix ms.
    pub(crate) at_ms: i64,
}

/// One user's standing, and what a buy would answer now.
#[derive(Debug, Serialize)]
pub(crate) struct PositionRow {
    pub(crate) user: String,
    #[serde(flatten)]
    pub(crate) standing: Standing,
    /// The buy's outcome for this standing: `ok` when admitted, else its refusal.
    pub(crate) buy_outcome: &'static str,
}

/// One item's room.
#[derive(Debug, Serialize)]
pub(crate) struct RoomRow {
    pub(crate) item: String,
    /// The settings, as the file says them.
    pub(crate) settings: String,
    /// The room shuffles a pre-queue at the start.
    pub(crate) prequeue: bool,
    /// Rate mode: admissions per second.
    pub(crate) admit_per_second: Option<f64>,
    #[serde(flatten)]
    pub(crate) figures: RoomFigures,
    /// A bucketed item: each bucket's admissions held now and granted in all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) buckets: Option<Vec<BucketAdmissions>>,
    /// The room's turns come only through `seckill queue admit --loop`: why,
    /// and when one last finished a pass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) needs_admitter: Option<String>,
    /// A ticket room: its cursor and counts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tickets: Option<TicketFigures>,
}

/// A pause or resume of one item's room.
#[derive(Debug, Serialize)]
pub(crate) struct ClockRow {
    pub(crate) item: String,
    #[serde(flatten)]
    pub(crate) change: ClockChange,
}

/// A bucket's copy of the admissions.
#[derive(Debug, Serialize)]
pub(crate) struct BucketAdmissions {
    pub(crate) bucket: u32,
    pub(crate) held: i64,
    pub(crate) granted: i64,
}

/// `seckill queue`'s report: one shape per action.
#[derive(Debug, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub(crate) enum QueueReport {
    Join {
        item: String,
        joins: Vec<JoinRow>,
    },
    Position {
        item: String,
        room: RoomFigures,
        users: Vec<PositionRow>,
    },
    Status {
        rooms: Vec<RoomRow>,
    },
    Clock {
        changes: Vec<ClockRow>,
    },
    Admit {
        passes: Vec<Pass>,
        /// Passes made (--loop: until stopped).
        rounds: u64,
    },
    Shuffle {
        shuffles: Vec<Shuffled>,
    },
    Verify {
        verified: Vec<Verified>,
    },
    Penalized {
        item: String,
        user: String,
        /// `delayed`, `blocked`, `cleared`.
        status: String,
        /// The entry it replaced.
        previous: Option<String>,
    },
    /// `queue join` on a ticket room: each user's signed ticket.
    Tickets {
        item: String,
        tickets: Vec<Issued>,
    },
    Revoked {
        key_id: String,
        rooms: Vec<RevokedRow>,
    },
}

/// A key revoked in one item's ticket room.
#[derive(Debug, Serialize)]
pub(crate) struct RevokedRow {
    pub(crate) item: String,
    /// `revoked`, `already_revoked`, `no_room` (not preheated), `not_ticket`.
    pub(crate) status: String,
    pub(crate) revoked_keys: Vec<String>,
}

/// The buy's outcome for a standing (`ok` when admitted).
fn buy_outcome(state: State) -> &'static str {
    match state {
        State::Admitted => "ok",
        State::NotRegistered => "not_registered",
        State::NotQueued => "not_queued",
        State::Expired => "admission_expired",
        State::Waiting | State::Prequeue => "not_admitted",
    }
}

/// "position 5 · 2 ahead · about 3s", "admitted until …".
fn describe(s: &Standing) -> String {
    match s.state {
        State::Admitted => format!(
            "admitted until {} (position {})",
            time_or_dash(s.to_ms),
            s.position
        ),
        State::Expired => format!("admission ran out at {}", time_or_dash(s.to_ms)),
        State::Waiting | State::Prequeue => format!(
            "position {} · serving {} · {} ahead · about {}{}",
            s.position,
            s.serving,
            (s.position - s.serving - 1).max(0),
            human_duration_ms(s.eta_ms),
            if s.state == State::Prequeue {
                " (pre-queue: shuffled at the start)"
            } else {
                ""
            }
        ),
        State::NotQueued => "not in the queue".to_string(),
        State::NotRegistered => "not registered".to_string(),
    }
}

impl Report for QueueReport {
    fn exit_code(&self) -> i32 {
        match self {
            QueueReport::Join { joins, .. } => joins
                .iter()
                .map(|j| j.outcome.exit_code())
                .find(|code| *code != exit_codes::SUCCESS)
                .unwrap_or(exit_codes::SUCCESS),
            QueueReport::Position { users, .. } => users
                .iter()
                .map(|u| exit_codes::of_outcome(u.buy_outcome))
                .find(|code| *code != exit_codes::SUCCESS)
                .unwrap_or(exit_codes::SUCCESS),
            QueueReport::Verify { verified } if verified.iter().any(|v| v.mismatches > 0) => {
                exit_codes::DRIFT_FOUND
            }
            _ => exit_codes::SUCCESS,
        }
    }

    fn failure(&self) -> Option<String> {
        let QueueReport::Verify { verified } = self else {
            return None;
        };
        let broken: Vec<String> = verified
            .iter()
            .filter(|v| v.mismatches > 0)
            .map(|v| format!("{} of {}", v.mismatches, v.prequeue))
            .collect();
        (!broken.is_empty()).then(|| {
            format!(
                "the shuffle did not reproduce: {} pre-queue position(s) differ",
                broken.join(", ")
            )
        })
    }

    fn render(&self) -> String {
        match self {
            QueueReport::Join { item, joins } => {
                let rows = joins
                    .iter()
                    .map(|j| {
                        vec![
                            j.user.clone(),
                            j.outcome.as_str().to_string(),
                            j.standing.as_ref().map_or_else(String::new, describe),
                        ]
                    })
                    .collect();
                format!(
                    "waiting room of item {item}\n{}",
                    output::grid(&["user", "outcome", "where"], rows, &[2])
                )
            }
            QueueReport::Position { item, room, users } => {
                let rows = users
                    .iter()
                    .map(|u| {
                        vec![
                            u.user.clone(),
                            u.standing.state.as_str().to_string(),
                            describe(&u.standing),
                        ]
                    })
                    .collect();
                format!(
                    "waiting room of item {item}: {} joined, serving {}\n{}",
                    room.joined,
                    room.serving,
                    output::grid(&["user", "state", "where"], rows, &[2])
                )
            }
            QueueReport::Status { rooms } => rooms.iter().map(room_block).collect(),
            QueueReport::Tickets { item, tickets } => {
                let mut out = format!(
                    "ticket room of item {item}: send each ticket with the user's buy \
                     (`seckill buy --ticket`, or the Seckill-Ticket header)\n"
                );
                for t in tickets {
                    out.push_str(&format!(
                        "{}  arrived {}\n  {}\n",
                        t.user,
                        time_or_dash(Some(t.arrival_ms)),
                        t.ticket
                    ));
                }
                out
            }
            QueueReport::Revoked { key_id, rooms } => rooms
                .iter()
                .map(|r| {
                    format!(
                        "item {}: key {key_id} {}\n",
                        r.item,
                        r.status.replace('_', " ")
                    )
                })
                .collect(),
            QueueReport::Clock { changes } => changes
                .iter()
                .map(|row| {
                    format!(
                        "item {}: {} (paused {} in all){}\n",
                        row.item,
                        row.change.status,
                        human_duration_ms(row.change.paused_ms),
                        if row.change.paused_by.contains("switch") {
                            "; the kill switch holds it paused until `shutdown-switch off`"
                        } else {
                            ""
                        }
                    )
                })
                .collect(),
            QueueReport::Admit { passes, rounds } => {
                let mut out = String::new();
                for pass in passes {
                    out.push_str(&output::hanging(&pass_line(pass), 2));
                }
                if *rounds > 1 {
                    out.push_str(&format!("{rounds} passes\n"));
                }
                out
            }
            QueueReport::Shuffle { shuffles } => shuffles
                .iter()
                .map(|s| {
                    output::hanging(
                        &format!(
                            "{}: {} users in the pre-queue; seed sha256 {}{}",
                            s.status,
                            s.prequeue,
                            s.seed_sha256,
                            s.seed
                                .as_ref()
                                .map(|seed| format!("; seed {seed}"))
                                .unwrap_or_default()
                        ),
                        2,
                    )
                })
                .collect(),
            QueueReport::Verify { verified } => verified
                .iter()
                .map(|v| {
                    output::hanging(
                        &format!(
                            "{}: {} of {} pre-queue positions reproduced from seed {} ({})",
                            if v.mismatches == 0 {
                                "reproduced"
                            } else {
                                "NOT REPRODUCED"
                            },
                            v.prequeue - v.mismatches,
                            v.prequeue,
                            v.seed,
                            if v.seed_matches_hash {
                                "its SHA-256 is the published one"
                            } else {
                                "its SHA-256 is NOT the published one"
                            }
                        ),
                        2,
                    )
                })
                .collect(),
            QueueReport::Penalized {
                item,
                user,
                status,
                previous,
            } => format!(
                "item {item}: {user} {status}{}\n",
                previous
                    .as_ref()
                    .map(|p| format!(" (was: {p})"))
                    .unwrap_or_default()
            ),
        }
    }
}

fn pass_line(pass: &Pass) -> String {
    let mut parts = Vec::new();
    if let Some(s) = &pass.shuffle {
        parts.push(format!("pre-queue {} ({} users)", s.status, s.prequeue));
    }
    if let Some(a) = &pass.admit {
        parts.push(format!(
            "{} admitted, {} places given back, {} active, serving {} of {} ({})",
            a.admitted, a.freed, a.active, a.serving, a.joined, a.status
        ));
    }
    if let Some(f) = &pass.fan_out {
        parts.push(format!(
            "{} positions carried to their home buckets, {} admissions granted, fanned out to {}",
            f.carried, f.granted, f.fanned
        ));
    }
    if parts.is_empty() {
        parts.push("rate mode: admission needs no admitter here".to_string());
    }
    format!("item {}: {}", pass.item, parts.join("; "))
}

/// "by the operator and the kill switch", from queue_clock.lua's holders.
fn paused_by(holders: &str) -> String {
    let names: Vec<&str> = holders
        .split_whitespace()
        .map(|holder| match holder {
            "switch" => "the kill switch",
            "operator" => "the operator",
            other => other,
        })
        .collect();
    format!("by {}", names.join(" and "))
}

fn room_block(r: &RoomRow) -> String {
    let f = &r.figures;
    let mut out = output::hanging(&format!("item {}  {}", r.item, r.settings), 2);
    let mut line = |label: &str, text: String| {
        out.push_str(&output::hanging(&format!("  {label:<9} {text}"), 12));
    };
    if !f.present {
        line("room", "not in Redis: run `seckill preheat`".to_string());
        return out;
    }
    if let Some(t) = &r.tickets {
        line(
            "tickets",
            format!(
                "{} handed out · {} admitted · {} waiting · {} late",
                t.arrived_total, t.admitted_total, t.pending_total, t.late_total
            ),
        );
        if let Some(users) = t.prequeued {
            line(
                "pre-queue",
                format!(
                    "{users} users · seed sha256 {}{}",
                    f.seed_sha256,
                    t.seed
                        .as_ref()
                        .map(|seed| format!(" · seed {seed}"))
                        .unwrap_or_default()
                ),
            );
        }
        let sweeping = t.prequeue_swept_percent.filter(|done| *done < 100.0);
        line(
            "cursor",
            format!(
                "{}{}{}",
                match (sweeping, &t.seed) {
                    (Some(_), None) => "before the start: the pre-queue is ranked then".to_string(),
                    (Some(done), Some(_)) =>
                        format!("sweeping the pre-queue's ranks: {done}% passed"),
                    (None, _) => time_or_dash(t.cursor_ms),
                },
                t.cursor_lag_ms
                    .filter(|_| sweeping.is_none())
                    .map(|lag| format!(" ({} behind)", human_duration_ms(lag.max(0))))
                    .unwrap_or_default(),
                if f.paused {
                    format!(" · PAUSED now ({})", paused_by(&f.paused_by))
                } else {
                    String::new()
                }
            ),
        );
        line(
            "serve",
            match (t.live_instances, &t.leader) {
                (0, _) => "no instance beats: the cursor stands still until one runs".to_string(),
                (n, Some(leader)) => format!("{n} instance(s) beating · {leader} moves the cursor"),
                (n, None) => format!("{n} instance(s) beating · no lease held"),
            },
        );
        if !t.revoked_keys.is_empty() {
            line("revoked", t.revoked_keys.join(", "));
        }
        return out;
    }
    line(
        "queue",
        format!(
            "{} joined · serving {} · {} waiting",
            f.joined,
            f.serving,
            (f.joined - f.serving).max(0)
        ),
    );
    if f.mode == "max_active" {
        line("active", format!("{} admitted, not given back", f.active));
    }
    line(
        "clock",
        match (f.opened_at_ms, f.paused) {
            (None, _) => {
                "not open yet (the first join, or the pre-queue's shuffle, opens it)".to_string()
            }
            (Some(at), paused) => format!(
                "opened {}{} · paused {} in all",
                time_or_dash(Some(at)),
                if paused {
                    format!(" · PAUSED now ({})", paused_by(&f.paused_by))
                } else {
                    String::new()
                },
                human_duration_ms(f.paused_ms)
            ),
        },
    );
    line(
        "tail",
        format!(
            "someone joining now waits about {}",
            human_duration_ms(f.tail_eta_ms)
        ),
    );
    if r.prequeue {
        line(
            "prequeue",
            format!(
                "{} users{} · seed sha256 {}{}",
                f.prequeue_last,
                if f.shuffled { ", shuffled" } else { "" },
                f.seed_sha256,
                f.seed
                    .as_ref()
                    .map(|s| format!(" · seed {s}"))
                    .unwrap_or_default()
            ),
        );
    }
    if f.registered > 0 {
        line("register", format!("{} users registered", f.registered));
    }
    if let Some(need) = &r.needs_admitter {
        line("admitter", need.clone());
    }
    if let Some(buckets) = &r.buckets {
        let held: i64 = buckets.iter().map(|b| b.held).sum();
        line(
            "buckets",
            format!(
                "positions 1..{} carried to their home buckets · {held} admissions there",
                f.fanned
            ),
        );
    }
    out
}

/// `queue join` on a ticket room: tickets signed here with the campaign's
/// secret, counted in Redis in one beat.
fn join_tickets(conn: &mut Conn, campaign: &Campaign, users: &Users) -> Result<QueueReport> {
    let Some(path) = &users.room_key_file else {
        return Err(usage(format!(
            "item {} has a ticket room: its tickets are signed with the campaign's secret, \
             given with --room-key-file FILE (or SECKILL_ROOM_KEY_FILE)",
            users.item
        )));
    };
    let secret = RoomSecret::read(path).map_err(|e| usage(format!("{e:#}")))?;
    let room = room_of(campaign, &users.item)?;
    let key_id = format!("cli-{:012x}", rand::random::<u64>() >> 16);
    let tickets = room.join_once(conn, &secret, &campaign.id, &key_id, &users.users)?;
    Ok(QueueReport::Tickets {
        item: users.item.clone(),
        tickets,
    })
}

fn join(conn: &mut Conn, campaign: &Campaign, at: &str, users: &Users) -> Result<QueueReport> {
    let mut joins = Vec::new();
    for user in &users.users {
        let line = Join {
            item: &users.item,
            user,
        }
        .run(campaign, conn, at)
        .map_err(|f| failure::say(f, "the join"))?;
        joins.push(JoinRow {
            user: user.clone(),
            outcome: line.outcome.unwrap_or(JoinOutcome::Queued),
            standing: line.standing,
            at_ms: line.at_ms.unwrap_or_default(),
        });
    }
    Ok(QueueReport::Join {
        item: users.item.clone(),
        joins,
    })
}

fn position(conn: &mut Conn, campaign: &Campaign, at: &str, users: &Users) -> Result<QueueReport> {
    let names: Vec<&str> = users.users.iter().map(String::as_str).collect();
    let (figures, lines) = Position {
        item: &users.item,
        users: &names,
    }
    .run(campaign, conn, at)
    .map_err(|f| failure::say(f, "the read"))?;
    let rows = lines
        .into_iter()
        .filter_map(|line| {
            let standing = line.standing?;
            Some(PositionRow {
                user: line.user,
                buy_outcome: buy_outcome(standing.state),
                standing,
            })
        })
        .collect();
    Ok(QueueReport::Position {
        item: users.item.clone(),
        room: figures,
        users: rows,
    })
}

fn status(conn: &mut Conn, rooms: &[Room]) -> Result<QueueReport> {
    let mut rows = Vec::new();
    for room in rooms {
        let (figures, _) = room.read(conn, &[])?;
        let buckets = room.bucket_admissions(conn)?.map(|counts| {
            counts
                .into_iter()
                .enumerate()
                .map(|(b, (held, granted))| BucketAdmissions {
                    bucket: b as u32,
                    held,
                    granted,
                })
                .collect()
        });
        rows.push(RoomRow {
            item: room.item.clone(),
            settings: room.settings.describe(),
            prequeue: room.settings.prequeue,
            admit_per_second: room.settings.per_second(),
            needs_admitter: figures
                .present
                .then(|| room.admitter_note(&figures))
                .flatten(),
            tickets: match room.settings.is_ticket() {
                true => room.ticket_figures(conn)?,
                false => None,
            },
            figures,
            buckets,
        });
    }
    Ok(QueueReport::Status { rooms: rows })
}

/// The command name in log lines.
const ADMIT: &str = "queue admit";

fn run_admit(
    ctx: &Context,
    mut conn: Conn,
    target: &RedisTarget,
    campaign: &Campaign,
    args: &AdmitArgs,
) -> Result<QueueReport> {
    let rooms = rooms(campaign, args.items.item.as_deref())?;
    let batch = args.batch as usize;
    if !args.repeat {
        let passes = rooms
            .iter()
            .map(|room| {
                let pass = room.pass(&mut conn, batch)?;
                room.beat(&mut conn, Duration::ZERO)?;
                Ok(pass)
            })
            .collect::<Result<Vec<_>>>()?;
        return Ok(QueueReport::Admit { passes, rounds: 1 });
    }
    let stop = ctx.stop_on_signals()?;
    let state = service::start(args.metrics_listen, "queue_admit", campaign, target, None)?;
    let _stall_watch = ctx.notifier().watch_stalls(ctx.command, &campaign.id);
    let mut conn = Reconnecting::new(Some(conn), || target.connect());
    let mut rounds = 0;
    let mut last = Vec::new();
    // The last failure logged per item: said once, not every pass.
    let mut failing: BTreeMap<String, String> = BTreeMap::new();
    log::line(
        ADMIT,
        format!(
            "running a pass every {} for {} room(s) until SIGTERM",
            humantime::format_duration(args.interval),
            rooms.len()
        ),
    );
    while !stop.load(Ordering::SeqCst) {
        let started = std::time::Instant::now();
        let mut passes = Vec::new();
        for room in &rooms {
            let what = format!("the pass of item {}", room.item);
            let done = conn.retry(
                ADMIT,
                &what,
                &stop,
                redis_failure::transient,
                redis_failure::refused_for_credentials,
                |conn| {
                    let pass = room.pass(conn, batch)?;
                    room.beat(conn, args.interval)?;
                    Ok(pass)
                },
            );
            match done {
                Ok(pass) => {
                    if failing.remove(&room.item).is_some() {
                        log::line(ADMIT, format!("item {}: passes succeed again", room.item));
                    }
                    let moved = pass
                        .admit
                        .as_ref()
                        .is_some_and(|a| a.admitted + a.freed > 0)
                        || pass.fan_out.as_ref().is_some_and(|f| f.carried > 0)
                        || pass
                            .shuffle
                            .as_ref()
                            .is_some_and(|s| s.status == "committed");
                    if moved {
                        log::line(ADMIT, pass_line(&pass));
                    }
                    passes.push(pass);
                }
                Err(error) if redis_failure::refused_for_credentials(&error) => {
                    log::line(ADMIT, format!("stopping: {}", error_text::render(&error)));
                    return Err(error);
                }
                Err(_) if stop.load(Ordering::SeqCst) => break,
                Err(error) => {
                    let why = error_text::render(&error);
                    if failing.get(&room.item) != Some(&why) {
                        log::line(
                            ADMIT,
                            format!(
                                "item {}: pass failed, a value no wait can fix (repair it; every pass tries again, the other rooms go on): {why}",
                                room.item
                            ),
                        );
                        failing.insert(room.item.clone(), why);
                    }
                }
            }
        }
        if failing.is_empty() && passes.len() == rooms.len() {
            state.succeeded();
        }
        rounds += 1;
        last = passes;
        sleep_unless_stopped(args.interval.saturating_sub(started.elapsed()), &stop);
    }
    Ok(QueueReport::Admit {
        passes: last,
        rounds,
    })
}

fn run_shuffle(conn: &mut Conn, campaign: &Campaign, args: &ShuffleArgs) -> Result<QueueReport> {
    let rooms: Vec<Room> = rooms(campaign, args.items.item.as_deref())?
        .into_iter()
        .filter(|room| room.settings.prequeue)
        .collect();
    if rooms.is_empty() {
        return Err(usage(
            "no selected item's waiting room has a pre-queue (`prequeue: true`)",
        ));
    }
    if args.verify {
        let verified = rooms
            .iter()
            .map(|room| room.verify_shuffle(conn))
            .collect::<Result<Vec<_>>>()?;
        return Ok(QueueReport::Verify { verified });
    }
    let mut shuffles = Vec::new();
    for room in &rooms {
        let mut beat_at: Option<std::time::Instant> = None;
        loop {
            let done = room.shuffle(conn)?;
            if done.status != "not_started" || !args.wait {
                shuffles.push(done);
                break;
            }
            // Waiting to shuffle is what the room needs of an admitter until
            // then: its heartbeat says one is on its way (every second).
            if beat_at.is_none_or(|at| at.elapsed() >= Duration::from_secs(1)) {
                room.beat(conn, Duration::from_secs(1))?;
                beat_at = Some(std::time::Instant::now());
            }
            // Redis time decides; sleep in short steps so the start is not missed.
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    Ok(QueueReport::Shuffle { shuffles })
}
