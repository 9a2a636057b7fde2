//! `lua/queue_admit.lua`: one tick of a max_active room's admitter. Its call and reply.

use anyhow::Result;
use redis::Value;
use serde::Serialize;

super::script_call! {
    /// One admitter tick: KEYS then ARGV of `lua/queue_admit.lua`.
    QueueAdmit = "queue_admit.lua", Sale;
    roles { operator }
    keys { room, line, admitted, active, risk, shuffled }
    argv { batch }
}

/// What one tick did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AdmitTick {
    /// admitted | paused | prequeue | not_max_active | no_room
    pub status: String,
    /// Users admitted by this tick.
    pub admitted: i64,
    /// The last position reached.
    pub serving: i64,
    pub joined: i64,
    /// Places taken after the tick.
    pub active: i64,
    /// Admissions that ran out and gave their place back.
    pub freed: i64,
    pub now_ms: i64,
}

/// Parse `{status, admitted, serving, joined, active, freed, now_ms}`.
pub(crate) fn parse_reply(reply: Value) -> Result<AdmitTick> {
    let (status, admitted, serving, joined, active, freed, now_ms) =
        redis::from_redis_value(reply)?;
    Ok(AdmitTick {
        status,
        admitted,
        serving,
        joined,
        active,
        freed,
        now_ms,
    })
}
