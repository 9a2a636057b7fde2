//! `lua/region_state.lua`: one region's slot of an item, its stock and
//! transfer counters (docs/regions.md). Its call and reply.

use std::collections::BTreeMap;

use anyhow::Result;
use redis::Value;

super::script_call! {
    /// Read one region's slot: KEYS then ARGV of `lua/region_state.lua`.
    RegionState = "region_state.lua", Sale;
    roles { operator }
    keys { meta, stock }
    argv { node }
}

/// One region's slot of an item.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct SlotLedger {
    /// Preheated in this region.
    pub preheated: bool,
    /// Units this region holds in all: its share, plus what it received,
    /// less what it sent (meta `initial_stock`).
    pub initial: i64,
    /// Units left.
    pub stock: i64,
    /// Closed by the failover fence.
    pub fenced: bool,
    /// Marked sold out everywhere by the scheduler (`lua/region_mark.lua`).
    pub sold_out_everywhere: bool,
    /// Units ever sent to each peer (`out:<peer>`).
    pub sent_to: BTreeMap<String, i64>,
    /// Units ever credited from each peer (`in:<peer>`).
    pub received_from: BTreeMap<String, i64>,
    /// The last send to each peer, Redis ms.
    pub sent_at_ms: BTreeMap<String, i64>,
    /// The last credit from each peer, Redis ms.
    pub received_at_ms: BTreeMap<String, i64>,
}

impl SlotLedger {
    /// Units this region sold: what it holds in all less what is left.
    pub fn sold(&self) -> i64 {
        self.initial - self.stock
    }
}

/// Parse `{initial|-1, stock|-1, fenced, sold_out_everywhere, {field, value, ...}}`.
pub(crate) fn parse_reply(reply: Value) -> Result<SlotLedger> {
    let (initial, stock, fenced, everywhere, fields): (i64, i64, i64, i64, Vec<String>) =
        redis::from_redis_value(reply)?;
    let mut ledger = SlotLedger {
        preheated: initial >= 0 && stock >= 0,
        initial: initial.max(0),
        stock: stock.max(0),
        fenced: fenced == 1,
        sold_out_everywhere: everywhere == 1,
        ..SlotLedger::default()
    };
    for pair in fields.chunks(2) {
        let [name, value] = pair else { continue };
        let value: i64 = value.parse()?;
        let (map, peer) = if let Some(peer) = name.strip_prefix("out_at_ms:") {
            (&mut ledger.sent_at_ms, peer)
        } else if let Some(peer) = name.strip_prefix("in_at_ms:") {
            (&mut ledger.received_at_ms, peer)
        } else if let Some(peer) = name.strip_prefix("out:") {
            (&mut ledger.sent_to, peer)
        } else if let Some(peer) = name.strip_prefix("in:") {
            (&mut ledger.received_from, peer)
        } else {
            continue;
        };
        map.insert(peer.to_string(), value);
    }
    Ok(ledger)
}
