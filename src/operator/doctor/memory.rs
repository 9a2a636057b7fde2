//! Will the sale fit? Each order stays in Redis until the campaign's keys
//! expire — its stream entry (the stream is never trimmed: it holds orders
//! not yet in the database), the buyer's fields in `buyers` and
//! `buyer_orders`, its request id in `requests`, and on a reservation
//! campaign its record, its deadline and the entry of its final state
//! (paid, expired, cancelled). A sale of a million units is a million
//! orders at most (one unit each), and a Redis at `maxmemory` with
//! `noeviction` refuses the buys that would go beyond: the scripts refuse
//! whole (`#!lua`), the shoppers are told to come back, and the stock is
//! unsold. So each master's headroom is compared with what the units still
//! to sell there will take.
//!
//! The bytes per order were measured on Redis 7.0.15 (`MEMORY USAGE key
//! SAMPLES 0` of each key, and `used_memory` of `INFO memory`, before and
//! after 20,000 orders through `lua/buy.lua`, user ids of 36 characters (a
//! UUID), request and order ids of 26 (ULIDs); the hashes and the stream
//! are past their small encodings at that size):
//!
//! | key | bytes per order |
//! |---|---|
//! | `orders` (stream entry) | 149 (159 with a deadline field) |
//! | `requests` (request id → order) | 149 |
//! | `buyer_orders` (user → order) | 117 |
//! | `buyers` (user → units) | 93 |
//! | sum / `used_memory` growth | 508 / 518 |
//! | reservation: record, deadline | 204, 129 |
//! | its final state: event entry, deadline freed | +148, −129 |
//!
//! With user ids of 12 characters an order takes 381 bytes (399 of
//! `used_memory`): the figures below hold for ids up to 36 characters.
//! Not counted: a waiting room's entry per joiner and registration, and the
//! rate-limit counters (one per user attempting within the window): both
//! grow with the shoppers, not with the stock.
//! `tests/it/sale_memory.rs` buys a sale out and holds the estimate to at
//! least what Redis used, and at most half again as much.

use serde::Serialize;

/// Bytes one order keeps in Redis (stream entry, buyer, buyer's order,
/// request id), rounded up from 518 measured.
pub(crate) const ORDER_BYTES: u64 = 540;

/// Bytes a reservation adds to its order (record, deadline, then the event
/// of its final state once the deadline is freed), rounded up from 333
/// measured while reserved and 342 once settled.
pub(crate) const RESERVATION_BYTES: u64 = 360;

/// The units still to sell on one master, and what they will take.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SaleMemory {
    /// `host:port` of the master.
    pub(crate) node: String,
    /// Units still to sell there: the stock in Redis, or the file's when the
    /// item (bucket) is not preheated yet. At most one order each.
    pub(crate) units: u64,
    /// Bytes those orders will take.
    pub(crate) estimate_bytes: u64,
    /// `used_memory` now.
    pub(crate) used_bytes: u64,
    /// `maxmemory` (0: none).
    pub(crate) maxmemory_bytes: u64,
}

/// Bytes per order for a campaign with (or without) reservations.
pub(crate) fn per_order(reservations: bool) -> u64 {
    ORDER_BYTES + if reservations { RESERVATION_BYTES } else { 0 }
}

/// `bytes` for people: `512 B`, `3.4 KiB`, `1.9 MiB`, `2.0 GiB`.
pub(crate) fn shown(bytes: u64) -> String {
    let b = bytes as f64;
    match bytes {
        0..1024 => format!("{bytes} B"),
        1024..1_048_576 => format!("{:.1} KiB", b / 1024.0),
        1_048_576..1_073_741_824 => format!("{:.1} MiB", b / 1_048_576.0),
        _ => format!("{:.1} GiB", b / 1_073_741_824.0),
    }
}
