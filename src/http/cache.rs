//! Refusals a `serve` instance answers from memory, with no Redis call:
//! `sold_out` once an item is sold out for good, `not_started` / `ended`
//! outside the window (on the Redis clock: this machine's clock plus the
//! skew measured against Redis `TIME`).
//!
//! Only refusals are cached, never a permission to buy: an attempt the cache
//! does not refuse goes to the buy script, which decides. And a refusal is
//! never given to a user who bought the item: a retry of an attempt whose
//! reply was lost (same `request_id`) must get its order back, so every
//! buyer's attempt goes to Redis. The cache refuses only once it holds the
//! item's buyers, read after the item became final (sold out, or outside
//! its window), with the length of each of its order streams read just
//! before them. Every buy appends to its slot's stream, so does every
//! release that lets another shopper buy, and nothing trims them: the
//! buyers read stay the buyers exactly as long as the lengths do. A unit
//! released and bought again between two refreshes, through another door,
//! moves a length, and the buyers are read again. (They used to be kept
//! while the sell-out and the window looked unchanged, and the new buyer's
//! retry with its own request id was refused from memory for as long as the
//! item stayed sold out: issue 25 item 30.) This holds however soon the
//! sell-out is learned. The one buyer memory may still refuse is one whose
//! order came through another door since the last refresh: no longer than
//! units coming back wait (below).
//!
//! What keeps it current: an instance whose own attempt is answered
//! `sold_out` with no stock left re-reads that item before answering
//! ([`learn_sold_out`]); every instance re-reads an item the sell-out
//! broadcast names ([`refresh_item`], `broadcast`: the script that empties
//! a stock or brings one back publishes on the slot's shard channel), and
//! everything when its subscription is made again; and [`refresh`] every
//! `--recheck` interval re-reads each item's sell-out state (a plain item's
//! stock; a bucketed item's proof), window and the clock skew — the
//! backstop for a message lost. So a sell-out is known everywhere, and units
//! coming back (a cancel, an expiry, a credit, a preheat) sell again,
//! within a round trip; within one interval plus one round trip when the
//! broadcast is not heard (docs/serve.md states both, and
//! `tests/it/sold_out_broadcast.rs` and `tests/it/serve.rs` measure them).
//! Polling alone would leave up to 500,000 sold-out scripts per 100 ms on
//! the item's thread at 5M attempts/s and a returned unit unsold for the
//! interval; the broadcast costs one message per transition (never per
//! attempt) and a subscription per master per instance. Refreshes of one
//! item run one after another: one that read before a message must not
//! write after the one the message started.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Mutex, RwLock};

use anyhow::{Context, Result};
use redis::ConnectionLike;

use crate::domain::item::SaleItem;
use crate::domain::item::sell_out::Window;
use crate::domain::slot::Outcome;
use crate::model::campaign::Campaign;

/// How close to the window's edges the cache leaves the answer to Redis.
pub(crate) const EDGE_MS: i64 = 50;

/// What the cache knows of one item.
#[derive(Debug, Default)]
struct Known {
    /// Sold out for good, as of the last refresh (or a `sold_out` with no stock left).
    sold_out: bool,
    window: Window,
    /// Who bought, once read for a final state (their attempts go to Redis).
    buyers: Option<Buyers>,
}

/// The item's buyers as of its order streams' lengths.
#[derive(Debug)]
struct Buyers {
    users: HashSet<String>,
    /// XLEN of each slot's order stream, read just before `users`: while
    /// they are the same, no order was appended, so no buyer came.
    orders_seen: Vec<u64>,
}

/// One item's entry: what is known, and the lock that puts its refreshes
/// one after another (a refresh that read before a message must not write
/// after the refresh that message started: a reopened item would stay
/// refused until the next recheck).
#[derive(Debug, Default)]
struct Entry {
    known: RwLock<Known>,
    refreshing: Mutex<()>,
}

/// The refusals every item of the campaign gets from memory.
#[derive(Debug)]
pub(crate) struct Cache {
    items: HashMap<String, Entry>,
    /// Redis clock minus this machine's clock, ms.
    skew_ms: AtomicI64,
    /// The last skew samples, (round trip µs, skew µs): the skew said is the
    /// one whose round trip was shortest, so a reply that waited behind
    /// others on a busy connection does not shift the clock (a ticket's
    /// arrival is stamped with it).
    samples: std::sync::Mutex<std::collections::VecDeque<(i64, i64)>>,
    /// One region of a sale over several (docs/regions.md): a zero here is
    /// not a sell-out — the scheduler may credit units any moment — so only
    /// the scheduler's mark (every region at 0, nothing in transit) is
    /// answered from memory; else the buy script's early `sold_out` answers.
    regional: bool,
}

/// Skew samples kept (about 3 s of refreshes at the default --recheck).
const SKEW_SAMPLES: usize = 32;

impl Cache {
    /// An empty cache for `campaign`'s items: refuses nothing until refreshed.
    pub(crate) fn new(campaign: &Campaign) -> Cache {
        Cache {
            items: campaign
                .items
                .iter()
                .map(|item| (item.id.clone(), Entry::default()))
                .collect(),
            skew_ms: AtomicI64::new(0),
            samples: std::sync::Mutex::new(std::collections::VecDeque::new()),
            regional: campaign.regions.len() > 1,
        }
    }

    /// Now on the Redis clock (this machine's clock and the measured skew), Unix ms.
    pub(crate) fn redis_now_ms(&self) -> i64 {
        chrono::Utc::now().timestamp_millis() + self.skew_ms.load(Ordering::Relaxed)
    }

    /// The refusal for `user`'s attempt on `item` now, if memory knows one.
    pub(crate) fn refusal(&self, item: &str, user: &str) -> Option<Outcome> {
        let known = self
            .items
            .get(item)?
            .known
            .read()
            .unwrap_or_else(|e| e.into_inner());
        let buyers = known.buyers.as_ref()?;
        if buyers.users.contains(user) {
            return None;
        }
        let now = self.redis_now_ms();
        let window = known.window;
        if window.starts_at_ms.is_some_and(|s| now < s - EDGE_MS) {
            return Some(Outcome::NotStarted);
        }
        if window.ends_at_ms.is_some_and(|e| now >= e + EDGE_MS) {
            return Some(Outcome::Ended);
        }
        known.sold_out.then_some(Outcome::SoldOut)
    }

    /// Whether any item is final and waiting for its buyers to be read.
    fn final_state(known: &Known, now_redis: i64) -> bool {
        let w = known.window;
        known.sold_out
            || w.starts_at_ms.is_some_and(|s| now_redis < s)
            || w.ends_at_ms.is_some_and(|e| now_redis >= e)
    }
}

/// One refresh: the skew, then every item's state from Redis; buyers are
/// read for an item that became final or whose orders moved, forgotten for
/// one that is not final.
pub(crate) fn refresh<C: ConnectionLike>(
    conn: &mut C,
    cache: &Cache,
    campaign: &Campaign,
) -> Result<()> {
    let before = chrono::Utc::now().timestamp_micros();
    let (secs, micros): (i64, i64) = redis::cmd("TIME").query(conn).context("TIME failed")?;
    let after = chrono::Utc::now().timestamp_micros();
    let redis_now_us = secs * 1_000_000 + micros;
    let redis_now = redis_now_us / 1000;
    let best = {
        let mut samples = cache.samples.lock().unwrap_or_else(|e| e.into_inner());
        samples.push_back((after - before, redis_now_us - (before + after) / 2));
        if samples.len() > SKEW_SAMPLES {
            samples.pop_front();
        }
        samples
            .iter()
            .min_by_key(|(rtt, _)| *rtt)
            .map_or(0, |(_, skew)| *skew)
    };
    cache
        .skew_ms
        .store(best.div_euclid(1000), Ordering::Relaxed);
    for sale in SaleItem::select(campaign, None)? {
        refresh_sale(conn, cache, &sale, redis_now, None)?;
    }
    Ok(())
}

/// One item's state from Redis, now: what the broadcast asks when the
/// item's stock emptied or came back (`broadcast`). The rule is
/// [`refresh`]'s (buyers read after the sell-out, with the order streams'
/// lengths before them).
pub(crate) fn refresh_item<C: ConnectionLike>(
    conn: &mut C,
    cache: &Cache,
    campaign: &Campaign,
    item: &str,
) -> Result<()> {
    let Some(sale) = SaleItem::select(campaign, Some(item))?.into_iter().next() else {
        return Ok(());
    };
    refresh_sale(conn, cache, &sale, cache.redis_now_ms(), None)
}

/// [`refresh_item`] after this instance's own attempt was answered
/// `sold_out` with no stock left: the next attempt is answered from memory.
/// Skipped when memory already knows (another attempt's refresh, or the
/// broadcast's, got there first): a burst of replies at the sell-out costs
/// one refresh, not one each.
pub(crate) fn learn_sold_out<C: ConnectionLike>(
    conn: &mut C,
    cache: &Cache,
    campaign: &Campaign,
    item: &str,
) -> Result<()> {
    let Some(sale) = SaleItem::select(campaign, Some(item))?.into_iter().next() else {
        return Ok(());
    };
    let known_already = |known: &Known| known.sold_out && known.buyers.is_some();
    refresh_sale(
        conn,
        cache,
        &sale,
        cache.redis_now_ms(),
        Some(&known_already),
    )
}

/// Whether memory holds `item`'s sell-out (and so refuses non-buyers).
pub(crate) fn knows_sold_out(cache: &Cache, item: &str) -> bool {
    cache.items.get(item).is_some_and(|entry| {
        let known = entry.known.read().unwrap_or_else(|e| e.into_inner());
        known.sold_out && known.buyers.is_some()
    })
}

/// One item's refresh, after any other of the same item (`skip_when`, read
/// once the lock is held: the refresh is not needed).
fn refresh_sale<C: ConnectionLike>(
    conn: &mut C,
    cache: &Cache,
    sale: &SaleItem,
    redis_now: i64,
    skip_when: Option<&dyn Fn(&Known) -> bool>,
) -> Result<()> {
    let Some(entry) = cache.items.get(sale.id()) else {
        return Ok(());
    };
    let _one_at_a_time = entry.refreshing.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(skip) = skip_when
        && skip(&entry.known.read().unwrap_or_else(|e| e.into_inner()))
    {
        return Ok(());
    }
    let entry = &entry.known;
    let sold_out = if cache.regional {
        sale.sold_out_everywhere(conn)?
    } else {
        sale.sold_out_now(conn)?.unwrap_or(false)
    };
    let window = sale.window(conn)?;
    let mut known = Known {
        sold_out,
        window,
        buyers: None,
    };
    if Cache::final_state(&known, redis_now) {
        let orders_seen = orders_seen(conn, sale)?;
        let unchanged = entry
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .buyers
            .as_ref()
            .is_some_and(|buyers| buyers.orders_seen == orders_seen);
        if unchanged {
            // No order since the buyers were read: they are the buyers.
            let mut current = entry.write().unwrap_or_else(|e| e.into_inner());
            current.sold_out = known.sold_out;
            current.window = known.window;
            return Ok(());
        }
        known.buyers = Some(Buyers {
            users: sale.buyers(conn)?,
            orders_seen,
        });
    }
    *entry.write().unwrap_or_else(|e| e.into_inner()) = known;
    Ok(())
}

/// The length of each of `sale`'s order streams (0 when there is none).
fn orders_seen<C: ConnectionLike>(conn: &mut C, sale: &SaleItem) -> Result<Vec<u64>> {
    sale.slots()
        .iter()
        .map(|slot| {
            redis::cmd("XLEN")
                .arg(&slot.keys.orders)
                .query(conn)
                .with_context(|| format!("cannot read {}", slot.keys.orders))
        })
        .collect()
}
