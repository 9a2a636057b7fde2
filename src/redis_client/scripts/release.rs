//! `lua/release.lua`: release reservations exactly once — one named order
//! (`cancel`) or a bounded batch of due ones (`expire`). Its call and replies.

use anyhow::Result;
use redis::Value;

super::script_call! {
    /// Release reservations: KEYS then ARGV of `lua/release.lua`.
    Release = "release.lua", Sale;
    keys { reservations, deadlines, meta, stock, buyers, buyer_orders, orders, reservation_counts }
    argv { mode, order_id, reason, limit, rebuy, campaign, item }
}

/// What one expire call did in one slot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ExpireBatch {
    /// Orders released by this call.
    pub(crate) released: u64,
    /// Their units, back in stock.
    pub(crate) units: i64,
    /// Orders still due after the call.
    pub(crate) due_left: u64,
    /// Due order ids whose record does not parse (taken off the deadline list).
    pub(crate) unreadable: Vec<String>,
}

/// Parse the expire-mode reply `{released, units, due_left, unreadable}`.
pub(crate) fn parse_expire_reply(reply: Value) -> Result<ExpireBatch> {
    let (released, units, due_left, unreadable) = redis::from_redis_value(reply)?;
    Ok(ExpireBatch {
        released,
        units,
        due_left,
        unreadable,
    })
}

#[cfg(test)]
mod tests {
    /// The helpers `lua/pay.lua` and `lua/release.lua` share (key-naming
    /// reads, strict integers, the record parser, the counter check): two
    /// EVALSHA scripts cannot share a library, so the text is repeated and
    /// must stay identical.
    #[test]
    fn pay_and_release_share_one_prelude() {
        let prelude = |source: &str, next: &str| {
            let start = source
                .find("-- A read whose WRONGTYPE")
                .expect("prelude start");
            let end = source.find(next).expect("prelude end");
            source[start..end].to_string()
        };
        assert_eq!(
            prelude(super::super::pay::SPEC.source, "\nlocal r = parse("),
            prelude(super::SPEC.source, "\nlocal mode = ARGV[1]"),
            "lua/pay.lua and lua/release.lua: the shared helpers differ"
        );
    }
}
