//! v3's and full's call packed once: the EVALSHA of the script's typed call
//! (`variants::script_words`) with placeholder fields for the user and
//! request numbers, written per request by the engine's
//! [`seckill_loadgen::Template`]; with `full --wait-replicas`, the WAIT
//! packed right behind it. And what each reply counts as.
//!
//! Within loadtest it uses: variants.

use anyhow::Result;
use redis::Value;
use seckill_loadgen::resp;
use seckill_loadgen::template::{Template, width};

use super::variants::{self, Counts, Number, USER_FIELD};
use super::{Plan, Variant};
use crate::redis_client::scripts::buy::{self, Outcome};
use crate::redis_client::scripts::v3_decr;

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
            Number::User => width(settings.users.saturating_sub(1)),
            _ => width(settings.requests.saturating_sub(1)),
        };
        let words = variants::script_words(variant, plan, &|n| n.field().placeholder(widths(n)));
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
            template: Template::resp(&words, &Number::FIELDS),
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
            |field| {
                if field == USER_FIELD {
                    request % self.users
                } else {
                    request
                }
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
