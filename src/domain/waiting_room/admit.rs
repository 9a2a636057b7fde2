//! What runs beside a sale with a waiting room (`seckill queue admit`,
//! `seckill queue shuffle`): the pre-queue's shuffle once `starts_at` has
//! passed, max_active's admitter ticks, and a bucketed item's fan-out of
//! admissions to each user's home bucket. Each step is safe to repeat and
//! to run from several processes at once, and any may be killed at any
//! moment: the shuffle is deterministic (same seed, same input, same
//! writes), an admitter tick is one atomic script, and the fan-out grants a
//! user at most once in its bucket and moves its cursor only from where it
//! read it.

use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};
use redis::ConnectionLike;
use serde::Serialize;

use super::Room;
use super::admissions::{self, Grant};
use super::shuffle::{Seed, shuffle};
use crate::model::layout::Layout;
use crate::model::waiting_room::AdmissionMode;
use crate::redis_client::scripts::ScriptCall;
pub use crate::redis_client::scripts::queue_admit::AdmitTick;
use crate::redis_client::scripts::queue_admit::{self, QueueAdmit};
use crate::redis_client::scripts::queue_fanout::{self, QueueFanout};
use crate::redis_client::scripts::queue_shuffle::{self, QueueShuffle, ShuffleReply};

/// Users read from the line per LRANGE, and final positions staged per call.
const CHUNK: usize = 1000;
/// Most admitter ticks in one pass (each admits at most `batch`).
const MAX_TICKS: usize = 100;

/// What a shuffle did.
#[derive(Debug, Clone, Serialize)]
pub struct Shuffled {
    /// `committed` (shuffled now), `done` (before), `not_started` (Redis
    /// time is before starts_at), `no_prequeue`.
    pub status: String,
    /// Users in the pre-queue.
    pub prequeue: i64,
    /// The published SHA-256 of the seed.
    pub seed_sha256: String,
    /// The seed, once the shuffle is done (anyone may now re-run it).
    pub seed: Option<String>,
}

/// What a re-run of the shuffle found.
#[derive(Debug, Clone, Serialize)]
pub struct Verified {
    /// Users in the pre-queue.
    pub prequeue: i64,
    /// Whose final position in Redis is not the re-run's (0: reproduced).
    pub mismatches: i64,
    /// The seed the re-run used, and whether its SHA-256 is the published one.
    pub seed: String,
    pub seed_matches_hash: bool,
}

/// What one fan-out pass carried.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FannedOut {
    /// Positions carried in this pass (blocked users passed over included).
    pub carried: i64,
    /// Admissions new to their home bucket (a repeat after a crash grants nobody twice).
    pub granted: i64,
    /// The cursor after the pass: positions 1..fanned are carried.
    pub fanned: i64,
}

/// One pass of everything the room needs beside the sale.
#[derive(Debug, Clone, Serialize)]
pub struct Pass {
    pub item: String,
    /// A pre-queue's shuffle, when the room has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shuffle: Option<Shuffled>,
    /// max_active: the admitter's ticks, summed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admit: Option<AdmitTick>,
    /// A bucketed item: the fan-out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fan_out: Option<FannedOut>,
}

impl Room {
    /// One pass: the shuffle when due, max_active's admissions, the fan-out.
    pub fn pass<C: ConnectionLike>(&self, conn: &mut C, batch: usize) -> Result<Pass> {
        let shuffle = if self.settings.prequeue {
            Some(self.shuffle(conn)?)
        } else {
            None
        };
        let admit = match self.settings.mode {
            AdmissionMode::MaxActive(_) => {
                let bought = match &self.buckets {
                    Some(buckets) => self.release_bought(conn, buckets, batch)?,
                    None => 0,
                };
                let mut tick = self.admit(conn, batch)?;
                tick.freed += bought;
                Some(tick)
            }
            AdmissionMode::Rate { .. } | AdmissionMode::Ticket { .. } => None,
        };
        let fan_out = match &self.buckets {
            Some(buckets) => Some(self.fan_out(conn, buckets, batch)?),
            None => None,
        };
        Ok(Pass {
            item: self.item.clone(),
            shuffle,
            admit,
            fan_out,
        })
    }

    /// max_active: tick until the free places are filled (or nobody waits);
    /// the ticks' figures summed, the last tick's state.
    pub fn admit<C: ConnectionLike>(&self, conn: &mut C, batch: usize) -> Result<AdmitTick> {
        let mut total = AdmitTick::default();
        for _ in 0..MAX_TICKS {
            let tick = self.admit_tick(conn, batch)?;
            let more = tick.status == "admitted" && tick.admitted > 0;
            total = AdmitTick {
                admitted: total.admitted + tick.admitted,
                freed: total.freed + tick.freed,
                ..tick
            };
            if !more {
                break;
            }
        }
        Ok(total)
    }

    /// A bucketed max_active room: the buy runs in the user's home bucket,
    /// which cannot take the user out of the active set in the item's slot,
    /// so the admitter looks: an active user who holds units in its home
    /// bucket gives its place back now instead of at the end of its
    /// admission. The `batch` places that end first are looked at per pass.
    /// Returns the places given back.
    fn release_bought<C: ConnectionLike>(
        &self,
        conn: &mut C,
        buckets: &Layout,
        batch: usize,
    ) -> Result<i64> {
        let active: Vec<String> = redis::cmd("ZRANGE")
            .arg(&self.room.active)
            .arg(0)
            .arg(batch.max(1) - 1)
            .query(conn)
            .with_context(|| format!("cannot read {}", self.room.active))?;
        let mut bought = Vec::new();
        for user in active {
            let buyers = buckets.home(&user).keys.buyers;
            let units: Option<String> = redis::cmd("HGET")
                .arg(&buyers)
                .arg(&user)
                .query(conn)
                .with_context(|| format!("cannot read {buyers}"))?;
            if units.is_some_and(|u| u != "0") {
                bought.push(user);
            }
        }
        if bought.is_empty() {
            return Ok(0);
        }
        redis::cmd("ZREM")
            .arg(&self.room.active)
            .arg(&bought)
            .query(conn)
            .with_context(|| format!("cannot update {}", self.room.active))
    }

    /// One admitter tick (`lua/queue_admit.lua`).
    pub fn admit_tick<C: ConnectionLike>(&self, conn: &mut C, batch: usize) -> Result<AdmitTick> {
        let r = &self.room;
        QueueAdmit::<&str> {
            room: &r.room,
            line: &r.line,
            admitted: &r.admitted,
            active: &r.active,
            risk: &r.risk,
            shuffled: &r.shuffled,
            batch: &batch.max(1).to_string(),
        }
        .invoke(conn)
        .map_err(anyhow::Error::from)
        .and_then(queue_admit::parse_reply)
        .with_context(|| format!("admitter tick failed for item {}", self.item))
    }

    fn shuffle_call<C: ConnectionLike>(
        &self,
        conn: &mut C,
        mode: &str,
        values: Vec<String>,
    ) -> Result<ShuffleReply> {
        QueueShuffle {
            room: self.room.room.clone(),
            shuffled: self.room.shuffled.clone(),
            mode: mode.to_string(),
            value: values,
        }
        .invoke(conn)
        .map_err(anyhow::Error::from)
        .and_then(queue_shuffle::parse_reply)
        .with_context(|| {
            format!(
                "the pre-queue shuffle ({mode}) failed for item {}",
                self.item
            )
        })
    }

    /// The pre-queue in join order (positions 1..n as joined).
    fn prequeue_in_join_order<C: ConnectionLike>(
        &self,
        conn: &mut C,
        n: i64,
    ) -> Result<Vec<String>> {
        let mut users = Vec::with_capacity(n.max(0) as usize);
        while (users.len() as i64) < n {
            let from = users.len() as i64;
            let to = (from + CHUNK as i64 - 1).min(n - 1);
            let chunk: Vec<String> = redis::cmd("LRANGE")
                .arg(&self.room.line)
                .arg(from)
                .arg(to)
                .query(conn)
                .with_context(|| format!("cannot read {}", self.room.line))?;
            if chunk.is_empty() {
                bail!(
                    "{} holds {} users, the pre-queue {n}: the line is damaged",
                    self.room.line,
                    users.len()
                );
            }
            users.extend(chunk);
        }
        Ok(users)
    }

    /// Shuffle the pre-queue if it is due (Redis time past starts_at) and
    /// not done: the seeded Fisher–Yates over the pre-queue in join order,
    /// the final positions staged, then committed (the room opens).
    pub fn shuffle<C: ConnectionLike>(&self, conn: &mut C) -> Result<Shuffled> {
        let ready = self.shuffle_call(conn, "prepare", Vec::new())?;
        if ready.status != "ready" {
            let (figures, _) = self.read(conn, &[])?;
            return Ok(Shuffled {
                status: ready.status,
                prequeue: ready.prequeue_last,
                seed_sha256: figures.seed_sha256,
                seed: figures.seed,
            });
        }
        let seed = Seed::from_hex(&ready.seed)
            .with_context(|| format!("the shuffle seed of item {} in Redis", self.item))?;
        if seed.sha256_hex() != ready.seed_sha256 {
            bail!(
                "the shuffle seed of item {} in Redis does not hash to the published {}: \
                 refusing to shuffle with a seed that was changed",
                self.item,
                ready.seed_sha256
            );
        }
        let mut order = self.prequeue_in_join_order(conn, ready.prequeue_last)?;
        shuffle(&mut order, &seed);
        for (n, chunk) in order.chunks(CHUNK).enumerate() {
            let values = chunk
                .iter()
                .enumerate()
                .flat_map(|(i, user)| [(n * CHUNK + i + 1).to_string(), user.clone()])
                .collect();
            self.shuffle_call(conn, "stage", values)?;
        }
        let done = self.shuffle_call(conn, "commit", vec![ready.prequeue_last.to_string()])?;
        if done.status != "committed" && done.status != "done" {
            bail!(
                "the pre-queue shuffle of item {} did not commit ({}: {} of {} positions staged); run it again",
                self.item,
                done.status,
                done.staged,
                done.prequeue_last
            );
        }
        Ok(Shuffled {
            status: done.status,
            prequeue: ready.prequeue_last,
            seed_sha256: ready.seed_sha256,
            seed: Some(seed.hex()),
        })
    }

    /// Re-run the shuffle from the revealed seed and compare every final
    /// position with Redis's (what anyone may do once the seed is public).
    pub fn verify_shuffle<C: ConnectionLike>(&self, conn: &mut C) -> Result<Verified> {
        let (figures, _) = self.read(conn, &[])?;
        let Some(seed_hex) = figures.seed.clone() else {
            bail!(
                "item {}'s pre-queue is not shuffled yet: the seed is revealed by the shuffle at the start",
                self.item
            );
        };
        let seed = Seed::from_hex(&seed_hex)?;
        let mut order = self.prequeue_in_join_order(conn, figures.prequeue_last)?;
        shuffle(&mut order, &seed);
        let mut mismatches = 0;
        for chunk in order.chunks(CHUNK).enumerate() {
            let (n, users) = chunk;
            let mut pipe = redis::pipe();
            for user in users {
                pipe.cmd("ZSCORE").arg(&self.room.shuffled).arg(user);
            }
            let scores: Vec<Option<i64>> = pipe
                .query(conn)
                .with_context(|| format!("cannot read {}", self.room.shuffled))?;
            for (i, score) in scores.into_iter().enumerate() {
                mismatches += i64::from(score != Some((n * CHUNK + i + 1) as i64));
            }
        }
        Ok(Verified {
            prequeue: figures.prequeue_last,
            mismatches,
            seed_matches_hash: seed.sha256_hex() == figures.seed_sha256,
            seed: seed_hex,
        })
    }

    /// Carry the admissions decided since the last pass to their users' home
    /// buckets of `buckets`, `batch` positions per round trip.
    fn fan_out<C: ConnectionLike>(
        &self,
        conn: &mut C,
        buckets: &Layout,
        batch: usize,
    ) -> Result<FannedOut> {
        let mut done = FannedOut::default();
        loop {
            let r = &self.room;
            let next = QueueFanout::<&str> {
                room: &r.room,
                queue: &r.queue,
                line: &r.line,
                risk: &r.risk,
                admitted: &r.admitted,
                shuffled: &r.shuffled,
                mode: "read",
                batch: &batch.max(1).to_string(),
                to: "",
            }
            .invoke(conn)
            .map_err(anyhow::Error::from)
            .and_then(queue_fanout::parse_batch)
            .with_context(|| format!("cannot read admissions to fan out for item {}", self.item))?;
            done.fanned = next.fanned;
            if next.entries.is_empty() {
                return Ok(done);
            }
            let mut per_bucket: BTreeMap<u32, Vec<Grant>> = BTreeMap::new();
            for (user, admission) in &next.entries {
                if let Some((from, to)) = admission {
                    let home = buckets.home(user).bucket;
                    per_bucket
                        .entry(home)
                        .or_default()
                        .push((user.clone(), *from, *to));
                }
            }
            for (bucket, grants) in &per_bucket {
                let (new, _) =
                    admissions::grant(conn, &buckets.bucket(*bucket), grants, self.expire_at_ms)?;
                done.granted += new;
            }
            let to = next.fanned + next.entries.len() as i64;
            let (moved, fanned) = QueueFanout::<&str> {
                room: &r.room,
                queue: &r.queue,
                line: &r.line,
                risk: &r.risk,
                admitted: &r.admitted,
                shuffled: &r.shuffled,
                mode: "advance",
                batch: &next.fanned.to_string(),
                to: &to.to_string(),
            }
            .invoke(conn)
            .map_err(anyhow::Error::from)
            .and_then(queue_fanout::parse_advance)
            .with_context(|| format!("cannot move the fan-out cursor of item {}", self.item))?;
            if moved {
                done.carried += next.entries.len() as i64;
            }
            done.fanned = fanned;
            if next.entries.len() < batch.max(1) {
                return Ok(done);
            }
        }
    }

    /// Every bucket's copies of the admissions: (held now, granted in all),
    /// in bucket order; `None` when the room copies none (the buy reads it).
    pub fn bucket_admissions<C: ConnectionLike>(
        &self,
        conn: &mut C,
    ) -> Result<Option<Vec<(i64, i64)>>> {
        self.buckets
            .as_ref()
            .map(|buckets| {
                buckets
                    .all()
                    .iter()
                    .map(|bucket| admissions::counts(conn, bucket))
                    .collect()
            })
            .transpose()
    }
}
