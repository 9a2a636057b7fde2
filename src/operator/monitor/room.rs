//! The waiting-room line of `seckill status` (docs/waiting-room.md): an
//! item's room at the same sample as its stock — joined, admitted, active,
//! the rate, a pause, the wait at the tail — and what it needs `seckill
//! queue admit --loop` for. One read-only script call per item with a room
//! (`lua/queue_read.lua`); none for an item without one.
//!
//! Whether an admitter runs is read from its heartbeat (each pass of
//! `queue admit` writes the Redis time into the room: a room that needs one
//! and has heard from none for `domain::waiting_room::ADMITTER_QUIET_MS`, or
//! three of its intervals, is late by that silence), and from the work one
//! would have done, and how late it is: a pre-queue still unshuffled after
//! `starts_at` (the room stays closed until the shuffle), and a bucketed
//! rate room's admissions not yet carried to the buckets (those shoppers
//! are told `not_admitted` although their turn came), in time at the
//! room's rate. The metrics' absent rule (`SeckillAdmitterAbsent`) watches
//! the process itself.

use anyhow::Result;
use redis::ConnectionLike;
use serde::Serialize;

use crate::domain::item::SaleItem;
use crate::domain::waiting_room::{Room, RoomFigures};
use crate::model::waiting_room::AdmissionMode;
use crate::util::text::human_duration_ms;

/// An item's room, for `status`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RoomView {
    /// The settings, for people ("rate 500/s, admissions last 2m").
    pub(crate) settings: String,
    /// Users who joined.
    pub(crate) joined: i64,
    /// The last position admitted.
    pub(crate) serving: i64,
    /// max_active: admitted places not given back.
    pub(crate) active: i64,
    pub(crate) paused: bool,
    /// The wait of someone joining now, ms.
    pub(crate) tail_eta_ms: i64,
    /// Whether Redis holds the room (preheat writes it).
    pub(crate) present: bool,
    /// What the room needs `seckill queue admit --loop` for: `max_active`
    /// (filling the free places), `prequeue_shuffle` (the shuffle at
    /// `starts_at`, until it is done), `fan_out` (carrying admissions to the
    /// buckets); empty: it needs no process.
    pub(crate) needs_admitter: Vec<&'static str>,
    /// How late the admitter's work is, ms (0: nothing seen late).
    pub(crate) admitter_behind_ms: i64,
    /// What is late, for people (`None`: nothing).
    pub(crate) admitter_behind: Option<String>,
}

/// The room of `item`, when the file gives it one.
pub(crate) fn read<C: ConnectionLike>(conn: &mut C, item: &SaleItem) -> Result<Option<RoomView>> {
    let Some(room) = item.room() else {
        return Ok(None);
    };
    let (figures, _) = room.read(conn, &[])?;
    let (admitter_behind_ms, admitter_behind) = match behind(room, &figures) {
        Some((ms, why)) => (ms, Some(why)),
        None => (0, None),
    };
    Ok(Some(RoomView {
        settings: room.settings.describe(),
        joined: figures.joined,
        serving: figures.serving,
        active: figures.active,
        paused: figures.paused,
        tail_eta_ms: figures.tail_eta_ms,
        present: figures.present,
        needs_admitter: needs_admitter(room, figures.shuffled),
        admitter_behind_ms,
        admitter_behind,
    }))
}

/// What `room` needs `queue admit --loop` for (the settings say it; a
/// pre-queue's shuffle only until it is `shuffled`).
fn needs_admitter(room: &Room, shuffled: bool) -> Vec<&'static str> {
    let mut needs = Vec::new();
    if matches!(room.settings.mode, AdmissionMode::MaxActive(_)) {
        needs.push("max_active");
    }
    if room.settings.prequeue && !shuffled {
        needs.push("prequeue_shuffle");
    }
    if room.buckets.is_some() {
        needs.push("fan_out");
    }
    needs
}

/// The admitter's work Redis shows as late, the latest first: how late (ms) and what.
fn behind(room: &Room, figures: &RoomFigures) -> Option<(i64, String)> {
    if !figures.present {
        return None;
    }
    let mut late: Vec<(i64, String)> = Vec::new();
    if let Some(silence) = room.admitter_stalled(figures) {
        let silent_ms = silence
            .silent_ms
            .or_else(|| figures.opened_at_ms.map(|opened| figures.now_ms - opened));
        if let (Some(ms), Some(note)) = (silent_ms, room.admitter_note(figures)) {
            late.push((ms, note));
        }
    }
    if room.settings.prequeue
        && !figures.shuffled
        && let Some(starts) = room.starts_at_ms.filter(|s| figures.now_ms > *s)
    {
        late.push((
            figures.now_ms - starts,
            format!(
                "the pre-queue ({} joined) is not shuffled {} after starts_at: the room admits nobody until it is",
                figures.prequeue_last,
                human_duration_ms(figures.now_ms - starts)
            ),
        ));
    }
    let not_carried = figures.serving - figures.fanned;
    if let (Some(_), Some(per_s)) = (&room.buckets, room.settings.per_second())
        && not_carried > 0
        && per_s > 0.0
    {
        let ms = (not_carried as f64 * 1000.0 / per_s) as i64;
        late.push((
            ms,
            format!(
                "{not_carried} admitted position(s) not carried to their buckets ({} of admissions): those shoppers are told not_admitted",
                human_duration_ms(ms)
            ),
        ));
    }
    // Every late cause is said, the longest first: an admitter that never
    // ran and the positions it left behind are one incident, two facts.
    late.sort_by_key(|(ms, _)| std::cmp::Reverse(*ms));
    let ms = late.first()?.0;
    let why: Vec<String> = late.into_iter().map(|(_, why)| why).collect();
    Some((ms, why.join("; ")))
}

impl RoomView {
    /// "1,204 joined · 800 admitted · tail waits about 3s · rate 500/s, ...".
    pub(crate) fn describe(&self) -> String {
        if !self.present {
            return format!("{} — not in Redis yet (preheat writes it)", self.settings);
        }
        format!(
            "{} joined · {} admitted{} · tail waits about {}{} · {}",
            self.joined,
            self.serving,
            if self.active > 0 {
                format!(" · {} active", self.active)
            } else {
                String::new()
            },
            human_duration_ms(self.tail_eta_ms),
            if self.paused { " · PAUSED" } else { "" },
            self.settings
        )
    }

    /// The `admitter` line: what the room needs it for and what is late;
    /// `None` for a room that needs no process.
    pub(crate) fn describe_admitter(&self) -> Option<String> {
        if self.needs_admitter.is_empty() {
            return None;
        }
        let what: Vec<&str> = self
            .needs_admitter
            .iter()
            .map(|need| match *need {
                "max_active" => "filling max_active's free places",
                "prequeue_shuffle" => "the pre-queue's shuffle at starts_at",
                _ => "carrying admissions to the buckets",
            })
            .collect();
        let mut text = format!("`seckill queue admit --loop` must run: {}", what.join(", "));
        if let Some(why) = &self.admitter_behind {
            text.push_str(&format!(" — LATE: {why}; is it running?"));
        }
        Some(text)
    }
}
