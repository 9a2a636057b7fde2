//! What one simulated request does in each variant, exactly as the reference
//! chapter (section 14.5) describes it, so the comparison is honest.
//!
//! Each worker thread builds one [`Shopper`] before the start line, packing
//! every command it can in advance; after that a request costs its round
//! trips and the parsing of the replies, nothing else.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use redis::{ConnectionLike, Value};

use super::resp::{self, Digits};
use super::{Plan, Variant};

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
    /// `*16 EVALSHA sha 7` and the six fixed keys.
    head: Vec<u8>,
    /// Prefix of the per-user rate-limit key, user prefix included.
    rate_prefix: Vec<u8>,
    /// qty `1` and an empty request id.
    middle: Vec<u8>,
    /// Order ids are `<run id>-<request number>`: unique, no ULID per request.
    order_prefix: Vec<u8>,
    /// Campaign id and item id.
    tail: Vec<u8>,
    users: u64,
    buffer: Vec<u8>,
}

/// GET/DECR under a per-item lock (SET NX PX, compare-and-delete release).
pub struct LockedDecr {
    lock_key: Vec<u8>,
    release_head: Vec<u8>,
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
                let one = resp::command(&[b"EVALSHA", plan.v3_sha.as_bytes(), b"1", stock]);
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
                    match int_or_nil(Ok(reply), "v3 EVALSHA")? {
                        Some(1) => counts.succeeded += 1,
                        Some(0) => counts.sold_out += 1,
                        other => bail!("v3 script answered {other:?}"),
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
        let keys = &plan.keys.item;
        let mut head = Vec::new();
        resp::array_header(&mut head, 16);
        for arg in [b"EVALSHA".as_slice(), plan.buy_sha.as_bytes(), b"7"] {
            resp::bulk(&mut head, &[arg]);
        }
        for key in [
            &keys.meta,
            &keys.stock,
            &keys.buyers,
            &keys.buyer_orders,
            &keys.requests,
            &keys.orders,
        ] {
            resp::bulk(&mut head, &[key.as_bytes()]);
        }
        let mut middle = Vec::new();
        resp::bulk(&mut middle, &[b"1"]);
        resp::bulk(&mut middle, &[b""]);
        let mut tail = Vec::new();
        resp::bulk(&mut tail, &[plan.campaign_id.as_bytes()]);
        resp::bulk(&mut tail, &[plan.item_id.as_bytes()]);
        let mut rate_prefix = keys.rate("").into_bytes();
        rate_prefix.extend_from_slice(USER_PREFIX);
        FullBuy {
            head,
            rate_prefix,
            middle,
            order_prefix: format!("{}-", plan.run_id).into_bytes(),
            tail,
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
            self.buffer.extend_from_slice(&self.head);
            resp::bulk(&mut self.buffer, &[&self.rate_prefix, user.as_bytes()]);
            resp::bulk(&mut self.buffer, &[USER_PREFIX, user.as_bytes()]);
            self.buffer.extend_from_slice(&self.middle);
            resp::bulk(&mut self.buffer, &[&self.order_prefix, order.as_bytes()]);
            self.buffer.extend_from_slice(&self.tail);
        }
        for reply in send(conn, &self.buffer, requests.len(), "full buy EVALSHA")? {
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
        Ok(())
    }
}

impl LockedDecr {
    fn new(plan: &Plan) -> LockedDecr {
        let stock = plan.keys.item.stock.as_bytes();
        let lock = plan.keys.lock.as_bytes();
        let mut release_head = Vec::new();
        resp::array_header(&mut release_head, 5);
        for arg in [
            b"EVALSHA".as_slice(),
            plan.lock_release_sha.as_bytes(),
            b"1",
            lock,
        ] {
            resp::bulk(&mut release_head, &[arg]);
        }
        LockedDecr {
            lock_key: lock.to_vec(),
            release_head,
            get: resp::command(&[b"GET", stock]),
            decr: resp::command(&[b"DECR", stock]),
            token_prefix: format!("{:016x}-", rand::random::<u64>()).into_bytes(),
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
        self.buffer.extend_from_slice(&self.release_head);
        resp::bulk(&mut self.buffer, &[&self.token_prefix, token.as_bytes()]);
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
        let released = int_or_nil(conn.req_packed_command(release), "lock release")?;
        if released != Some(1) {
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
