//! `lua/queue_shuffle.lua`: the pre-queue's shuffle (seed out, final
//! positions in, the room opened). Its call and reply.

use anyhow::Result;
use redis::Value;

super::script_call! {
    /// One step of the shuffle: KEYS, the mode, then its values (`lua/queue_shuffle.lua`).
    QueueShuffle = "queue_shuffle.lua", Sale;
    roles { operator }
    keys { room, shuffled }
    argv { mode }
    rest { value }
}

/// The reply of every mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShuffleReply {
    /// ready | staged | committed | incomplete | done | not_started | no_prequeue
    pub(crate) status: String,
    /// Users in the pre-queue.
    pub(crate) prequeue_last: i64,
    /// prepare, ready: the seed and its published hash (hex).
    pub(crate) seed: String,
    pub(crate) seed_sha256: String,
    pub(crate) now_ms: i64,
    pub(crate) starts_at_ms: i64,
    /// Final positions stored so far.
    pub(crate) staged: i64,
}

/// Parse `{status, prequeue_last, seed, seed_sha256, now_ms, starts_at_ms, staged}`.
pub(crate) fn parse_reply(reply: Value) -> Result<ShuffleReply> {
    let (status, prequeue_last, seed, seed_sha256, now_ms, starts_at_ms, staged) =
        redis::from_redis_value(reply)?;
    Ok(ShuffleReply {
        status,
        prequeue_last,
        seed,
        seed_sha256,
        now_ms,
        starts_at_ms,
        staged,
    })
}
