//! A sale over independent Redis deployments (docs/regions.md): the
//! campaign file's `regions:`, each region's share of every item, a user's
//! home region, and the campaign as one region sees it (`--region NAME`).
//!
//! ```yaml
//! regions:
//!   bj: { redis: "redis://10.0.1.5:6379", share: 600 }
//!   sh: { redis: "redis://10.0.2.5:6379", share: 400 }
//! items:
//!   - { id: "1001", name: ..., price: "1499", stock: 1000 }
//!   - { id: "1002", ..., stock: 10, regions: { bj: 10, sh: 0 } }
//! ```
//!
//! Campaign-wide `share`s are weights: each item's stock is split in their
//! proportion (largest remainder; ties to the region named first), so
//! 600/400 of 1,000 is exactly 600 and 400. An item's own `regions:` gives
//! its units per region, which must add up to its stock.
//!
//! May import: util.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use serde::Deserialize;
use serde_saphyr::Spanned;

use crate::model::fields::{MAX_STOCK, at, is_valid_id};

/// Most regions a campaign may name (a transfer pair is one meta field each way).
pub const MAX_REGIONS: usize = 16;

/// `regions.NAME` of the campaign file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRegion {
    pub(crate) redis: Spanned<String>,
    pub(crate) share: Spanned<i64>,
    /// This region's order database (`sqlite:PATH` or a MariaDB URL); the
    /// campaign's `orders.store` when absent.
    #[serde(default)]
    pub(crate) orders: Option<String>,
    /// Its `redis` URL names seeds of a Redis Cluster.
    #[serde(default)]
    pub(crate) cluster: Option<bool>,
}

/// The campaign's `regions:`, read in name order.
pub(crate) type RawRegions = BTreeMap<String, RawRegion>;

/// One region of a campaign.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    /// `[A-Za-z0-9_-]{1,64}`, as the file names it.
    pub name: String,
    /// Its Redis (standalone or cluster seeds).
    pub redis_url: String,
    /// Its weight in every item's split (`share`).
    pub share: i64,
    /// Its order database, if the file names one for it.
    pub orders_store: Option<String>,
    /// Its Redis is a cluster.
    pub cluster: bool,
}

/// The campaign's `regions:`, checked: names, URLs, shares.
pub(crate) fn validate(
    path: &Path,
    raw: Option<&Spanned<RawRegions>>,
    campaign_has_redis: bool,
) -> Result<Vec<Region>> {
    let Some(raw) = raw else {
        return Ok(Vec::new());
    };
    if raw.value.is_empty() || raw.value.len() > MAX_REGIONS {
        return Err(at(
            path,
            raw,
            format!(
                "regions must name 1 to {MAX_REGIONS} regions, got {}",
                raw.value.len()
            ),
        ));
    }
    if campaign_has_redis {
        return Err(at(
            path,
            raw,
            "a campaign with `regions:` names each region's Redis (`regions.NAME.redis`): \
             drop the campaign's `redis:`",
        ));
    }
    let mut regions = Vec::with_capacity(raw.value.len());
    for (name, region) in &raw.value {
        if !is_valid_id(name) {
            return Err(at(
                path,
                raw,
                format!(
                    "region name {name:?} must be 1..64 characters of letters, digits, '-' or '_'"
                ),
            ));
        }
        if region.redis.value.trim().is_empty() {
            return Err(at(
                path,
                &region.redis,
                format!("regions.{name}.redis is empty"),
            ));
        }
        if !(0..=MAX_STOCK).contains(&region.share.value) {
            return Err(at(
                path,
                &region.share,
                format!(
                    "regions.{name}.share must be between 0 and {}, got {}",
                    MAX_STOCK, region.share.value
                ),
            ));
        }
        regions.push(Region {
            name: name.clone(),
            redis_url: region.redis.value.trim().to_string(),
            share: region.share.value,
            orders_store: region.orders.clone(),
            cluster: region.cluster.unwrap_or(false),
        });
    }
    if regions.iter().all(|r| r.share == 0) {
        return Err(at(
            path,
            raw,
            "every region's share is 0: at least one region must hold stock",
        ));
    }
    Ok(regions)
}

/// An item's units per region (in `regions`' order): its own `regions:`
/// when it has one, else its stock split by the shares.
pub(crate) fn item_split(
    path: &Path,
    regions: &[Region],
    item: &str,
    stock: &Spanned<i64>,
    own: Option<&Spanned<BTreeMap<String, i64>>>,
    buckets: u32,
) -> Result<Vec<i64>> {
    if regions.is_empty() {
        if let Some(own) = own {
            return Err(at(
                path,
                own,
                format!("item {item} lists regions but the campaign has no `regions:`"),
            ));
        }
        return Ok(Vec::new());
    }
    if buckets > 1 {
        return Err(at(
            path,
            stock,
            format!(
                "item {item} has {buckets} buckets in a campaign with regions: a region's item \
                 is one slot for now (docs/regions.md, \"Limits\"); drop `buckets`"
            ),
        ));
    }
    let Some(own) = own else {
        let weights: Vec<i64> = regions.iter().map(|r| r.share).collect();
        return Ok(split_by_weight(stock.value, &weights));
    };
    let mut units = vec![0; regions.len()];
    for (name, &n) in &own.value {
        let Some(index) = regions.iter().position(|r| &r.name == name) else {
            let names: Vec<&str> = regions.iter().map(|r| r.name.as_str()).collect();
            return Err(at(
                path,
                own,
                format!(
                    "item {item} gives units to region {name:?}, which `regions:` does not name \
                     (regions: {})",
                    names.join(", ")
                ),
            ));
        };
        if n < 0 {
            return Err(at(
                path,
                own,
                format!("item {item}: regions.{name} must be 0 or more units, got {n}"),
            ));
        }
        units[index] = n;
    }
    let total: i64 = units.iter().sum();
    if total != stock.value {
        return Err(at(
            path,
            own,
            format!(
                "item {item}: its regions hold {total} units but its stock is {}: they must add up",
                stock.value
            ),
        ));
    }
    Ok(units)
}

/// Split `stock` by `weights` (largest remainder; ties to the earlier one).
/// Every weight ≥ 0, at least one > 0.
pub fn split_by_weight(stock: i64, weights: &[i64]) -> Vec<i64> {
    let total: i128 = weights.iter().map(|&w| i128::from(w)).sum();
    if total <= 0 {
        return vec![0; weights.len()];
    }
    let mut parts: Vec<i64> = weights
        .iter()
        .map(|&w| (i128::from(stock) * i128::from(w) / total) as i64)
        .collect();
    let mut left = stock - parts.iter().sum::<i64>();
    let mut order: Vec<usize> = (0..weights.len()).collect();
    // Largest remainder first; the sort is stable, so a tie keeps file order.
    order.sort_by_key(|&i| std::cmp::Reverse(i128::from(stock) * i128::from(weights[i]) % total));
    for i in order {
        if left == 0 {
            break;
        }
        if weights[i] > 0 {
            parts[i] += 1;
            left -= 1;
        }
    }
    parts
}

/// A user's home region among `regions` (by name): rendezvous hashing, so
/// adding a region moves only the users the new one wins, and every
/// instance of every region computes the same home with no shared state.
/// The score of a region is the first 8 bytes of
/// SHA-256("seckill home" ‖ 0 ‖ campaign ‖ 0 ‖ region ‖ 0 ‖ user).
pub fn home_region<'a>(campaign: &str, regions: &'a [Region], user: &str) -> Option<&'a Region> {
    regions.iter().max_by_key(|region| {
        (
            home_score(campaign, &region.name, user),
            region.name.clone(),
        )
    })
}

/// The rendezvous score of `region` for `user` (see [`home_region`]).
pub fn home_score(campaign: &str, region: &str, user: &str) -> u64 {
    let mut message = Vec::with_capacity(16 + campaign.len() + region.len() + user.len());
    for part in [
        b"seckill home".as_slice(),
        campaign.as_bytes(),
        region.as_bytes(),
    ] {
        message.extend_from_slice(part);
        message.push(0);
    }
    message.extend_from_slice(user.as_bytes());
    let digest = ring::digest::digest(&ring::digest::SHA256, &message);
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest.as_ref()[..8]);
    u64::from_be_bytes(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_split_is_exact_and_proportional() {
        assert_eq!(split_by_weight(1000, &[600, 400]), vec![600, 400]);
        assert_eq!(split_by_weight(10, &[600, 400]), vec![6, 4]);
        assert_eq!(split_by_weight(1, &[1, 1]), vec![1, 0]);
        assert_eq!(split_by_weight(7, &[1, 1, 1]), vec![3, 2, 2]);
        assert_eq!(split_by_weight(5, &[0, 3]), vec![0, 5]);
        for stock in [1, 2, 3, 99, 1000, 100_000_000] {
            let parts = split_by_weight(stock, &[3, 5, 7]);
            assert_eq!(parts.iter().sum::<i64>(), stock);
        }
    }

    #[test]
    fn homes_are_stable_spread_and_move_only_to_a_new_region() {
        let region = |name: &str| Region {
            name: name.into(),
            redis_url: String::new(),
            share: 1,
            orders_store: None,
            cluster: false,
        };
        let two = [region("bj"), region("sh")];
        let three = [region("bj"), region("sh"), region("gz")];
        let mut in_bj = 0;
        for n in 0..2000 {
            let user = format!("u{n}");
            let home = home_region("c", &two, &user).unwrap();
            assert_eq!(home, home_region("c", &two, &user).unwrap());
            if home.name == "bj" {
                in_bj += 1;
            }
            let after = home_region("c", &three, &user).unwrap();
            assert!(
                after.name == home.name || after.name == "gz",
                "{user} moved between old regions"
            );
        }
        assert!((800..1200).contains(&in_bj), "{in_bj} of 2000 in bj");
    }
}
