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
//! the cursor and when it passed each arrival, the counts handed out and
//! admitted, the pause, revoked keys and the risk list. A poll's position,
//! wait and state come from that mirror; the buy script decides from Redis.
//!
//! A room with a pre-queue hands out tickets before `starts_at` too; their
//! users are counted (not their time) and, once the seed is revealed at the
//! start, each stands at its rank's place below `starts_at`
//! (`ticket::prequeue_place`), where the cursor sweeps first.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};

use anyhow::Result;
use redis::ConnectionLike;
use ring::hmac;
use serde::Serialize;

use crate::domain::item::SaleItem;
use crate::domain::waiting_room::Room;
use crate::domain::waiting_room::shuffle::Seed;
use crate::domain::waiting_room::ticket::{
    self, Beat, Refused, RoomSecret, Tick, TickState, Ticket, bucket_of,
};
use crate::model::campaign::Campaign;
use crate::util::log;

/// Passes of the cursor remembered (about the last 30 minutes of beats).
const PASSES_KEPT: usize = 18_000;
/// (watermark, tickets counted) pairs remembered, for positions (about the
/// last 30 minutes of beats).
const COUNTED_KEPT: usize = 18_000;

/// Every ticket room of the campaign at this instance.
pub(crate) struct Tickets {
    /// This instance's id, also its signing key's id.
    pub(crate) instance: String,
    campaign: String,
    secret: RoomSecret,
    key: hmac::Key,
    rooms: HashMap<String, TicketRoom>,
    /// Beats since start, and its waiters: the fast copy lane wakes as soon
    /// as a beat leaves a cursor to copy.
    beaten: (Mutex<u64>, std::sync::Condvar),
}

/// One item's ticket room at this instance.
struct TicketRoom {
    room: Room,
    counting: Mutex<Counting>,
    copies: Mutex<Copies>,
    seq: AtomicU64,
    mirror: RwLock<Mirror>,
}

#[derive(Debug, Default)]
struct Counting {
    /// Tickets handed out and not flushed yet, per bucket.
    unflushed: BTreeMap<i64, u64>,
    /// The users of pre-queue tickets not flushed yet.
    prequeue_users: Vec<String>,
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
    /// (slowest watermark, tickets counted by then), ascending: about how
    /// many tickets arrived before a time (every one below the watermark
    /// was counted; a beat's worth from faster instances beyond it).
    counted: Vec<(i64, i64)>,
    revoked_keys: Vec<String>,
    revoked_count: Option<i64>,
    /// The pre-queue's seed, once revealed (the sale started).
    seed: Option<Seed>,
    /// The pre-queue's users, while its sweep runs.
    prequeued: Option<i64>,
    risk: HashMap<String, Risk>,
    risk_version: Option<i64>,
}

/// A bucketed item's cursor copies, made off the beat by two lanes
/// (`http::spawn_copiers`): the fast lane copies to every bucket whose last
/// copy worked, the slow lane retries those whose master failed or hung,
/// so one hung bucket holds back neither the beat nor the other buckets.
#[derive(Debug, Default)]
struct Copies {
    /// What the lease holder's last beat left, to copy.
    latest: Option<TickState>,
    /// Per bucket: the (cursor, expired_below) its copy holds.
    copied: Vec<Option<(i64, Option<i64>)>>,
    /// Buckets whose last copy failed: the slow lane's.
    failing: std::collections::BTreeSet<usize>,
    /// The cursor every bucket whose copies work holds: what this instance,
    /// holding the lease, tells its shoppers (an admission the door shows is
    /// one the buy in a working bucket already sees).
    copied_through: Option<i64>,
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
    /// Everyone who arrived up to this time is admitted (while a pre-queue's
    /// ranks are swept: below `starts_at`, see `prequeue`).
    pub(crate) cursor_ms: i64,
    pub(crate) paused: bool,
    /// A pre-queue ticket (handed out before `starts_at`): its place is its
    /// rank, drawn from the seed revealed at the start; until then
    /// `position` is 0 and the wait runs to the start.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) prequeue: bool,
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
                        copies: Mutex::new(Copies {
                            copied: vec![None; room.copy_targets()],
                            ..Copies::default()
                        }),
                        room,
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
            beaten: (Mutex::new(0), std::sync::Condvar::new()),
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
        let early = room.room.starts_at_ms.is_some_and(|starts| now_ms < starts);
        let arrival_ms = {
            let mut counting = room.counting.lock().unwrap_or_else(|e| e.into_inner());
            let arrival = now_ms
                .max(counting.last_arrival_ms)
                .max(counting.watermark_ms);
            counting.last_arrival_ms = arrival;
            match early {
                // The pre-queue counts its users: one rank per user.
                true => counting.prequeue_users.push(user.to_string()),
                false => *counting.unflushed.entry(bucket_of(arrival)).or_default() += 1,
            }
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
            .map(|room| room.read().revoked_keys.clone())
            .unwrap_or_default();
        Ticket::verify(text, &self.secret, &self.campaign, item, user, &revoked)
    }

    /// Where `ticket`'s holder stands now (a poll).
    pub(crate) fn standing(&self, ticket: &Ticket, now_ms: i64) -> Option<TicketLine> {
        let room = self.rooms.get(&ticket.item)?;
        Some(room.line(ticket, None, None, now_ms))
    }

    /// Where the cursor must be for `ticket` (what the buy script checks):
    /// its arrival, or a pre-queue ticket's rank's place; `None` while this
    /// instance does not know the seed yet.
    pub(crate) fn admission_point(&self, ticket: &Ticket) -> Option<i64> {
        let room = self.rooms.get(&ticket.item)?;
        room.point(ticket, &room.read())
    }

    /// Whether `item`'s room hands out tickets at `now_ms` before the
    /// sale's start (it has a pre-queue).
    pub(crate) fn queues_early(&self, item: &str) -> bool {
        self.rooms
            .get(item)
            .is_some_and(|room| room.room.settings.prequeue)
    }

    /// Copy the lease holder's latest cursor to the buckets of every
    /// bucketed room: `slow` false, those whose last copy worked (one that
    /// fails moves to the slow lane); `slow` true, those whose last failed
    /// (one that works moves back). The first failure, after the rest.
    pub(crate) fn copy_lane<C: ConnectionLike>(&self, conn: &mut C, slow: bool) -> Result<()> {
        let mut failed = None;
        for room in self.rooms.values() {
            let (state, due) = {
                let copies = room.copies.lock().unwrap_or_else(|e| e.into_inner());
                let Some(state) = copies.latest.clone() else {
                    continue;
                };
                let copy_of = (state.cursor_ms, state.expired_below_ms);
                let due: Vec<usize> = (0..copies.copied.len())
                    .filter(|i| copies.failing.contains(i) == slow)
                    .filter(|i| copies.copied[*i] != Some(copy_of))
                    .collect();
                (state, due)
            };
            for index in due {
                let copied = room.room.copy_cursor_to(conn, &state, index);
                let mut copies = room.copies.lock().unwrap_or_else(|e| e.into_inner());
                match copied {
                    Ok(_) => {
                        copies.copied[index] = Some((state.cursor_ms, state.expired_below_ms));
                        copies.failing.remove(&index);
                    }
                    Err(error) => {
                        copies.failing.insert(index);
                        if slow {
                            // The connection may still owe that bucket's reply.
                            return Err(error);
                        }
                        failed.get_or_insert(error);
                    }
                }
            }
            let mut copies = room.copies.lock().unwrap_or_else(|e| e.into_inner());
            let copy_of = Some((state.cursor_ms, state.expired_below_ms));
            let through = (0..copies.copied.len())
                .all(|i| copies.failing.contains(&i) || copies.copied[i] == copy_of);
            if through {
                copies.copied_through = Some(state.cursor_ms);
            }
        }
        failed.map_or(Ok(()), Err)
    }

    /// Wait at most `limit` for a beat after the `seen`-th; the beats so far.
    pub(crate) fn wait_for_beat(&self, seen: u64, limit: std::time::Duration) -> u64 {
        let (count, beaten) = &self.beaten;
        let count = count.lock().unwrap_or_else(|e| e.into_inner());
        let (count, _) = beaten
            .wait_timeout_while(count, limit, |n| *n == seen)
            .unwrap_or_else(|e| e.into_inner());
        *count
    }

    /// Whether any room copies its cursor to buckets.
    pub(crate) fn copies_to_buckets(&self) -> bool {
        self.rooms.values().any(|room| room.room.copy_targets() > 0)
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
        let (count, beaten) = &self.beaten;
        *count.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        beaten.notify_all();
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
        let (entries, users, watermark) = {
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
            let users = std::mem::take(&mut counting.prequeue_users);
            counting.watermark_ms = watermark;
            (entries, users, watermark)
        };
        let (risk_seen, revoked_seen, seed_wanted) = {
            let mirror = self.read();
            (
                mirror.risk_version,
                mirror.revoked_count,
                self.room.settings.prequeue && mirror.seed.is_none(),
            )
        };
        let beat = Beat {
            instance,
            watermark_ms: (!leaving).then_some(watermark),
            lead: !leaving,
            prequeue_users: &users,
            entries: &entries,
            risk_seen,
            revoked_seen,
            seed_wanted,
        };
        match self.room.tick(conn, &beat) {
            Ok(Tick::Ok(state)) => {
                // The lease holder's state is what the copy lanes copy to a
                // bucketed item's buckets, where the buys read it.
                if state.leader && self.room.copy_targets() > 0 {
                    self.copies.lock().unwrap_or_else(|e| e.into_inner()).latest =
                        Some((*state).clone());
                }
                self.mirror(*state);
                Ok(())
            }
            Ok(other) => {
                self.unflush(&entries, users);
                anyhow::bail!(
                    "the room in Redis answered {other:?}: run `seckill preheat` with this campaign file"
                )
            }
            Err(error) => {
                // Counted again next beat (a reply lost after the flush ran
                // counts them twice: a slower cursor, never an early one).
                self.unflush(&entries, users);
                Err(error)
            }
        }
    }

    fn unflush(&self, entries: &[(i64, u64)], users: Vec<String>) {
        let mut counting = self.counting.lock().unwrap_or_else(|e| e.into_inner());
        for (bucket, n) in entries {
            *counting.unflushed.entry(*bucket).or_default() += n;
        }
        counting.prequeue_users.extend(users);
    }

    /// Keep what a beat answered.
    fn mirror(&self, mut state: TickState) {
        let mut mirror = self.mirror.write().unwrap_or_else(|e| e.into_inner());
        if let Some(entries) = state.risk.take() {
            mirror.risk = entries
                .into_iter()
                .filter_map(|(user, entry)| Some((user, risk_of(&entry)?)))
                .collect();
            mirror.risk_version = Some(state.risk_version);
        }
        if let Some(keys) = state.revoked_keys.take() {
            mirror.revoked_keys = keys;
            mirror.revoked_count = Some(state.revoked_count);
        }
        if let Some(seed) = state.seed.take() {
            match Seed::from_hex(&seed) {
                Ok(seed) => mirror.seed = Some(seed),
                Err(error) => log::line(
                    "serve",
                    format!("the pre-queue's seed of item {}: {error:#}", self.room.item),
                ),
            }
        }
        if state.prequeued.is_some() {
            mirror.prequeued = state.prequeued;
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
        if let Some(slowest) = state.slowest_watermark_ms {
            let grew = mirror
                .counted
                .last()
                .is_none_or(|(mark, _)| slowest > *mark);
            if grew {
                mirror.counted.push((slowest, state.arrived_total));
                if mirror.counted.len() > COUNTED_KEPT {
                    mirror.counted.drain(..COUNTED_KEPT / 10);
                }
            }
        }
        mirror.state = Some(state);
    }

    /// Where the cursor must be for `ticket` (see [`Tickets::admission_point`]).
    fn point(&self, ticket: &Ticket, mirror: &Mirror) -> Option<i64> {
        ticket.admission_point(self.room.starts_at_ms, mirror.seed.as_ref())
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
        let (mut cursor, paused) = mirror
            .state
            .as_ref()
            .map_or((i64::MIN, false), |s| (s.cursor_ms, s.paused));
        if mirror.state.as_ref().is_some_and(|s| s.leader) && self.room.copy_targets() > 0 {
            let copies = self.copies.lock().unwrap_or_else(|e| e.into_inner());
            cursor = cursor.min(copies.copied_through.unwrap_or(i64::MIN));
        }
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
            prequeue: false,
        };
        let risk = mirror.risk.get(&ticket.user).copied();
        if risk == Some(Risk::Block) {
            line.state = "blocked";
            return line;
        }
        let starts_at = self.room.starts_at_ms;
        line.prequeue = ticket.is_prequeue(starts_at);
        let Some(point) = self.point(ticket, &mirror) else {
            // A pre-queue ticket before the seed is revealed: the place is
            // drawn at the start.
            let start = starts_at.unwrap_or(now_ms);
            line.eta_ms = (start - now_ms).max(ticket::TICK_MS as i64);
            return line;
        };
        if point > cursor {
            let ahead = match (line.prequeue, starts_at) {
                (true, Some(starts)) => {
                    // The ranks not passed below this one, of the pre-queue's users.
                    let swept = cursor.max(starts - 1 - ticket::RANKS);
                    let share = (point - swept) as f64 / ticket::RANKS as f64;
                    (share * mirror.prequeued.unwrap_or(0) as f64) as i64
                }
                _ => self.ahead_of(&mirror, point),
            };
            line.ahead = ahead;
            line.position = ahead + 1;
            // The cursor trails the slowest instance by about two beats.
            let lag = match line.prequeue {
                true => 0,
                false => point + 2 * ticket::TICK_MS as i64 - now_ms,
            };
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
            .find(|(c, _)| *c >= point)
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

    /// About how many tickets arrived before `arrival_ms` and are not
    /// admitted yet: those counted by the time every instance had flushed
    /// past it (the last beat's count, for a later arrival), less those
    /// admitted, and this instance's own not flushed yet.
    fn ahead_of(&self, mirror: &Mirror, arrival_ms: i64) -> i64 {
        let Some(state) = &mirror.state else {
            return 0;
        };
        let at = mirror
            .counted
            .partition_point(|(mark, _)| *mark <= arrival_ms);
        let counted = mirror
            .counted
            .get(at)
            .map_or(state.arrived_total, |(_, counted)| *counted);
        let mut ahead = (counted - state.admitted_total).max(0);
        let counting = self.counting.lock().unwrap_or_else(|e| e.into_inner());
        ahead += counting
            .unflushed
            .range(..bucket_of(arrival_ms))
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
