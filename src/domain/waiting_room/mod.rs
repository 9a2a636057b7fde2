//! The waiting room (docs/waiting-room.md): fair admission in front of the
//! buy script. Shoppers join an item's room and get a position from a
//! counter in Redis, at Redis time; the buy script then sells only to those
//! the room admitted, in the same atomic call (`lua/lib/admission.lua`).
//!
//! - [`clock`]: the rate room's admission as a pure function of the Redis
//!   clock (the mirror of the Lua rule: no admitter process);
//! - [`shuffle`]: the pre-queue's seeded Fisher–Yates and its published seed;
//! - [`admit`]: what runs beside a sale — max_active's admitter, the
//!   pre-queue's shuffle at the start, a bucketed item's fan-out of
//!   admissions to each user's home bucket;
//! - [`registration`]: pre-registration with per-device and per-IP caps;
//! - [`admissions`]: a bucket's copy of the admissions (the item's shape
//!   tells the room which buckets it fans out to; the room never asks);
//! - [`ticket`]: a ticket room — signed tickets handed out by `serve`
//!   without Redis, and the room's beat (counts, watermarks, the cursor);
//! - here: [`Room`], one item's room, and the calls on it (set up, join,
//!   read, pause and resume for the operator and the kill switch, the
//!   admitter's heartbeat and whether a room waits on one, penalize).
//!
//! All of an item's room keys live in the item's own slot (its hash tag);
//! a bucketed item's admissions are copied to each user's home bucket by the
//! fan-out, so `lua/bucket_buy.lua` checks them in its own slot.
//!
//! May import: domain::slot, redis_client, model, util.

pub mod admissions;
pub mod admit;
pub mod clock;
pub mod registration;
pub mod shuffle;
pub mod ticket;

use anyhow::{Context, Result, bail};
use redis::{Commands, ConnectionLike};
use serde::Serialize;

use crate::domain::slot::{BuyReply, Outcome};
use crate::model::campaign::{Campaign, Item};
use crate::model::keys::{ItemKeys, RoomKeys};
use crate::model::layout::{BucketKeys, Layout};
use crate::model::waiting_room::{AdmissionMode, WaitingRoom};
use crate::redis_client::scripts::ScriptCall;
use crate::redis_client::scripts::bucket_copy::{self, BucketCopy};
pub use crate::redis_client::scripts::buy::AdmitterSilence;
use crate::redis_client::scripts::buy::Waiting;
use crate::redis_client::scripts::queue_join::{self, QueueJoin};
pub use crate::redis_client::scripts::queue_join::{JoinOutcome, JoinReply};
use crate::redis_client::scripts::queue_read::{self, QueueRead};
pub use crate::redis_client::scripts::queue_read::{RoomFigures, Standing, State};
use crate::redis_client::scripts::queue_setup::{self, QueueSetup, SetupStatus};
use crate::redis_client::scripts::{queue_clock, queue_penalize};
use crate::util::text::human_duration_ms;
use shuffle::Seed;

/// One item's waiting room: its settings and where its keys are.
#[derive(Debug, Clone)]
pub struct Room {
    pub item: String,
    pub settings: WaitingRoom,
    /// The room's keys, in the item's own slot (a bucketed item: its plain tag).
    pub(crate) room: RoomKeys,
    /// The buckets whose buy checks admissions in its own slot, so the room
    /// copies each admission to the user's home bucket there (the item's
    /// shape says which; none: the buy reads the room itself).
    pub(crate) buckets: Option<Layout>,
    /// The item's keys expire then (Unix ms), like every key of the sale.
    pub(crate) expire_at_ms: Option<i64>,
    /// The sale window (Unix ms), copied into the room for its scripts.
    pub(crate) starts_at_ms: Option<i64>,
    pub(crate) ends_at_ms: Option<i64>,
}

/// How `setup` treats settings already in Redis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Setup {
    /// Write them only when the room has none (before the stock is loaded).
    Create,
    /// Take them from the file (preheat applied the file's terms).
    Update,
}

/// An admitter that has not finished a pass for longer than this (or three
/// of its intervals, when that is longer) is not running: the room's turns
/// that come only through it stall. The same rule as `lua/lib/admitter_silent.lua`.
pub const ADMITTER_QUIET_MS: i64 = 10_000;

/// What preheat did to an item's room.
#[derive(Debug, Clone, Serialize)]
pub struct RoomPreheat {
    /// `created`, `kept`, `updated`, or `refused` (the mode or the pre-queue
    /// would change after users joined).
    pub status: &'static str,
    /// The settings as one line, now in Redis.
    pub config: String,
    /// SHA-256 of the pre-queue's shuffle seed (published now, the seed after the shuffle).
    pub seed_sha256: String,
    /// The room's turns come only through `seckill queue admit --loop`: why,
    /// and whether one runs ("this room needs ...; none has run yet").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub needs_admitter: Option<String>,
}

/// Who stops or restarts a room's admissions (`lua/queue_clock.lua`): the
/// operator (`queue pause|resume`) and the kill switch each hold a room
/// paused on their own; it resumes when the last lets go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    Pause,
    Resume,
    /// The kill switch went on: the room pauses with the sale.
    SwitchOn,
    /// The kill switch went off: the room resumes unless the operator holds it.
    SwitchOff,
}

impl Clock {
    fn action(self) -> &'static str {
        match self {
            Clock::Pause => "pause",
            Clock::Resume => "resume",
            Clock::SwitchOn => "switch_on",
            Clock::SwitchOff => "switch_off",
        }
    }
}

/// What a pause or resume did.
#[derive(Debug, Clone, Serialize)]
pub struct ClockChange {
    /// `paused`, `already_paused`, `resumed`, `still_paused` (the other
    /// holder keeps it paused), `not_paused`, `no_room`.
    pub status: String,
    /// Pauses in total so far.
    pub paused_ms: i64,
    /// Who holds the room paused now: `operator`, `switch`, both, or `""`.
    pub paused_by: String,
}

/// An entry of the operator's risk list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Penalty {
    /// The admission starts this many ms later.
    Delay(u64),
    /// Never admitted (and an admission already granted is taken back).
    Block,
    /// Off the list.
    Clear,
}

impl Room {
    /// The room of `item` under `prefix`, when it has one, fanning its
    /// admissions out to `buckets` when there are any.
    pub(crate) fn of(
        prefix: &str,
        campaign: &Campaign,
        item: &Item,
        buckets: Option<&Layout>,
    ) -> Option<Room> {
        let settings = item.waiting_room.clone()?;
        Some(Room {
            item: item.id.clone(),
            settings,
            room: ItemKeys::new(prefix, &campaign.id, &item.id).room(),
            buckets: buckets.cloned(),
            expire_at_ms: campaign.expire_at_ms(),
            starts_at_ms: campaign.starts_at_ms,
            ends_at_ms: campaign.ends_at_ms,
        })
    }

    /// Write the file's settings into Redis (preheat; see [`Setup`]). A new
    /// room gets a fresh shuffle seed, whose hash is public from now on.
    pub(crate) fn setup<C: ConnectionLike>(
        &self,
        conn: &mut C,
        mode: Setup,
    ) -> Result<RoomPreheat> {
        let s = &self.settings;
        let (count, per, max) = match s.mode {
            AdmissionMode::Rate { count, per_ms } | AdmissionMode::Ticket { count, per_ms } => {
                (count.to_string(), per_ms.to_string(), String::new())
            }
            AdmissionMode::MaxActive(n) => (String::new(), String::new(), n.to_string()),
        };
        let registration = s.registration;
        let seed = Seed::generate();
        let r = &self.room;
        let call = QueueSetup::<&str> {
            room: &r.room,
            queue: &r.queue,
            line: &r.line,
            registered: &r.registered,
            devices: &r.devices,
            ips: &r.ips,
            risk: &r.risk,
            admitted: &r.admitted,
            active: &r.active,
            shuffled: &r.shuffled,
            mode: match mode {
                Setup::Create => "create",
                Setup::Update => "update",
            },
            room_mode: s.mode_name(),
            rate_count: &count,
            rate_per_ms: &per,
            max_active: &max,
            ttl_ms: &s.admission_ttl.as_millis().to_string(),
            prequeue: if s.prequeue { "1" } else { "0" },
            registration: if registration.is_some() { "1" } else { "0" },
            reg_until_ms: &registration.map_or(String::new(), |r| r.until_ms.to_string()),
            per_device: &registration.map_or(0, |r| r.per_device).to_string(),
            per_ip: &registration.map_or(0, |r| r.per_ip).to_string(),
            config: &s.config_text(),
            seed: &seed.hex(),
            seed_sha256: &seed.sha256_hex(),
            expire_at_ms: &self.expire_at_ms.map_or(String::new(), |ms| ms.to_string()),
            starts_at_ms: &self.starts_at_ms.map_or(String::new(), |ms| ms.to_string()),
            ends_at_ms: &self.ends_at_ms.map_or(String::new(), |ms| ms.to_string()),
        };
        let (status, before) = call
            .invoke(conn)
            .map_err(anyhow::Error::from)
            .and_then(queue_setup::parse_reply)
            .with_context(|| format!("cannot set up the waiting room of item {}", self.item))?;
        let (figures, _) = self.read(conn, &[])?;
        Ok(RoomPreheat {
            status: match status {
                SetupStatus::Created => "created",
                SetupStatus::Kept => "kept",
                SetupStatus::Updated => "updated",
                SetupStatus::Refused => "refused",
            },
            config: match status {
                SetupStatus::Kept | SetupStatus::Refused => before,
                _ => s.config_text(),
            },
            needs_admitter: self.admitter_note(&figures),
            seed_sha256: figures.seed_sha256,
        })
    }

    /// Why this room's turns come only through `seckill queue admit --loop`
    /// as `figures` show it now; `None` when nothing is left for one to do.
    pub fn needs_admitter(&self, figures: &RoomFigures) -> Option<&'static str> {
        // A ticket room's cursor (and its copies to buckets) moves with the
        // beats of `serve`, its pre-queue too: no admitter.
        if self.settings.is_ticket() {
            None
        } else if self.buckets.is_some() {
            Some("a bucketed item's admissions reach its buckets only through it")
        } else if matches!(self.settings.mode, AdmissionMode::MaxActive(_)) {
            Some("max_active admits only through it")
        } else if self.settings.prequeue && !figures.shuffled {
            Some("it shuffles the pre-queue at starts_at, and the room stays closed until then")
        } else {
            None
        }
    }

    /// The admitter's silence when this room needs one and none finished a
    /// pass lately ([`ADMITTER_QUIET_MS`], or three of its intervals).
    pub fn admitter_stalled(&self, figures: &RoomFigures) -> Option<AdmitterSilence> {
        self.needs_admitter(figures)?;
        let Some(at) = figures.admitter_at_ms else {
            return Some(AdmitterSilence { silent_ms: None });
        };
        let silent = figures.now_ms - at;
        (silent > ADMITTER_QUIET_MS.max(3 * figures.admitter_every_ms)).then_some(AdmitterSilence {
            silent_ms: Some(silent),
        })
    }

    /// What preheat and `queue status` say about the admitter this room needs, if any.
    pub fn admitter_note(&self, figures: &RoomFigures) -> Option<String> {
        let why = self.needs_admitter(figures)?;
        let since = match (self.admitter_stalled(figures), figures.admitter_at_ms) {
            (
                Some(AdmitterSilence {
                    silent_ms: Some(ms),
                }),
                _,
            ) => format!("none has run for {}", human_duration_ms(ms)),
            (Some(_), _) | (None, None) => "none has run yet".to_string(),
            (None, Some(at)) => format!(
                "one finished a pass {} ago",
                human_duration_ms(figures.now_ms - at)
            ),
        };
        Some(format!(
            "this room needs `seckill queue admit --loop` ({why}); {since}"
        ))
    }

    /// A pass of `seckill queue admit` finished: the heartbeat (Redis time,
    /// and the pass's interval) that `preheat`, the buy and `status` read.
    pub fn beat<C: ConnectionLike>(&self, conn: &mut C, every: std::time::Duration) -> Result<()> {
        queue_clock::QueueClock::<&str> {
            room: self.room.room.as_str(),
            action: "beat",
            every_ms: &every.as_millis().to_string(),
        }
        .invoke(conn)
        .map_err(anyhow::Error::from)
        .and_then(queue_clock::parse_reply)
        .with_context(|| {
            format!(
                "cannot record the admitter's pass in the room of item {}",
                self.item
            )
        })?;
        Ok(())
    }

    /// `user` joins (a repeat join returns the same position).
    pub fn join<C: ConnectionLike>(&self, conn: &mut C, user: &str) -> Result<JoinReply> {
        let r = &self.room;
        QueueJoin::<&str> {
            room: &r.room,
            queue: &r.queue,
            line: &r.line,
            registered: &r.registered,
            risk: &r.risk,
            admitted: &r.admitted,
            shuffled: &r.shuffled,
            user,
        }
        .invoke(conn)
        .map_err(anyhow::Error::from)
        .and_then(queue_join::parse_reply)
        .with_context(|| {
            format!(
                "cannot join the waiting room of item {} for {user}",
                self.item
            )
        })
    }

    /// The room's figures and where each of `users` stands, at one instant.
    pub fn read<C: ConnectionLike>(
        &self,
        conn: &mut C,
        users: &[&str],
    ) -> Result<(RoomFigures, Vec<Standing>)> {
        let reply = self.read_call(users).invoke(conn);
        self.read_reply(reply, users)
    }

    fn read_call<'u>(&'u self, users: &[&'u str]) -> QueueRead<&'u str> {
        let r = &self.room;
        QueueRead::<&str> {
            room: &r.room,
            queue: &r.queue,
            registered: &r.registered,
            risk: &r.risk,
            admitted: &r.admitted,
            shuffled: &r.shuffled,
            active: &r.active,
            user: users.to_vec(),
        }
    }

    fn read_reply(
        &self,
        reply: redis::RedisResult<redis::Value>,
        users: &[&str],
    ) -> Result<(RoomFigures, Vec<Standing>)> {
        reply
            .map_err(anyhow::Error::from)
            .and_then(|reply| queue_read::parse_reply(reply, users))
            .with_context(|| format!("cannot read the waiting room of item {}", self.item))
    }

    /// Pause or resume the room, for the operator or the kill switch.
    pub fn clock<C: ConnectionLike>(&self, conn: &mut C, change: Clock) -> Result<ClockChange> {
        let action = change.action();
        let (status, paused_ms, _, paused_by) = queue_clock::QueueClock::<&str> {
            room: self.room.room.as_str(),
            action,
            every_ms: "",
        }
        .invoke(conn)
        .map_err(anyhow::Error::from)
        .and_then(queue_clock::parse_reply)
        .with_context(|| format!("cannot {action} the waiting room of item {}", self.item))?;
        Ok(ClockChange {
            status,
            paused_ms,
            paused_by,
        })
    }

    /// Put `user` on the risk list (or off it). A block also takes back an
    /// admission a bucketed item already fanned out to the user's home bucket.
    /// Returns the status and the entry it replaced.
    pub fn penalize<C: ConnectionLike>(
        &self,
        conn: &mut C,
        user: &str,
        penalty: Penalty,
    ) -> Result<(String, String)> {
        let (action, delay) = match penalty {
            Penalty::Delay(ms) => ("delay", ms.to_string()),
            Penalty::Block => ("block", String::new()),
            Penalty::Clear => ("clear", String::new()),
        };
        let r = &self.room;
        let (status, previous, now_ms) = queue_penalize::QueuePenalize::<&str> {
            room: r.room.as_str(),
            risk: &r.risk,
            admitted: &r.admitted,
            active: &r.active,
            user,
            action,
            delay_ms: &delay,
        }
        .invoke(conn)
        .map_err(anyhow::Error::from)
        .and_then(queue_penalize::parse_reply)
        .with_context(|| format!("cannot penalize {user} in the room of item {}", self.item))?;
        if status == "no_room" {
            bail!(
                "item {} has no waiting room in Redis: run `seckill preheat` first",
                self.item
            );
        }
        match (&self.buckets, self.settings.is_ticket()) {
            // A ticket room's buy checks the risk entry in the user's home bucket.
            (Some(copies), true) => {
                let entry = match penalty {
                    Penalty::Block => "block".to_string(),
                    Penalty::Delay(ms) => format!("delay {ms} {now_ms}"),
                    Penalty::Clear => String::new(),
                };
                self.copy_to_bucket(conn, &copies.home(user), "risk", user, &entry)?;
            }
            (Some(copies), false) if penalty == Penalty::Block => {
                admissions::revoke(conn, &copies.home(user), user)?;
            }
            _ => {}
        }
        Ok((status, previous))
    }

    /// Copy a ticket room's risk entry of `subject` (`action` risk) or its
    /// revoked key `subject` (`action` revoke) to `bucket`, with the bucket
    /// room's counter its buy reads first, in one call (`lua/bucket_copy.lua`):
    /// an entry whose count was lost would never be read. Returns the
    /// script's status (written, cleared, revoked, already_revoked).
    pub(crate) fn copy_to_bucket<C: ConnectionLike>(
        &self,
        conn: &mut C,
        bucket: &BucketKeys,
        action: &str,
        subject: &str,
        entry: &str,
    ) -> Result<String> {
        let room = bucket.keys.room();
        let (status, _) = BucketCopy {
            room: room.room,
            risk: room.risk,
            revoked: room.revoked,
            action: action.to_string(),
            subject: subject.to_string(),
            entry: entry.to_string(),
            expire_at_ms: self.expire_at_ms.map_or(String::new(), |ms| ms.to_string()),
        }
        .invoke(conn)
        .map_err(anyhow::Error::from)
        .and_then(bucket_copy::parse_reply)
        .with_context(|| {
            let what = if action == "revoke" {
                format!("the revoked key {subject}")
            } else {
                format!("the risk entry of {subject}")
            };
            format!(
                "cannot copy {what} of item {} to bucket {}",
                self.item, bucket.bucket
            )
        })?;
        Ok(status)
    }
}

/// A bucketed item's refused buy made precise from where the user stands in
/// the room (`figures`, `standing`: one read of it): the home bucket only
/// holds the admissions fanned out to it, so "none here" may be not
/// registered, not queued, waiting (with a position and a wait), admitted but
/// not carried yet (the fan-out is on its way — or stalled: no admitter
/// runs, and the answer says so), or expired; and a bucket's expired
/// admission may be an old turn of a user who joined again since (waiting).
pub(crate) fn refine(
    room: &Room,
    reply: &mut BuyReply,
    figures: &RoomFigures,
    standing: &Standing,
) {
    if reply.outcome == Outcome::AdmissionExpired {
        // The bucket's copy ran out; only a later turn (the user joined
        // again) changes the answer. A pause does not lengthen the copies
        // already carried (docs/waiting-room.md, "Limits").
        let ran_out = reply.waiting.as_ref().and_then(|w| w.admitted_until_ms);
        let later_turn = match standing.state {
            State::Waiting | State::Prequeue => true,
            State::Admitted => standing
                .from_ms
                .zip(ran_out)
                .is_some_and(|(from, end)| from >= end),
            _ => false,
        };
        if !later_turn {
            return;
        }
    }
    let waiting = Waiting {
        position: standing.position,
        serving: standing.serving,
        eta_ms: if standing.state == State::Admitted {
            0
        } else {
            standing.eta_ms
        },
        admitted_from_ms: None,
        admitted_until_ms: None,
        needs_admitter: if standing.state == State::Expired {
            None
        } else {
            room.admitter_stalled(figures)
        },
    };
    let (outcome, waiting) = match standing.state {
        State::NotRegistered => (Outcome::NotRegistered, None),
        State::NotQueued => (Outcome::NotQueued, None),
        State::Expired => (
            Outcome::AdmissionExpired,
            Some(Waiting {
                admitted_from_ms: standing.from_ms,
                admitted_until_ms: standing.to_ms,
                ..waiting
            }),
        ),
        State::Admitted | State::Waiting | State::Prequeue => (Outcome::NotAdmitted, Some(waiting)),
    };
    reply.outcome = outcome;
    reply.waiting = waiting;
}

/// Delete every waiting-room key of `item`: those in its own slot (`keys`)
/// and the admissions copied to each of `buckets` (for `init`, whether or
/// not the file still has a room).
pub(crate) fn delete_keys<C: ConnectionLike>(
    conn: &mut C,
    keys: &ItemKeys,
    buckets: Option<&Layout>,
) -> Result<u64> {
    let mut doomed: Vec<String> = keys.room().all().iter().map(|k| k.to_string()).collect();
    for bucket in buckets.map(Layout::all).unwrap_or_default() {
        let room = bucket.keys.room();
        doomed.extend([room.admissions, room.admission_count]);
    }
    conn.del(&doomed)
        .with_context(|| format!("cannot delete the waiting room of {}", keys.base))
}
