//! Which sales are live on one Redis, so no command touches the wrong one.
//!
//! `preheat` records each campaign in one hash, [`REGISTRY_KEY`] (field:
//! campaign id, value: an [`Entry`] as JSON: its items, window, key expiry,
//! the file and who preheated it). An entry is live until its campaign's keys
//! expire (`ends_at + keep_after_end`; never without `ends_at`); readers skip
//! the expired ones and every record drops them, so the hash stays as small
//! as the number of live sales. `init` records its campaign too (it reloads it).
//!
//! Who reads it: `preheat` and `init` refuse a new campaign id whose items
//! collide with a live campaign's (the typo'd id that would start a second
//! copy of the same bottles: [`refuse_collisions`]), `shutdown-switch`
//! refuses a campaign that is not live (the
//! wrong file), `loadtest` refuses a Redis that holds any live campaign,
//! `seckill campaigns` lists them (and `campaigns drop` removes one, with its
//! keys), `doctor` looks for collisions.
//!
//! The key has no hash tag: on a cluster it lives on one master, which is
//! fine for a handful of small writes per sale (never on the buy path).
//!
//! May import: redis_client, model, util.

use anyhow::{Context, Result};
use redis::ConnectionLike;
use serde::{Deserialize, Serialize};

use crate::model::campaign::Campaign;
use crate::model::error::preheat_refused;
use crate::util::text;

/// The hash of live campaigns (outside every campaign's hash tag).
pub const REGISTRY_KEY: &str = "seckill:campaigns";

/// One live campaign.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub campaign: String,
    pub items: Vec<String>,
    pub starts_at_ms: Option<i64>,
    pub ends_at_ms: Option<i64>,
    /// When its keys expire (`None`: never, no `ends_at`).
    pub expire_at_ms: Option<i64>,
    /// The campaign file it was preheated from.
    pub file: String,
    /// Redis time of the last preheat, Unix ms.
    pub preheated_at_ms: i64,
    /// Who preheated it (`user@host`).
    pub by: String,
}

impl Entry {
    /// The entry `campaign` gets when preheated at `now_ms` by `by`.
    pub(crate) fn of(campaign: &Campaign, now_ms: i64, by: &str) -> Entry {
        Entry {
            campaign: campaign.id.clone(),
            items: campaign.items.iter().map(|i| i.id.clone()).collect(),
            starts_at_ms: campaign.starts_at_ms,
            ends_at_ms: campaign.ends_at_ms,
            expire_at_ms: campaign.expire_at_ms(),
            file: std::fs::canonicalize(&campaign.path)
                .unwrap_or_else(|_| campaign.path.clone())
                .display()
                .to_string(),
            preheated_at_ms: now_ms,
            by: by.to_string(),
        }
    }

    /// Live at `now_ms`: its keys have not expired.
    pub(crate) fn live_at(&self, now_ms: i64) -> bool {
        self.expire_at_ms.is_none_or(|at| at > now_ms)
    }

    /// Item ids it shares with `campaign`.
    pub(crate) fn shared_items(&self, campaign: &Campaign) -> Vec<String> {
        campaign
            .items
            .iter()
            .filter(|i| self.items.contains(&i.id))
            .map(|i| i.id.clone())
            .collect()
    }
}

/// Every entry, live or not (unreadable ones are named in the error).
fn all<C: ConnectionLike>(conn: &mut C) -> Result<Vec<Entry>> {
    let fields: Vec<(String, String)> = redis::cmd("HGETALL")
        .arg(REGISTRY_KEY)
        .query(conn)
        .with_context(|| format!("cannot read the campaign registry {REGISTRY_KEY}"))?;
    fields
        .into_iter()
        .map(|(id, json)| {
            serde_json::from_str(&json)
                .with_context(|| format!("unreadable entry {id:?} in {REGISTRY_KEY}: {json}"))
        })
        .collect()
}

/// The campaigns live on this Redis at `now_ms` (Redis time), by id.
pub(crate) fn live<C: ConnectionLike>(conn: &mut C, now_ms: i64) -> Result<Vec<Entry>> {
    let mut entries: Vec<Entry> = all(conn)?
        .into_iter()
        .filter(|e| e.live_at(now_ms))
        .collect();
    entries.sort_by(|a, b| a.campaign.cmp(&b.campaign));
    Ok(entries)
}

/// The entry of `campaign`, live or expired (not dropped yet), if any.
pub(crate) fn entry<C: ConnectionLike>(conn: &mut C, campaign: &str) -> Result<Option<Entry>> {
    Ok(all(conn)?.into_iter().find(|e| e.campaign == campaign))
}

/// Remove `campaign`'s entry (`campaigns drop`); whether there was one.
pub(crate) fn remove<C: ConnectionLike>(conn: &mut C, campaign: &str) -> Result<bool> {
    let removed: i64 = redis::cmd("HDEL")
        .arg(REGISTRY_KEY)
        .arg(campaign)
        .query(conn)
        .with_context(|| format!("cannot remove campaign {campaign} from {REGISTRY_KEY}"))?;
    Ok(removed > 0)
}

/// The live entry of `campaign`, if any.
pub(crate) fn find<C: ConnectionLike>(
    conn: &mut C,
    campaign: &str,
    now_ms: i64,
) -> Result<Option<Entry>> {
    Ok(live(conn, now_ms)?
        .into_iter()
        .find(|e| e.campaign == campaign))
}

/// The live campaigns in one line, for refusals: `a (file), b (file)` or `none`.
pub(crate) fn describe(entries: &[Entry]) -> String {
    if entries.is_empty() {
        return "none".to_string();
    }
    entries
        .iter()
        .map(|e| format!("{} ({})", e.campaign, e.file))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Record (or refresh) `entry`, dropping entries that have expired.
pub(crate) fn record<C: ConnectionLike>(conn: &mut C, entry: &Entry) -> Result<()> {
    let expired: Vec<String> = all(conn)?
        .into_iter()
        .filter(|e| !e.live_at(entry.preheated_at_ms))
        .map(|e| e.campaign)
        .collect();
    let json = serde_json::to_string(entry).context("campaign registry entry")?;
    let written: redis::RedisResult<i64> = redis::cmd("HSET")
        .arg(REGISTRY_KEY)
        .arg(&entry.campaign)
        .arg(json)
        .query(conn);
    written.with_context(|| {
        format!(
            "cannot record campaign {} in the registry {REGISTRY_KEY} (the operator's ACL needs \
             ~{REGISTRY_KEY}, docs/security.md)",
            entry.campaign
        )
    })?;
    if !expired.is_empty() {
        let _: i64 = redis::cmd("HDEL")
            .arg(REGISTRY_KEY)
            .arg(&expired)
            .query(conn)
            .with_context(|| format!("cannot drop expired entries of {REGISTRY_KEY}"))?;
    }
    Ok(())
}

/// Whether two windows share an instant (`None` bounds are open-ended).
fn windows_overlap(a: (Option<i64>, Option<i64>), b: (Option<i64>, Option<i64>)) -> bool {
    let start = a.0.unwrap_or(i64::MIN).max(b.0.unwrap_or(i64::MIN));
    let end = a.1.unwrap_or(i64::MAX).min(b.1.unwrap_or(i64::MAX));
    start < end
}

/// Live campaigns other than `campaign` that sell one of its item ids in a
/// window overlapping its own (the same items in two sales at different
/// times are no collision; a typo'd id with the same file is).
pub(crate) fn collisions<C: ConnectionLike>(
    conn: &mut C,
    campaign: &Campaign,
    now_ms: i64,
) -> Result<Vec<(Entry, Vec<String>)>> {
    Ok(live(conn, now_ms)?
        .into_iter()
        .filter(|e| e.campaign != campaign.id)
        .filter(|e| {
            windows_overlap(
                (e.starts_at_ms, e.ends_at_ms),
                (campaign.starts_at_ms, campaign.ends_at_ms),
            )
        })
        .filter_map(|e| {
            let shared = e.shared_items(campaign);
            (!shared.is_empty()).then_some((e, shared))
        })
        .collect())
}

/// Refuse (exit 5, `preheat_refused`) to load `campaign` when another
/// campaign live on this Redis already sells one of its items in an
/// overlapping window: the same bottles would be on sale twice. Both doors
/// that load stock ask it (`preheat`, and `init`, which reloads the file's
/// stock), before anything is written; `--allow-shared-items` skips it.
pub(crate) fn refuse_collisions<C: ConnectionLike>(
    conn: &mut C,
    campaign: &Campaign,
    now_ms: i64,
) -> Result<()> {
    let collisions = collisions(conn, campaign, now_ms)?;
    if collisions.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> = collisions
        .iter()
        .map(|(live, shared)| {
            format!(
                "campaign {} (preheated from {} by {}, keys expire {}) already sells item(s) {}",
                live.campaign,
                live.file,
                live.by,
                live.expire_at_ms
                    .map_or_else(|| "never".to_string(), |ms| text::time_or_dash(Some(ms))),
                shared.join(", ")
            )
        })
        .collect();
    Err(preheat_refused(format!(
        "nothing was written: {}; is {} a typo of that campaign's id? Use that campaign's \
         file, or pass --allow-shared-items if two campaigns really sell the same item ids",
        lines.join("; "),
        campaign.id
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_overlap_when_they_share_an_instant() {
        assert!(windows_overlap((None, None), (Some(5), Some(6))));
        assert!(windows_overlap((Some(1), Some(10)), (Some(9), None)));
        assert!(!windows_overlap((Some(1), Some(10)), (Some(10), Some(20))));
        assert!(!windows_overlap((None, Some(5)), (Some(5), None)));
    }
}
