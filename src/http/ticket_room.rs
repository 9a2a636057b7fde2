//! A ticket room at the door (docs/waiting-room.md, "Ticket mode"): joins
//! and polls answered by this instance from memory, with no Redis call.
//!
//! A join hands out a signed ticket (`domain::waiting_room::ticket`) whose
//! arrival is this machine's clock corrected to Redis `TIME` (the skew the
//! cache measures), never going back: an arrival is never below the
//! watermark this instance already flushed. Arrivals are counted per 10 ms
//! bucket in memory; [`Tickets::beat`], every 100 ms, flushes them with the
//! watermark in one script per room (`lua/room_tick.lua`), the instance
//! holding the lease moving the cursor, and mirrors what the room says back:
//! the cursor and when it passed each arrival, the pending counts, the
//! pause, revoked keys and the risk list. A poll's position, wait and state
//! come from that mirror; the buy script decides from Redis.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};

use anyhow::Result;
use redis::ConnectionLike;
use ring::hmac;
use serde::Serialize;

use crate::domain::item::SaleItem;
use crate::domain::waiting_room::Room;
use crate::domain::waiting_room::ticket::{
    self, Beat, Refused, RoomSecret, Tick, TickState, Ticket, bucket_of,
};
use crate::model::campaign::Campaign;
use crate::util::log;

/// Buckets above the cursor a beat reads back, for positions ...
const PENDING_LIMIT: usize = 200;
/// ... every this many beats (about once a second): a backlog read on every
/// beat of every instance would cost the item's Redis thread more than the
/// joins it spares it.
const PENDING_EVERY: u64 = 10;
/// Passes of the cursor remembered (about the last 30 minutes of beats).
const PASSES_KEPT: usize = 18_000;

/// Every ticket room of the campaign at this instance.
pub(crate) struct Tickets {
    /// This instance's id, also its signing key's id.
    pub(crate) instance: String,
    campaign: String,
    secret: RoomSecret,
    key: hmac::Key,
    rooms: HashMap<String, TicketRoom>,
}

/// One item's ticket room at this instance.
struct TicketRoom {
    room: Room,
    beats: AtomicU64,
    counting: Mutex<Counting>,
    seq: AtomicU64,
    mirror: RwLock<Mirror>,
}

#[derive(Debug, Default)]
struct Counting {
    /// Tickets handed out and not flushed yet, per bucket.
    unflushed: BTreeMap<i64, u64>,
    /// The last arrival handed out: arrivals never go back.
    last_arrival_ms: i64,
    /// Every arrival below it was flushed: none may be handed out there.
    watermark_ms: i64,
}

#[derive(Debug, Default)]
struct Mirror {
    state: Option<TickState>,
    /// (cursor, Redis ms it got there), ascending: when an arrival was passed.
    passes: Vec<(i64, i64)>,
    risk: HashMap<String, Risk>,
    risk_version: Option<i64>,
    /// A bucketed item: the cursor this instance last copied to every bucket.
    copied_ms: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Risk {
    Block,
    /// The admission starts this much later, when set before it began.
    Delay {
        ms: i64,
        since: i64,
    },
}

/// Where a ticket's holder stands, as a join or a poll answers it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TicketLine {
    pub(crate) item: String,
    pub(crate) user: String,
    /// `joined` (a new ticket) or `queued` (the ticket presented, again); absent on a poll.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) outcome: Option<&'static str>,
    /// `waiting`, `admitted`, `expired`, `blocked`.
    pub(crate) state: &'static str,
    /// The ticket to send as `Seckill-Ticket` with every later request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) ticket: Option<String>,
    pub(crate) arrival_ms: i64,
    /// About this many tickets arrived before this one and are not admitted yet.
    pub(crate) ahead: i64,
    /// ... so this is about the holder's place (waiting).
    pub(crate) position: i64,
    /// About this long until the admission, ms (waiting).
    pub(crate) eta_ms: i64,
    /// The admission (admitted, expired), as this instance saw the cursor pass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) admitted_from_ms: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) admitted_until_ms: Option<i64>,
    /// Everyone who arrived up to this time is admitted.
    pub(crate) cursor_ms: i64,
    pub(crate) paused: bool,
}

impl TicketLine {
    /// Still waiting: the wait to say (`Retry-After`).
    pub(crate) fn wait_ms(&self) -> Option<i64> {
        (self.state == "waiting").then_some(self.eta_ms)
    }
}

impl Tickets {
    /// The ticket rooms of `campaign` (`None` when it has none), signing as
    /// a fresh instance id with a key derived from `secret`.
    pub(crate) fn of(campaign: &Campaign, secret: Option<RoomSecret>) -> Result<Option<Tickets>> {
        let mut rooms = HashMap::new();
        for sale in SaleItem::select(campaign, None)? {
            let id = sale.id().to_string();
            if let Some(room) = sale.into_room().filter(|r| r.settings.is_ticket()) {
                rooms.insert(
                    id,
                    TicketRoom {
                        room,
                        beats: AtomicU64::new(0),
                        counting: Mutex::new(Counting::default()),
                        seq: AtomicU64::new(0),
                        mirror: RwLock::new(Mirror::default()),
                    },
                );
            }
        }
        if rooms.is_empty() {
            return Ok(None);
        }
        let Some(secret) = secret else {
            anyhow::bail!(
                "item {} has a ticket waiting room: serve signs its tickets with the campaign's \
                 secret, given with --room-key-file FILE (docs/waiting-room.md, \"Ticket mode\")",
                rooms.keys().next().map_or("", String::as_str)
            );
        };
        let instance = format!("{:016x}", rand::random::<u64>());
        Ok(Some(Tickets {
            key: secret.key(&campaign.id, &instance),
            instance,
            campaign: campaign.id.clone(),
            secret,
            rooms,
        }))
    }

    /// Whether `item` has a ticket room.
    pub(crate) fn has(&self, item: &str) -> bool {
        self.rooms.contains_key(item)
    }

    /// `user` joins `item`'s room at `now_ms` (Redis clock): the ticket they
    /// presented when it is theirs, else a new one. `None`: no ticket room.
    pub(crate) fn join(
        &self,
        item: &str,
        user: &str,
        presented: Option<&str>,
        now_ms: i64,
    ) -> Option<TicketLine> {
        let room = self.rooms.get(item)?;
        if let Some(Ok(ticket)) = presented.map(|text| self.verify(item, user, text)) {
            let text = presented.map(str::to_string);
            return Some(room.line(&ticket, Some("queued"), text, now_ms));
        }
        let arrival_ms = {
            let mut counting = room.counting.lock().unwrap_or_else(|e| e.into_inner());
            let arrival = now_ms
                .max(counting.last_arrival_ms)
                .max(counting.watermark_ms);
            counting.last_arrival_ms = arrival;
            *counting.unflushed.entry(bucket_of(arrival)).or_default() += 1;
            arrival
        };
        let ticket = Ticket {
            campaign: self.campaign.clone(),
            item: item.to_string(),
            user: user.to_string(),
            arrival_ms,
            instance: self.instance.clone(),
            seq: room.seq.fetch_add(1, Ordering::Relaxed),
            key_id: self.instance.clone(),
        };
        let text = ticket.sign(&self.key);
        Some(room.line(&ticket, Some("joined"), Some(text), now_ms))
    }

    /// The ticket `text` for `user` on `item`, when it is theirs and valid.
    pub(crate) fn verify(&self, item: &str, user: &str, text: &str) -> Result<Ticket, Refused> {
        let revoked = self
            .rooms
            .get(item)
            .map(|room| room.read().state.as_ref().map(|s| s.revoked_keys.clone()))
            .unwrap_or_default()
            .unwrap_or_default();
        Ticket::verify(text, &self.secret, &self.campaign, item, user, &revoked)
    }

    /// Where `ticket`'s holder stands now (a poll).
    pub(crate) fn standing(&self, ticket: &Ticket, now_ms: i64) -> Option<TicketLine> {
        let room = self.rooms.get(&ticket.item)?;
        Some(room.line(ticket, None, None, now_ms))
    }

    /// One beat of every room: flush, move the cursor under the lease,
    /// mirror the answer. `leaving`: this instance's last (no mark kept).
    pub(crate) fn beat<C: ConnectionLike>(
        &self,
        conn: &mut C,
        now_ms: i64,
        leaving: bool,
    ) -> Result<()> {
        let mut failed = None;
        for (item, room) in &self.rooms {
            if let Err(error) = room.beat(conn, &self.instance, now_ms, leaving) {
                failed.get_or_insert(error.context(format!("ticket room of item {item}")));
            }
        }
        failed.map_or(Ok(()), Err)
    }
}

impl TicketRoom {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Mirror> {
        self.mirror.read().unwrap_or_else(|e| e.into_inner())
    }

    fn beat<C: ConnectionLike>(
        &self,
        conn: &mut C,
        instance: &str,
        now_ms: i64,
        leaving: bool,
    ) -> Result<()> {
        let (entries, watermark) = {
            let mut counting = self.counting.lock().unwrap_or_else(|e| e.into_inner());
            // Every arrival below the current bucket is complete: flush those,
            // and hand out none below it from now on.
            let watermark = match leaving {
                true => i64::MAX,
                false => bucket_of(now_ms).max(counting.watermark_ms),
            };
            let keep = counting.unflushed.split_off(&watermark);
            let entries: Vec<(i64, u64)> = std::mem::replace(&mut counting.unflushed, keep)
                .into_iter()
                .collect();
            counting.watermark_ms = watermark;
            (entries, watermark)
        };
        let risk_seen = self.read().risk_version;
        let asks = self
            .beats
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(PENDING_EVERY);
        let beat = Beat {
            instance,
            watermark_ms: (!leaving).then_some(watermark),
            lead: !leaving,
            pending_limit: if asks { PENDING_LIMIT } else { 0 },
            entries: &entries,
            risk_seen,
        };
        match self.room.tick(conn, &beat) {
            Ok(Tick::Ok(state)) => {
                // The lease holder copies each move to a bucketed item's
                // buckets, where the buys read it.
                let copy = state.leader && self.read().copied_ms != Some(state.cursor_ms);
                let copied = match copy {
                    true => Some(self.room.copy_cursor(conn, state.cursor_ms, state.now_ms)),
                    false => None,
                };
                let (cursor, copied) = (state.cursor_ms, copied.transpose());
                self.mirror(state, asks);
                if copied?.is_some() {
                    self.mirror
                        .write()
                        .unwrap_or_else(|e| e.into_inner())
                        .copied_ms = Some(cursor);
                }
                Ok(())
            }
            Ok(other) => {
                self.unflush(&entries);
                anyhow::bail!(
                    "the room in Redis answered {other:?}: run `seckill preheat` with this campaign file"
                )
            }
            Err(error) => {
                // Counted again next beat (a reply lost after the flush ran
                // counts them twice: a slower cursor, never an early one).
                self.unflush(&entries);
                Err(error)
            }
        }
    }

    fn unflush(&self, entries: &[(i64, u64)]) {
        let mut counting = self.counting.lock().unwrap_or_else(|e| e.into_inner());
        for (bucket, n) in entries {
            *counting.unflushed.entry(*bucket).or_default() += n;
        }
    }

    /// Keep `state`; `asked`: it carries the pending buckets (else the last
    /// ones read are kept, less those the cursor passed since).
    fn mirror(&self, mut state: TickState, asked: bool) {
        let mut mirror = self.mirror.write().unwrap_or_else(|e| e.into_inner());
        if !asked && let Some(before) = &mirror.state {
            state.pending = before
                .pending
                .iter()
                .filter(|(bucket, _)| *bucket > state.cursor_ms)
                .copied()
                .collect();
        }
        if let Some(entries) = state.risk.take() {
            mirror.risk = entries
                .into_iter()
                .filter_map(|(user, entry)| Some((user, risk_of(&entry)?)))
                .collect();
            mirror.risk_version = Some(state.risk_version);
        }
        let moved = mirror
            .passes
            .last()
            .is_none_or(|(cursor, _)| state.cursor_ms > *cursor);
        if moved {
            mirror.passes.push((state.cursor_ms, state.now_ms));
            if mirror.passes.len() > PASSES_KEPT {
                mirror.passes.drain(..PASSES_KEPT / 10);
            }
        }
        mirror.state = Some(state);
    }

    /// `ticket`'s standing from the mirror at `now_ms`.
    fn line(
        &self,
        ticket: &Ticket,
        outcome: Option<&'static str>,
        text: Option<String>,
        now_ms: i64,
    ) -> TicketLine {
        let mirror = self.read();
        let settings = &self.room.settings;
        let ms_per_admission = settings
            .per_second()
            .map_or(1.0, |per_second| 1000.0 / per_second.max(1e-9));
        let ttl_ms = settings.admission_ttl.as_millis() as i64;
        let (cursor, paused) = mirror
            .state
            .as_ref()
            .map_or((i64::MIN, false), |s| (s.cursor_ms, s.paused));
        let mut line = TicketLine {
            item: ticket.item.clone(),
            user: ticket.user.clone(),
            outcome,
            state: "waiting",
            ticket: text,
            arrival_ms: ticket.arrival_ms,
            ahead: 0,
            position: 0,
            eta_ms: 0,
            admitted_from_ms: None,
            admitted_until_ms: None,
            cursor_ms: cursor,
            paused,
        };
        let risk = mirror.risk.get(&ticket.user).copied();
        if risk == Some(Risk::Block) {
            line.state = "blocked";
            return line;
        }
        if ticket.arrival_ms > cursor {
            let ahead = self.ahead_of(&mirror, ticket.arrival_ms);
            line.ahead = ahead;
            line.position = ahead + 1;
            // The cursor trails the slowest instance by about two beats.
            let lag = ticket.arrival_ms + 2 * ticket::TICK_MS as i64 - now_ms;
            line.eta_ms = ((line.position as f64 * ms_per_admission) as i64)
                .max(lag)
                .max(0);
            return line;
        }
        // When this instance saw the cursor pass the arrival (its first beat
        // after it started, for an older pass).
        let passed = mirror
            .passes
            .iter()
            .find(|(c, _)| *c >= ticket.arrival_ms)
            .map_or(now_ms, |(_, at)| *at);
        let from = match risk {
            Some(Risk::Delay { ms, since }) if since < passed => passed + ms,
            _ => passed,
        };
        if now_ms < from {
            line.eta_ms = from - now_ms;
            return line;
        }
        line.admitted_from_ms = Some(from);
        line.admitted_until_ms = Some(from + ttl_ms);
        line.state = if now_ms < from + ttl_ms {
            "admitted"
        } else {
            "expired"
        };
        line
    }

    /// Tickets counted before `arrival_ms` and not passed: the room's
    /// pending buckets, and this instance's own not yet flushed.
    fn ahead_of(&self, mirror: &Mirror, arrival_ms: i64) -> i64 {
        let bucket = bucket_of(arrival_ms);
        let Some(state) = &mirror.state else {
            return 0;
        };
        let mut ahead: i64 = state
            .pending
            .iter()
            .take_while(|(b, _)| *b < bucket)
            .map(|(_, n)| n)
            .sum();
        let beyond = state.pending.last().is_some_and(|(b, _)| *b < bucket)
            && state.pending.len() >= PENDING_LIMIT;
        if beyond {
            // Past what the beat reads back: everyone pending is a fair guess.
            ahead = ahead.max(state.pending_total);
        }
        let counting = self.counting.lock().unwrap_or_else(|e| e.into_inner());
        ahead += counting
            .unflushed
            .range(..bucket)
            .map(|(_, n)| *n as i64)
            .sum::<i64>();
        ahead
    }
}

/// A risk entry as `lua/queue_penalize.lua` writes it.
fn risk_of(entry: &str) -> Option<Risk> {
    if entry == "block" {
        return Some(Risk::Block);
    }
    let mut words = entry.split(' ');
    match (words.next(), words.next(), words.next()) {
        (Some("delay"), Some(ms), Some(since)) => Some(Risk::Delay {
            ms: ms.parse().ok()?,
            since: since.parse().ok()?,
        }),
        _ => {
            log::line(
                "serve",
                format!("a risk entry {entry:?} is not one: ignored"),
            );
            None
        }
    }
}
