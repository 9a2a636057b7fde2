//! Order stream entries: the raw reply shapes of XREADGROUP / XAUTOCLAIM /
//! XRANGE, and the one parser that turns an entry into an [`Order`].
//!
//! Replies are walked as raw [`redis::Value`]s instead of redis-rs's typed
//! stream replies because those key fields by `String`: one entry with a
//! field name that is not UTF-8 would make the whole batch unreadable and
//! block the consumer group. Here a bad entry stays one bad entry.

use anyhow::{Result, bail};
use redis::Value;

use crate::model::campaign::MAX_PER_USER_LIMIT;
use crate::model::campaign::is_valid_id;

/// Longest user id the database columns take (VARCHAR(255) on MySQL).
pub(crate) const MAX_USER_ID_BYTES: usize = 255;

/// One stream entry as Redis returned it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawEntry {
    /// Stream id, `<ms>-<seq>`.
    pub id: String,
    /// Field/value pairs in stream order; empty when `deleted`.
    pub(crate) fields: Vec<(Vec<u8>, Vec<u8>)>,
    /// The id is still in the pending list but the entry was deleted from the stream.
    pub(crate) deleted: bool,
}

impl RawEntry {
    /// The first value of `name`, if present.
    pub(crate) fn field(&self, name: &str) -> Option<&[u8]> {
        self.fields
            .iter()
            .find(|(key, _)| key.as_slice() == name.as_bytes())
            .map(|(_, value)| value.as_slice())
    }
}

/// One order, as the buy script wrote it and the database stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Order {
    pub order_id: String,
    pub campaign: String,
    pub item_id: String,
    pub user_id: String,
    pub qty: i64,
    pub price_cents: i64,
    /// Unix ms, Redis server clock at purchase.
    pub bought_at_ms: i64,
    /// The stream entry that carried it.
    pub stream_id: String,
    /// Payment deadline (Unix ms, Redis clock) when the order is a
    /// reservation (`payment_timeout`); `None` = final on `ok`.
    pub deadline_ms: Option<i64>,
    /// A seat item's order: its seats as labels (`A-12-7`), one per unit,
    /// from the entry's `seats` field (docs/seats.md). Empty for any other
    /// order, and for a state change (pay and release entries do not repeat
    /// the seats: the order entry alone stores them).
    pub seats: Vec<String>,
}

impl Order {
    /// The state a new row of this order starts in.
    pub(crate) fn initial_state(&self) -> OrderState {
        if self.deadline_ms.is_some() {
            OrderState::Reserved
        } else {
            OrderState::Confirmed
        }
    }
}

/// An order's state, in Redis's reservation record and the database's `state` column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OrderState {
    /// Final on `ok`: the campaign has no `payment_timeout`.
    Confirmed,
    /// Holding its units until paid, cancelled or past its deadline.
    Reserved,
    Paid,
    /// Released: the deadline passed unpaid.
    Expired,
    /// Released: cancelled before payment.
    Cancelled,
}

impl OrderState {
    pub(crate) const ALL: [OrderState; 5] = [
        OrderState::Confirmed,
        OrderState::Reserved,
        OrderState::Paid,
        OrderState::Expired,
        OrderState::Cancelled,
    ];

    /// The name in Redis, the stream and the database.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            OrderState::Confirmed => "confirmed",
            OrderState::Reserved => "reserved",
            OrderState::Paid => "paid",
            OrderState::Expired => "expired",
            OrderState::Cancelled => "cancelled",
        }
    }

    /// Parse a state name.
    pub(crate) fn parse(name: &str) -> Option<OrderState> {
        OrderState::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// Released: its units went back to stock.
    pub(crate) fn released(self) -> bool {
        matches!(self, OrderState::Expired | OrderState::Cancelled)
    }
}

/// A reservation's final state change, as `lua/pay.lua` / `lua/release.lua`
/// append it to the order stream: the whole order (so the database can
/// create the row if the order entry has not arrived yet) plus what happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateChange {
    /// The order as the change carries it; `stream_id` is the change's entry.
    pub order: Order,
    /// `Paid`, `Expired` or `Cancelled`.
    pub state: OrderState,
    /// When it happened (Unix ms, Redis clock).
    pub at_ms: i64,
    /// Why (cancel's `--reason`), "" when none.
    pub reason: String,
}

/// One entry of an order stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StreamEntry {
    Order(Order),
    Change(StateChange),
}

/// Parse an order entry or a state-change entry of `campaign`/`item`.
pub(crate) fn parse_entry(
    entry: &RawEntry,
    campaign: &str,
    item: &str,
) -> std::result::Result<StreamEntry, String> {
    let Some(event) = entry.field("event") else {
        return parse_order(entry, campaign, item).map(StreamEntry::Order);
    };
    let state = std::str::from_utf8(event)
        .ok()
        .and_then(OrderState::parse)
        .filter(|s| {
            matches!(
                s,
                OrderState::Paid | OrderState::Expired | OrderState::Cancelled
            )
        })
        .ok_or_else(|| {
            format!(
                "event {:?} is not paid, expired or cancelled",
                String::from_utf8_lossy(event)
            )
        })?;
    let order = parse_order_fields(entry, campaign, item)?;
    if order.deadline_ms.is_none() {
        return Err("state change without deadline_ms".into());
    }
    let at_ms = std::str::from_utf8(entry.field("event_at_ms").unwrap_or_default())
        .ok()
        .and_then(|t| t.parse::<i64>().ok())
        .filter(|t| *t > 0)
        .ok_or("field event_at_ms is not a positive integer")?;
    let reason = String::from_utf8(entry.field("reason").unwrap_or_default().to_vec())
        .map_err(|_| "field reason is not UTF-8".to_string())?;
    if reason.len() > MAX_REASON_BYTES || reason.chars().any(char::is_control) {
        return Err(format!(
            "reason {reason:?} is too long or has control characters"
        ));
    }
    Ok(StreamEntry::Change(StateChange {
        order,
        state,
        at_ms,
        reason,
    }))
}

/// Longest cancellation reason the database column takes.
pub(crate) const MAX_REASON_BYTES: usize = 255;

/// Parse an order entry of `campaign`/`item`. The error says why it is not
/// one (it becomes the dead-letter reason). Everything the database could
/// refuse is refused here, so a stored batch can only fail for database
/// reasons, never because of one entry's content.
pub(crate) fn parse_order(
    entry: &RawEntry,
    campaign: &str,
    item: &str,
) -> std::result::Result<Order, String> {
    if let Some(event) = entry.field("event") {
        return Err(format!(
            "entry is a state change ({}), not an order",
            String::from_utf8_lossy(event)
        ));
    }
    parse_order_fields(entry, campaign, item)
}

/// The order fields of an order or state-change entry.
fn parse_order_fields(
    entry: &RawEntry,
    campaign: &str,
    item: &str,
) -> std::result::Result<Order, String> {
    if entry.deleted {
        return Err("entry deleted from the stream".into());
    }
    let text = |name: &str| -> std::result::Result<String, String> {
        let raw = entry
            .field(name)
            .ok_or_else(|| format!("field {name} missing"))?;
        String::from_utf8(raw.to_vec()).map_err(|_| format!("field {name} is not UTF-8"))
    };
    let number = |name: &str, min: i64, max: i64| -> std::result::Result<i64, String> {
        let value = text(name)?;
        match value.parse::<i64>() {
            Ok(n) if (min..=max).contains(&n) => Ok(n),
            _ => Err(format!(
                "field {name} = {value:?} is not an integer in {min}..={max}"
            )),
        }
    };
    let order_id = text("order_id")?;
    if !is_valid_id(&order_id) {
        return Err(format!(
            "order_id {order_id:?} is not 1..64 letters, digits, '-' or '_'"
        ));
    }
    let entry_campaign = text("campaign")?;
    let entry_item = text("item_id")?;
    if entry_campaign != campaign || entry_item != item {
        return Err(format!(
            "entry is for campaign {entry_campaign:?} item {entry_item:?}, not {campaign}/{item}"
        ));
    }
    let user_id = text("user_id")?;
    if user_id.is_empty()
        || user_id.len() > MAX_USER_ID_BYTES
        || user_id.chars().any(char::is_control)
    {
        return Err(format!(
            "user_id {user_id:?} is empty, too long or has control characters"
        ));
    }
    Ok(Order {
        order_id,
        campaign: entry_campaign,
        item_id: entry_item,
        user_id,
        qty: number("qty", 1, MAX_PER_USER_LIMIT)?,
        price_cents: number("price_cents", 0, i64::MAX / MAX_PER_USER_LIMIT)?,
        bought_at_ms: number("bought_at_ms", 1, i64::MAX)?,
        stream_id: entry.id.clone(),
        deadline_ms: match entry.field("deadline_ms") {
            None | Some(b"") => None,
            Some(_) => Some(number("deadline_ms", 1, i64::MAX)?),
        },
        seats: match entry.field("seats") {
            None | Some(b"") => Vec::new(),
            Some(_) => parse_seats(&text("seats")?, number("qty", 1, MAX_PER_USER_LIMIT)?)?,
        },
    })
}

/// Longest seat label the database column takes (VARCHAR(80) on MySQL): a
/// section id of 64 characters and a row and seat of up to 4 digits fit.
pub(crate) const MAX_SEAT_LABEL_BYTES: usize = 80;

/// The `seats` field of a seat order: `qty` distinct labels, comma-separated,
/// each `<section>-<row>-<seat>` in characters the columns take. Whether
/// they are seats of the item's map is reconcile's question (the parser
/// does not know the map); what the database could refuse is refused here.
fn parse_seats(text: &str, qty: i64) -> std::result::Result<Vec<String>, String> {
    let seats: Vec<String> = text.split(',').map(str::to_string).collect();
    for seat in &seats {
        let parts: Vec<&str> = seat.rsplitn(3, '-').collect();
        let well_formed = seat.len() <= MAX_SEAT_LABEL_BYTES
            && parts.len() == 3
            && parts[..2]
                .iter()
                .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            && is_valid_id(parts[2]);
        if !well_formed {
            return Err(format!(
                "seat {seat:?} in field seats is not <section>-<row>-<seat>, like A-12-7"
            ));
        }
    }
    if seats.len() as i64 != qty {
        return Err(format!(
            "field seats names {} seat(s) for qty {qty}",
            seats.len()
        ));
    }
    let mut distinct = seats.clone();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() != seats.len() {
        return Err(format!("field seats = {text:?} names a seat twice"));
    }
    Ok(seats)
}

/// A stream id as a comparable pair (`<ms>-<seq>`).
pub(crate) fn stream_id_key(id: &str) -> Option<(u64, u64)> {
    let (ms, seq) = id.split_once('-')?;
    Some((ms.parse().ok()?, seq.parse().ok()?))
}

fn bytes(value: &Value) -> Option<Vec<u8>> {
    match value {
        Value::BulkString(b) => Some(b.clone()),
        Value::SimpleString(s) | Value::VerbatimString { text: s, .. } => {
            Some(s.clone().into_bytes())
        }
        Value::Int(n) => Some(n.to_string().into_bytes()),
        _ => None,
    }
}

fn text(value: &Value, what: &str) -> Result<String> {
    match bytes(value) {
        Some(b) => String::from_utf8(b).map_err(|_| anyhow::anyhow!("{what} is not UTF-8")),
        None => bail!("unexpected {what} in stream reply: {value:?}"),
    }
}

fn items(value: &Value) -> Option<&[Value]> {
    match value {
        Value::Array(v) | Value::Set(v) => Some(v),
        _ => None,
    }
}

/// Parse an array of `[id, [field, value, ...] | nil]` entries.
pub(crate) fn parse_entries(value: &Value) -> Result<Vec<RawEntry>> {
    let Some(list) = items(value) else {
        if matches!(value, Value::Nil) {
            return Ok(Vec::new());
        }
        bail!("unexpected stream entry list: {value:?}");
    };
    let mut entries = Vec::with_capacity(list.len());
    for raw in list {
        let Some([id, body]) = items(raw).and_then(|p| <&[Value; 2]>::try_from(p).ok()) else {
            bail!("unexpected stream entry: {raw:?}");
        };
        let id = text(id, "entry id")?;
        let (fields, deleted) = match body {
            Value::Nil => (Vec::new(), true),
            body => {
                let pairs: Vec<(Vec<u8>, Vec<u8>)> = match body {
                    Value::Map(map) => map
                        .iter()
                        .filter_map(|(k, v)| Some((bytes(k)?, bytes(v)?)))
                        .collect(),
                    other => {
                        let flat = items(other).ok_or_else(|| {
                            anyhow::anyhow!("unexpected fields of entry {id}: {other:?}")
                        })?;
                        flat.chunks_exact(2)
                            .filter_map(|kv| Some((bytes(&kv[0])?, bytes(&kv[1])?)))
                            .collect()
                    }
                };
                (pairs, false)
            }
        };
        entries.push(RawEntry {
            id,
            fields,
            deleted,
        });
    }
    Ok(entries)
}

/// Parse an XREADGROUP/XREAD reply into (stream key, entries), RESP2 or RESP3.
pub(crate) fn parse_read_reply(value: &Value) -> Result<Vec<(String, Vec<RawEntry>)>> {
    match value {
        Value::Nil => Ok(Vec::new()),
        Value::Map(map) => map
            .iter()
            .map(|(key, entries)| Ok((text(key, "stream key")?, parse_entries(entries)?)))
            .collect(),
        other => {
            let list = items(other)
                .ok_or_else(|| anyhow::anyhow!("unexpected XREADGROUP reply: {other:?}"))?;
            list.iter()
                .map(|pair| match items(pair) {
                    Some([key, entries]) => Ok((text(key, "stream key")?, parse_entries(entries)?)),
                    _ => bail!("unexpected XREADGROUP stream: {pair:?}"),
                })
                .collect()
        }
    }
}

/// An XAUTOCLAIM reply: (next cursor, claimed entries, ids deleted from the stream).
pub(crate) fn parse_autoclaim_reply(value: &Value) -> Result<(String, Vec<RawEntry>, Vec<String>)> {
    let parts =
        items(value).ok_or_else(|| anyhow::anyhow!("unexpected XAUTOCLAIM reply: {value:?}"))?;
    let (Some(cursor), Some(claimed)) = (parts.first(), parts.get(1)) else {
        bail!("unexpected XAUTOCLAIM reply: {value:?}");
    };
    let deleted = match parts.get(2).and_then(items) {
        Some(ids) => ids
            .iter()
            .map(|id| text(id, "deleted id"))
            .collect::<Result<_>>()?,
        None => Vec::new(),
    };
    Ok((text(cursor, "cursor")?, parse_entries(claimed)?, deleted))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(fields: &[(&str, &str)]) -> RawEntry {
        RawEntry {
            id: "1-0".into(),
            fields: fields
                .iter()
                .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
                .collect(),
            deleted: false,
        }
    }

    const GOOD: [(&str, &str); 8] = [
        ("order_id", "01JABC"),
        ("campaign", "c1"),
        ("item_id", "i1"),
        ("user_id", "u 1"),
        ("qty", "2"),
        ("price_cents", "149900"),
        ("bought_at_ms", "1700000000000"),
        ("request_id", ""),
    ];

    #[test]
    fn a_well_formed_entry_parses() {
        let order = parse_order(&entry(&GOOD), "c1", "i1").unwrap();
        assert_eq!(order.qty, 2);
        assert_eq!(order.price_cents, 149_900);
        assert_eq!(order.stream_id, "1-0");
        assert_eq!(order.user_id, "u 1");
    }

    #[test]
    fn bad_entries_say_why() {
        let mut fields = GOOD.to_vec();
        fields[4] = ("qty", "zero");
        assert!(
            parse_order(&entry(&fields), "c1", "i1")
                .unwrap_err()
                .contains("qty")
        );
        assert!(
            parse_order(&entry(&GOOD[1..]), "c1", "i1")
                .unwrap_err()
                .contains("order_id missing")
        );
        assert!(
            parse_order(&entry(&GOOD), "c1", "other")
                .unwrap_err()
                .contains("not c1/other")
        );
        let mut deleted = entry(&[]);
        deleted.deleted = true;
        assert!(parse_order(&deleted, "c1", "i1").is_err());
    }

    #[test]
    fn state_changes_parse_apart_from_orders() {
        let mut fields = GOOD.to_vec();
        fields.extend([
            ("deadline_ms", "1700000900000"),
            ("event", "cancelled"),
            ("event_at_ms", "1700000100000"),
            ("reason", "asked"),
        ]);
        let Ok(StreamEntry::Change(change)) = parse_entry(&entry(&fields), "c1", "i1") else {
            panic!("a state change");
        };
        assert_eq!(change.state, OrderState::Cancelled);
        assert_eq!(change.order.deadline_ms, Some(1_700_000_900_000));
        assert_eq!(
            (change.at_ms, change.reason.as_str()),
            (1_700_000_100_000, "asked")
        );
        assert!(
            parse_order(&entry(&fields), "c1", "i1")
                .unwrap_err()
                .contains("state change")
        );
        fields[9] = ("event", "reserved");
        assert!(parse_entry(&entry(&fields), "c1", "i1").is_err());
        fields[9] = ("event", "paid");
        fields[10] = ("event_at_ms", "soon");
        assert!(parse_entry(&entry(&fields), "c1", "i1").is_err());
        let Ok(StreamEntry::Order(order)) = parse_entry(&entry(&GOOD), "c1", "i1") else {
            panic!("an order");
        };
        assert_eq!(order.initial_state(), OrderState::Confirmed);
        let mut reserving = GOOD.to_vec();
        reserving.push(("deadline_ms", "1700000900000"));
        let order = parse_order(&entry(&reserving), "c1", "i1").unwrap();
        assert_eq!(order.initial_state(), OrderState::Reserved);
        reserving[8] = ("deadline_ms", "");
        assert_eq!(
            parse_order(&entry(&reserving), "c1", "i1")
                .unwrap()
                .deadline_ms,
            None
        );
    }

    #[test]
    fn a_seat_order_carries_one_label_per_unit() {
        let mut fields = GOOD.to_vec();
        fields.push(("seats", "A-12-7,VIP_2-1-40"));
        let order = parse_order(&entry(&fields), "c1", "i1").unwrap();
        assert_eq!(order.seats, ["A-12-7", "VIP_2-1-40"]);
        assert!(
            parse_order(&entry(&GOOD), "c1", "i1")
                .unwrap()
                .seats
                .is_empty()
        );
        for (seats, why) in [
            ("A-12-7", "1 seat(s) for qty 2"),
            ("A-12-7,A-12-7", "twice"),
            ("A-12-7,A-12", "not <section>-<row>-<seat>"),
            ("A-12-7,A-x-1", "not <section>-<row>-<seat>"),
            ("A-12-7,A B-1-1", "not <section>-<row>-<seat>"),
        ] {
            let last = fields.len() - 1;
            fields[last] = ("seats", seats);
            let error = parse_order(&entry(&fields), "c1", "i1").unwrap_err();
            assert!(error.contains(why), "{seats}: {error}");
        }
    }

    #[test]
    fn stream_ids_compare_numerically() {
        assert!(stream_id_key("10-0") > stream_id_key("9-5"));
        assert_eq!(stream_id_key("bad"), None);
    }

    #[test]
    fn replies_with_nil_bodies_are_deleted_entries() {
        let reply = Value::Array(vec![Value::Array(vec![
            Value::BulkString(b"k".to_vec()),
            Value::Array(vec![
                Value::Array(vec![Value::BulkString(b"1-1".to_vec()), Value::Nil]),
                Value::Array(vec![
                    Value::BulkString(b"1-2".to_vec()),
                    Value::Array(vec![
                        Value::BulkString(vec![0xff]),
                        Value::BulkString(b"x".to_vec()),
                    ]),
                ]),
            ]),
        ])]);
        let parsed = parse_read_reply(&reply).unwrap();
        assert_eq!(parsed[0].0, "k");
        assert!(parsed[0].1[0].deleted);
        assert_eq!(parsed[0].1[1].fields, vec![(vec![0xff], b"x".to_vec())]);
    }
}
