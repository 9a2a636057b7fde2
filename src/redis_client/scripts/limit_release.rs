//! `lua/limit_release.lua`: undo one claim of `lua/limit_claim.lua` after
//! the item refused the buy for good (docs/limits.md). Its call and reply.

use anyhow::{Result, bail};
use redis::Value;

super::script_call! {
    /// Release one claim: KEYS then ARGV of `lua/limit_release.lua`.
    LimitRelease = "limit_release.lua", Sale;
    roles { buyer, operator }
    keys { limit_counts, limit_claims }
    argv { claim_id }
}

/// Whether the release gave units back (`false`: no such claim, nothing written).
pub(crate) fn parse_reply(reply: Value) -> Result<bool> {
    super::refuse_corrupt(&reply)?;
    let (outcome, _held): (String, i64) = redis::from_redis_value(reply)?;
    match outcome.as_str() {
        "released" => Ok(true),
        "not_claimed" => Ok(false),
        other => bail!("limit release script returned unknown outcome {other:?}"),
    }
}
