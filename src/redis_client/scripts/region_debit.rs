//! `lua/region_debit.lua`: the source's half of a transfer between regions
//! (docs/regions.md). Its call and reply.

use anyhow::{Result, bail};
use redis::Value;

super::script_call! {
    /// Debit one region for a peer: KEYS then ARGV of `lua/region_debit.lua`.
    RegionDebit = "region_debit.lua", Sale;
    roles { operator }
    keys { meta, stock }
    argv { peer, units, mode, node }
}

/// How a debit went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Debit {
    /// Done: `sent` is the region's cumulative count to the peer after it.
    Sent { sent: i64, stock_after: i64 },
    /// The stock holds fewer units: nothing written.
    Short { sent: i64, stock: i64 },
    /// The slot is fenced: nothing written.
    Fenced { sent: i64 },
    /// Not preheated in this region: nothing written.
    NotPreheated,
}

/// Parse `{status, sent, stock}`; a corrupt slot is [`super::CorruptState`].
pub(crate) fn parse_reply(reply: Value) -> Result<Debit> {
    super::refuse_corrupt(&reply)?;
    let (status, sent, stock): (String, i64, i64) = redis::from_redis_value(reply)?;
    Ok(match status.as_str() {
        "sent" => Debit::Sent {
            sent,
            stock_after: stock,
        },
        "short" => Debit::Short { sent, stock },
        "fenced" => Debit::Fenced { sent },
        "not_preheated" => Debit::NotPreheated,
        other => bail!("region_debit answered an unknown status {other:?}"),
    })
}
