//! `lua/fence.lua`: read, set or lift an item slot's failover fence
//! (docs/failover.md, "The fence"). Its call and reply.

use anyhow::{Result, bail};
use redis::Value;

super::script_call! {
    /// The fence of one slot: KEYS and ARGV of `lua/fence.lua`.
    Fence = "fence.lua", Sale;
    roles { operator }
    keys { meta }
    argv { action }
}

/// A slot's fence as `lua/fence.lua` saw it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FenceState {
    /// `open`, `fenced`, `unarmed` (preheated before the fence) or `not_preheated`.
    pub state: String,
    /// The run_id preheat (or the last `reconcile --fence`) recorded.
    pub recorded_run_id: String,
    /// The run_id of the Redis process that answered.
    pub seen_run_id: String,
}

impl FenceState {
    /// Whether the slot's sale is closed by the fence.
    pub fn is_fenced(&self) -> bool {
        self.state == "fenced"
    }
}

/// Parse `{state, recorded, seen}`.
pub(crate) fn parse_reply(reply: Value) -> Result<FenceState> {
    let (state, recorded_run_id, seen_run_id): (String, String, String) =
        redis::from_redis_value(reply)?;
    if !matches!(
        state.as_str(),
        "open" | "fenced" | "unarmed" | "not_preheated"
    ) {
        bail!("fence script answered an unknown state {state:?}");
    }
    Ok(FenceState {
        state,
        recorded_run_id,
        seen_run_id,
    })
}
