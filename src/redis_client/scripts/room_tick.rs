//! `lua/room_tick.lua`: one beat of a ticket room — an instance's arrival
//! counts and watermark flushed, the cursor moved by the lease holder, and
//! the room's state as the door mirrors it. Its call and reply.

use anyhow::{Result, bail};
use redis::Value;

super::script_call! {
    /// One beat: KEYS then ARGV of `lua/room_tick.lua`.
    RoomTick = "room_tick.lua", Sale;
    roles { buyer, operator }
    keys { room, arrivals, arrival_counts, marks, passes, risk, revoked, prequeued }
    argv { instance, watermark_ms, lease_ms, dead_after_ms, risk_seen, revoked_seen, seed_wanted, entries }
    rest { user }
}

/// The room's state after a beat.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TickState {
    /// This instance holds the lease (it moves the cursor).
    pub leader: bool,
    /// Admitted ⇔ `arrival_ms <= cursor_ms` (a pre-queue ticket's arrival
    /// is its rank's place below `starts_at`).
    pub cursor_ms: i64,
    pub paused: bool,
    /// Redis time of the beat, Unix ms.
    pub now_ms: i64,
    pub arrived_total: i64,
    pub admitted_total: i64,
    /// Tickets counted at or below the cursor (admitted beyond the rate).
    pub late_total: i64,
    /// Instances whose marks are alive, and their slowest watermark.
    pub live: i64,
    pub slowest_watermark_ms: Option<i64>,
    /// The pre-queue's users while its sweep runs.
    pub prequeued: Option<i64>,
    /// The pre-queue's seed (hex), asked for and revealed (the sale started).
    pub seed: Option<String>,
    pub revoked_count: i64,
    /// The revoked key ids, when `revoked_count` is not the one the caller
    /// said it mirrors.
    pub revoked_keys: Option<Vec<String>>,
    pub risk_version: i64,
    /// Every arrival at or below it had its admission run out, and none
    /// above it runs out before `expires_next_at_ms` (the buy's shortcut,
    /// `lib/ticket_gate`; a bucketed item's copies carry them).
    pub expired_below_ms: Option<i64>,
    pub expires_next_at_ms: Option<i64>,
    /// The risk list (user → entry), when `risk_version` is not the one the
    /// caller said it mirrors.
    pub risk: Option<Vec<(String, String)>>,
}

impl TickState {
    /// Tickets counted and not yet passed.
    pub fn pending_total(&self) -> i64 {
        (self.arrived_total - self.admitted_total).max(0)
    }
}

/// What a beat answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tick {
    Ok(Box<TickState>),
    /// The item has no room in Redis (not preheated).
    NoRoom,
    /// The room in Redis is not a ticket room (the file changed since preheat).
    NotTicket,
}

/// Parse the reply (`lua/room_tick.lua`'s header).
pub(crate) fn parse_reply(reply: Value) -> Result<Tick> {
    let Value::Array(fields) = reply else {
        bail!("room_tick answered {reply:?}, not an array");
    };
    let status: String = match fields.first() {
        Some(v) => redis::from_redis_value_ref(v)?,
        None => bail!("room_tick answered nothing"),
    };
    match status.as_str() {
        "no_room" => return Ok(Tick::NoRoom),
        "not_ticket" => return Ok(Tick::NotTicket),
        "ok" => {}
        other => bail!("room_tick answered {other:?}"),
    }
    let missing = |i: usize| {
        anyhow::anyhow!(
            "room_tick answered {} fields, field {i} missing",
            fields.len()
        )
    };
    let int = |i: usize| -> Result<i64> {
        Ok(redis::from_redis_value_ref(
            fields.get(i).ok_or_else(|| missing(i))?,
        )?)
    };
    let text = |i: usize| -> Result<String> {
        Ok(redis::from_redis_value_ref(
            fields.get(i).ok_or_else(|| missing(i))?,
        )?)
    };
    let slowest = int(9)?;
    let prequeued = int(10)?;
    let seed = text(11)?;
    let revoked_keys = text(13)?;
    let optional = |i: usize| -> Result<Option<i64>> {
        let text = text(i)?;
        match text.is_empty() {
            true => Ok(None),
            false => Ok(Some(text.parse().map_err(|_| {
                anyhow::anyhow!("room_tick answered {text:?} as field {i}, not an integer")
            })?)),
        }
    };
    let risk = match int(17)? {
        0 => None,
        _ => Some(
            (18..fields.len())
                .step_by(2)
                .map(|i| Ok((text(i)?, text(i + 1)?)))
                .collect::<Result<Vec<_>>>()?,
        ),
    };
    let revoked_count = int(12)?;
    Ok(Tick::Ok(Box::new(TickState {
        leader: int(1)? == 1,
        cursor_ms: int(2)?,
        paused: int(3)? == 1,
        now_ms: int(4)?,
        arrived_total: int(5)?,
        admitted_total: int(6)?,
        late_total: int(7)?,
        live: int(8)?,
        slowest_watermark_ms: (slowest >= 0).then_some(slowest),
        prequeued: (prequeued >= 0).then_some(prequeued),
        seed: (!seed.is_empty()).then_some(seed),
        revoked_count,
        revoked_keys: match revoked_keys.is_empty() && revoked_count == 0 {
            true => Some(Vec::new()),
            false if revoked_keys.is_empty() => None,
            false => Some(
                revoked_keys
                    .split_whitespace()
                    .map(str::to_string)
                    .collect(),
            ),
        },
        risk_version: int(14)?,
        expired_below_ms: optional(15)?,
        expires_next_at_ms: optional(16)?,
        risk,
    })))
}
