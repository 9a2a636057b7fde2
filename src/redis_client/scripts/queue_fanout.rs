//! `lua/queue_fanout.lua`: the item's side of a bucketed item's admission
//! fan-out (which admissions to carry next, and the cursor). Its call and replies.

use anyhow::{Result, bail};
use redis::Value;

super::script_call! {
    /// Read the next admissions or move the cursor: KEYS then ARGV of `lua/queue_fanout.lua`.
    QueueFanout = "queue_fanout.lua", Sale;
    roles { operator }
    keys { room, queue, line, risk, admitted, shuffled }
    argv { mode, batch, to }
}

/// The next admissions to carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FanoutBatch {
    /// Positions carried so far.
    pub(crate) fanned: i64,
    /// The last position admitted.
    pub(crate) serving: i64,
    pub(crate) now_ms: i64,
    /// Positions fanned+1.. in order: the user and its admission (start, end
    /// ms), `None` for a user passed over (blocked).
    pub(crate) entries: Vec<(String, Option<(i64, i64)>)>,
}

/// Parse mode read's `{fanned, serving, now_ms, (user, from, to)...}`.
pub(crate) fn parse_batch(reply: Value) -> Result<FanoutBatch> {
    let fields: Vec<Value> = redis::from_redis_value(reply)?;
    if fields.len() < 3 || !(fields.len() - 3).is_multiple_of(3) {
        bail!("the fan-out script answered {} fields", fields.len());
    }
    let int = |v: &Value| -> Result<i64> { Ok(redis::from_redis_value_ref(v)?) };
    let entries = fields[3..]
        .chunks(3)
        .map(|entry| {
            let user: String = redis::from_redis_value_ref(&entry[0])?;
            let (from, to) = (int(&entry[1])?, int(&entry[2])?);
            Ok((user, (from >= 0).then_some((from, to))))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(FanoutBatch {
        fanned: int(&fields[0])?,
        serving: int(&fields[1])?,
        now_ms: int(&fields[2])?,
        entries,
    })
}

/// Parse mode advance's `{moved, fanned}`.
pub(crate) fn parse_advance(reply: Value) -> Result<(bool, i64)> {
    let (moved, fanned): (i64, i64) = redis::from_redis_value(reply)?;
    Ok((moved == 1, fanned))
}
