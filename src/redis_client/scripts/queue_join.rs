//! `lua/queue_join.lua`: a shopper joins an item's waiting room; a repeat
//! join returns the same position. Its call, outcomes and reply.

use anyhow::{Result, bail};
use redis::Value;
use serde::Serialize;

use super::queue_read::Standing;
use crate::model::exit_codes;

super::script_call! {
    /// Join: KEYS then ARGV of `lua/queue_join.lua`.
    QueueJoin = "queue_join.lua", Sale;
    roles { buyer, operator }
    keys { room, queue, line, registered, risk, admitted, shuffled }
    argv { user }
}

/// What a join did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JoinOutcome {
    /// A new position.
    Joined,
    /// Already in the queue: the same position, nothing written.
    Queued,
    NotRegistered,
    /// Before `starts_at`, in a room without a pre-queue.
    NotStarted,
    Ended,
    /// No room in Redis: not preheated, or the item's room is off there.
    NotPreheated,
}

impl JoinOutcome {
    /// Every outcome.
    pub const ALL: [JoinOutcome; 6] = [
        JoinOutcome::Joined,
        JoinOutcome::Queued,
        JoinOutcome::NotRegistered,
        JoinOutcome::NotStarted,
        JoinOutcome::Ended,
        JoinOutcome::NotPreheated,
    ];

    /// The name the script and JSON use.
    pub fn as_str(self) -> &'static str {
        match self {
            JoinOutcome::Joined => "joined",
            JoinOutcome::Queued => "queued",
            JoinOutcome::NotRegistered => "not_registered",
            JoinOutcome::NotStarted => "not_started",
            JoinOutcome::Ended => "ended",
            JoinOutcome::NotPreheated => "not_preheated",
        }
    }

    /// The exit code of `seckill queue join` for this outcome.
    pub fn exit_code(self) -> i32 {
        exit_codes::of_outcome(self.as_str())
    }
}

/// The reply of one join.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JoinReply {
    pub outcome: JoinOutcome,
    /// Where the user stands now (position 0 when refused).
    pub standing: Option<Standing>,
    /// Redis time of the join, Unix ms.
    pub now_ms: i64,
    /// Positions handed out so far.
    pub joined: i64,
}

/// Parse `{outcome, state, position, serving, eta_ms, from_ms, to_ms, now_ms, joined}`.
pub(crate) fn parse_reply(reply: Value) -> Result<JoinReply> {
    let fields: Vec<Value> = redis::from_redis_value(reply)?;
    if fields.len() != 9 {
        bail!(
            "the join script answered {} fields instead of 9",
            fields.len()
        );
    }
    let name: String = redis::from_redis_value_ref(&fields[0])?;
    let Some(outcome) = JoinOutcome::ALL.into_iter().find(|o| o.as_str() == name) else {
        bail!("the join script returned an unknown outcome {name:?}");
    };
    let state: String = redis::from_redis_value_ref(&fields[1])?;
    let standing = if state.is_empty() {
        None
    } else {
        Some(Standing::parse(&fields[1..7])?)
    };
    Ok(JoinReply {
        outcome,
        standing,
        now_ms: redis::from_redis_value_ref(&fields[7])?,
        joined: redis::from_redis_value_ref(&fields[8])?,
    })
}
