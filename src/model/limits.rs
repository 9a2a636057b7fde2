//! Limits above the item (docs/limits.md): a limit group's `per_user_limit`
//! over several SKUs, and `per_identity_limit` over the accounts presenting
//! one identity document. Their fields as the campaign file writes them,
//! validated, and where their counts live in Redis: not in any item's slot
//! but in limit buckets of their own, one hash tag each, spread over the
//! slot space like a bucketed item's buckets (`layout`), a member (a user,
//! an identity's digest) always in the same one.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use anyhow::Result;
use serde::Deserialize;
use serde_saphyr::Spanned;

use crate::model::fields::{at, is_valid_id};
use crate::model::keys::LIVE_PREFIX;
use crate::model::layout::Layout;

/// Limit buckets per limit (a group, an item's identity limit, the
/// bindings): enough that the members of one limit land on every master of
/// a cluster of up to 16, few enough that an empty one costs nothing.
pub const LIMIT_BUCKETS: u32 = 16;

/// Largest `per_user_limit` of a group or `per_identity_limit`.
pub const MAX_LIMIT: i64 = 10_000;

/// `limit_groups.NAME` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLimitGroup {
    items: Spanned<Vec<Spanned<String>>>,
    per_user_limit: Spanned<i64>,
}

/// A limit group: at most `per_user_limit` units per user over all its items.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitGroup {
    pub id: String,
    pub items: Vec<String>,
    pub per_user_limit: u32,
}

/// The campaign's `limit_groups`, checked against its item ids: every item
/// known, none in two groups, a limit of at least 1, no empty group.
pub(crate) fn validate_groups(
    path: &Path,
    raw: Option<&Spanned<BTreeMap<String, RawLimitGroup>>>,
    item_ids: &[&str],
) -> Result<Vec<LimitGroup>> {
    let Some(raw) = raw else {
        return Ok(Vec::new());
    };
    let mut owner: HashMap<&str, &str> = HashMap::new();
    let mut groups = Vec::with_capacity(raw.value.len());
    for (id, group) in &raw.value {
        if !is_valid_id(id) {
            return Err(at(
                path,
                raw,
                format!(
                    "limit group id {id:?} must be 1..64 characters of letters, digits, '-' or '_'"
                ),
            ));
        }
        if !(1..=MAX_LIMIT).contains(&group.per_user_limit.value) {
            return Err(at(
                path,
                &group.per_user_limit,
                format!(
                    "per_user_limit of limit group {id} must be between 1 and {MAX_LIMIT}, got {}",
                    group.per_user_limit.value
                ),
            ));
        }
        if group.items.value.is_empty() {
            return Err(at(
                path,
                &group.items,
                format!("limit group {id} must list at least one item"),
            ));
        }
        let mut items = Vec::with_capacity(group.items.value.len());
        for item in &group.items.value {
            if !item_ids.contains(&item.value.as_str()) {
                return Err(at(
                    path,
                    item,
                    format!(
                        "limit group {id} names item {:?}, which is not in `items` (items: {})",
                        item.value,
                        item_ids.join(", ")
                    ),
                ));
            }
            if let Some(first) = owner.insert(&item.value, id) {
                let again = if first == id {
                    "twice in it"
                } else {
                    "in two groups"
                };
                return Err(at(
                    path,
                    item,
                    format!(
                        "item {} is in limit group {first} and again in {id}: an item may be {again} \
                         at most once (one count per item)",
                        item.value
                    ),
                ));
            }
            items.push(item.value.clone());
        }
        groups.push(LimitGroup {
            id: id.clone(),
            items,
            per_user_limit: group.per_user_limit.value as u32,
        });
    }
    Ok(groups)
}

/// A `per_identity_limit` field (campaign or item), checked.
pub(crate) fn validate_identity_limit(
    path: &Path,
    raw: Option<&Spanned<i64>>,
    whose: &str,
) -> Result<Option<u32>> {
    match raw {
        Some(limit) if !(1..=MAX_LIMIT).contains(&limit.value) => Err(at(
            path,
            limit,
            format!(
                "per_identity_limit of {whose} must be between 1 and {MAX_LIMIT}, got {}",
                limit.value
            ),
        )),
        Some(limit) => Ok(Some(limit.value as u32)),
        None => Ok(None),
    }
}

/// The two keys of one limit bucket, as `lua/limit_claim.lua` takes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitKeys {
    /// hash: member → units held.
    pub counts: String,
    /// hash: claim id → `<qty> <member>`.
    pub claims: String,
}

/// The limit bucket of `member` for the limit named `limit` (`g.<group>`,
/// `i.<item>`): `seckill:{<campaign>:limit.<limit>:b<n>.<salt>}:…`. An
/// item id has no `.`, so no limit's tag is ever an item's or a bucket's.
fn bucket_base(prefix: &str, campaign: &str, limit: &str, member: &str) -> String {
    Layout::new(prefix, campaign, &format!("limit.{limit}"), LIMIT_BUCKETS)
        .home(member)
        .keys
        .base
}

impl LimitKeys {
    fn at(base: String) -> LimitKeys {
        LimitKeys {
            counts: format!("{base}limit_counts"),
            claims: format!("{base}limit_claims"),
        }
    }

    /// Where a limit group counts `user`.
    pub fn group(campaign: &str, group: &str, user: &str) -> LimitKeys {
        LimitKeys::group_under(LIVE_PREFIX, campaign, group, user)
    }

    /// [`LimitKeys::group`] under `prefix` (the load test's namespace, or live).
    pub fn group_under(prefix: &str, campaign: &str, group: &str, user: &str) -> LimitKeys {
        LimitKeys::at(bucket_base(prefix, campaign, &format!("g.{group}"), user))
    }

    /// Where item `item`'s `per_identity_limit` counts the identity whose digest is `digest`.
    pub fn identity(campaign: &str, item: &str, digest: &str) -> LimitKeys {
        LimitKeys::identity_under(LIVE_PREFIX, campaign, item, digest)
    }

    /// [`LimitKeys::identity`] under `prefix`.
    pub fn identity_under(prefix: &str, campaign: &str, item: &str, digest: &str) -> LimitKeys {
        LimitKeys::at(bucket_base(prefix, campaign, &format!("i.{item}"), digest))
    }

    /// Every limit bucket of the limit `limit` (`g.<group>`, `i.<item>`).
    pub fn every(campaign: &str, limit: &str) -> Vec<LimitKeys> {
        LimitKeys::every_under(LIVE_PREFIX, campaign, limit)
    }

    /// [`LimitKeys::every`] under `prefix`.
    pub fn every_under(prefix: &str, campaign: &str, limit: &str) -> Vec<LimitKeys> {
        Layout::new(prefix, campaign, &format!("limit.{limit}"), LIMIT_BUCKETS)
            .all()
            .into_iter()
            .map(|bucket| LimitKeys::at(bucket.keys.base))
            .collect()
    }
}

/// The hash where `seckill register --identity` binds `user` to an
/// identity's digest (user → digest), in `user`'s binding bucket.
pub fn identity_bindings(campaign: &str, user: &str) -> String {
    format!(
        "{}identity_bindings",
        bucket_base(LIVE_PREFIX, campaign, "bind", user)
    )
}

/// What Redis keeps of an identity: the SHA-256 (hex) of the campaign id
/// and the shop's identity hash, never the hash itself — a leaked dump names
/// no document, and the same document gives unrelated digests in two
/// campaigns.
pub fn identity_digest(campaign: &str, identity: &str) -> String {
    use sha2::Digest;
    let mut hasher = sha2::Sha256::new();
    hasher.update(campaign.as_bytes());
    hasher.update([0u8]);
    hasher.update(identity.as_bytes());
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::layout::key_slot;

    #[test]
    fn a_member_has_one_bucket_and_limits_spread_over_the_slot_space() {
        let keys = LimitKeys::group("launch", "iphone-16-pro", "alice");
        assert_eq!(keys, LimitKeys::group("launch", "iphone-16-pro", "alice"));
        assert_eq!(key_slot(&keys.counts), key_slot(&keys.claims));
        assert!(
            keys.counts
                .starts_with("seckill:{launch:limit.g.iphone-16-pro:b")
        );
        let slots: std::collections::BTreeSet<u16> = LimitKeys::every("launch", "g.x")
            .iter()
            .map(|k| key_slot(&k.counts) / (16384 / 16) as u16)
            .collect();
        assert_eq!(
            slots.len(),
            LIMIT_BUCKETS as usize,
            "one bucket per sixteenth"
        );
        let bindings = identity_bindings("launch", "alice");
        assert!(bindings.ends_with("}:identity_bindings"));
        assert_ne!(
            LimitKeys::identity("launch", "a", "d").counts,
            LimitKeys::group("launch", "a", "d").counts
        );
    }

    #[test]
    fn an_identity_is_kept_as_a_digest_of_the_campaign_and_the_hash() {
        let one = identity_digest("launch", "id-hash-1");
        assert_eq!(one.len(), 64);
        assert!(!one.contains("id-hash-1"));
        assert_ne!(one, identity_digest("other", "id-hash-1"));
        assert_eq!(one, identity_digest("launch", "id-hash-1"));
    }
}
