//! What one simulated request does in each variant, exactly as the reference
//! chapter (section 14.5) describes it, so the comparison is honest.
//!
//! Each worker thread builds one [`Shopper`] before the start line, packing
//! every command it can in advance; after that a request costs its round
//! trips and the parsing of the replies, nothing else.
//!
//! The script variants pack their EVALSHA from the scripts' typed calls
//! (`crate::scripts`): the KEYS/ARGV order is the one `seckill buy` uses, and
//! `loadtest --print-command` prints the very same words for redis-benchmark.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use redis::{ConnectionLike, Value};

use super::namespace::LoadtestKeys;
use super::resp::{self, Digits};
use super::{Plan, Variant};
use crate::scripts::ScriptCall;
use crate::scripts::buy::{self, Buy, Outcome};
use crate::scripts::lock_release::{self, LockRelease};
use crate::scripts::v3_decr::{self, V3Decr};

/// How long a `lock` request waits for the lock before it gives up (counted as rejected).
pub const LOCK_WAIT_LIMIT: Duration = Duration::from_secs(1);
/// First pause after finding the lock busy; it doubles per try up to [`LOCK_RETRY_PAUSE_MAX`].
pub const LOCK_RETRY_PAUSE: Duration = Duration::from_micros(500);
/// Longest pause between two tries. Without backoff a hundred waiters retrying
/// SET NX every millisecond flood Redis and slow down the one client holding
/// the lock: the run then measured the flood, not the lock.
pub const LOCK_RETRY_PAUSE_MAX: Duration = Duration::from_millis(8);
/// Lock expiry: a crashed holder frees the item after this long.
pub const LOCK_TTL_MS: &[u8] = b"5000";

/// What one worker counted.
#[derive(Debug, Default)]
pub struct Counts {
    pub succeeded: u64,
    pub sold_out: u64,
    /// Duplicate, rate-limited (full) or gave up waiting for the lock (lock).
    pub rejected: u64,
    /// v2: aborted transactions; v4: times stock was seen below zero; lock: busy-lock waits.
    pub retries: u64,
    /// v4: the lowest stock a DECR returned; `None` when never below zero.
    pub lowest_stock_seen: Option<i64>,
}

impl Counts {
    /// Add another worker's counts to these.
    pub fn absorb(&mut self, other: Counts) {
        self.succeeded += other.succeeded;
        self.sold_out += other.sold_out;
        self.rejected += other.rejected;
        self.retries += other.retries;
        self.lowest_stock_seen = match (self.lowest_stock_seen, other.lowest_stock_seen) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
}

/// The per-thread state of one variant: its pre-packed commands.
pub enum Shopper {
    V1 {
        get: Vec<u8>,
        decr: Vec<u8>,
    },
    V2 {
        watch: Vec<u8>,
        get: Vec<u8>,
        unwatch: Vec<u8>,
        transaction: Vec<u8>,
    },
    V3 {
        /// Length of one packed EVALSHA.
        one: usize,
        /// `--pipeline` copies of it back to back; a batch of n sends the first n.
        repeated: Vec<u8>,
    },
    V4 {
        decr: Vec<u8>,
        incr: Vec<u8>,
    },
    Full(Box<FullBuy>),
    Lock(Box<LockedDecr>),
}

/// The real buy script, one EVALSHA per request, packed into a reused buffer.
pub struct FullBuy {
    /// The packed call; user and order id are completed per request.
    template: Template,
    users: u64,
    buffer: Vec<u8>,
}

/// GET/DECR under a per-item lock (SET NX PX, compare-and-delete release).
pub struct LockedDecr {
    lock_key: Vec<u8>,
    /// The packed release; the token is completed per acquisition.
    release: Template,
    get: Vec<u8>,
    decr: Vec<u8>,
    /// Random per thread; a counter makes each acquisition's token unique.
    token_prefix: Vec<u8>,
    acquisitions: u64,
    buffer: Vec<u8>,
}

/// Prefix of synthetic user ids (`u0`, `u1`, ...).
const USER_PREFIX: &[u8] = b"u";

impl Shopper {
    /// Pack what can be packed for `variant`; `pipeline` only matters to v3 and full.
    pub fn new(variant: Variant, plan: &Plan) -> Shopper {
        let stock = plan.keys.item.stock.as_bytes();
        match variant {
            Variant::V1 => Shopper::V1 {
                get: resp::command(&[b"GET", stock]),
                decr: resp::command(&[b"DECR", stock]),
            },
            Variant::V2 => {
                let mut transaction = resp::command(&[b"MULTI"]);
                transaction.extend(resp::command(&[b"DECR", stock]));
                transaction.extend(resp::command(&[b"EXEC"]));
                Shopper::V2 {
                    watch: resp::command(&[b"WATCH", stock]),
                    get: resp::command(&[b"GET", stock]),
                    unwatch: resp::command(&[b"UNWATCH"]),
                    transaction,
                }
            }
            Variant::V3 => {
                let call = V3Decr {
                    stock: Word::Fixed(stock.to_vec()),
                };
                let mut one = Vec::new();
                Template::new(&call, &plan.v3_sha).pack(&mut one, |_| b"");
                Shopper::V3 {
                    one: one.len(),
                    repeated: one.repeat(plan.settings.pipeline),
                }
            }
            Variant::V4 => Shopper::V4 {
                decr: resp::command(&[b"DECR", stock]),
                incr: resp::command(&[b"INCR", stock]),
            },
            Variant::Full => Shopper::Full(Box::new(FullBuy::new(plan))),
            Variant::Lock => Shopper::Lock(Box::new(LockedDecr::new(plan))),
        }
    }

    /// Requests per round trip this shopper can batch.
    pub fn batch_limit(&self, pipeline: usize) -> usize {
        match self {
            Shopper::V3 { .. } | Shopper::Full(_) => pipeline,
            _ => 1,
        }
    }

    /// Make `requests.len()` requests (request numbers given) and count their outcomes.
    pub fn shop<C: ConnectionLike>(
        &mut self,
        conn: &mut C,
        requests: &[u64],
        counts: &mut Counts,
    ) -> Result<()> {
        match self {
            Shopper::V1 { get, decr } => {
                // The race on purpose: another client may DECR between our GET and our DECR.
                let stock = int_or_nil(conn.req_packed_command(get), "v1 GET")?;
                if stock.unwrap_or(0) <= 0 {
                    counts.sold_out += 1;
                } else {
                    int_or_nil(conn.req_packed_command(decr), "v1 DECR")?;
                    counts.succeeded += 1;
                }
            }
            Shopper::V2 {
                watch,
                get,
                unwatch,
                transaction,
            } => loop {
                expect_ok(conn.req_packed_command(watch), "v2 WATCH")?;
                let stock = int_or_nil(conn.req_packed_command(get), "v2 GET")?;
                if stock.unwrap_or(0) <= 0 {
                    expect_ok(conn.req_packed_command(unwatch), "v2 UNWATCH")?;
                    counts.sold_out += 1;
                    break;
                }
                // Replies: MULTI's OK and DECR's QUEUED are skipped; EXEC's is nil when aborted.
                let exec = conn
                    .req_packed_commands(transaction, 2, 1)
                    .context("v2 MULTI/DECR/EXEC failed")?;
                match exec.into_iter().next() {
                    Some(Value::Nil) => counts.retries += 1,
                    Some(Value::Array(_)) => {
                        counts.succeeded += 1;
                        break;
                    }
                    other => bail!("v2 EXEC answered {other:?}"),
                }
            },
            Shopper::V3 { one, repeated } => {
                let packed = &repeated[..*one * requests.len()];
                for reply in send(conn, packed, requests.len(), "v3 EVALSHA")? {
                    if v3_decr::parse_reply(reply)? {
                        counts.succeeded += 1;
                    } else {
                        counts.sold_out += 1;
                    }
                }
            }
            Shopper::V4 { decr, incr } => {
                let left = int_or_nil(conn.req_packed_command(decr), "v4 DECR")?.unwrap_or(0);
                if left < 0 {
                    counts.retries += 1;
                    counts.lowest_stock_seen =
                        Some(counts.lowest_stock_seen.map_or(left, |low| low.min(left)));
                    int_or_nil(conn.req_packed_command(incr), "v4 INCR")?;
                    counts.sold_out += 1;
                } else {
                    counts.succeeded += 1;
                }
            }
            Shopper::Full(full) => full.shop(conn, requests, counts)?,
            Shopper::Lock(lock) => lock.shop(conn, counts)?,
        }
        Ok(())
    }
}

impl FullBuy {
    fn new(plan: &Plan) -> FullBuy {
        let order_prefix = format!("{}-", plan.run_id);
        let call = buy_call(&plan.keys, &plan.campaign_id, &plan.item_id, &order_prefix);
        FullBuy {
            template: Template::new(&call, &plan.buy_sha),
            users: plan.settings.users,
            buffer: Vec::with_capacity(512 * plan.settings.pipeline),
        }
    }

    fn shop<C: ConnectionLike>(
        &mut self,
        conn: &mut C,
        requests: &[u64],
        counts: &mut Counts,
    ) -> Result<()> {
        self.buffer.clear();
        for &request in requests {
            let user = Digits::new(request % self.users);
            let order = Digits::new(request);
            self.template.pack(&mut self.buffer, |number| match number {
                Number::User => user.as_bytes(),
                Number::Request | Number::Token => order.as_bytes(),
            });
        }
        for reply in send(conn, &self.buffer, requests.len(), "full buy EVALSHA")? {
            match buy::outcome_of(&reply)? {
                Outcome::Ok => counts.succeeded += 1,
                Outcome::SoldOut => counts.sold_out += 1,
                Outcome::Duplicate | Outcome::RateLimited => counts.rejected += 1,
                other => bail!(
                    "buy script answered {:?}: the load-test item is not open for sale",
                    other.as_str()
                ),
            }
        }
        Ok(())
    }
}

impl LockedDecr {
    fn new(plan: &Plan) -> LockedDecr {
        let stock = plan.keys.item.stock.as_bytes();
        let lock = plan.keys.lock.as_bytes();
        let token_prefix = format!("{:016x}-", rand::random::<u64>()).into_bytes();
        let call = LockRelease {
            lock: Word::Fixed(lock.to_vec()),
            token: Word::Numbered(token_prefix.clone(), Number::Token),
        };
        LockedDecr {
            lock_key: lock.to_vec(),
            release: Template::new(&call, &plan.lock_release_sha),
            get: resp::command(&[b"GET", stock]),
            decr: resp::command(&[b"DECR", stock]),
            token_prefix,
            acquisitions: 0,
            buffer: Vec::with_capacity(256),
        }
    }

    fn shop<C: ConnectionLike>(&mut self, conn: &mut C, counts: &mut Counts) -> Result<()> {
        self.acquisitions += 1;
        let token = Digits::new(self.acquisitions);
        self.buffer.clear();
        resp::array_header(&mut self.buffer, 6);
        resp::bulk(&mut self.buffer, &[b"SET"]);
        resp::bulk(&mut self.buffer, &[&self.lock_key]);
        resp::bulk(&mut self.buffer, &[&self.token_prefix, token.as_bytes()]);
        resp::bulk(&mut self.buffer, &[b"NX"]);
        resp::bulk(&mut self.buffer, &[b"PX"]);
        resp::bulk(&mut self.buffer, &[LOCK_TTL_MS]);
        let acquire_len = self.buffer.len();
        self.release.pack(&mut self.buffer, |_| token.as_bytes());
        let (acquire, release) = self.buffer.split_at(acquire_len);

        let give_up_at = Instant::now() + LOCK_WAIT_LIMIT;
        let mut pause = LOCK_RETRY_PAUSE;
        loop {
            match conn
                .req_packed_command(acquire)
                .context("lock SET NX PX failed")?
            {
                Value::Okay => break,
                Value::Nil if Instant::now() < give_up_at => {
                    counts.retries += 1;
                    // Jitter keeps the waiters from retrying in lockstep.
                    std::thread::sleep(pause.mul_f64(rand::random_range(0.5..1.5)));
                    pause = (pause * 2).min(LOCK_RETRY_PAUSE_MAX);
                }
                Value::Nil => {
                    counts.rejected += 1;
                    return Ok(());
                }
                other => bail!("lock SET NX PX answered {other:?}"),
            }
        }
        let stock = int_or_nil(conn.req_packed_command(&self.get), "lock GET")?;
        let bought = stock.unwrap_or(0) > 0;
        if bought {
            int_or_nil(conn.req_packed_command(&self.decr), "lock DECR")?;
        }
        let released = conn
            .req_packed_command(release)
            .context("lock release failed")?;
        if !lock_release::parse_reply(released)? {
            // The lock expired while we held it: another holder may have run concurrently.
            bail!(
                "lock expired before release (held longer than {} ms)",
                String::from_utf8_lossy(LOCK_TTL_MS)
            );
        }
        if bought {
            counts.succeeded += 1;
        } else {
            counts.sold_out += 1;
        }
        Ok(())
    }
}

/// The `full` variant's buy call: the load-test item's keys, synthetic user
/// `u<n>` (its rate key with it), qty 1, no request id, order id
/// `<order_prefix><request number>`.
fn buy_call(
    keys: &LoadtestKeys,
    campaign_id: &str,
    item_id: &str,
    order_prefix: &str,
) -> Buy<Word> {
    let keys = &keys.item;
    let fixed = |value: &str| Word::Fixed(value.as_bytes().to_vec());
    let mut rate_prefix = keys.rate("").into_bytes();
    rate_prefix.extend_from_slice(USER_PREFIX);
    Buy {
        meta: fixed(&keys.meta),
        stock: fixed(&keys.stock),
        buyers: fixed(&keys.buyers),
        buyer_orders: fixed(&keys.buyer_orders),
        requests: fixed(&keys.requests),
        orders: fixed(&keys.orders),
        rate: Word::Numbered(rate_prefix, Number::User),
        user: Word::Numbered(USER_PREFIX.to_vec(), Number::User),
        qty: fixed("1"),
        request_id: fixed(""),
        order_id: Word::Numbered(order_prefix.as_bytes().to_vec(), Number::Request),
        campaign: fixed(campaign_id),
        item: fixed(item_id),
        reservations: fixed(&keys.reservations),
        deadlines: fixed(&keys.deadlines),
        payment_timeout_ms: fixed("0"),
    }
}

/// The EVALSHA that `variant` sends per request, as a shell-quoted command
/// line for redis-benchmark (`__rand_int__` stands for the per-request
/// numbers); `None` for the variants that are not one script call.
pub fn print_command(
    variant: Variant,
    keys: &LoadtestKeys,
    campaign_id: &str,
    item_id: &str,
) -> Option<String> {
    let words = match variant {
        Variant::Full => {
            let call = buy_call(keys, campaign_id, item_id, "o");
            words_of(&call, RAND_INT)
        }
        Variant::V3 => V3Decr {
            stock: keys.item.stock.as_str(),
        }
        .evalsha_words(),
        Variant::V1 | Variant::V2 | Variant::V4 | Variant::Lock => return None,
    };
    Some(
        words
            .iter()
            .map(|word| shell_word(word))
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// `EVALSHA sha numkeys KEYS... ARGV...` of `call`, `number` completing every numbered word.
fn words_of<C: ScriptCall<Word>>(call: &C, number: &[u8]) -> Vec<Vec<u8>> {
    let keys = call.keys();
    let mut words = vec![
        b"EVALSHA".to_vec(),
        C::spec().sha().as_bytes().to_vec(),
        keys.len().to_string().into_bytes(),
    ];
    for word in keys.into_iter().chain(call.argv()) {
        words.push(match word {
            Word::Fixed(value) => value.clone(),
            Word::Numbered(prefix, _) => [prefix.as_slice(), number].concat(),
        });
    }
    words
}

/// redis-benchmark's placeholder, replaced by a random number per command.
const RAND_INT: &[u8] = b"__rand_int__";

/// One word of a shell command line, quoted when it needs to be.
fn shell_word(word: &[u8]) -> String {
    let text = String::from_utf8_lossy(word);
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-.,:/@%+=".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text.into_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// Which per-request number completes a [`Word::Numbered`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Number {
    /// The synthetic user's number.
    User,
    /// The request's number.
    Request,
    /// The lock acquisition's number.
    Token,
}

/// One KEYS/ARGV value of a packed script call.
#[derive(Debug, Clone)]
enum Word {
    /// The same for every request.
    Fixed(Vec<u8>),
    /// This prefix followed by a number chosen per request.
    Numbered(Vec<u8>, Number),
}

/// A script call packed once: runs of fixed words already in RESP, numbered
/// words completed per request.
struct Template {
    segments: Vec<Segment>,
}

enum Segment {
    Packed(Vec<u8>),
    Numbered(Vec<u8>, Number),
}

impl Template {
    /// Pack `EVALSHA sha numkeys KEYS... ARGV...` of `call`; `sha` is what
    /// SCRIPT LOAD answered (the SHA1 of the script's source).
    fn new<C: ScriptCall<Word>>(call: &C, sha: &str) -> Template {
        let (keys, argv) = (call.keys(), call.argv());
        let mut head = Vec::new();
        resp::array_header(&mut head, 3 + keys.len() + argv.len());
        resp::bulk(&mut head, &[b"EVALSHA"]);
        resp::bulk(&mut head, &[sha.as_bytes()]);
        resp::bulk(&mut head, &[keys.len().to_string().as_bytes()]);
        let mut segments = vec![Segment::Packed(head)];
        for word in keys.into_iter().chain(argv) {
            match (word, segments.last_mut()) {
                (Word::Fixed(value), Some(Segment::Packed(packed))) => resp::bulk(packed, &[value]),
                (Word::Fixed(value), _) => {
                    let mut packed = Vec::new();
                    resp::bulk(&mut packed, &[value]);
                    segments.push(Segment::Packed(packed));
                }
                (Word::Numbered(prefix, number), _) => {
                    segments.push(Segment::Numbered(prefix.clone(), *number))
                }
            }
        }
        Template { segments }
    }

    /// Append one call to `buffer`, `number` giving the digits of each numbered word.
    fn pack<'a>(&self, buffer: &mut Vec<u8>, number: impl Fn(Number) -> &'a [u8]) {
        for segment in &self.segments {
            match segment {
                Segment::Packed(packed) => buffer.extend_from_slice(packed),
                Segment::Numbered(prefix, which) => resp::bulk(buffer, &[prefix, number(*which)]),
            }
        }
    }
}

/// Send `count` packed commands in one round trip and return their replies.
fn send<C: ConnectionLike>(
    conn: &mut C,
    packed: &[u8],
    count: usize,
    what: &str,
) -> Result<Replies> {
    if count == 1 {
        let reply = conn
            .req_packed_command(packed)
            .with_context(|| format!("{what} failed"))?;
        Ok(Replies::One(std::iter::once(reply)))
    } else {
        let replies = conn
            .req_packed_commands(packed, 0, count)
            .with_context(|| format!("{what} (pipeline of {count}) failed"))?;
        Ok(Replies::Many(replies.into_iter()))
    }
}

/// The replies of one round trip; the unpipelined case allocates no Vec.
enum Replies {
    One(std::iter::Once<Value>),
    Many(std::vec::IntoIter<Value>),
}

impl Iterator for Replies {
    type Item = Value;

    fn next(&mut self) -> Option<Value> {
        match self {
            Replies::One(reply) => reply.next(),
            Replies::Many(replies) => replies.next(),
        }
    }
}

/// An integer reply (or nil); Redis errors become errors naming the command.
fn int_or_nil(reply: redis::RedisResult<Value>, what: &str) -> Result<Option<i64>> {
    match reply.with_context(|| format!("{what} failed"))? {
        Value::Nil => Ok(None),
        Value::Int(n) => Ok(Some(n)),
        Value::BulkString(text) => std::str::from_utf8(&text)
            .ok()
            .and_then(|t| t.parse().ok())
            .map(Some)
            .ok_or_else(|| {
                anyhow!(
                    "{what} answered a non-integer {:?}",
                    String::from_utf8_lossy(&text)
                )
            }),
        Value::ServerError(error) => Err(anyhow!("{what} failed: {error:?}")),
        other => bail!("{what} answered {other:?}"),
    }
}

fn expect_ok(reply: redis::RedisResult<Value>, what: &str) -> Result<()> {
    match reply.with_context(|| format!("{what} failed"))? {
        Value::Okay => Ok(()),
        other => bail!("{what} answered {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The packed `full` call is, byte for byte, what redis-rs packs for the
    /// same words: the packer and `--print-command` agree on one call.
    #[test]
    fn full_template_packs_the_buy_call() {
        let keys = LoadtestKeys::new("camp", "item");
        let call = buy_call(&keys, "camp", "item", "run-");
        let mut packed = Vec::new();
        Template::new(&call, buy::SPEC.sha()).pack(&mut packed, |_| b"42");
        let words = words_of(&call, b"42");
        let mut expected = redis::cmd("EVALSHA");
        for word in &words[1..] {
            expected.arg(word.as_slice());
        }
        assert_eq!(packed, expected.get_packed_command());
        assert_eq!(words[2], b"9");
        assert_eq!(words[3], keys.item.meta.as_bytes());
        assert_eq!(words[9], keys.item.rate("u42").as_bytes());
        assert_eq!(words[12], b"u42");
        assert_eq!(words[15], b"run-42");
    }

    #[test]
    fn print_command_quotes_for_the_shell() {
        let keys = LoadtestKeys::new("camp", "item");
        let line = print_command(Variant::Full, &keys, "camp", "item").unwrap();
        assert!(
            line.starts_with(&format!(
                "EVALSHA {} 9 'seckill-loadtest:{{camp:item}}:meta'",
                crate::scripts::buy::SPEC.sha()
            )),
            "{line}"
        );
        assert!(
            line.contains(" u__rand_int__ 1 '' o__rand_int__ camp item"),
            "{line}"
        );
        assert!(print_command(Variant::V1, &keys, "camp", "item").is_none());
        assert_eq!(shell_word(b"it's"), "'it'\\''s'");
    }
}
