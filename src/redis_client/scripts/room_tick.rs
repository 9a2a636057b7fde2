//! `lua/room_tick.lua`: one beat of a ticket room — an instance's arrival
//! counts and watermark flushed, the cursor moved by the lease holder, and
//! the room's state as the door mirrors it. Its call and reply.

use anyhow::{Result, bail};
use redis::Value;

super::script_call! {
    /// One beat: KEYS then ARGV of `lua/room_tick.lua`.
    RoomTick = "room_tick.lua", Sale;
    roles { buyer, operator }
    keys { room, arrivals, arrival_counts, marks, passes, risk, revoked }
    argv { instance, watermark_ms, lease_ms, dead_after_ms, pending_limit, risk_seen }
    rest { entry }
}

/// The room's state after a beat.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TickState {
    /// This instance holds the lease (it moves the cursor).
    pub leader: bool,
    /// Admitted ⇔ `arrival_ms <= cursor_ms`.
    pub cursor_ms: i64,
    pub paused: bool,
    /// Redis time of the beat, Unix ms.
    pub now_ms: i64,
    pub arrived_total: i64,
    pub admitted_total: i64,
    /// Tickets counted at or below the cursor (admitted beyond the rate).
    pub late_total: i64,
    pub risk_version: i64,
    pub revoked_keys: Vec<String>,
    /// Instances whose marks are alive, and their slowest watermark.
    pub live: i64,
    pub slowest_watermark_ms: Option<i64>,
    /// Tickets counted and not yet passed.
    pub pending_total: i64,
    /// The first buckets above the cursor: (bucket's first ms, tickets).
    pub pending: Vec<(i64, i64)>,
    /// The risk list (user → entry), when `risk_version` is not the one the
    /// caller said it mirrors.
    pub risk: Option<Vec<(String, String)>>,
}

/// What a beat answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tick {
    Ok(TickState),
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
    let int = |i: usize| -> Result<i64> {
        match fields.get(i) {
            Some(v) => Ok(redis::from_redis_value_ref(v)?),
            None => bail!(
                "room_tick answered {} fields, field {i} missing",
                fields.len()
            ),
        }
    };
    let text = |i: usize| -> Result<String> {
        match fields.get(i) {
            Some(v) => Ok(redis::from_redis_value_ref(v)?),
            None => bail!(
                "room_tick answered {} fields, field {i} missing",
                fields.len()
            ),
        }
    };
    let revoked = text(9)?;
    let slowest = int(11)?;
    let shown = usize::try_from(int(13)?)?;
    let pending = (0..shown)
        .map(|k| Ok((int(14 + 2 * k)?, int(15 + 2 * k)?)))
        .collect::<Result<Vec<_>>>()?;
    let after = 14 + 2 * shown;
    let risk = match int(after)? {
        0 => None,
        _ => Some(
            (after + 1..fields.len())
                .step_by(2)
                .map(|i| Ok((text(i)?, text(i + 1)?)))
                .collect::<Result<Vec<_>>>()?,
        ),
    };
    Ok(Tick::Ok(TickState {
        leader: int(1)? == 1,
        cursor_ms: int(2)?,
        paused: int(3)? == 1,
        now_ms: int(4)?,
        arrived_total: int(5)?,
        admitted_total: int(6)?,
        late_total: int(7)?,
        risk_version: int(8)?,
        revoked_keys: revoked.split_whitespace().map(str::to_string).collect(),
        live: int(10)?,
        slowest_watermark_ms: (slowest >= 0).then_some(slowest),
        pending_total: int(12)?,
        pending,
        risk,
    }))
}
