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
//! its window), when no new buyer can appear.
//!
//! What keeps it current is [`refresh`], every `--recheck` interval: each
//! item's sell-out state (a plain item's stock; a bucketed item's proof),
//! window and the clock skew. Units coming back (a reservation released, a
//! cancel, a preheat) are seen within one interval plus one round trip: the
//! bound `docs/serve.md` states and `tests/it/serve.rs` measures. One GET
//! (a bucketed item: two per bucket) per item per interval per instance is
//! the whole cost; a publish/subscribe channel would only shorten the bound
//! further, at the price of a subscription per instance and channel rights
//! for the operator role.

use std::collections::{HashMap, HashSet};
use std::sync::RwLock;
use std::sync::atomic::{AtomicI64, Ordering};

use anyhow::Result;
use redis::ConnectionLike;

use crate::domain::item::SaleItem;
use crate::domain::item::sell_out::Window;
use crate::domain::slot::{self, Outcome};
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
    buyers: Option<HashSet<String>>,
}

/// The refusals every item of the campaign gets from memory.
#[derive(Debug)]
pub(crate) struct Cache {
    items: HashMap<String, RwLock<Known>>,
    /// Redis clock minus this machine's clock, ms.
    skew_ms: AtomicI64,
}

impl Cache {
    /// An empty cache for `campaign`'s items: refuses nothing until refreshed.
    pub(crate) fn new(campaign: &Campaign) -> Cache {
        Cache {
            items: campaign
                .items
                .iter()
                .map(|item| (item.id.clone(), RwLock::new(Known::default())))
                .collect(),
            skew_ms: AtomicI64::new(0),
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
            .read()
            .unwrap_or_else(|e| e.into_inner());
        let buyers = known.buyers.as_ref()?;
        if buyers.contains(user) {
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
/// read for an item that became final, forgotten for one that is not.
pub(crate) fn refresh<C: ConnectionLike>(
    conn: &mut C,
    cache: &Cache,
    campaign: &Campaign,
) -> Result<()> {
    let before = chrono::Utc::now().timestamp_millis();
    let redis_now = slot::redis_now_ms(conn)?;
    let after = chrono::Utc::now().timestamp_millis();
    cache
        .skew_ms
        .store(redis_now - (before + after) / 2, Ordering::Relaxed);
    for sale in SaleItem::select(campaign, None)? {
        let Some(entry) = cache.items.get(sale.id()) else {
            continue;
        };
        let sold_out = sale.sold_out_now(conn)?.unwrap_or(false);
        let window = sale.window(conn)?;
        let mut known = Known {
            sold_out,
            window,
            buyers: None,
        };
        if Cache::final_state(&known, redis_now) {
            let current = entry.read().unwrap_or_else(|e| e.into_inner());
            // Buyers of a final item do not change: read them once per state.
            let kept = (current.sold_out == known.sold_out && current.window == known.window)
                .then(|| current.buyers.clone())
                .flatten();
            drop(current);
            known.buyers = Some(match kept {
                Some(buyers) => buyers,
                None => sale.buyers(conn)?,
            });
        }
        *entry.write().unwrap_or_else(|e| e.into_inner()) = known;
    }
    Ok(())
}
