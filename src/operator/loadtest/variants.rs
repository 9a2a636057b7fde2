//! The variants' shared pieces: the lock's timing constants, what a worker
//! counts, and the script calls of `full`, `v3` and `lock` built from the
//! scripts' typed calls (`crate::redis_client::scripts`), so the KEYS/ARGV
//! order is the one `seckill buy` uses and `loadtest --print-command` prints
//! the very same words for redis-benchmark. What each variant says to Redis,
//! step by step, is its state machine in `conversation`; v3's and full's
//! per-request packing is `script`.
//!
//! Within loadtest it uses: namespace.

use std::time::Duration;

use seckill_loadgen::Field;

use super::namespace::LoadtestKeys;
use super::{Plan, Variant};
use crate::redis_client::node::NODE_PLACEHOLDER;
use crate::redis_client::scripts::ScriptCall;
use crate::redis_client::scripts::buy::Buy;
use crate::redis_client::scripts::lock_release::LockRelease;
use crate::redis_client::scripts::v3_decr::V3Decr;

/// How long a `lock` request waits for the lock before it gives up (counted as rejected).
pub(crate) const LOCK_WAIT_LIMIT: Duration = Duration::from_secs(1);
/// First pause after finding the lock busy; it doubles per try up to [`LOCK_RETRY_PAUSE_MAX`].
pub(crate) const LOCK_RETRY_PAUSE: Duration = Duration::from_micros(500);
/// Longest pause between two tries. Without backoff a hundred waiters retrying
/// SET NX every millisecond flood Redis and slow down the one client holding
/// the lock: the run then measured the flood, not the lock.
pub(crate) const LOCK_RETRY_PAUSE_MAX: Duration = Duration::from_millis(8);
/// Lock expiry: a crashed holder frees the item after this long.
pub(crate) const LOCK_TTL_MS: &[u8] = b"5000";

/// What one worker counted.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    pub(crate) succeeded: u64,
    /// `full --wait-replicas`: bought, but fewer replicas confirmed it (sold all the same).
    pub(crate) unreplicated: u64,
    pub(crate) sold_out: u64,
    /// Duplicate, rate-limited (full) or gave up waiting for the lock (lock).
    pub(crate) rejected: u64,
    /// v2: aborted transactions; v4: times stock was seen below zero; lock: busy-lock waits.
    pub(crate) retries: u64,
    /// v4: the lowest stock a DECR returned; `None` when never below zero.
    pub(crate) lowest_stock_seen: Option<i64>,
}

impl seckill_loadgen::Counts for Counts {
    fn absorb(&mut self, other: Counts) {
        self.succeeded += other.succeeded;
        self.unreplicated += other.unreplicated;
        self.sold_out += other.sold_out;
        self.rejected += other.rejected;
        self.retries += other.retries;
        self.lowest_stock_seen = match (self.lowest_stock_seen, other.lowest_stock_seen) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
}

/// Prefix of synthetic user ids (`u000`, `u001`, ...).
const USER_PREFIX: &[u8] = b"u";

/// The `full` variant's buy call: the load-test item's keys, synthetic user
/// `u<n>` (its rate key with it), qty 1, no request id, order id
/// `<order_prefix><request number>`.
fn buy_call(
    keys: &LoadtestKeys,
    campaign_id: &str,
    item_id: &str,
    order_prefix: &str,
    node: &str,
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
        reservation_counts: fixed(&keys.reservation_counts),
        // The load test's item has no waiting room (`--variant queue` is its own scenario).
        room: None,
        queue: None,
        registered: None,
        risk: None,
        admitted: None,
        active: None,
        shuffled: None,
        passes: None,
        revoked: None,
        payment_timeout_ms: fixed("0"),
        arrival_ms: fixed(""),
        ticket_key: fixed(""),
        node: fixed(node),
    }
}

/// The EVALSHA that `variant` sends per request, as a shell-quoted command
/// line for redis-benchmark (`__rand_int__` stands for the per-request
/// numbers); `None` for the variants that are not one script call.
pub(crate) fn print_command(
    variant: Variant,
    keys: &LoadtestKeys,
    campaign_id: &str,
    item_id: &str,
) -> Option<String> {
    let words = match variant {
        Variant::Full => {
            // The run_id is the target's, unknown here: the script reads
            // INFO itself (~3 µs) unless the placeholder is replaced.
            let call = buy_call(keys, campaign_id, item_id, "o", NODE_PLACEHOLDER);
            words_of(&call, None, &|_| RAND_INT.to_vec())
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

/// The words of the EVALSHA that `variant` (v3 or full) sends in the run of
/// `plan`, with the SHA that SCRIPT LOAD answered; `number` gives the bytes
/// that complete each numbered word (the packer's placeholders).
pub(crate) fn script_words(
    variant: Variant,
    plan: &Plan,
    number: &dyn Fn(Number) -> Vec<u8>,
) -> Vec<Vec<u8>> {
    match variant {
        Variant::Full => {
            let order_prefix = format!("{}-", plan.run_id);
            let call = buy_call(
                &plan.keys,
                &plan.campaign_id,
                &plan.item_id,
                &order_prefix,
                &plan.node_run_id,
            );
            words_of(&call, Some(&plan.buy_sha), number)
        }
        _ => {
            let call = V3Decr {
                stock: Word::Fixed(plan.keys.item.stock.as_bytes().to_vec()),
            };
            words_of(&call, Some(&plan.v3_sha), number)
        }
    }
}

/// The words of the lock variant's release (compare-and-delete), its token numbered.
pub(crate) fn lock_release_words(
    plan: &Plan,
    token_prefix: &[u8],
    number: &dyn Fn(Number) -> Vec<u8>,
) -> Vec<Vec<u8>> {
    let call = LockRelease {
        lock: Word::Fixed(plan.keys.lock.as_bytes().to_vec()),
        token: Word::Numbered(token_prefix.to_vec(), Number::Token),
    };
    words_of(&call, Some(&plan.lock_release_sha), number)
}

/// `EVALSHA sha numkeys KEYS... ARGV...` of `call`, `number` completing every
/// numbered word; `sha` is what SCRIPT LOAD answered (default: the SHA1 of
/// the script's source, which is the same).
fn words_of<C: ScriptCall<Word>>(
    call: &C,
    sha: Option<&str>,
    number: &dyn Fn(Number) -> Vec<u8>,
) -> Vec<Vec<u8>> {
    let keys = call.keys();
    let mut words = vec![
        b"EVALSHA".to_vec(),
        sha.unwrap_or(C::spec().sha()).as_bytes().to_vec(),
        keys.len().to_string().into_bytes(),
    ];
    for word in keys.into_iter().chain(call.argv()) {
        words.push(match word {
            Word::Fixed(value) => value.clone(),
            Word::Numbered(prefix, which) => [prefix.as_slice(), &number(*which)].concat(),
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
pub(crate) enum Number {
    /// The synthetic user's number.
    User,
    /// The request's number.
    Request,
    /// The lock acquisition's number.
    Token,
}

impl Number {
    /// Every kind of number, as the packer's template fields.
    pub(crate) const FIELDS: [Field; 3] = [USER_FIELD, REQUEST_FIELD, TOKEN_FIELD];

    /// The template field this number is written into.
    pub(crate) fn field(self) -> Field {
        match self {
            Number::User => USER_FIELD,
            Number::Request => REQUEST_FIELD,
            Number::Token => TOKEN_FIELD,
        }
    }
}

/// The template fields of the three numbers.
pub(crate) const USER_FIELD: Field = Field::new(1);
const REQUEST_FIELD: Field = Field::new(2);
const TOKEN_FIELD: Field = Field::new(3);

/// One KEYS/ARGV value of a packed script call.
#[derive(Debug, Clone)]
pub(crate) enum Word {
    /// The same for every request.
    Fixed(Vec<u8>),
    /// This prefix followed by a number chosen per request.
    Numbered(Vec<u8>, Number),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words of the `full` call: the buy script's KEYS/ARGV order, numbered words completed.
    #[test]
    fn full_words_follow_the_buy_call() {
        let keys = LoadtestKeys::new("camp", "item");
        let call = buy_call(&keys, "camp", "item", "run-", NODE_PLACEHOLDER);
        let words = words_of(&call, None, &|_| b"42".to_vec());
        assert_eq!(
            words[1],
            crate::redis_client::scripts::buy::SPEC.sha().as_bytes()
        );
        assert_eq!(words[2], b"10");
        assert_eq!(words[3], keys.item.meta.as_bytes());
        assert_eq!(words[9], keys.item.rate("u42").as_bytes());
        assert_eq!(words[13], b"u42");
        assert_eq!(words[16], b"run-42");
    }

    #[test]
    fn print_command_quotes_for_the_shell() {
        let keys = LoadtestKeys::new("camp", "item");
        let line = print_command(Variant::Full, &keys, "camp", "item").unwrap();
        assert!(
            line.starts_with(&format!(
                "EVALSHA {} 10 'seckill-loadtest:{{camp:item}}:meta'",
                crate::redis_client::scripts::buy::SPEC.sha()
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
