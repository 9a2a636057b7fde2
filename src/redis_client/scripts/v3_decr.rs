//! `lua/v3_decr.lua`: the reference chapter's minimal V3 (check stock, take
//! one unit), for `loadtest --variant v3`. Its call and reply.

use anyhow::{Result, bail};
use redis::Value;

super::script_call! {
    /// Take one unit: KEYS of `lua/v3_decr.lua` (no ARGV).
    V3Decr = "v3_decr.lua", LoadTest;
    roles { operator }
    keys { stock }
    argv {}
}

/// True when one unit was taken, false when sold out.
pub(crate) fn parse_reply(reply: Value) -> Result<bool> {
    match super::int_reply(reply, "v3")? {
        1 => Ok(true),
        0 => Ok(false),
        other => bail!("v3 script answered {other}"),
    }
}
