//! Redis key layout.
//!
//! Every key of one (campaign, item) starts with the same hash tag,
//! `seckill:{<campaign>:<item>}:...`, so one item's keys live in one Redis
//! Cluster slot and one Lua script may touch them all. User ids and request
//! ids only ever appear *after* the tag, so they cannot move a key to another
//! slot. Lua scripts receive every key through KEYS; no key name is built in Lua.
//!
//! | key | type | holds |
//! |---|---|---|
//! | `…:meta` | hash | name, price_cents, initial_stock, window, limits, kill switch |
//! | `…:stock` | string | units left |
//! | `…:buyers` | hash | user → units bought |
//! | `…:buyer_orders` | hash | user → latest order id |
//! | `…:requests` | hash | user:request_id → order id of an `ok` attempt |
//! | `…:rate:<user>` | string | attempts in the current rate-limit window |
//! | `…:orders` | stream | one entry per order, read by `consume` |
//! | `…:dead` | stream | entries `pending-claim` gave up on |
//! | `…:reservations` | hash | order id → reservation record (`payment_timeout`, see `reservations`) |
//! | `…:deadlines` | zset | order id → payment deadline (ms), reserved orders only |
//! | `…:reservation_counts` | hash | reservation counters (`reserved_orders`, `paid_units`, …): not in `meta`, so the buyer role that counts a reservation cannot write `meta` (docs/security.md) |
//! | `…:switch_log` | list | the last kill-switch flips (JSON), newest first |
//! | `…:seats` | string | a seat item's section: one byte per seat, row after row (`.` free, `h` held, `s` sold, `x` blocked) |
//! | `…:seat_orders` | hash | a seat item's section: order id → its seats (indexes) |
//!
//! An item with a waiting room (docs/waiting-room.md) adds [`RoomKeys`] in
//! the same slot; a bucketed item's admissions are fanned out to each
//! user's home bucket, under that bucket's tag.

/// Key prefix of real campaigns.
pub const LIVE_PREFIX: &str = "seckill";
/// Key prefix `loadtest` works under, so it can never touch a live sale.
pub(crate) const LOADTEST_PREFIX: &str = "seckill-loadtest";
/// Consumer group every `consume` process joins.
pub(crate) const ORDER_GROUP: &str = "orders-db";

/// All key names of one campaign item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemKeys {
    /// `prefix:{campaign:item}:` — everything of this item starts with it.
    pub base: String,
    pub meta: String,
    pub stock: String,
    pub buyers: String,
    pub buyer_orders: String,
    pub(crate) requests: String,
    pub orders: String,
    pub dead: String,
    pub reservations: String,
    pub deadlines: String,
    pub reservation_counts: String,
    pub switch_log: String,
    /// A seat item's section: one byte per seat (docs/seats.md).
    pub seats: String,
    /// A seat item's section: order id → `<index>,<index>,…` of its seats.
    pub seat_orders: String,
}

impl ItemKeys {
    /// Keys of `item` in `campaign` under `prefix` ([`LIVE_PREFIX`] or [`LOADTEST_PREFIX`]).
    pub(crate) fn new(prefix: &str, campaign: &str, item: &str) -> ItemKeys {
        let base = format!("{prefix}:{{{campaign}:{item}}}:");
        ItemKeys {
            meta: format!("{base}meta"),
            stock: format!("{base}stock"),
            buyers: format!("{base}buyers"),
            buyer_orders: format!("{base}buyer_orders"),
            requests: format!("{base}requests"),
            orders: format!("{base}orders"),
            dead: format!("{base}dead"),
            reservations: format!("{base}reservations"),
            deadlines: format!("{base}deadlines"),
            reservation_counts: format!("{base}reservation_counts"),
            switch_log: format!("{base}switch_log"),
            seats: format!("{base}seats"),
            seat_orders: format!("{base}seat_orders"),
            base,
        }
    }

    /// Keys of a live campaign item.
    pub fn live(campaign: &str, item: &str) -> ItemKeys {
        ItemKeys::new(LIVE_PREFIX, campaign, item)
    }

    /// Per-user rate-limit counter (the user id stays outside the hash tag).
    pub fn rate(&self, user: &str) -> String {
        format!("{}rate:{user}", self.base)
    }

    /// The key a script header calls `name` in this slot (`rate` is `user`'s):
    /// every key of a slot, the waiting room's and a bucket's transfer log
    /// included, is the slot's base and its name.
    pub fn named(&self, name: &str, user: &str) -> String {
        match name {
            "rate" => self.rate(user),
            other => format!("{}{other}", self.base),
        }
    }

    /// SCAN pattern matching every key of this item, including per-user ones.
    /// Nothing needs escaping: `{` and `}` are literal in a glob, and `*`, `?`
    /// and `[` cannot occur in ids (see `campaign::is_valid_id`).
    pub(crate) fn scan_pattern(&self) -> String {
        format!("{}*", self.base)
    }

    /// The fixed (non per-user) keys, for DEL/EXISTS.
    pub(crate) fn fixed(&self) -> [&str; 13] {
        [
            &self.meta,
            &self.stock,
            &self.buyers,
            &self.buyer_orders,
            &self.requests,
            &self.orders,
            &self.dead,
            &self.reservations,
            &self.deadlines,
            &self.reservation_counts,
            &self.switch_log,
            &self.seats,
            &self.seat_orders,
        ]
    }
}

/// The waiting room's keys of one slot (docs/waiting-room.md): the room,
/// its queue and registrations in the item's slot; `admissions` and
/// `admission_count` are what a bucketed item's fan-out writes into a
/// bucket's slot (a plain item's slot never has them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoomKeys {
    /// hash: the room's settings, clock (opened, paused), counters, seed.
    pub room: String,
    /// hash: user → `<position> <joined at ms> [<paused ms>]` (the room's
    /// total pause when the user joined, when there was one).
    pub queue: String,
    /// list: users in position order (position p at index p − 1).
    pub line: String,
    /// hash: user → `<registered at ms> <ip prefix or -> <device>` of a registration.
    pub registered: String,
    /// hash: device id → accounts registered on it.
    pub devices: String,
    /// hash: IP prefix → accounts registered from it.
    pub ips: String,
    /// hash: user → `block` or `delay <ms> <set at ms>` (the operator's risk list).
    pub risk: String,
    /// hash: user → admission start ms (max_active mode).
    pub admitted: String,
    /// zset: user → admission end ms, the active set (max_active mode).
    pub active: String,
    /// zset: user → final position, the pre-queue's shuffle.
    pub shuffled: String,
    /// hash: user → `<start ms> <end ms>`, admissions fanned out to this bucket.
    pub admissions: String,
    /// string: admissions this bucket ever granted (each user at most once).
    pub admission_count: String,
    /// zset: a ticket room's 10 ms arrival buckets not yet passed by the
    /// cursor (member and score: the bucket's first ms).
    pub arrivals: String,
    /// hash: bucket's first ms → tickets counted in it (the same buckets).
    pub arrival_counts: String,
    /// hash: serve instance → `<watermark ms> <seen at ms>` (a ticket room).
    pub marks: String,
    /// zset: the ticket cursor's passes, `<cursor>:<at ms>` scored by the
    /// cursor: when the cursor first reached an arrival time.
    pub passes: String,
    /// set: a ticket room's revoked signing key ids (the operator's; the
    /// buyer only reads it).
    pub revoked: String,
    /// HyperLogLog: the users who joined a ticket room's pre-queue (before
    /// `starts_at`): three tickets of one user count once.
    pub prequeued: String,
}

impl ItemKeys {
    /// The waiting room's keys in this slot.
    pub fn room(&self) -> RoomKeys {
        let key = |name: &str| format!("{}{name}", self.base);
        RoomKeys {
            room: key("room"),
            queue: key("queue"),
            line: key("line"),
            registered: key("registered"),
            devices: key("devices"),
            ips: key("ips"),
            risk: key("risk"),
            admitted: key("admitted"),
            active: key("active"),
            shuffled: key("shuffled"),
            admissions: key("admissions"),
            admission_count: key("admission_count"),
            arrivals: key("arrivals"),
            arrival_counts: key("arrival_counts"),
            marks: key("marks"),
            passes: key("passes"),
            revoked: key("revoked"),
            prequeued: key("prequeued"),
        }
    }
}

impl RoomKeys {
    /// Every key, for DEL.
    pub(crate) fn all(&self) -> [&str; 18] {
        [
            &self.room,
            &self.queue,
            &self.line,
            &self.registered,
            &self.devices,
            &self.ips,
            &self.risk,
            &self.admitted,
            &self.active,
            &self.shuffled,
            &self.admissions,
            &self.admission_count,
            &self.arrivals,
            &self.arrival_counts,
            &self.marks,
            &self.passes,
            &self.revoked,
            &self.prequeued,
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_keys_share_one_hash_tag() {
        let keys = ItemKeys::live("moutai-1111", "1001");
        assert_eq!(keys.stock, "seckill:{moutai-1111:1001}:stock");
        assert_eq!(keys.rate("u{1}"), "seckill:{moutai-1111:1001}:rate:u{1}");
        for key in keys.fixed().into_iter().chain(keys.room().all()) {
            assert!(key.starts_with("seckill:{moutai-1111:1001}:"));
            let name = key.trim_start_matches("seckill:{moutai-1111:1001}:");
            assert_eq!(keys.named(name, "u"), key, "{name}");
        }
        assert_eq!(keys.named("rate", "u{1}"), keys.rate("u{1}"));
        assert_ne!(
            ItemKeys::new(LOADTEST_PREFIX, "a", "b").base,
            ItemKeys::live("a", "b").base
        );
    }
}
