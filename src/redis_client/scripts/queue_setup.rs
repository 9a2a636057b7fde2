//! `lua/queue_setup.lua`: write an item's waiting-room settings (preheat).
//! Its call and reply.

use anyhow::{Result, bail};
use redis::Value;

super::script_call! {
    /// Set up the room: KEYS then ARGV of `lua/queue_setup.lua`.
    QueueSetup = "queue_setup.lua", Sale;
    roles { operator }
    keys { room, queue, line, registered, devices, ips, risk, admitted, active, shuffled }
    argv {
        mode, room_mode, rate_count, rate_per_ms, max_active, ttl_ms, prequeue, registration,
        reg_until_ms, per_device, per_ip, config, seed, seed_sha256, expire_at_ms, starts_at_ms,
        ends_at_ms,
    }
}

/// What the setup did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SetupStatus {
    /// No settings before: written, with the seed.
    Created,
    /// Settings there already (mode create): nothing written.
    Kept,
    /// Settings from the file (mode update).
    Updated,
    /// The mode or the pre-queue would change after users joined: nothing written.
    Refused,
}

/// Parse `{status, config_before}`.
pub(crate) fn parse_reply(reply: Value) -> Result<(SetupStatus, String)> {
    let (status, before): (String, String) = redis::from_redis_value(reply)?;
    let status = match status.as_str() {
        "created" => SetupStatus::Created,
        "kept" => SetupStatus::Kept,
        "updated" => SetupStatus::Updated,
        "refused" => SetupStatus::Refused,
        other => bail!("the queue setup script returned unknown status {other:?}"),
    };
    Ok((status, before))
}
