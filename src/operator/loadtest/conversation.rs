//! What one simulated request says to Redis in each variant, written as a
//! state machine ([`seckill_loadgen::Conversation`]): it writes a command,
//! is handed each reply, and says what happens next. The engine runs it on
//! a non-blocking socket in its event loop, or on a blocking redis-rs link
//! (TLS, Cluster), so each variant's logic — the reference chapter's
//! section 14.5, exactly — lives here once. [`VariantScenario`] is a variant
//! as the engine runs it.
//!
//! Every command is packed before the clock starts; a request then costs a
//! copy of its bytes, the few digits that differ overwritten in place, and
//! the parsing of its replies.
//!
//! Within loadtest it uses: script, variants.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use redis::Value;
use seckill_loadgen::resp::{self, Resp};
use seckill_loadgen::template::{Template, width};
use seckill_loadgen::{Conversation, Next, Scenario};

use super::script::ScriptTemplate;
use super::variants::{
    self, Counts, LOCK_RETRY_PAUSE, LOCK_RETRY_PAUSE_MAX, LOCK_TTL_MS, LOCK_WAIT_LIMIT, Number,
};
use super::{Plan, Variant};
use crate::redis_client::scripts::lock_release;

/// One variant as the engine runs it.
pub(crate) struct VariantScenario<'a> {
    pub(crate) plan: &'a Plan,
    pub(crate) variant: Variant,
}

impl Scenario for VariantScenario<'_> {
    type Protocol = Resp;
    type Counts = Counts;
    type Conversation = Talk;

    fn conversation(&self) -> Talk {
        Talk::new(self.variant, self.plan)
    }

    /// The pipeline, for the script variants; the others are multi-step.
    fn batch_limit(&self) -> usize {
        if self.variant.pipelines() {
            self.plan.settings.pipeline
        } else {
            1
        }
    }
}

/// One connection's conversation for one variant.
pub(crate) enum Talk {
    V1 {
        get: Vec<u8>,
        decr: Vec<u8>,
        awaiting_decr: bool,
    },
    V2 {
        watch: Vec<u8>,
        get: Vec<u8>,
        unwatch: Vec<u8>,
        /// MULTI, DECR, EXEC in one write.
        transaction: Vec<u8>,
        step: V2Step,
    },
    /// v3 and full: one script call per request, any number per write.
    Script(ScriptTemplate),
    V4 {
        decr: Vec<u8>,
        incr: Vec<u8>,
        awaiting_incr: bool,
    },
    Lock(Box<LockTalk>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum V2Step {
    Watch,
    Get,
    Unwatch,
    /// Replies of MULTI and DECR seen so far (skipped); EXEC's decides.
    Exec(u8),
}

impl Talk {
    /// Pack what can be packed for `variant`.
    pub(crate) fn new(variant: Variant, plan: &Plan) -> Talk {
        let stock = plan.keys.item.stock.as_bytes();
        match variant {
            Variant::V1 => Talk::V1 {
                get: resp::command(&[b"GET", stock]),
                decr: resp::command(&[b"DECR", stock]),
                awaiting_decr: false,
            },
            Variant::V2 => {
                let mut transaction = resp::command(&[b"MULTI"]);
                transaction.extend(resp::command(&[b"DECR", stock]));
                transaction.extend(resp::command(&[b"EXEC"]));
                Talk::V2 {
                    watch: resp::command(&[b"WATCH", stock]),
                    get: resp::command(&[b"GET", stock]),
                    unwatch: resp::command(&[b"UNWATCH"]),
                    transaction,
                    step: V2Step::Watch,
                }
            }
            Variant::V3 | Variant::Full => Talk::Script(ScriptTemplate::new(variant, plan)),
            Variant::V4 => Talk::V4 {
                decr: resp::command(&[b"DECR", stock]),
                incr: resp::command(&[b"INCR", stock]),
                awaiting_incr: false,
            },
            Variant::Lock => Talk::Lock(Box::new(LockTalk::new(plan))),
        }
    }
}

impl Conversation for Talk {
    type Reply = Value;
    type Counts = Counts;

    /// Several requests only for the script variants, pipelined.
    fn begin(&mut self, requests: &[u64], out: &mut Vec<u8>) -> usize {
        match self {
            Talk::V1 {
                get, awaiting_decr, ..
            } => {
                *awaiting_decr = false;
                out.extend_from_slice(get);
            }
            Talk::V2 { watch, step, .. } => {
                *step = V2Step::Watch;
                out.extend_from_slice(watch);
            }
            Talk::Script(template) => {
                for &request in requests {
                    template.write(request, out);
                }
                return requests.len() * template.replies_per_request();
            }
            Talk::V4 {
                decr,
                awaiting_incr,
                ..
            } => {
                *awaiting_incr = false;
                out.extend_from_slice(decr);
            }
            Talk::Lock(lock) => lock.begin(out),
        }
        1
    }

    fn reply(&mut self, reply: Value, out: &mut Vec<u8>, counts: &mut Counts) -> Result<Next> {
        let send = |out: &mut Vec<u8>, bytes: &[u8], replies: usize| {
            out.extend_from_slice(bytes);
            Next::Send { replies }
        };
        Ok(match self {
            Talk::V1 {
                get: _,
                decr,
                awaiting_decr,
            } => {
                if *awaiting_decr {
                    resp::int_or_nil(reply, "v1 DECR")?;
                    counts.succeeded += 1;
                    Next::Finished
                } else if resp::int_or_nil(reply, "v1 GET")?.unwrap_or(0) <= 0 {
                    counts.sold_out += 1;
                    Next::Finished
                } else {
                    // The race on purpose: another client may DECR between our GET and our DECR.
                    *awaiting_decr = true;
                    send(out, decr, 1)
                }
            }
            Talk::V2 {
                watch,
                get,
                unwatch,
                transaction,
                step,
            } => match *step {
                V2Step::Watch => {
                    resp::expect_ok(reply, "v2 WATCH")?;
                    *step = V2Step::Get;
                    send(out, get, 1)
                }
                V2Step::Get => {
                    if resp::int_or_nil(reply, "v2 GET")?.unwrap_or(0) <= 0 {
                        *step = V2Step::Unwatch;
                        send(out, unwatch, 1)
                    } else {
                        *step = V2Step::Exec(0);
                        send(out, transaction, 3)
                    }
                }
                V2Step::Unwatch => {
                    resp::expect_ok(reply, "v2 UNWATCH")?;
                    counts.sold_out += 1;
                    Next::Finished
                }
                // MULTI's OK and DECR's QUEUED.
                V2Step::Exec(seen) if seen < 2 => {
                    if let Value::ServerError(error) = reply {
                        bail!("v2 MULTI/DECR failed: {error:?}");
                    }
                    *step = V2Step::Exec(seen + 1);
                    Next::Pending
                }
                V2Step::Exec(_) => match reply {
                    // EXEC is nil when another client changed the stock after our WATCH.
                    Value::Nil => {
                        counts.retries += 1;
                        *step = V2Step::Watch;
                        send(out, watch, 1)
                    }
                    Value::Array(_) => {
                        counts.succeeded += 1;
                        Next::Finished
                    }
                    other => bail!("v2 EXEC answered {other:?}"),
                },
            },
            Talk::Script(template) => {
                if template.count(reply, counts)? {
                    Next::Finished
                } else {
                    Next::Pending
                }
            }
            Talk::V4 {
                decr: _,
                incr,
                awaiting_incr,
            } => {
                if *awaiting_incr {
                    resp::int_or_nil(reply, "v4 INCR")?;
                    counts.sold_out += 1;
                    Next::Finished
                } else {
                    let left = resp::int_or_nil(reply, "v4 DECR")?.unwrap_or(0);
                    if left < 0 {
                        counts.retries += 1;
                        counts.lowest_stock_seen =
                            Some(counts.lowest_stock_seen.map_or(left, |low| low.min(left)));
                        *awaiting_incr = true;
                        send(out, incr, 1)
                    } else {
                        counts.succeeded += 1;
                        Next::Finished
                    }
                }
            }
            Talk::Lock(lock) => lock.reply(reply, out, counts)?,
        })
    }
}

/// GET/DECR under a per-item lock (SET NX PX, compare-and-delete release).
pub(crate) struct LockTalk {
    lock_key: Vec<u8>,
    /// The release script's call; the token's counter is written per acquisition.
    release_call: Template,
    get: Vec<u8>,
    decr: Vec<u8>,
    /// Random per connection; a counter makes each acquisition's token unique.
    token_prefix: Vec<u8>,
    acquisitions: u64,
    /// This acquisition's `SET NX PX` and release, packed once per request.
    acquire: Vec<u8>,
    release: Vec<u8>,
    step: LockStep,
    give_up_at: Instant,
    pause: Duration,
    bought: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LockStep {
    Acquire,
    Get,
    Decr,
    Release,
}

impl LockTalk {
    fn new(plan: &Plan) -> LockTalk {
        let stock = plan.keys.item.stock.as_bytes();
        let token_prefix = format!("{:016x}-", rand::random::<u64>()).into_bytes();
        let token_width = width(u64::MAX);
        let release = variants::lock_release_words(plan, &token_prefix, &|number| {
            number.field().placeholder(token_width)
        });
        LockTalk {
            lock_key: plan.keys.lock.as_bytes().to_vec(),
            release_call: Template::resp(&release, &[Number::Token.field()]),
            get: resp::command(&[b"GET", stock]),
            decr: resp::command(&[b"DECR", stock]),
            token_prefix,
            acquisitions: 0,
            acquire: Vec::with_capacity(128),
            release: Vec::with_capacity(128),
            step: LockStep::Acquire,
            give_up_at: Instant::now(),
            pause: LOCK_RETRY_PAUSE,
            bought: false,
        }
    }

    fn begin(&mut self, out: &mut Vec<u8>) {
        self.acquisitions += 1;
        // The token in SET NX and in the release must be the same bytes: both zero-padded.
        self.release.clear();
        self.release_call
            .write(|_| self.acquisitions, &mut self.release);
        let token = format!("{:0width$}", self.acquisitions, width = width(u64::MAX));
        self.acquire.clear();
        resp::array_header(&mut self.acquire, 6);
        resp::bulk(&mut self.acquire, &[b"SET"]);
        resp::bulk(&mut self.acquire, &[&self.lock_key]);
        resp::bulk(&mut self.acquire, &[&self.token_prefix, token.as_bytes()]);
        resp::bulk(&mut self.acquire, &[b"NX"]);
        resp::bulk(&mut self.acquire, &[b"PX"]);
        resp::bulk(&mut self.acquire, &[LOCK_TTL_MS]);
        self.step = LockStep::Acquire;
        self.give_up_at = Instant::now() + LOCK_WAIT_LIMIT;
        self.pause = LOCK_RETRY_PAUSE;
        self.bought = false;
        out.extend_from_slice(&self.acquire);
    }

    fn reply(&mut self, reply: Value, out: &mut Vec<u8>, counts: &mut Counts) -> Result<Next> {
        match self.step {
            LockStep::Acquire => match reply {
                Value::Okay => {
                    self.step = LockStep::Get;
                    out.extend_from_slice(&self.get);
                }
                Value::Nil if Instant::now() < self.give_up_at => {
                    counts.retries += 1;
                    out.extend_from_slice(&self.acquire);
                    // Jitter keeps the waiters from retrying in lockstep.
                    let pause = self.pause.mul_f64(rand::random_range(0.5..1.5));
                    self.pause = (self.pause * 2).min(LOCK_RETRY_PAUSE_MAX);
                    return Ok(Next::SendAfter { pause, replies: 1 });
                }
                Value::Nil => {
                    counts.rejected += 1;
                    return Ok(Next::Finished);
                }
                other => bail!("lock SET NX PX answered {other:?}"),
            },
            LockStep::Get => {
                self.bought = resp::int_or_nil(reply, "lock GET")?.unwrap_or(0) > 0;
                if self.bought {
                    self.step = LockStep::Decr;
                    out.extend_from_slice(&self.decr);
                } else {
                    self.step = LockStep::Release;
                    out.extend_from_slice(&self.release);
                }
            }
            LockStep::Decr => {
                resp::int_or_nil(reply, "lock DECR")?;
                self.step = LockStep::Release;
                out.extend_from_slice(&self.release);
            }
            LockStep::Release => {
                if !lock_release::parse_reply(reply)? {
                    // The lock expired while we held it: another holder may have run concurrently.
                    bail!(
                        "lock expired before release (held longer than {} ms)",
                        String::from_utf8_lossy(LOCK_TTL_MS)
                    );
                }
                if self.bought {
                    counts.succeeded += 1;
                } else {
                    counts.sold_out += 1;
                }
                return Ok(Next::Finished);
            }
        }
        Ok(Next::Send { replies: 1 })
    }
}
