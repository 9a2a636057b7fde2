//! A script call packed once; per request only the digits that differ (user
//! number, request number, lock token) are overwritten in place.
//!
//! The words come from the script's typed call (`variants::script_words`,
//! `crate::redis_client::scripts`) with placeholder fields: a run of one mark byte per
//! kind of number, as wide as the largest number of the run. Numbers are
//! written zero-padded to that width, so every request has the same length
//! and no RESP length prefix ever changes — the way redis-benchmark fills
//! its `__rand_int__` fields.

use anyhow::Result;
use redis::Value;

use super::resp::{self, Digits};
use super::variants::{self, Counts, Number};
use super::{Plan, Variant};
use crate::redis_client::scripts::buy::{self, Outcome};
use crate::redis_client::scripts::v3_decr;

/// One packed command and where its numbers go.
#[derive(Debug, Clone)]
pub(crate) struct Template {
    packed: Vec<u8>,
    /// (offset, width, which) of each number field.
    fields: Vec<(usize, usize, Number)>,
}

/// A script variant's call (v3 or full) and how its replies count.
#[derive(Debug, Clone)]
pub(crate) struct ScriptTemplate {
    variant: Variant,
    template: Template,
    users: u64,
    /// `full --wait-replicas`: the WAIT packed after every call, and how many
    /// replicas it asks for.
    wait: Option<(Vec<u8>, i64)>,
    /// With `wait`: the outcome of the call whose WAIT reply comes next.
    bought: Option<bool>,
}

impl ScriptTemplate {
    /// The call `variant` (v3 or full) makes, with the settings of `plan`.
    pub(crate) fn new(variant: Variant, plan: &Plan) -> ScriptTemplate {
        let settings = &plan.settings;
        let widths = |number| match number {
            Number::User => digits(settings.users.saturating_sub(1)),
            _ => digits(settings.requests.saturating_sub(1)),
        };
        let words = variants::script_words(variant, plan, &|n| vec![Template::mark(n); widths(n)]);
        let wait = match (variant, settings.wait_replicas) {
            (Variant::Full, Some(replicas)) => {
                let millis = settings.wait_timeout.as_millis().max(1).to_string();
                let count = replicas.to_string();
                let packed = resp::command(&[b"WAIT", count.as_bytes(), millis.as_bytes()]);
                Some((packed, i64::from(replicas)))
            }
            _ => None,
        };
        ScriptTemplate {
            variant,
            template: Template::from_words(&words),
            users: settings.users.max(1),
            wait,
            bought: None,
        }
    }

    /// Replies one request brings: the call's, and WAIT's when there is one.
    pub(crate) fn replies_per_request(&self) -> usize {
        1 + usize::from(self.wait.is_some())
    }

    /// Append request `request`'s call to `out`: user `request mod users`;
    /// then its WAIT, right behind it on the same connection.
    pub(crate) fn write(&self, request: u64, out: &mut Vec<u8>) {
        self.template.write(
            |number| match number {
                Number::User => request % self.users,
                _ => request,
            },
            out,
        );
        if let Some((wait, _)) = &self.wait {
            out.extend_from_slice(wait);
        }
    }

    /// Take one reply: the script's, or the WAIT's behind it. True when it
    /// finished its request (counted).
    pub(crate) fn count(&mut self, reply: Value, counts: &mut Counts) -> Result<bool> {
        let Some((_, wanted)) = &self.wait else {
            self.count_call(reply, counts)?;
            return Ok(true);
        };
        match self.bought.take() {
            None => {
                self.bought = Some(buy::outcome_of(&reply)? == Outcome::Ok);
                if !self.bought.unwrap_or(false) {
                    self.count_call(reply, counts)?;
                }
                Ok(false)
            }
            Some(bought) => {
                let acked = resp::int_or_nil(reply, "WAIT")?.unwrap_or(0);
                if bought && acked < *wanted {
                    counts.unreplicated += 1;
                } else if bought {
                    counts.succeeded += 1;
                }
                Ok(true)
            }
        }
    }

    /// Count one reply of the script.
    fn count_call(&self, reply: Value, counts: &mut Counts) -> Result<()> {
        if self.variant == Variant::Full {
            match buy::outcome_of(&reply)? {
                Outcome::Ok => counts.succeeded += 1,
                Outcome::SoldOut => counts.sold_out += 1,
                Outcome::Duplicate | Outcome::RateLimited => counts.rejected += 1,
                other => anyhow::bail!(
                    "buy script answered {:?}: the load-test item is not open for sale",
                    other.as_str()
                ),
            }
        } else if v3_decr::parse_reply(reply)? {
            counts.succeeded += 1;
        } else {
            counts.sold_out += 1;
        }
        Ok(())
    }
}

impl Template {
    /// Placeholder byte of each kind of number (never in a key or an id).
    pub(crate) fn mark(number: Number) -> u8 {
        match number {
            Number::User => 0x01,
            Number::Request => 0x02,
            Number::Token => 0x03,
        }
    }

    /// Pack `words` (placeholder runs included) and find the number fields.
    pub(crate) fn from_words(words: &[Vec<u8>]) -> Template {
        let packed = resp::command(&words.iter().map(Vec::as_slice).collect::<Vec<_>>());
        let mut fields = Vec::new();
        let mut at = 0;
        while at < packed.len() {
            let Some(number) = [Number::User, Number::Request, Number::Token]
                .into_iter()
                .find(|&n| Template::mark(n) == packed[at])
            else {
                at += 1;
                continue;
            };
            let width = packed[at..]
                .iter()
                .take_while(|&&b| b == packed[at])
                .count();
            fields.push((at, width, number));
            at += width;
        }
        Template { packed, fields }
    }

    /// Append the command to `out`, `value` giving each field's number.
    pub(crate) fn write(&self, value: impl Fn(Number) -> u64, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&self.packed);
        for &(offset, width, number) in &self.fields {
            let digits = Digits::new(value(number));
            let digits = digits.as_bytes();
            let slot = &mut out[start + offset..start + offset + width];
            let pad = width.saturating_sub(digits.len());
            slot[..pad].fill(b'0');
            slot[pad..].copy_from_slice(&digits[digits.len() - (width - pad)..]);
        }
    }
}

/// Decimal digits of `number`.
pub(crate) fn digits(number: u64) -> usize {
    Digits::new(number).as_bytes().len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_zero_padded_in_place() {
        let words = [
            b"EVALSHA".to_vec(),
            b"sha".to_vec(),
            [b"rate:u".as_slice(), &[Template::mark(Number::User); 3]].concat(),
            [b"o-".as_slice(), &[Template::mark(Number::Request); 5]].concat(),
        ];
        let template = Template::from_words(&words);
        let mut out = b"before".to_vec();
        template.write(|n| if n == Number::User { 234 } else { 1234 }, &mut out);
        let expected = redis::cmd("EVALSHA")
            .arg("sha")
            .arg("rate:u234")
            .arg("o-01234")
            .get_packed_command();
        assert_eq!(&out[6..], expected.as_slice());
        out.clear();
        template.write(|_| 7, &mut out);
        assert!(out.windows(9).any(|w| w == b"rate:u007"));
    }
}
