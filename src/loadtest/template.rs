//! The script call of `v3` and `full`, packed once; per request only the
//! digits that differ (user number, request number) are overwritten in place.
//!
//! The bytes come from the script's packed EVALSHA with placeholder fields:
//! a run of `USER_MARK` bytes where the user number goes, a run of
//! `REQUEST_MARK` bytes where the request number goes, each as wide as the
//! largest number of the run. Numbers are written zero-padded to that width,
//! so every request has the same length and no length prefix ever changes —
//! the way redis-benchmark fills its `__rand_int__` fields.

use anyhow::{Result, bail};
use redis::Value;

use super::resp::Digits;
use super::variants::Counts;
use super::{Plan, Variant};

/// Placeholder byte of the user-number field (never in a key or an id).
const USER_MARK: u8 = 0x01;
/// Placeholder byte of the request-number field.
const REQUEST_MARK: u8 = 0x02;

/// Which number a field carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    User,
    Request,
}

/// One packed script call and where its numbers go.
#[derive(Debug, Clone)]
pub struct Template {
    variant: Variant,
    packed: Vec<u8>,
    /// (offset, width, what) of each number field.
    fields: Vec<(usize, usize, Field)>,
    users: u64,
}

impl Template {
    /// The call `variant` (v3 or full) makes, with the settings of `plan`.
    pub fn for_variant(variant: Variant, plan: &Plan) -> Template {
        let settings = &plan.settings;
        let user = placeholder(USER_MARK, settings.users.saturating_sub(1));
        let request = placeholder(REQUEST_MARK, settings.requests.saturating_sub(1));
        let packed = match variant {
            Variant::Full => {
                let keys = &plan.keys.item;
                let user_id = [USER_PREFIX, user.as_slice()].concat();
                let order_id = [format!("{}-", plan.run_id).as_bytes(), request.as_slice()].concat();
                redis::cmd("EVALSHA")
                    .arg(&plan.buy_sha)
                    .arg(7)
                    .arg(&keys.meta)
                    .arg(&keys.stock)
                    .arg(&keys.buyers)
                    .arg(&keys.buyer_orders)
                    .arg(&keys.requests)
                    .arg(&keys.orders)
                    .arg([keys.rate("").as_bytes(), user_id.as_slice()].concat())
                    .arg(&user_id)
                    .arg(1)
                    .arg("")
                    .arg(order_id)
                    .arg(&plan.campaign_id)
                    .arg(&plan.item_id)
                    .get_packed_command()
            }
            _ => redis::cmd("EVALSHA")
                .arg(&plan.v3_sha)
                .arg(1)
                .arg(&plan.keys.item.stock)
                .get_packed_command(),
        };
        Template::from_packed(variant, packed, settings.users)
    }

    fn from_packed(variant: Variant, packed: Vec<u8>, users: u64) -> Template {
        let mut fields = Vec::new();
        let mut at = 0;
        while at < packed.len() {
            let field = match packed[at] {
                USER_MARK => Field::User,
                REQUEST_MARK => Field::Request,
                _ => {
                    at += 1;
                    continue;
                }
            };
            let width = packed[at..]
                .iter()
                .take_while(|&&b| b == packed[at])
                .count();
            fields.push((at, width, field));
            at += width;
        }
        Template {
            variant,
            packed,
            fields,
            users: users.max(1),
        }
    }

    /// Append request `request`'s call to `out`.
    pub fn write(&self, request: u64, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&self.packed);
        for &(offset, width, field) in &self.fields {
            let number = match field {
                Field::User => request % self.users,
                Field::Request => request,
            };
            let digits = Digits::new(number);
            let digits = digits.as_bytes();
            let slot = &mut out[start + offset..start + offset + width];
            let pad = width - digits.len();
            slot[..pad].fill(b'0');
            slot[pad..].copy_from_slice(digits);
        }
    }

    /// Count one reply of the script.
    pub fn count(&self, reply: Value, counts: &mut Counts) -> Result<()> {
        match self.variant {
            Variant::Full => {
                let Value::Array(fields) = reply else {
                    bail!("buy script answered {reply:?}");
                };
                match fields.first() {
                    Some(Value::BulkString(outcome)) => match outcome.as_slice() {
                        b"ok" => counts.succeeded += 1,
                        b"sold_out" => counts.sold_out += 1,
                        b"duplicate" | b"rate_limited" => counts.rejected += 1,
                        other => bail!(
                            "buy script answered {:?}: the load-test item is not open for sale",
                            String::from_utf8_lossy(other)
                        ),
                    },
                    other => bail!("buy script answered {other:?}"),
                }
            }
            _ => match reply {
                Value::Int(1) => counts.succeeded += 1,
                Value::Int(0) => counts.sold_out += 1,
                other => bail!("v3 script answered {other:?}"),
            },
        }
        Ok(())
    }
}

/// Prefix of synthetic user ids (`u000`, `u001`, ...).
const USER_PREFIX: &[u8] = b"u";

/// `mark` repeated as many times as `largest` has digits.
fn placeholder(mark: u8, largest: u64) -> Vec<u8> {
    vec![mark; Digits::new(largest).as_bytes().len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_zero_padded_in_place() {
        let packed = redis::cmd("EVALSHA")
            .arg("sha")
            .arg([b"rate:u".as_slice(), &[USER_MARK; 3]].concat())
            .arg([b"o-".as_slice(), &[REQUEST_MARK; 5]].concat())
            .get_packed_command();
        let template = Template::from_packed(Variant::Full, packed, 250);
        let mut out = b"before".to_vec();
        template.write(1234, &mut out);
        let expected = redis::cmd("EVALSHA")
            .arg("sha")
            .arg("rate:u234")
            .arg("o-01234")
            .get_packed_command();
        assert_eq!(&out[6..], expected.as_slice());
        out.clear();
        template.write(7, &mut out);
        assert!(out.windows(9).any(|w| w == b"rate:u007"));
    }
}
