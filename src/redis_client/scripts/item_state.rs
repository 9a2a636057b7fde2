//! `lua/item_state.lua`: one item's state (meta, stock, buyers, stream
//! length) in one round trip. Its call and reply.

use anyhow::Result;
use redis::Value;
use serde::Serialize;

super::script_call! {
    /// Read one item's state: KEYS of `lua/item_state.lua` (no ARGV).
    ReadItemState = "item_state.lua", Sale;
    roles { operator }
    keys { meta, stock, buyers, orders }
    argv {}
}

/// One item's live state as Redis has it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ItemState {
    /// Whether preheat has run (meta has `initial_stock`).
    pub(crate) preheated: bool,
    pub(crate) initial_stock: Option<i64>,
    pub stock: Option<i64>,
    /// Distinct users who bought.
    pub buyers: i64,
    /// Entries in the order stream.
    pub stream_len: i64,
    /// Kill switch.
    pub closed: bool,
    pub(crate) switch_reason: Option<String>,
    pub(crate) switched_at_ms: Option<i64>,
    pub(crate) switched_by: Option<String>,
}

impl ItemState {
    /// True when anything was sold (buyers recorded or orders streamed).
    pub(crate) fn has_sales(&self) -> bool {
        self.buyers > 0 || self.stream_len > 0
    }
}

/// Parse the reply `{initial_stock, closed, switch_reason, switched_at_ms,
/// switched_by, stock, buyers, stream_len}` (missing fields are nil).
pub(crate) fn parse_reply(reply: Value) -> Result<ItemState> {
    type Reply = (
        Option<i64>,
        Option<String>,
        Option<String>,
        Option<i64>,
        Option<String>,
        Option<i64>,
        i64,
        i64,
    );
    let (initial_stock, closed, reason, at, by, stock, buyers, stream_len): Reply =
        redis::from_redis_value(reply)?;
    Ok(ItemState {
        preheated: initial_stock.is_some(),
        initial_stock,
        stock,
        buyers,
        stream_len,
        closed: closed.as_deref() == Some("1"),
        switch_reason: reason.filter(|r| !r.is_empty()),
        switched_at_ms: at,
        switched_by: by.filter(|b| !b.is_empty()),
    })
}
