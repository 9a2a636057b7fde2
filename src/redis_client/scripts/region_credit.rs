//! `lua/region_credit.lua`: the destination's half of a transfer between
//! regions, idempotent (docs/regions.md). Its call and reply.

use anyhow::{Result, bail};
use redis::Value;

super::script_call! {
    /// Credit one region from a peer: KEYS then ARGV of `lua/region_credit.lua`.
    RegionCredit = "region_credit.lua", Sale;
    roles { operator }
    keys { meta, stock }
    argv { peer, sent, node }
}

/// How a credit went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Credit {
    /// `units` added now; `received` is the cumulative count after it.
    Credited { units: i64, received: i64 },
    /// Already credited up to `received` ≥ the count offered: nothing written.
    Stale { received: i64 },
    /// The slot is fenced: nothing written, the units stay in transit.
    Fenced { received: i64 },
    /// Not preheated in this region: nothing written.
    NotPreheated,
}

/// Parse `{status, credited, received, stock}`; a corrupt slot is [`super::CorruptState`].
pub(crate) fn parse_reply(reply: Value) -> Result<Credit> {
    super::refuse_corrupt(&reply)?;
    let (status, units, received, _stock): (String, i64, i64, i64) =
        redis::from_redis_value(reply)?;
    Ok(match status.as_str() {
        "credited" => Credit::Credited { units, received },
        "stale" => Credit::Stale { received },
        "fenced" => Credit::Fenced { received },
        "not_preheated" => Credit::NotPreheated,
        other => bail!("region_credit answered an unknown status {other:?}"),
    })
}
