//! `lua/seat_load.lua`: a seat item's section state and geometry, written by
//! preheat before the section's stock (docs/seats.md). Its call and reply.

use anyhow::{Result, bail};
use redis::Value;

super::script_call! {
    /// Load one section: KEYS then ARGV of `lua/seat_load.lua`.
    SeatLoad = "seat_load.lua", Sale;
    roles { operator }
    keys { meta, seats }
    argv { rows, per_row, section, state, expire_at_ms, mode }
}

/// What the script did to the section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SeatLoaded {
    Created,
    Reset,
    Kept,
    /// Redis holds another geometry (said); nothing written.
    Refused(String),
}

/// Parse `{status, detail}`.
pub(crate) fn parse_reply(reply: Value) -> Result<SeatLoaded> {
    let (status, detail): (String, String) = redis::from_redis_value(reply)?;
    Ok(match status.as_str() {
        "created" => SeatLoaded::Created,
        "reset" => SeatLoaded::Reset,
        "kept" => SeatLoaded::Kept,
        "refused" => SeatLoaded::Refused(detail),
        other => bail!("seat_load answered an unknown status {other:?}"),
    })
}
