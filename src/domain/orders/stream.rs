//! Consumer-group calls on the order streams, and the scripts that read and
//! dead-letter their entries.
//!
//! Every call names one item's keys only, so each works on a Redis Cluster
//! (one item = one hash tag = one slot), except [`read_items`]: on a single
//! server it reads all items in one XREADGROUP, on a cluster one per item.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use anyhow::{Context, Result};
use redis::{ConnectionLike, Value};

use super::entry::{
    RawEntry, parse_autoclaim_reply, parse_entries, parse_read_reply, stream_id_key,
};
use super::wire::ReadsStreams;
use crate::model::keys::{ItemKeys, ORDER_GROUP};
use crate::redis_client::scripts::ScriptCall;
use crate::redis_client::scripts::dead_letter::{self, DeadLetter};
use crate::redis_client::scripts::stream_order_ids::{self, StreamOrderIds};

/// Create the consumer group of one item when missing (BUSYGROUP = already there).
pub(crate) fn ensure_group<C: ConnectionLike>(conn: &mut C, keys: &ItemKeys) -> Result<()> {
    let created: redis::RedisResult<()> = redis::cmd("XGROUP")
        .arg("CREATE")
        .arg(&keys.orders)
        .arg(ORDER_GROUP)
        .arg("0")
        .arg("MKSTREAM")
        .query(conn);
    match created {
        Ok(()) => Ok(()),
        Err(e) if e.code() == Some("BUSYGROUP") => Ok(()),
        Err(e) => Err(e).with_context(|| {
            format!(
                "cannot create consumer group {ORDER_GROUP} on {}",
                keys.orders
            )
        }),
    }
}

/// XREADGROUP for `streams` (key, start id: `>` for new entries, an id for
/// this consumer's own pending ones). `block` = None returns at once.
pub fn read_group<C: ConnectionLike>(
    conn: &mut C,
    consumer: &str,
    streams: &[(&str, &str)],
    count: usize,
    block: Option<Duration>,
) -> Result<Vec<(String, Vec<RawEntry>)>> {
    let reply: Value = group_read(consumer, streams, count, block)
        .query(conn)
        .with_context(|| format!("XREADGROUP failed on {} stream(s)", streams.len()))?;
    parse_read_reply(&reply)
}

/// The XREADGROUP command of [`read_group`].
fn group_read(
    consumer: &str,
    streams: &[(&str, &str)],
    count: usize,
    block: Option<Duration>,
) -> redis::Cmd {
    let mut cmd = redis::cmd("XREADGROUP");
    cmd.arg("GROUP")
        .arg(ORDER_GROUP)
        .arg(consumer)
        .arg("COUNT")
        .arg(count);
    if let Some(block) = block {
        cmd.arg("BLOCK").arg(block.as_millis().max(1) as u64);
    }
    cmd.arg("STREAMS");
    for (key, _) in streams {
        cmd.arg(*key);
    }
    for (_, id) in streams {
        cmd.arg(*id);
    }
    cmd
}

/// One XREADGROUP round over every item of `items`, each from its start id
/// (`>` for new entries, an id for this consumer's own pending ones): all
/// streams in one call on a single server, one call per item on a cluster
/// (each item's stream lives in its own slot). `block` = None returns at once.
pub(crate) fn read_items<C: ReadsStreams>(
    conn: &mut C,
    consumer: &str,
    items: &[ItemKeys],
    start_ids: &[String],
    count: usize,
    block: Option<Duration>,
) -> Result<Vec<(String, Vec<RawEntry>)>> {
    let streams: Vec<(&str, &str)> = items
        .iter()
        .zip(start_ids)
        .map(|(k, id)| (k.orders.as_str(), id.as_str()))
        .collect();
    let read = |conn: &mut C, streams: &[(&str, &str)], block| {
        conn.streams(&group_read(consumer, streams, count, block))
            .with_context(|| format!("XREADGROUP failed on {} stream(s)", streams.len()))
    };
    if !conn.is_cluster() {
        return read(conn, &streams, block);
    }
    let mut all = Vec::new();
    for one in &streams {
        // Blocking on each of several items in turn would add their waits up.
        let each_block = if streams.len() == 1 { block } else { None };
        all.extend(read(conn, std::slice::from_ref(one), each_block)?);
    }
    if let (Some(pause), true) = (block, streams.len() > 1)
        && all.iter().all(|(_, entries)| entries.is_empty())
    {
        // Nothing anywhere: wait once here instead of spinning on non-blocking reads.
        std::thread::sleep(pause);
    }
    Ok(all)
}

/// XACK `ids` on one stream; returns how many were pending.
pub(crate) fn ack<C: ConnectionLike>(conn: &mut C, stream: &str, ids: &[String]) -> Result<u64> {
    if ids.is_empty() {
        return Ok(0);
    }
    redis::cmd("XACK")
        .arg(stream)
        .arg(ORDER_GROUP)
        .arg(ids)
        .query(conn)
        .with_context(|| format!("XACK of {} entries on {stream} failed", ids.len()))
}

/// One XAUTOCLAIM page: entries idle ≥ `min_idle` from cursor `start`.
pub(crate) fn autoclaim<C: ConnectionLike>(
    conn: &mut C,
    stream: &str,
    consumer: &str,
    min_idle: Duration,
    start: &str,
    count: usize,
) -> Result<(String, Vec<RawEntry>, Vec<String>)> {
    let reply: Value = redis::cmd("XAUTOCLAIM")
        .arg(stream)
        .arg(ORDER_GROUP)
        .arg(consumer)
        .arg(min_idle.as_millis() as u64)
        .arg(start)
        .arg("COUNT")
        .arg(count)
        .query(conn)
        .with_context(|| format!("XAUTOCLAIM on {stream} failed"))?;
    parse_autoclaim_reply(&reply)
}

/// Delivery counts of the pending entries between `first` and `last`
/// (inclusive, or exclusive with a `(` prefix), optionally of one consumer.
pub(crate) fn pending_deliveries<C: ConnectionLike>(
    conn: &mut C,
    stream: &str,
    first: &str,
    last: &str,
    count: usize,
    consumer: Option<&str>,
) -> Result<Vec<(String, u64)>> {
    let mut cmd = pending_range(stream, first, last, count);
    if let Some(consumer) = consumer {
        cmd.arg(consumer);
    }
    let rows: Value = cmd
        .query(conn)
        .with_context(|| format!("XPENDING on {stream} failed"))?;
    pending_rows(rows, stream)
}

/// The XPENDING command of [`pending_deliveries`] (any consumer).
fn pending_range(stream: &str, first: &str, last: &str, count: usize) -> redis::Cmd {
    let mut cmd = redis::cmd("XPENDING");
    cmd.arg(stream)
        .arg(ORDER_GROUP)
        .arg(first)
        .arg(last)
        .arg(count);
    cmd
}

/// (id, deliveries) of an XPENDING reply's rows.
fn pending_rows(reply: Value, stream: &str) -> Result<Vec<(String, u64)>> {
    let rows: Vec<(String, String, u64, u64)> = redis::from_redis_value(reply)
        .with_context(|| format!("unexpected XPENDING reply on {stream}"))?;
    Ok(rows
        .into_iter()
        .map(|(id, _, _, deliveries)| (id, deliveries))
        .collect())
}

/// One page of a walk: up to `count` entries with id > `after` up to
/// `until`, and the ids among them pending in the group — read in one round
/// trip where the connection can (the pending ids of the page's range are
/// asked for together with the page, more only when that many are pending).
pub(crate) fn page_with_pending<C: ReadsStreams>(
    conn: &mut C,
    stream: &str,
    after: &str,
    until: &str,
    count: usize,
) -> Result<(Vec<RawEntry>, HashSet<String>)> {
    let first = if after == "-" {
        "-".to_string()
    } else {
        format!("({after}")
    };
    let (entries, pending) = conn
        .entries_then(
            &range(stream, after, until, count),
            &pending_range(stream, &first, until, count),
        )
        .with_context(|| format!("XRANGE and XPENDING on {stream} failed"))?;
    let Some(last) = entries.last().map(|e| e.id.clone()) else {
        return Ok((entries, HashSet::new()));
    };
    let last_key = stream_id_key(&last);
    let rows = pending_rows(pending, stream)?;
    let seen_to = rows.iter().filter_map(|(id, _)| stream_id_key(id)).max();
    let full = rows.len() == count;
    let mut pending: HashSet<String> = rows
        .into_iter()
        .map(|(id, _)| id)
        .filter(|id| stream_id_key(id) <= last_key)
        .collect();
    if full && seen_to < last_key {
        // More pending than one reply holds: the rest of the page's range.
        let from = seen_to.map_or(first, |(ms, seq)| format!("({ms}-{seq}"));
        pending.extend(pending_ids_between(conn, stream, &from, &last)?);
    }
    Ok((entries, pending))
}

/// Every pending id between `first` and `last` inclusive (paged, so a range
/// holding deleted-but-pending ids is still read completely).
pub(crate) fn pending_ids_between<C: ConnectionLike>(
    conn: &mut C,
    stream: &str,
    first: &str,
    last: &str,
) -> Result<HashSet<String>> {
    const PAGE: usize = 1000;
    let mut ids = HashSet::new();
    let mut start = first.to_string();
    loop {
        let page = pending_deliveries(conn, stream, &start, last, PAGE, None)?;
        let full = page.len() == PAGE;
        if let Some((id, _)) = page.last() {
            start = format!("({id}");
        }
        ids.extend(page.into_iter().map(|(id, _)| id));
        if !full {
            return Ok(ids);
        }
    }
}

/// The group's view of one stream (XINFO GROUPS).
#[derive(Debug, Clone, Default)]
pub(crate) struct GroupInfo {
    pub(crate) pending: u64,
    pub(crate) last_delivered_id: String,
    /// Entries never delivered to the group; `None` when Redis cannot tell.
    pub(crate) lag: Option<u64>,
}

/// XINFO GROUPS for the order group; `None` when the group does not exist.
pub(crate) fn group_info<C: ConnectionLike>(
    conn: &mut C,
    keys: &ItemKeys,
) -> Result<Option<GroupInfo>> {
    let exists: bool = redis::cmd("EXISTS")
        .arg(&keys.orders)
        .query(conn)
        .with_context(|| format!("EXISTS {} failed", keys.orders))?;
    if !exists {
        return Ok(None);
    }
    let groups: Vec<HashMap<String, Value>> = redis::cmd("XINFO")
        .arg("GROUPS")
        .arg(&keys.orders)
        .query(conn)
        .with_context(|| format!("XINFO GROUPS {} failed", keys.orders))?;
    let number = |g: &HashMap<String, Value>, name: &str| -> Option<u64> {
        match g.get(name) {
            Some(Value::Int(n)) if *n >= 0 => Some(*n as u64),
            _ => None,
        }
    };
    Ok(groups
        .iter()
        .find(|g| matches!(g.get("name"), Some(v) if redis::from_redis_value_ref::<String>(v).ok().as_deref() == Some(ORDER_GROUP)))
        .map(|g| GroupInfo {
            pending: number(g, "pending").unwrap_or(0),
            last_delivered_id: g
                .get("last-delivered-id")
                .and_then(|v| redis::from_redis_value_ref::<String>(v).ok())
                .unwrap_or_else(|| "0-0".into()),
            lag: number(g, "lag"),
        }))
}

/// Up to `count` entries with id > `after` (`-` for the start), up to `until`.
pub(crate) fn range_after<C: ConnectionLike>(
    conn: &mut C,
    stream: &str,
    after: &str,
    until: &str,
    count: usize,
) -> Result<Vec<RawEntry>> {
    let reply: Value = range(stream, after, until, count)
        .query(conn)
        .with_context(|| format!("XRANGE on {stream} failed"))?;
    parse_entries(&reply)
}

/// The XRANGE command of [`range_after`].
fn range(stream: &str, after: &str, until: &str, count: usize) -> redis::Cmd {
    let start = if after == "-" {
        "-".to_string()
    } else {
        format!("({after}")
    };
    let mut cmd = redis::cmd("XRANGE");
    cmd.arg(stream)
        .arg(start)
        .arg(until)
        .arg("COUNT")
        .arg(count);
    cmd
}

/// The order_id field of the entries with these stream ids, in one round
/// trip (lua/stream_order_ids.lua); `None` where there is no such entry.
/// An id that is not a stream id cannot name an entry: `None` too.
pub(crate) fn order_ids_at<C: ConnectionLike>(
    conn: &mut C,
    stream: &str,
    ids: &[&str],
) -> Result<Vec<Option<String>>> {
    let valid: Vec<&str> = ids
        .iter()
        .copied()
        .filter(|id| stream_id_key(id).is_some())
        .collect();
    if valid.is_empty() {
        return Ok(vec![None; ids.len()]);
    }
    let call = StreamOrderIds {
        orders: stream,
        stream_id: valid.clone(),
    };
    let found = call
        .invoke(conn)
        .map_err(anyhow::Error::from)
        .and_then(|reply| stream_order_ids::parse_reply(reply, valid.len()))
        .with_context(|| format!("order id lookup on {stream} failed"))?;
    let mut by_id: HashMap<&str, String> = valid.into_iter().zip(found).collect();
    Ok(ids
        .iter()
        .map(|id| by_id.remove(id).filter(|order_id| !order_id.is_empty()))
        .collect())
}

/// Move one pending entry to the dead-letter stream and ack it, atomically
/// (lua/dead_letter.lua). Returns false when it was no longer pending.
pub fn dead_letter<C: ConnectionLike>(
    conn: &mut C,
    keys: &ItemKeys,
    id: &str,
    reason: &str,
    deliveries: u64,
    consumer: &str,
) -> Result<bool> {
    let deliveries = deliveries.to_string();
    let call = DeadLetter {
        orders: keys.orders.as_str(),
        dead: keys.dead.as_str(),
        group: ORDER_GROUP,
        stream_id: id,
        reason,
        deliveries: deliveries.as_str(),
        consumer,
    };
    call.invoke(conn)
        .map_err(anyhow::Error::from)
        .and_then(dead_letter::parse_reply)
        .with_context(|| {
            format!(
                "dead-letter script failed for entry {id} of {}",
                keys.orders
            )
        })
}

/// Field in a dead-letter entry naming the original stream id.
pub(crate) const DEAD_ORIGINAL_ID: &str = "dead_original_id";

/// Stream ids of every dead-lettered entry of one item (paged XRANGE).
/// Held in memory: the dead-letter stream holds only the exceptions.
pub(crate) fn dead_original_ids<C: ConnectionLike>(
    conn: &mut C,
    keys: &ItemKeys,
) -> Result<HashSet<String>> {
    let mut ids = HashSet::new();
    let mut after = "-".to_string();
    loop {
        let page = range_after(conn, &keys.dead, &after, "+", 1000)?;
        let Some(last) = page.last() else {
            return Ok(ids);
        };
        after = last.id.clone();
        ids.extend(
            page.iter()
                .filter_map(|e| e.field(DEAD_ORIGINAL_ID))
                .map(|v| String::from_utf8_lossy(v).into_owned()),
        );
    }
}
