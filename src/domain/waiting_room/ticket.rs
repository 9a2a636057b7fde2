//! A ticket room (docs/waiting-room.md, "Ticket mode"): the signed ticket a
//! `serve` instance hands a shopper with no Redis call, the keys that sign
//! it, and the room's beat in Redis (`lua/room_tick.lua`).
//!
//! A ticket says who arrived when: campaign, item, user, `arrival_ms` (the
//! instance's clock corrected to Redis `TIME`, never the client's), the
//! instance, its sequence number and the signing key's id, sealed by an
//! HMAC-SHA256 tag (`ring`, truncated to 128 bits). The key of id `k` is
//! derived from the campaign secret (`--room-key-file`, never in Redis: a
//! buyer credential can read Redis) as HMAC(secret, "seckill room key" ‖
//! campaign ‖ k), so every instance verifies every other's tickets and a
//! leaked key is revoked by its id alone (`seckill queue revoke-key`).
//!
//! Text form: `t1.<payload>.<tag>`, both base64url without padding; the
//! payload is compact JSON.

use std::path::Path;

use anyhow::{Context, Result, bail};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use redis::ConnectionLike;
use ring::hmac;
use serde::{Deserialize, Serialize};

use super::Room;
use super::shuffle::Seed;
use crate::redis_client::scripts::ScriptCall;
use crate::redis_client::scripts::bucket_cursor::{self, BucketCursor};
use crate::redis_client::scripts::room_revoke::{self, RoomRevoke};
use crate::redis_client::scripts::room_tick::{self, RoomTick};
pub use crate::redis_client::scripts::room_tick::{Tick, TickState};

/// The fewest bytes a campaign secret may have.
pub const MIN_SECRET_BYTES: usize = 32;
/// Bytes of the HMAC tag a ticket carries.
const TAG_BYTES: usize = 16;
/// A ticket's text starts with this (its format's version).
const VERSION: &str = "t1";
/// Longest ticket text accepted (a header, not a body).
pub const MAX_TICKET_BYTES: usize = 1024;
/// Arrivals are counted per bucket of this many ms.
pub const BUCKET_MS: i64 = 10;
/// How often an instance beats (flushes, and moves the cursor under the lease).
pub const TICK_MS: u64 = 100;
/// The lease on the cursor lasts this long unless renewed.
pub const LEASE_MS: u64 = 500;
/// A mark (an instance's watermark) not renewed for this long is dropped,
/// and the cursor goes on without that instance.
pub const DEAD_AFTER_MS: u64 = 1_000;

/// The campaign secret every instance derives its signing keys from.
#[derive(Clone)]
pub struct RoomSecret(Vec<u8>);

impl std::fmt::Debug for RoomSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RoomSecret({} bytes)", self.0.len())
    }
}

impl RoomSecret {
    /// Read the secret from `path` (surrounding whitespace trimmed).
    pub fn read(path: &Path) -> Result<RoomSecret> {
        let bytes = std::fs::read(path)
            .with_context(|| format!("cannot read the room key file {}", path.display()))?;
        let secret = bytes.trim_ascii().to_vec();
        if secret.len() < MIN_SECRET_BYTES {
            bail!(
                "the room key file {} holds {} bytes; a ticket room's secret needs at least \
                 {MIN_SECRET_BYTES} (make one with `head -c 32 /dev/urandom | base64 > {}`)",
                path.display(),
                secret.len(),
                path.display()
            );
        }
        Ok(RoomSecret(secret))
    }

    /// The signing key of id `key_id` for `campaign`.
    pub fn key(&self, campaign: &str, key_id: &str) -> hmac::Key {
        let master = hmac::Key::new(hmac::HMAC_SHA256, &self.0);
        let mut label = b"seckill room key\0".to_vec();
        label.extend_from_slice(campaign.as_bytes());
        label.push(0);
        label.extend_from_slice(key_id.as_bytes());
        hmac::Key::new(hmac::HMAC_SHA256, hmac::sign(&master, &label).as_ref())
    }
}

/// What a ticket says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ticket {
    #[serde(rename = "c")]
    pub campaign: String,
    #[serde(rename = "i")]
    pub item: String,
    #[serde(rename = "u")]
    pub user: String,
    /// Arrival on the Redis clock, Unix ms.
    #[serde(rename = "a")]
    pub arrival_ms: i64,
    /// The instance that handed it out.
    #[serde(rename = "n")]
    pub instance: String,
    /// The instance's count of tickets before this one.
    #[serde(rename = "s")]
    pub seq: u64,
    /// The id of the key that signed it.
    #[serde(rename = "k")]
    pub key_id: String,
}

/// Why a ticket is refused (every one answers `not_queued`: join again).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Not a ticket's text (or too long).
    Malformed,
    /// The tag does not match: forged, or altered.
    BadTag,
    /// Signed for another campaign, item or user.
    NotYours,
    /// Its key was revoked.
    Revoked,
}

impl Refused {
    pub fn says(self) -> &'static str {
        match self {
            Refused::Malformed => "the ticket is not one this sale hands out",
            Refused::BadTag => "the ticket's signature does not match: forged or altered",
            Refused::NotYours => "the ticket was handed to another user, item or campaign",
            Refused::Revoked => "the ticket's signing key was revoked",
        }
    }
}

impl Ticket {
    /// The ticket's text, signed with `key`.
    pub fn sign(&self, key: &hmac::Key) -> String {
        let payload = serde_json::to_vec(self).unwrap_or_default();
        let tag = hmac::sign(key, &payload);
        format!(
            "{VERSION}.{}.{}",
            URL_SAFE_NO_PAD.encode(&payload),
            URL_SAFE_NO_PAD.encode(&tag.as_ref()[..TAG_BYTES])
        )
    }

    /// The ticket `text`, when its tag is right under the key its id names
    /// (`secret`), it was handed to `user` for `campaign`'s `item`, and its
    /// key is not in `revoked`.
    pub fn verify(
        text: &str,
        secret: &RoomSecret,
        campaign: &str,
        item: &str,
        user: &str,
        revoked: &[String],
    ) -> Result<Ticket, Refused> {
        if text.len() > MAX_TICKET_BYTES {
            return Err(Refused::Malformed);
        }
        let mut parts = text.trim().split('.');
        let (Some(VERSION), Some(payload), Some(tag), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(Refused::Malformed);
        };
        let payload = URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| Refused::Malformed)?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| Refused::Malformed)?;
        let ticket: Ticket = serde_json::from_slice(&payload).map_err(|_| Refused::Malformed)?;
        if tag.len() != TAG_BYTES {
            return Err(Refused::BadTag);
        }
        let key = secret.key(&ticket.campaign, &ticket.key_id);
        let expected = hmac::sign(&key, &payload);
        // ring's verify wants the whole tag; the truncated one is compared in constant time here.
        let mut difference = 0u8;
        for (a, b) in expected.as_ref()[..TAG_BYTES].iter().zip(&tag) {
            difference |= a ^ b;
        }
        if difference != 0 {
            return Err(Refused::BadTag);
        }
        if ticket.campaign != campaign || ticket.item != item || ticket.user != user {
            return Err(Refused::NotYours);
        }
        if revoked.contains(&ticket.key_id) {
            return Err(Refused::Revoked);
        }
        Ok(ticket)
    }
}

/// The first ms of the bucket `ms` falls in.
pub fn bucket_of(ms: i64) -> i64 {
    ms.div_euclid(BUCKET_MS) * BUCKET_MS
}

/// The pre-queue's ranks: 48 bits, placed on the cursor's line just below
/// `starts_at` ([`prequeue_place`]), so the cursor sweeps them first.
pub const RANKS: i64 = 1 << 48;

/// A pre-queued user's rank: the first 48 bits (big-endian) of
/// HMAC-SHA256(key = the room's 32-byte seed, message = the user id). Per
/// user, so three devices get one rank; unknown to anyone until the seed is
/// revealed at the start, and checkable by anyone after
/// (docs/waiting-room.md, "Pre-queue in a ticket room").
pub fn prequeue_rank(seed: &Seed, user: &str) -> i64 {
    let key = hmac::Key::new(hmac::HMAC_SHA256, &seed.0);
    let tag = hmac::sign(&key, user.as_bytes());
    tag.as_ref()[..6]
        .iter()
        .fold(0i64, |rank, byte| (rank << 8) | i64::from(*byte))
}

/// Where rank `rank` stands on the cursor's line: `starts_at − 2^48 + rank`,
/// below every arrival of the sale itself.
pub fn prequeue_place(starts_at_ms: i64, rank: i64) -> i64 {
    starts_at_ms - RANKS + rank
}

impl Ticket {
    /// Handed out before `starts_at`: a pre-queue ticket, admitted by rank.
    pub fn is_prequeue(&self, starts_at_ms: Option<i64>) -> bool {
        starts_at_ms.is_some_and(|starts| self.arrival_ms < starts)
    }

    /// Where the cursor must be for this ticket: its arrival, or for a
    /// pre-queue ticket its rank's place (`None`: the seed is not revealed
    /// yet, so nobody knows it: not admitted).
    pub fn admission_point(&self, starts_at_ms: Option<i64>, seed: Option<&Seed>) -> Option<i64> {
        match (self.is_prequeue(starts_at_ms), starts_at_ms) {
            (true, Some(starts)) => {
                seed.map(|seed| prequeue_place(starts, prequeue_rank(seed, &self.user)))
            }
            _ => Some(self.arrival_ms),
        }
    }
}

/// One beat's input from an instance.
#[derive(Debug, Clone)]
pub struct Beat<'a> {
    pub instance: &'a str,
    /// Every arrival of this instance below it is in `entries` (or
    /// `prequeue_users`) or was flushed before; `None`: count once and keep
    /// no mark.
    pub watermark_ms: Option<i64>,
    /// Take or keep the cursor's lease.
    pub lead: bool,
    /// The users of the pre-queue tickets handed out since the last beat.
    pub prequeue_users: &'a [String],
    /// (bucket's first ms, tickets in it), each at least 1.
    pub entries: &'a [(i64, u64)],
    /// The risk list's version the caller mirrors (`None`: none yet); the
    /// list comes back whole when Redis holds another.
    pub risk_seen: Option<i64>,
    /// The count of revoked keys the caller mirrors (`None`: none yet).
    pub revoked_seen: Option<i64>,
    /// Ask for the pre-queue's seed (returned once the sale started).
    pub seed_wanted: bool,
}

impl Room {
    /// One beat of this ticket room (`lua/room_tick.lua`).
    pub fn tick<C: ConnectionLike>(&self, conn: &mut C, beat: &Beat) -> Result<Tick> {
        let r = &self.room;
        let entries = beat
            .entries
            .iter()
            .map(|(bucket, n)| format!("{bucket} {n}"))
            .collect::<Vec<_>>()
            .join(" ");
        RoomTick {
            room: r.room.clone(),
            arrivals: r.arrivals.clone(),
            arrival_counts: r.arrival_counts.clone(),
            marks: r.marks.clone(),
            passes: r.passes.clone(),
            risk: r.risk.clone(),
            revoked: r.revoked.clone(),
            prequeued: r.prequeued.clone(),
            instance: beat.instance.to_string(),
            watermark_ms: beat.watermark_ms.map_or(String::new(), |ms| ms.to_string()),
            lease_ms: if beat.lead { LEASE_MS } else { 0 }.to_string(),
            dead_after_ms: DEAD_AFTER_MS.to_string(),
            risk_seen: beat.risk_seen.unwrap_or(-1).to_string(),
            revoked_seen: beat.revoked_seen.unwrap_or(-1).to_string(),
            seed_wanted: u8::from(beat.seed_wanted).to_string(),
            entries,
            user: beat.prequeue_users.to_vec(),
        }
        .invoke(conn)
        .map_err(anyhow::Error::from)
        .and_then(room_tick::parse_reply)
        .with_context(|| format!("cannot beat the ticket room of item {}", self.item))
    }

    /// How many buckets take copies of the cursor (0: a plain item).
    pub fn copy_targets(&self) -> usize {
        // A count, not the keys: a poll asks it (`Layout::all` derives every tag).
        self.buckets.as_ref().map_or(0, |b| b.buckets as usize)
    }

    /// A bucketed item: copy the cursor (as a beat left it: `cursor_ms`,
    /// reached at `now_ms`, and when admissions run out) to its bucket
    /// `index` (of [`Room::copy_targets`]), whose buy reads it there
    /// (`lua/bucket_cursor.lua`); whether the copy moved (a copy never goes
    /// back: a late or repeated one changes nothing).
    pub fn copy_cursor_to<C: ConnectionLike>(
        &self,
        conn: &mut C,
        state: &TickState,
        index: usize,
    ) -> Result<bool> {
        let Some(bucket) = self
            .buckets
            .as_ref()
            .filter(|_| index < self.copy_targets())
            .map(|b| b.bucket(index as u32))
        else {
            bail!(
                "item {} has no bucket {index} to copy its cursor to",
                self.item
            );
        };
        let room = bucket.keys.room();
        let (status, _) = BucketCursor {
            room: room.room,
            passes: room.passes,
            cursor_ms: state.cursor_ms.to_string(),
            at_ms: state.now_ms.to_string(),
            ttl_ms: self.settings.admission_ttl.as_millis().to_string(),
            expire_at_ms: self.expire_at_ms.map_or(String::new(), |ms| ms.to_string()),
            expired_below_ms: state
                .expired_below_ms
                .map_or(String::new(), |ms| ms.to_string()),
            expires_next_at_ms: state
                .expires_next_at_ms
                .map_or(String::new(), |ms| ms.to_string()),
        }
        .invoke(conn)
        .map_err(anyhow::Error::from)
        .and_then(bucket_cursor::parse_reply)
        .with_context(|| {
            format!(
                "cannot copy the cursor of item {} to bucket {}",
                self.item, bucket.bucket
            )
        })?;
        Ok(status == "copied")
    }

    /// The pre-queue's seed, revealed: once the sale started on the Redis
    /// clock (`None` before, or without a pre-queue).
    pub fn revealed_seed<C: ConnectionLike>(&self, conn: &mut C) -> Result<Option<Seed>> {
        let Some(starts) = self.starts_at_ms.filter(|_| self.settings.prequeue) else {
            return Ok(None);
        };
        if crate::domain::slot::redis_now_ms(conn)? < starts {
            return Ok(None);
        }
        let key = &self.room.room;
        let seed: Option<String> = redis::cmd("HGET")
            .arg(key)
            .arg("seed")
            .query(conn)
            .with_context(|| format!("cannot read the pre-queue's seed in {key}"))?;
        seed.map(|text| Seed::from_hex(&text).with_context(|| format!("{key}: seed")))
            .transpose()
    }

    /// Revoke the signing key `key_id` in this ticket room; the status
    /// (`revoked`, `already_revoked`, `no_room`, `not_ticket`) and the list after.
    pub fn revoke_key<C: ConnectionLike>(
        &self,
        conn: &mut C,
        key_id: &str,
    ) -> Result<(String, String)> {
        RoomRevoke {
            room: self.room.room.clone(),
            revoked: self.room.revoked.clone(),
            key_id: key_id.to_string(),
        }
        .invoke(conn)
        .map_err(anyhow::Error::from)
        .and_then(room_revoke::parse_reply)
        .with_context(|| {
            format!(
                "cannot revoke key {key_id} in the room of item {}",
                self.item
            )
        })
        .and_then(|revoked| {
            // A bucketed item's buys check the copy in their home bucket;
            // a repeat copies again what a call cut short left out.
            let in_room = matches!(revoked.0.as_str(), "revoked" | "already_revoked");
            for bucket in self
                .buckets
                .iter()
                .filter(|_| in_room)
                .flat_map(|b| b.all())
            {
                self.copy_to_bucket(conn, &bucket, "revoke", key_id, "")?;
            }
            Ok(revoked)
        })
    }
}

/// A ticket room as `seckill queue status` shows it (read only).
#[derive(Debug, Clone, Serialize)]
pub struct TicketFigures {
    /// Admitted ⇔ arrival at or before this (Unix ms, Redis clock).
    pub cursor_ms: Option<i64>,
    /// How far the cursor trails Redis's clock now, ms.
    pub cursor_lag_ms: Option<i64>,
    pub arrived_total: i64,
    pub admitted_total: i64,
    /// Tickets counted after the cursor had passed them (their instance was
    /// dropped as dead and came back): admitted beyond the rate.
    pub late_total: i64,
    /// Counted, not passed yet.
    pub pending_total: i64,
    /// Instances whose marks are alive (beat within the last second).
    pub live_instances: u64,
    /// The instance holding the cursor's lease, while it holds it.
    pub leader: Option<String>,
    pub revoked_keys: Vec<String>,
    /// A pre-queue: its users (PFCOUNT, about ±1%), how much of their ranks
    /// the cursor swept (percent), and the seed once the sale started (its
    /// SHA-256 was published at preheat).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prequeued: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prequeue_swept_percent: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<String>,
}

/// A ticket handed out at the command line (`seckill queue join`).
#[derive(Debug, Clone, Serialize)]
pub struct Issued {
    pub user: String,
    pub ticket: String,
    pub arrival_ms: i64,
}

impl Room {
    /// The ticket room's figures now (`None`: not in Redis).
    pub fn ticket_figures<C: ConnectionLike>(&self, conn: &mut C) -> Result<Option<TicketFigures>> {
        let key = &self.room.room;
        let int = |v: &Option<String>, what: &str| -> Result<Option<i64>> {
            v.as_deref()
                .filter(|t| !t.is_empty())
                .map(|t| {
                    t.parse::<i64>()
                        .with_context(|| format!("{key}: {what} holds {t:?}, not an integer"))
                })
                .transpose()
        };
        let values: Vec<Option<String>> = redis::cmd("HMGET")
            .arg(key)
            .arg(&[
                "mode",
                "cursor_ms",
                "arrived_total",
                "admitted_total",
                "late_total",
                "lease_holder",
                "lease_until_ms",
                "prequeue",
                "starts_at_ms",
                "seed",
            ])
            .query(conn)
            .with_context(|| format!("cannot read {key}"))?;
        if values[0].is_none() {
            return Ok(None);
        }
        let now = crate::domain::slot::redis_now_ms(conn)?;
        let marks: Vec<(String, String)> = redis::cmd("HGETALL")
            .arg(&self.room.marks)
            .query(conn)
            .with_context(|| format!("cannot read {}", self.room.marks))?;
        let live = marks
            .iter()
            .filter(|(_, text)| {
                text.split(' ')
                    .nth(1)
                    .and_then(|seen| seen.parse::<i64>().ok())
                    .is_some_and(|seen| now - seen <= DEAD_AFTER_MS as i64)
            })
            .count() as u64;
        let cursor = int(&values[1], "cursor_ms")?;
        let arrived = int(&values[2], "arrived_total")?.unwrap_or(0);
        let admitted = int(&values[3], "admitted_total")?.unwrap_or(0);
        let lease_until = int(&values[6], "lease_until_ms")?;
        let mut revoked: Vec<String> =
            redis::cmd("SMEMBERS")
                .arg(&self.room.revoked)
                .query(conn)
                .with_context(|| format!("cannot read {}", self.room.revoked))?;
        revoked.sort();
        let starts_at = int(&values[8], "starts_at_ms")?;
        let prequeued = match values[7].as_deref() {
            Some("1") => Some(
                redis::cmd("PFCOUNT")
                    .arg(&self.room.prequeued)
                    .query::<i64>(conn)
                    .with_context(|| format!("cannot read {}", self.room.prequeued))?,
            ),
            _ => None,
        };
        let swept = match (prequeued, starts_at, cursor) {
            (Some(_), Some(starts), Some(c)) => {
                let done = (c - (starts - 1 - RANKS)).clamp(0, RANKS);
                Some((done as f64 * 100.0 / RANKS as f64 * 10.0).round() / 10.0)
            }
            _ => None,
        };
        let started = starts_at.is_none_or(|starts| now >= starts);
        Ok(Some(TicketFigures {
            cursor_ms: cursor,
            cursor_lag_ms: cursor
                .filter(|_| swept.is_none_or(|done| done >= 100.0))
                .map(|c| now - c),
            arrived_total: arrived,
            admitted_total: admitted,
            late_total: int(&values[4], "late_total")?.unwrap_or(0),
            pending_total: arrived - admitted,
            live_instances: live,
            leader: values[5]
                .clone()
                .filter(|_| lease_until.is_some_and(|until| until >= now)),
            revoked_keys: revoked,
            prequeued,
            prequeue_swept_percent: swept,
            seed: values[9].clone().filter(|_| prequeued.is_some() && started),
        }))
    }

    /// Hand `users` a ticket each at the command line: arrival now on the
    /// Redis clock, counted at once in one beat that keeps no mark (the
    /// cursor moves while a `serve` instance beats), signed as `key_id`.
    pub fn join_once<C: ConnectionLike>(
        &self,
        conn: &mut C,
        secret: &RoomSecret,
        campaign: &str,
        key_id: &str,
        users: &[String],
    ) -> Result<Vec<Issued>> {
        let now = crate::domain::slot::redis_now_ms(conn)?;
        let early = self.starts_at_ms.filter(|starts| now < *starts);
        if let Some(starts) = early
            && !self.settings.prequeue
        {
            bail!(
                "the sale of item {} starts at {}; its ticket room has no pre-queue, so tickets \
                 are handed out from then on",
                self.item,
                crate::util::text::time_or_dash(Some(starts))
            );
        }
        // Before the start (a pre-queue): the users are counted, not the time.
        let (entries, prequeue_users) = match early {
            Some(_) => (Vec::new(), users),
            None => (vec![(bucket_of(now), users.len() as u64)], &[][..]),
        };
        let beat = Beat {
            instance: key_id,
            watermark_ms: None,
            lead: false,
            prequeue_users,
            entries: &entries,
            risk_seen: None,
            revoked_seen: None,
            seed_wanted: false,
        };
        match self.tick(conn, &beat)? {
            Tick::Ok(_) => {}
            Tick::NoRoom => bail!(
                "item {} has no waiting room in Redis: run `seckill preheat` first",
                self.item
            ),
            Tick::NotTicket => bail!(
                "the waiting room of item {} in Redis is not a ticket room: run `seckill preheat` \
                 with this campaign file",
                self.item
            ),
        }
        let key = secret.key(campaign, key_id);
        Ok(users
            .iter()
            .enumerate()
            .map(|(seq, user)| Issued {
                user: user.clone(),
                ticket: Ticket {
                    campaign: campaign.to_string(),
                    item: self.item.clone(),
                    user: user.clone(),
                    arrival_ms: now,
                    instance: key_id.to_string(),
                    seq: seq as u64,
                    key_id: key_id.to_string(),
                }
                .sign(&key),
                arrival_ms: now,
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret() -> RoomSecret {
        RoomSecret(b"0123456789abcdef0123456789abcdef".to_vec())
    }

    fn ticket() -> Ticket {
        Ticket {
            campaign: "c".into(),
            item: "2001".into(),
            user: "alice".into(),
            arrival_ms: 1_796_000_000_123,
            instance: "i1".into(),
            seq: 7,
            key_id: "i1".into(),
        }
    }

    #[test]
    fn a_signed_ticket_verifies_for_its_user_only() {
        let s = secret();
        let text = ticket().sign(&s.key("c", "i1"));
        assert!(text.starts_with("t1."));
        assert_eq!(
            Ticket::verify(&text, &s, "c", "2001", "alice", &[]),
            Ok(ticket())
        );
        assert_eq!(
            Ticket::verify(&text, &s, "c", "2001", "bob", &[]),
            Err(Refused::NotYours)
        );
        assert_eq!(
            Ticket::verify(&text, &s, "c", "2002", "alice", &[]),
            Err(Refused::NotYours)
        );
        assert_eq!(
            Ticket::verify(&text, &s, "c", "2001", "alice", &["i1".into()]),
            Err(Refused::Revoked)
        );
    }

    #[test]
    fn forged_and_altered_tickets_are_refused() {
        let s = secret();
        let text = ticket().sign(&s.key("c", "i1"));
        // Signed with another secret.
        let other = RoomSecret(b"another secret of at least 32 bytes!".to_vec());
        let forged = ticket().sign(&other.key("c", "i1"));
        assert_eq!(
            Ticket::verify(&forged, &s, "c", "2001", "alice", &[]),
            Err(Refused::BadTag)
        );
        // An earlier arrival with the old tag.
        let earlier = Ticket {
            arrival_ms: 1,
            ..ticket()
        };
        let tag = text.rsplit('.').next().unwrap();
        let altered = format!(
            "t1.{}.{tag}",
            URL_SAFE_NO_PAD.encode(serde_json::to_vec(&earlier).unwrap())
        );
        assert_eq!(
            Ticket::verify(&altered, &s, "c", "2001", "alice", &[]),
            Err(Refused::BadTag)
        );
        for junk in [
            "",
            "t1",
            "t1.x.y",
            "t2.a.b",
            &"t".repeat(2000),
            "t1.e30.AAAA",
        ] {
            assert!(Ticket::verify(junk, &s, "c", "2001", "alice", &[]).is_err());
        }
    }

    #[test]
    fn buckets_are_ten_ms_wide() {
        assert_eq!(bucket_of(1_796_000_000_123), 1_796_000_000_120);
        assert_eq!(bucket_of(10), 10);
        assert_eq!(bucket_of(-1), -10);
    }
}
