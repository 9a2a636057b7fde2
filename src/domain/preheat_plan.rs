//! What `preheat` would change, field by field: the campaign file against
//! what Redis holds for an item already preheated — stock, name, price,
//! per-user limit, rate limit, window, key expiry — so an edit to the file
//! never vanishes behind "nothing written": a differing field is shown, and
//! applied only with `--update-meta` (the stock only with `--force`, or
//! `init --yes` once it has sold).
//!
//! Redis's view of a bucketed item is its first bucket's meta (every bucket
//! gets the same fields) and the sum of its buckets' initial stock.
//!
//! May import: domain::item, model, util.

use anyhow::{Context, Result};
use redis::ConnectionLike;
use serde::Serialize;

use crate::domain::item::SaleItem;
use crate::util::text;

/// One field, as the file says it and as Redis holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldPlan {
    /// `stock`, `name`, `price`, `per_user_limit`, `rate_limit`, `starts_at`,
    /// `ends_at`, `keys_expire_at`, `waiting_room`.
    pub field: &'static str,
    pub file: String,
    pub redis: String,
    /// The two differ.
    pub differs: bool,
}

/// Meta fields read, in this order.
const FIELDS: [&str; 10] = [
    "initial_stock",
    "name",
    "price_cents",
    "per_user_limit",
    "rate_window_ms",
    "rate_max",
    "starts_at_ms",
    "ends_at_ms",
    "expire_at_ms",
    "waiting_room",
];

/// Every field of `sale`, file vs Redis; empty when Redis holds no meta for it.
pub(crate) fn plan<C: ConnectionLike>(conn: &mut C, sale: &SaleItem) -> Result<Vec<FieldPlan>> {
    let slots = sale.slots();
    let mut initial = 0i64;
    let mut first: Vec<Option<String>> = Vec::new();
    for (n, slot) in slots.iter().enumerate() {
        let values: Vec<Option<String>> = redis::cmd("HMGET")
            .arg(&slot.keys.meta)
            .arg(&FIELDS[..])
            .query(conn)
            .with_context(|| format!("cannot read {}", slot.keys.meta))?;
        let Some(stock) = values[0].as_deref() else {
            return Ok(Vec::new());
        };
        initial += stock.parse::<i64>().unwrap_or(0);
        if n == 0 {
            first = values;
        }
    }
    let (campaign, item) = (sale.campaign, sale.item);
    let redis = |i: usize| first[i].clone().unwrap_or_default();
    let ms = |value: &str| {
        value
            .parse::<i64>()
            .ok()
            .map_or_else(|| "-".to_string(), |ms| text::time_or_dash(Some(ms)))
    };
    let opt_ms = |ms: Option<i64>| text::time_or_dash(ms);
    let rate = |window: &str, max: &str| match (window, max) {
        ("", _) | (_, "0") | (_, "") => "none".to_string(),
        (window, max) => format!("{max} per {window} ms"),
    };
    let file_rate = match campaign.rate_limit {
        Some(r) => format!("{} per {} ms", r.max_requests, r.window.as_millis()),
        None => "none".to_string(),
    };
    let price = |cents: i64| format!("{}.{:02}", cents / 100, cents % 100);
    // The room's settings are in the item's slot, what is on in every slot's meta.
    let room_in_redis = if redis(9) == "1" {
        let room = slot_room(sale);
        let config: Option<String> = redis::cmd("HGET")
            .arg(&room)
            .arg("config")
            .query(conn)
            .with_context(|| format!("cannot read {room}"))?;
        config.unwrap_or_else(|| "on, without settings".to_string())
    } else {
        "off".to_string()
    };
    let room_in_file = item
        .waiting_room
        .as_ref()
        .map_or_else(|| "off".to_string(), |room| room.config_text());
    let rows = [
        ("stock", item.stock.to_string(), initial.to_string()),
        ("name", item.name.clone(), redis(1)),
        (
            "price",
            price(item.price_cents),
            redis(2).parse::<i64>().map_or_else(|_| redis(2), price),
        ),
        (
            "per_user_limit",
            campaign.per_user_limit.to_string(),
            redis(3),
        ),
        ("rate_limit", file_rate, rate(&redis(4), &redis(5))),
        ("starts_at", opt_ms(campaign.starts_at_ms), ms(&redis(6))),
        ("ends_at", opt_ms(campaign.ends_at_ms), ms(&redis(7))),
        (
            "keys_expire_at",
            opt_ms(campaign.expire_at_ms()),
            ms(&redis(8)),
        ),
        ("waiting_room", room_in_file, room_in_redis),
    ];
    Ok(rows
        .into_iter()
        .map(|(field, file, redis)| FieldPlan {
            field,
            differs: file != redis,
            file,
            redis,
        })
        .collect())
}

/// The room hash of `sale`'s own slot (a bucketed item's plain tag).
fn slot_room(sale: &SaleItem) -> String {
    let layout = sale.layout();
    crate::model::keys::ItemKeys::new(&layout.prefix, &layout.campaign, &layout.item)
        .room()
        .room
}
