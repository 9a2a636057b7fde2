//! `lua/room_revoke.lua`: revoke a ticket room's signing key by its id.
//! Its call and reply.

use anyhow::Result;
use redis::Value;

super::script_call! {
    /// Revoke: KEYS then ARGV of `lua/room_revoke.lua`.
    RoomRevoke = "room_revoke.lua", Sale;
    roles { operator }
    keys { room, revoked }
    argv { key_id }
}

/// Parse `{status, revoked_keys}`: revoked | already_revoked | no_room | not_ticket.
pub(crate) fn parse_reply(reply: Value) -> Result<(String, String)> {
    Ok(redis::from_redis_value(reply)?)
}
