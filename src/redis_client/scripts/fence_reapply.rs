//! `lua/fence_reapply.lua`: re-apply one order the order database proves
//! was sold and a fenced slot lost (`seckill reconcile --fence`). Its call
//! and reply.

use anyhow::{Result, bail};
use redis::Value;

super::script_call! {
    /// Re-apply one order a fenced slot lost: KEYS and ARGV of `lua/fence_reapply.lua`.
    FenceReapply = "fence_reapply.lua", Sale;
    roles { operator }
    keys { meta, stock, buyers, buyer_orders, orders }
    argv { stream_id, order_id, campaign, item, user, qty, price_cents, bought_at_ms }
}

/// What `lua/fence_reapply.lua` did with one order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reapplied {
    /// Entry added, stock debited, buyer credited.
    Reapplied,
    /// The stream holds it already (nothing written).
    Present,
    /// Later entries exist: it cannot be added in its place (nothing written).
    Behind,
    /// Fewer units left than it ordered (nothing written).
    Short,
    /// The slot is not fenced (nothing written).
    Open,
    /// The slot holds no stock (nothing written).
    NotPreheated,
}

/// Parse `{status, stock after}`.
pub(crate) fn parse_reply(reply: Value) -> Result<(Reapplied, i64)> {
    let (status, stock): (String, i64) = redis::from_redis_value(reply)?;
    let status = match status.as_str() {
        "reapplied" => Reapplied::Reapplied,
        "present" => Reapplied::Present,
        "behind" => Reapplied::Behind,
        "short" => Reapplied::Short,
        "open" => Reapplied::Open,
        "not_preheated" => Reapplied::NotPreheated,
        other => bail!("fence_reapply answered an unknown status {other:?}"),
    };
    Ok((status, stock))
}
