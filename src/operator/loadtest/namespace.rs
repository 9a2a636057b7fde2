//! The load test's own corner of Redis, and the rules that keep it away from real sales.
//!
//! Every key a load test writes lives under [`LOADTEST_PREFIX`]
//! (`seckill-loadtest:{campaign:item}:...`), never under the live prefix, so a
//! load test cannot sell, reset or delete a real bottle.
//!
//! # What "collide" means (when `loadtest` refuses to run)
//!
//! 1. **The namespace is taken by something that is not a load test.** Before
//!    each variant the load test deletes its whole namespace. It only does so
//!    when the namespace is empty, or when its `meta` hash carries the
//!    [`MARKER_FIELD`] that every load test writes first thing after a reset.
//!    Keys there without the marker were put there by someone else (a script,
//!    a colleague preheating with the wrong prefix): they are left alone and
//!    the run is refused. Only the fixed keys and the lock key are probed
//!    (EXISTS, not SCAN: probing must stay cheap on a big production Redis).
//! 2. **The target Redis is carrying a live sale.** Any campaign live in the
//!    registry (`domain::registry`, written by preheat), or any item
//!    of the campaign is preheated under the live prefix on this Redis, a load
//!    test would not touch those keys, but saturating the very server that is
//!    selling would slow real shoppers down. That is refused too; point
//!    `--redis` at a rehearsal server, or remove the sale first.
//!
//! Both refusals are usage errors (exit 2) and change nothing in Redis.
//!
//! Within loadtest it uses: nothing.

use anyhow::{Context, Result};
use redis::{Commands, ConnectionLike};

use crate::domain::item::SaleItem;
use crate::domain::registry;
use crate::domain::slot;
use crate::model::campaign::Campaign;
use crate::model::error::usage;
use crate::model::keys::{ItemKeys, LOADTEST_PREFIX};
use crate::redis_client::conn::Conn;

/// Field of the namespace's `meta` hash that says "a load test made this".
pub(crate) const MARKER_FIELD: &str = "loadtest_run";

/// The load test's key names for one item; the per-item lock lives beside them.
#[derive(Debug, Clone)]
pub(crate) struct LoadtestKeys {
    pub(crate) item: ItemKeys,
    /// `seckill-loadtest:{campaign:item}:lock`, used by `--variant lock` only.
    pub(crate) lock: String,
}

impl LoadtestKeys {
    pub(crate) fn new(campaign: &str, item: &str) -> LoadtestKeys {
        let item = ItemKeys::new(LOADTEST_PREFIX, campaign, item);
        let lock = format!("{}lock", item.base);
        LoadtestKeys { item, lock }
    }
}

/// Refuse (usage error) when the load test would collide with real data; see the module docs.
pub(crate) fn ensure_free<C: ConnectionLike>(
    conn: &mut C,
    keys: &LoadtestKeys,
    campaign: &Campaign,
) -> Result<()> {
    let now = crate::domain::slot::redis_now_ms(conn)?;
    let live = registry::live(conn, now)?;
    if !live.is_empty() {
        return Err(usage(format!(
            "refusing to load-test: this Redis carries live sale(s): {}; a load test would \
             compete with them for Redis. Use a rehearsal Redis (--redis URL)",
            registry::describe(&live)
        )));
    }
    for item in SaleItem::select(campaign, None)? {
        if let Some(live) = item.in_redis(conn)? {
            return Err(usage(format!(
                "refusing to load-test: campaign {} item {} is preheated on this Redis (live keys {live}); \
                 a load test would compete with the real sale for Redis. Use a rehearsal Redis (--redis URL)",
                campaign.id,
                item.id()
            )));
        }
    }
    let mut probed: Vec<&str> = keys.item.fixed().to_vec();
    probed.push(&keys.lock);
    let existing: u64 = conn
        .exists(&probed[..])
        .with_context(|| format!("cannot check the load-test namespace {}", keys.item.base))?;
    if existing == 0 {
        return Ok(());
    }
    let marker: Option<String> = conn
        .hget(&keys.item.meta, MARKER_FIELD)
        .with_context(|| format!("cannot read {}", keys.item.meta))?;
    if marker.is_none() {
        return Err(usage(format!(
            "refusing to load-test: {existing} key(s) under {}* exist but were not written by a load test \
             (no {MARKER_FIELD:?} field in {}); inspect and delete them yourself if they are junk",
            keys.item.base, keys.item.meta
        )));
    }
    Ok(())
}

/// Empty the namespace and mark it as ours (`run_id` goes into the marker).
pub(crate) fn reset(conn: &mut Conn, keys: &LoadtestKeys, run_id: &str) -> Result<()> {
    remove(conn, keys)?;
    let () = conn
        .hset(&keys.item.meta, MARKER_FIELD, run_id)
        .with_context(|| format!("cannot mark {} as a load-test namespace", keys.item.base))?;
    Ok(())
}

/// Delete every key of the namespace: the fixed ones, the lock and the per-user
/// rate keys. On a cluster SCAN would visit one node only, so the rate keys
/// (written only with `--rate-limit`) are left to expire within one window.
pub(crate) fn remove(conn: &mut Conn, keys: &LoadtestKeys) -> Result<u64> {
    let scan_too = !conn.is_cluster();
    let deleted = slot::delete_item(conn, &keys.item, scan_too)?;
    let lock: u64 = conn
        .del(&keys.lock)
        .with_context(|| format!("cannot delete {}", keys.lock))?;
    Ok(deleted + lock)
}
