//! `lua/bucket_buy.lua`: a purchase in the buyer's home bucket of a bucketed
//! item, optionally crediting a transfer first (docs/buckets.md). Its call and
//! reply; the purchase and its reply are `lua/buy.lua`'s (`lua/lib/purchase.lua`).

use anyhow::Result;
use redis::Value;

use super::buy::{BuyReply, parse_reply as parse_buy};

super::script_call! {
    /// One attempt in the home bucket: KEYS then ARGV of `lua/bucket_buy.lua`.
    BucketBuy = "bucket_buy.lua", Sale;
    roles { buyer, operator }
    keys { meta, stock, buyers, buyer_orders, requests, orders, rate, reservations, deadlines, reservation_counts, xfer_in }
    optional { admissions, room, passes, risk, revoked }
    argv { user, qty, request_id, order_id, campaign, item, payment_timeout_ms, count_attempt, credit_id, credit_source, credit_units, arrival_ms, ticket_key, node }
}

/// What the home bucket said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HomeReply {
    /// `sold_out` means *this bucket* is short, unless `proven`.
    pub(crate) reply: BuyReply,
    /// A sweep proved the whole item sold out for good (`sold_out` in meta).
    pub(crate) proven: bool,
}

/// Parse `{outcome, order_id, stock_left, deadline_ms, reservation_state, proven}`.
pub(crate) fn parse_reply(reply: Value) -> Result<HomeReply> {
    let Value::Array(mut fields) = reply else {
        anyhow::bail!("bucket buy script answered {reply:?}");
    };
    if fields.len() != 6 {
        anyhow::bail!("bucket buy script answered {} fields", fields.len());
    }
    let proven: i64 = redis::from_redis_value(fields.pop().unwrap_or(Value::Nil))?;
    Ok(HomeReply {
        reply: parse_buy(Value::Array(fields))?,
        proven: proven == 1,
    })
}
