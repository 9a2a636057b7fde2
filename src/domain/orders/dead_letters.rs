//! The way back for dead letters: list them with their reasons, and once the
//! cause is fixed (a trigger dropped, a column widened) re-drive them into
//! the order database.
//!
//! A dead entry carries the original order entry's fields after its own
//! `dead_*` fields (see `lua/dead_letter.lua`), so the order is parsed from
//! it exactly as `consume` would, with the original stream id: reconcile
//! then finds the row's stream entry where it always was. A re-driven entry
//! is inserted (idempotent on order id) and only then deleted from the
//! dead-letter stream, so a crash in between re-drives it again harmlessly.
//!
//! An item has a dead-letter stream per slot (a bucketed item: one per
//! bucket, beside that bucket's order stream), read in the layout Redis
//! recorded at preheat; each letter remembers the stream it is in.

use anyhow::{Context, Result};
use redis::ConnectionLike;
use serde::Serialize;

use super::entry::{Order, RawEntry, parse_order};
use super::stream::{DEAD_ORIGINAL_ID, range_after};
use super::{OrderStore, now_ms};
use crate::domain::item::SaleItem;
use crate::model::campaign::{Campaign, Item};

/// One dead-lettered entry.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct DeadLetter {
    pub item: String,
    /// Id of the entry in the dead-letter stream.
    pub dead_id: String,
    /// Id of the original entry in the order stream.
    pub original_id: String,
    pub reason: String,
    /// Deliveries of the original entry when it was dead-lettered.
    pub deliveries: Option<u64>,
    pub consumer: String,
    pub dead_at_ms: Option<i64>,
    /// The dead-letter stream holding it (its item's, or its bucket's).
    pub stream: String,
    /// The order it carries, when it is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_id: Option<String>,
    /// Why it is not an order (it cannot be re-driven).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_an_order: Option<String>,
    #[serde(skip)]
    order: Option<Order>,
}

fn text(entry: &RawEntry, field: &str) -> String {
    entry
        .field(field)
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .unwrap_or_default()
}

/// Every dead letter of one item, slot by slot, oldest first in each.
pub(crate) fn list<C: ConnectionLike>(
    conn: &mut C,
    campaign: &Campaign,
    item: &Item,
) -> Result<Vec<DeadLetter>> {
    let mut letters = Vec::new();
    for slot in SaleItem::live(campaign, item).recorded(conn)?.slots() {
        letters.extend(list_stream(conn, campaign, item, &slot.keys.dead)?);
    }
    Ok(letters)
}

/// Every dead letter of one dead-letter stream, oldest first.
fn list_stream<C: ConnectionLike>(
    conn: &mut C,
    campaign: &Campaign,
    item: &Item,
    dead: &str,
) -> Result<Vec<DeadLetter>> {
    let mut letters = Vec::new();
    let mut after = "-".to_string();
    loop {
        let page = range_after(conn, dead, &after, "+", 1000)?;
        let Some(last) = page.last() else {
            return Ok(letters);
        };
        after = last.id.clone();
        for entry in &page {
            let original = RawEntry {
                id: text(entry, DEAD_ORIGINAL_ID),
                fields: entry
                    .fields
                    .iter()
                    .filter(|(name, _)| !name.starts_with(b"dead_"))
                    .cloned()
                    .collect(),
                deleted: false,
            };
            let parsed = parse_order(&original, &campaign.id, &item.id);
            letters.push(DeadLetter {
                item: item.id.clone(),
                dead_id: entry.id.clone(),
                original_id: original.id.clone(),
                reason: text(entry, "dead_reason"),
                deliveries: text(entry, "dead_deliveries").parse().ok(),
                consumer: text(entry, "dead_consumer"),
                dead_at_ms: text(entry, "dead_at_ms").parse().ok(),
                stream: dead.to_string(),
                order_id: parsed.as_ref().ok().map(|o| o.order_id.clone()),
                not_an_order: parsed.as_ref().err().map(|why| why.to_string()),
                order: parsed.ok(),
            });
        }
    }
}

/// What re-driving one dead letter did.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Redriven {
    pub(crate) item: String,
    pub(crate) dead_id: String,
    pub(crate) original_id: String,
    pub(crate) order_id: Option<String>,
    /// Stored now (or already) and removed from the dead letters.
    pub(crate) stored: bool,
    /// Why not, when not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) problem: Option<String>,
}

/// Re-drive `letters` into the order database; each is removed from the
/// dead-letter stream only after its order is committed.
pub(crate) fn redrive<C: ConnectionLike>(
    conn: &mut C,
    store: &mut dyn OrderStore,
    letters: &[DeadLetter],
) -> Result<Vec<Redriven>> {
    let mut results = Vec::new();
    for letter in letters {
        let mut result = Redriven {
            item: letter.item.clone(),
            dead_id: letter.dead_id.clone(),
            original_id: letter.original_id.clone(),
            order_id: letter.order_id.clone(),
            stored: false,
            problem: None,
        };
        match &letter.order {
            None => {
                result.problem = Some(format!(
                    "not an order, cannot be re-driven: {}",
                    letter.not_an_order.as_deref().unwrap_or("-")
                ));
            }
            Some(order) => match store.insert_orders(std::slice::from_ref(order), now_ms()) {
                Ok(_) => {
                    let _: i64 = redis::cmd("XDEL")
                        .arg(&letter.stream)
                        .arg(&letter.dead_id)
                        .query(conn)
                        .with_context(|| {
                            format!(
                                "order {} is stored, but removing {} from {} failed (re-driving it again changes nothing)",
                                order.order_id, letter.dead_id, letter.stream
                            )
                        })?;
                    result.stored = true;
                }
                Err(error) => result.problem = Some(format!("{error:#}")),
            },
        }
        results.push(result);
    }
    Ok(results)
}
