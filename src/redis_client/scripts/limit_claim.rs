//! `lua/limit_claim.lua`: count one buy's units against a limit that lives
//! above the item — a limit group's or an identity's (docs/limits.md). Its
//! call and reply.

use anyhow::{Result, bail};
use redis::Value;

super::script_call! {
    /// Claim units against a limit: KEYS then ARGV of `lua/limit_claim.lua`.
    LimitClaim = "limit_claim.lua", Sale;
    roles { buyer, operator }
    keys { limit_counts, limit_claims }
    argv { member, claim_id, qty, limit, expire_at_ms }
}

/// What a claim decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claimed {
    /// Counted now.
    Now,
    /// Counted by an earlier attempt with the same claim id: nothing written.
    Already,
    /// The claim id was counted for another qty or member: nothing written.
    Reused,
    /// The member's units plus this buy's would pass the limit: nothing written.
    LimitReached,
}

/// A claim's answer: what it decided and the member's units held after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimReply {
    pub claimed: Claimed,
    pub held: i64,
}

/// Parse `{outcome, held}`; a corrupt limit slot is the error [`super::CorruptState`].
pub(crate) fn parse_reply(reply: Value) -> Result<ClaimReply> {
    super::refuse_corrupt(&reply)?;
    let (outcome, held): (String, i64) = redis::from_redis_value(reply)?;
    let claimed = match outcome.as_str() {
        "claimed" => Claimed::Now,
        "already_claimed" => Claimed::Already,
        "claim_reused" => Claimed::Reused,
        "limit_reached" => Claimed::LimitReached,
        other => bail!("limit claim script returned unknown outcome {other:?}"),
    };
    Ok(ClaimReply { claimed, held })
}
