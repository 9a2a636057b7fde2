//! `lua/region_mark.lua`: mark (or clear) one region's slot of an item sold
//! out everywhere (docs/regions.md). Its call and reply.

use anyhow::{Result, bail};
use redis::Value;

super::script_call! {
    /// Mark or clear: KEYS then ARGV of `lua/region_mark.lua`.
    RegionMark = "region_mark.lua", Sale;
    roles { operator }
    keys { meta, stock }
    argv { mark }
}

/// What the mark call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Marked {
    Marked,
    Cleared,
    Unchanged,
    HasStock,
    NotPreheated,
}

/// Parse `{status}`.
pub(crate) fn parse_reply(reply: Value) -> Result<Marked> {
    let (status,): (String,) = redis::from_redis_value(reply)?;
    Ok(match status.as_str() {
        "marked" => Marked::Marked,
        "cleared" => Marked::Cleared,
        "unchanged" => Marked::Unchanged,
        "has_stock" => Marked::HasStock,
        "not_preheated" => Marked::NotPreheated,
        other => bail!("region_mark answered an unknown status {other:?}"),
    })
}
