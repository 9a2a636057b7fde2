//! What `preheat` would change, field by field: the campaign file against
//! what Redis holds for an item — stock, name, price, per-user limit, rate
//! limit, window, key expiry and each setting of the waiting room — so an
//! edit to the file never vanishes behind "nothing written": a differing
//! field is shown, and applied only with `--update-meta` (the stock only with
//! `--force`, or `init --yes` once it has sold).
//!
//! Each field carries its value twice: in machine units for `--format json`
//! (cents, Unix ms, ms, counts) and as text in the file's own units (`20/s`,
//! `2m`, `1499.00`) for the table. Redis's view of a bucketed item is its
//! first bucket's meta (every bucket gets the same fields) and the sum of
//! its buckets' initial stock; an item Redis does not hold has every Redis
//! value `null` (text `-`).
//!
//! May import: domain::item, model, util.

use anyhow::{Context, Result};
use redis::ConnectionLike;
use serde::Serialize;
use serde_json::{Value, json};

use crate::domain::item::SaleItem;
use crate::model::waiting_room::{AdmissionMode, WaitingRoom};

/// One field, as the file says it and as Redis holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldPlan {
    /// The field's name as the campaign file spells it: `stock`, `name`,
    /// `price`, `per_user_limit`, `rate_limit`, `starts_at`, `ends_at`,
    /// `keys_expire_at`, `waiting_room` (one side has no room) or
    /// `waiting_room.mode`, `.admit_rate`, `.max_active`, `.admission_ttl`,
    /// `.prequeue`, `.registration`.
    pub field: &'static str,
    /// What `file` and `redis` count: `units`, `text`, `cents`, `unix_ms`,
    /// `ms`, `bool`, or an object's keys for the compound ones.
    pub unit: &'static str,
    /// The file's value in machine units (`null`: the file sets none).
    pub file: Value,
    /// Redis's value in machine units (`null`: Redis holds none).
    pub redis: Value,
    /// The two differ.
    pub differs: bool,
    /// `file` in the file's own units, for people.
    #[serde(skip)]
    pub file_text: String,
    /// `redis` in the file's own units, for people.
    #[serde(skip)]
    pub redis_text: String,
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

/// Every field of `sale`, file vs Redis (Redis's `null` when it holds no meta).
pub(crate) fn plan<C: ConnectionLike>(conn: &mut C, sale: &SaleItem) -> Result<Vec<FieldPlan>> {
    let slots = sale.slots();
    let mut initial: Option<i64> = Some(0);
    let mut first: Vec<Option<String>> = vec![None; FIELDS.len()];
    for (n, slot) in slots.iter().enumerate() {
        let values: Vec<Option<String>> = redis::cmd("HMGET")
            .arg(&slot.keys.meta)
            .arg(&FIELDS[..])
            .query(conn)
            .with_context(|| format!("cannot read {}", slot.keys.meta))?;
        match values[0].as_deref().and_then(|s| s.parse::<i64>().ok()) {
            Some(stock) => initial = initial.map(|sum| sum + stock),
            None => initial = None,
        }
        if n == 0 {
            first = values;
        }
    }
    let held = initial.is_some();
    let (campaign, item) = (sale.campaign, sale.item);
    let int = |i: usize| first[i].as_deref().and_then(|s| s.parse::<i64>().ok());
    let mut rows = vec![
        plain(
            "stock",
            "units",
            json!(item.stock),
            initial.map(Value::from),
        ),
        plain(
            "name",
            "text",
            json!(item.name),
            first[1].clone().map(Value::from),
        ),
        money(item.price_cents, int(2)),
        plain(
            "per_user_limit",
            "units",
            json!(campaign.per_user_limit),
            int(3).map(Value::from),
        ),
        rate_limit(
            campaign
                .rate_limit
                .map(|r| (i64::from(r.max_requests), r.window.as_millis() as i64)),
            held.then(|| int(5).zip(int(4)).filter(|(max, _)| *max > 0)),
        ),
        time("starts_at", campaign.starts_at_ms, held.then(|| int(6))),
        time("ends_at", campaign.ends_at_ms, held.then(|| int(7))),
        time(
            "keys_expire_at",
            campaign.expire_at_ms(),
            held.then(|| int(8)),
        ),
    ];
    // The room's settings are in the item's slot, whether it is on in every slot's meta.
    let room_in_redis = match first[9].as_deref() {
        _ if !held => None,
        Some("1") => {
            let room = slot_room(sale);
            let config: Option<String> = redis::cmd("HGET")
                .arg(&room)
                .arg("config")
                .query(conn)
                .with_context(|| format!("cannot read {room}"))?;
            Some(Some(config.unwrap_or_default()))
        }
        _ => Some(None),
    };
    rows.extend(room(item.waiting_room.as_ref(), room_in_redis));
    Ok(rows)
}

/// A field whose text is its JSON value as written (`1000`, `Moutai`).
fn plain(field: &'static str, unit: &'static str, file: Value, redis: Option<Value>) -> FieldPlan {
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    row(
        field,
        unit,
        (text(&file), file),
        redis.map(|r| (text(&r), r)),
    )
}

/// One row; `redis` is `None` when Redis holds nothing (text `-`).
fn row(
    field: &'static str,
    unit: &'static str,
    (file_text, file): (String, Value),
    redis: Option<(String, Value)>,
) -> FieldPlan {
    let (redis_text, redis) = redis.unwrap_or_else(|| ("-".to_string(), Value::Null));
    FieldPlan {
        field,
        unit,
        differs: file != redis,
        file,
        redis,
        file_text,
        redis_text,
    }
}

fn money(file: i64, redis: Option<i64>) -> FieldPlan {
    let text = |cents: i64| format!("{}.{:02}", cents / 100, cents % 100);
    row(
        "price",
        "cents",
        (text(file), json!(file)),
        redis.map(|r| (text(r), json!(r))),
    )
}

/// `rate_limit`: (max requests, window ms); `redis` is `None` when Redis
/// holds no meta, `Some(None)` when it holds no limit.
fn rate_limit(file: Option<(i64, i64)>, redis: Option<Option<(i64, i64)>>) -> FieldPlan {
    let value = |limit: Option<(i64, i64)>| match limit {
        Some((max, window)) => (
            format!("{max} per {}", duration_text(window)),
            json!({"max_requests": max, "window_ms": window}),
        ),
        None => ("none".to_string(), Value::Null),
    };
    let mut plan = row(
        "rate_limit",
        "max_requests per window_ms",
        value(file),
        None,
    );
    if let Some(limit) = redis {
        let (text, json) = value(limit);
        plan.redis_text = text;
        plan.differs = plan.file != json;
        plan.redis = json;
    }
    plan
}

/// A point in time; `redis` as in [`rate_limit`].
fn time(field: &'static str, file: Option<i64>, redis: Option<Option<i64>>) -> FieldPlan {
    let value = |ms: Option<i64>| (time_text(ms), ms.map_or(Value::Null, Value::from));
    let mut plan = row(field, "unix_ms", value(file), None);
    if let Some(ms) = redis {
        let (text, json) = value(ms);
        plan.redis_text = text;
        plan.differs = plan.file != json;
        plan.redis = json;
    }
    plan
}

/// RFC 3339 UTC, without milliseconds when there are none; `-` for none.
pub(crate) fn time_text(ms: Option<i64>) -> String {
    let Some(at) = ms.and_then(chrono::DateTime::from_timestamp_millis) else {
        return "-".to_string();
    };
    let precision = if at.timestamp_subsec_millis() == 0 {
        chrono::SecondsFormat::Secs
    } else {
        chrono::SecondsFormat::Millis
    };
    at.to_rfc3339_opts(precision, true)
}

/// A duration as the file writes one: `2m`, `1s`, `1h 30m`, `250ms`.
pub(crate) fn duration_text(ms: i64) -> String {
    humantime::format_duration(std::time::Duration::from_millis(ms.max(0) as u64)).to_string()
}

/// An admission rate as the file writes one: `500/s`, `30/min`, `2/100ms`.
fn admit_rate_text(count: u64, per_ms: u64) -> String {
    match per_ms {
        1000 => format!("{count}/s"),
        60_000 => format!("{count}/min"),
        3_600_000 => format!("{count}/h"),
        ms => format!("{count}/{}", duration_text(ms as i64)),
    }
}

/// A waiting room's settings, as the file gives them or as Redis's
/// canonical `config` line records them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RoomSettings {
    mode: AdmissionMode,
    ttl_ms: u64,
    prequeue: bool,
    /// until (Unix ms), per device, per IP.
    registration: Option<(i64, u64, u64)>,
}

impl RoomSettings {
    fn of(room: &WaitingRoom) -> RoomSettings {
        RoomSettings {
            mode: room.mode,
            ttl_ms: room.admission_ttl.as_millis() as u64,
            prequeue: room.prequeue,
            registration: room
                .registration
                .map(|r| (r.until_ms, u64::from(r.per_device), u64::from(r.per_ip))),
        }
    }

    /// Parse `WaitingRoom::config_text`'s line: `rate 20/1000ms ttl 120000ms
    /// prequeue 0 registration off` (or `max_active N ...`, `registration
    /// until MS per_device N per_ip N`); `None` when it is not one.
    fn parse(config: &str) -> Option<RoomSettings> {
        let words: Vec<&str> = config.split_whitespace().collect();
        let ms = |w: &str| w.strip_suffix("ms")?.parse::<u64>().ok();
        let mode = match *words.first()? {
            name @ ("rate" | "ticket") => {
                let (count, per) = words.get(1)?.split_once('/')?;
                let (count, per_ms) = (count.parse().ok()?, ms(per)?);
                match name {
                    "rate" => AdmissionMode::Rate { count, per_ms },
                    _ => AdmissionMode::Ticket { count, per_ms },
                }
            }
            "max_active" => AdmissionMode::MaxActive(words.get(1)?.parse().ok()?),
            _ => return None,
        };
        let after = |key: &str| {
            let at = words.iter().position(|w| *w == key)?;
            words.get(at + 1).copied()
        };
        let registration = match after("registration")? {
            "off" => None,
            "until" => Some((
                words
                    .get(words.iter().position(|w| *w == "until")? + 1)?
                    .parse()
                    .ok()?,
                after("per_device")?.parse().ok()?,
                after("per_ip")?.parse().ok()?,
            )),
            _ => return None,
        };
        Some(RoomSettings {
            mode,
            ttl_ms: ms(after("ttl")?)?,
            prequeue: after("prequeue")? == "1",
            registration,
        })
    }

    /// The settings in a line, in the file's units: `rate 20/s, admissions last 2m`.
    fn describe(&self) -> String {
        let mode = match self.mode {
            AdmissionMode::Rate { count, per_ms } => {
                format!("rate {}", admit_rate_text(count, per_ms))
            }
            AdmissionMode::Ticket { count, per_ms } => {
                format!("tickets, admitting {}", admit_rate_text(count, per_ms))
            }
            AdmissionMode::MaxActive(n) => format!("at most {n} active"),
        };
        let registration = self
            .registration
            .map(|(until, device, ip)| {
                format!(
                    ", registration until {}, {device} per device, {ip} per IP",
                    time_text(Some(until))
                )
            })
            .unwrap_or_default();
        format!(
            "{mode}, admissions last {}{}{registration}",
            duration_text(self.ttl_ms as i64),
            if self.prequeue { ", pre-queue" } else { "" }
        )
    }

    /// One row per setting, file (`self`) against Redis.
    fn rows(&self, redis: &RoomSettings) -> Vec<FieldPlan> {
        let mode_name = |m: AdmissionMode| match m {
            AdmissionMode::Rate { .. } => "rate",
            AdmissionMode::MaxActive(_) => "max_active",
            AdmissionMode::Ticket { .. } => "ticket",
        };
        let admit = |m: AdmissionMode| match m {
            AdmissionMode::Rate { count, per_ms } | AdmissionMode::Ticket { count, per_ms } => (
                admit_rate_text(count, per_ms),
                json!({"count": count, "per_ms": per_ms}),
            ),
            AdmissionMode::MaxActive(_) => ("-".to_string(), Value::Null),
        };
        let active = |m: AdmissionMode| match m {
            AdmissionMode::MaxActive(n) => (n.to_string(), json!(n)),
            AdmissionMode::Rate { .. } | AdmissionMode::Ticket { .. } => {
                ("-".to_string(), Value::Null)
            }
        };
        let registration = |r: Option<(i64, u64, u64)>| match r {
            None => ("off".to_string(), Value::Null),
            Some((until, device, ip)) => (
                format!(
                    "until {}, {device} per device, {ip} per IP",
                    time_text(Some(until))
                ),
                json!({"until_ms": until, "per_device": device, "per_ip": ip}),
            ),
        };
        let text = |s: &str| (s.to_string(), json!(s));
        let both =
            |field, unit, f: (String, Value), r: (String, Value)| row(field, unit, f, Some(r));
        vec![
            both(
                "waiting_room.mode",
                "text",
                text(mode_name(self.mode)),
                text(mode_name(redis.mode)),
            ),
            both(
                "waiting_room.admit_rate",
                "count per per_ms",
                admit(self.mode),
                admit(redis.mode),
            ),
            both(
                "waiting_room.max_active",
                "units",
                active(self.mode),
                active(redis.mode),
            ),
            both(
                "waiting_room.admission_ttl",
                "ms",
                (duration_text(self.ttl_ms as i64), json!(self.ttl_ms)),
                (duration_text(redis.ttl_ms as i64), json!(redis.ttl_ms)),
            ),
            both(
                "waiting_room.prequeue",
                "bool",
                (self.prequeue.to_string(), json!(self.prequeue)),
                (redis.prequeue.to_string(), json!(redis.prequeue)),
            ),
            both(
                "waiting_room.registration",
                "until_ms, per_device, per_ip",
                registration(self.registration),
                registration(redis.registration),
            ),
        ]
    }
}

/// The waiting room's rows: one per setting when both sides have a room,
/// else one `waiting_room` row (`off`, or the room's canonical line).
/// `redis`: `None` when Redis holds no meta, `Some(None)` when its room is off.
fn room(file: Option<&WaitingRoom>, redis: Option<Option<String>>) -> Vec<FieldPlan> {
    let file_settings = file.map(RoomSettings::of);
    if let (Some(file), Some(Some(config))) = (&file_settings, &redis)
        && let Some(in_redis) = RoomSettings::parse(config)
    {
        return file.rows(&in_redis);
    }
    let side = |config: Option<String>| match config {
        Some(config) => (
            RoomSettings::parse(&config).map_or_else(|| config.clone(), |r| r.describe()),
            json!(config),
        ),
        None => ("off".to_string(), Value::Null),
    };
    let file_side = side(file.map(WaitingRoom::config_text));
    let redis_side = redis.map(side);
    vec![row("waiting_room", "config line", file_side, redis_side)]
}

/// The room hash of `sale`'s own slot (a bucketed item's plain tag).
fn slot_room(sale: &SaleItem) -> String {
    let layout = sale.layout();
    crate::model::keys::ItemKeys::new(&layout.prefix, &layout.campaign, &layout.item)
        .room()
        .room
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_room_line_parses_back_to_its_settings() {
        let rate =
            RoomSettings::parse("rate 20/1000ms ttl 120000ms prequeue 0 registration off").unwrap();
        assert_eq!(
            rate.mode,
            AdmissionMode::Rate {
                count: 20,
                per_ms: 1000
            }
        );
        assert_eq!(
            (rate.ttl_ms, rate.prequeue, rate.registration),
            (120_000, false, None)
        );
        let active = RoomSettings::parse(
            "max_active 50 ttl 60000ms prequeue 1 registration until 1700000000000 per_device 3 per_ip 0",
        )
        .unwrap();
        assert_eq!(active.mode, AdmissionMode::MaxActive(50));
        assert_eq!(active.registration, Some((1_700_000_000_000, 3, 0)));
        assert!(active.prequeue);
        assert_eq!(RoomSettings::parse("on, without settings"), None);
    }

    #[test]
    fn values_read_in_the_files_units() {
        assert_eq!(admit_rate_text(20, 1000), "20/s");
        assert_eq!(admit_rate_text(30, 60_000), "30/min");
        assert_eq!(admit_rate_text(2, 100), "2/100ms");
        assert_eq!(duration_text(120_000), "2m");
        assert_eq!(duration_text(1000), "1s");
        assert_eq!(time_text(Some(1_700_000_000_000)), "2023-11-14T22:13:20Z");
    }
}
