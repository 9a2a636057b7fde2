//! The Lua scripts, embedded from `lua/*.lua`.
//!
//! Each file opens with its KEYS / ARGV / return contract. `redis::Script`
//! calls them by EVALSHA and reloads on NOSCRIPT (on every master of a cluster).

use std::sync::LazyLock;

use redis::Script;

/// The whole purchase: kill switch, window, rate limit, dedupe, stock, order stream.
pub const BUY_SOURCE: &str = include_str!("../lua/buy.lua");

/// The buy script, ready to invoke.
pub static BUY: LazyLock<Script> = LazyLock::new(|| Script::new(BUY_SOURCE));

/// Load one item's stock and metadata without clobbering a live sale.
pub const PREHEAT_SOURCE: &str = include_str!("../lua/preheat.lua");

/// The preheat script, ready to invoke.
pub static PREHEAT: LazyLock<Script> = LazyLock::new(|| Script::new(PREHEAT_SOURCE));

/// Read one item's state (meta, stock, buyer count, stream length).
pub const ITEM_STATE_SOURCE: &str = include_str!("../lua/item_state.lua");

/// The item-state script, ready to invoke.
pub static ITEM_STATE: LazyLock<Script> = LazyLock::new(|| Script::new(ITEM_STATE_SOURCE));

/// Everything `status` shows about one item, read at one instant (read-only).
pub const ITEM_STATUS_SOURCE: &str = include_str!("../lua/item_status.lua");

/// The item-status script, ready to invoke.
pub static ITEM_STATUS: LazyLock<Script> = LazyLock::new(|| Script::new(ITEM_STATUS_SOURCE));

/// Flip one item's kill switch and append the flip to its capped history.
pub const SET_SWITCH_SOURCE: &str = include_str!("../lua/set_switch.lua");

/// The set-switch script, ready to invoke.
pub static SET_SWITCH: LazyLock<Script> = LazyLock::new(|| Script::new(SET_SWITCH_SOURCE));

/// Dead-letter one pending order entry and ack it in one step.
pub const DEAD_LETTER_SOURCE: &str = include_str!("../lua/dead_letter.lua");

/// The dead-letter script, ready to invoke.
pub static DEAD_LETTER: LazyLock<Script> = LazyLock::new(|| Script::new(DEAD_LETTER_SOURCE));

/// The order ids of several entries of one stream (reconcile, database → stream).
pub const STREAM_ORDER_IDS_SOURCE: &str = include_str!("../lua/stream_order_ids.lua");

/// The stream-order-ids script, ready to invoke.
pub static STREAM_ORDER_IDS: LazyLock<Script> =
    LazyLock::new(|| Script::new(STREAM_ORDER_IDS_SOURCE));

/// Stock and the order stream's last id, read together (reconcile).
pub const RECONCILE_SNAPSHOT_SOURCE: &str = include_str!("../lua/reconcile_snapshot.lua");

/// The reconcile-snapshot script, ready to invoke.
pub static RECONCILE_SNAPSHOT: LazyLock<Script> =
    LazyLock::new(|| Script::new(RECONCILE_SNAPSHOT_SOURCE));

/// Every script of the toolkit, (name, script), for `preheat` to load up front.
pub fn all() -> Vec<(&'static str, &'static Script)> {
    vec![
        ("buy", &BUY),
        ("preheat", &PREHEAT),
        ("item_state", &ITEM_STATE),
        ("item_status", &ITEM_STATUS),
        ("set_switch", &SET_SWITCH),
        ("dead_letter", &DEAD_LETTER),
        ("stream_order_ids", &STREAM_ORDER_IDS),
    ]
}

/// The reference chapter's minimal V3 script (check stock, DECR), for `loadtest`.
pub const V3_DECR_SOURCE: &str = include_str!("../lua/v3_decr.lua");

/// The V3 script, ready to invoke.
pub static V3_DECR: LazyLock<Script> = LazyLock::new(|| Script::new(V3_DECR_SOURCE));

/// Compare-and-delete release of the `loadtest --variant lock` lock.
pub const LOCK_RELEASE_SOURCE: &str = include_str!("../lua/lock_release.lua");

/// The lock release script, ready to invoke.
pub static LOCK_RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(LOCK_RELEASE_SOURCE));
