//! Where an item's keys are: one slot for a plain item, or N buckets — one
//! hash tag each — for a hot item split over several Redis Cluster masters
//! (`docs/buckets.md` has the design and why each guarantee holds).
//!
//! Everything is a pure function of (campaign, item, N, user): no process
//! needs to ask Redis where a bucket is. `buckets: 1` is the plain item:
//! [`Layout::bucket`]`(0)` then gives exactly [`ItemKeys::live`]'s keys.

use crate::model::keys::ItemKeys;

/// Redis Cluster's slot count.
pub(crate) const SLOTS: u32 = 16384;

/// CRC16-CCITT (XMODEM), the checksum Redis Cluster uses for key slots.
pub(crate) fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &byte in bytes {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The cluster slot of `key` (`CLUSTER KEYSLOT`): the first non-empty `{...}`
/// decides, else the whole key.
pub fn key_slot(key: &str) -> u16 {
    let bytes = key.as_bytes();
    let hashed = bytes
        .iter()
        .position(|&b| b == b'{')
        .and_then(|open| {
            let rest = &bytes[open + 1..];
            rest.iter()
                .position(|&b| b == b'}')
                .filter(|&close| close > 0)
                .map(|close| &rest[..close])
        })
        .unwrap_or(bytes);
    crc16(hashed) % SLOTS as u16
}

/// A user's home bucket: FNV-1a 64-bit of the user id's bytes, mod N.
/// Stable for the whole sale: it depends on nothing else.
pub fn home_bucket(user: &str, buckets: u32) -> u32 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &byte in user.as_bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (hash % u64::from(buckets.max(1))) as u32
}

/// Bucket `b`'s share of `stock`: the first `stock % N` buckets get one more.
pub(crate) fn share(stock: i64, buckets: u32, b: u32) -> i64 {
    let n = i64::from(buckets.max(1));
    stock / n + i64::from(i64::from(b) < stock % n)
}

/// Where the keys of one bucketed item are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub(crate) prefix: String,
    pub campaign: String,
    pub item: String,
    pub buckets: u32,
}

/// One bucket's keys: a plain item's keys under the bucket's tag, plus the transfer log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketKeys {
    pub bucket: u32,
    pub keys: ItemKeys,
    /// hash: transfer id → `<dest> <units> <ms>`, every debit from this bucket.
    pub xfer_out: String,
    /// zset: transfer id → debit ms, debits whose credit is not confirmed yet.
    pub xfer_pending: String,
    /// hash: transfer id → `<source> <units> <ms>`, every credit into this bucket.
    pub xfer_in: String,
}

impl Layout {
    /// The layout under `prefix` (live or load test).
    pub fn new(prefix: &str, campaign: &str, item: &str, buckets: u32) -> Layout {
        Layout {
            prefix: prefix.to_string(),
            campaign: campaign.to_string(),
            item: item.to_string(),
            buckets: buckets.max(1),
        }
    }

    /// Bucket `b`'s hash tag contents, e.g. `moutai-1111:1001:b3.41`
    /// (for N = 1: `moutai-1111:1001`, the plain item's: one bucket is the item).
    pub(crate) fn tag(&self, b: u32) -> String {
        if self.buckets == 1 {
            return format!("{}:{}", self.campaign, self.item);
        }
        let (low, high) = slot_window(b, self.buckets);
        (0u32..)
            .map(|salt| format!("{}:{}:b{b}.{salt}", self.campaign, self.item))
            .find(|tag| (low..=high).contains(&u32::from(crc16(tag.as_bytes()) % 16384)))
            .expect("a salt exists for every window: CRC16 covers every slot")
    }

    /// The keys of bucket `b` (`b < buckets`).
    pub fn bucket(&self, b: u32) -> BucketKeys {
        let tag = self.tag(b);
        let item_part = tag
            .strip_prefix(&format!("{}:", self.campaign))
            .expect("the tag starts with the campaign id");
        let keys = ItemKeys::new(&self.prefix, &self.campaign, item_part);
        BucketKeys {
            bucket: b,
            xfer_out: format!("{}xfer_out", keys.base),
            xfer_pending: format!("{}xfer_pending", keys.base),
            xfer_in: format!("{}xfer_in", keys.base),
            keys,
        }
    }

    /// Every bucket's keys, in bucket order.
    pub fn all(&self) -> Vec<BucketKeys> {
        (0..self.buckets).map(|b| self.bucket(b)).collect()
    }

    /// The key recording N (in the plain item's slot), so a changed N is refused.
    pub fn marker(&self) -> String {
        format!(
            "{}bucket_count",
            ItemKeys::new(&self.prefix, &self.campaign, &self.item).base
        )
    }

    /// The user's home bucket's keys.
    pub fn home(&self, user: &str) -> BucketKeys {
        self.bucket(home_bucket(user, self.buckets))
    }
}

impl BucketKeys {
    /// The fixed keys of this bucket (plain item keys and the transfer log), for DEL.
    pub fn fixed(&self) -> Vec<&str> {
        let mut keys = self.keys.fixed().to_vec();
        keys.extend([
            self.xfer_out.as_str(),
            self.xfer_pending.as_str(),
            self.xfer_in.as_str(),
        ]);
        keys
    }
}

/// The slots bucket `b` of `n` may hash to: ±16384/(8n) around the centre of
/// the b-th n-th of the slot space.
fn slot_window(b: u32, n: u32) -> (u32, u32) {
    let centre = (2 * b + 1) * SLOTS / (2 * n);
    let half = SLOTS / (8 * n);
    (centre.saturating_sub(half), (centre + half).min(SLOTS - 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::keys::LIVE_PREFIX;

    #[test]
    fn slots_match_redis() {
        // Values from `CLUSTER KEYSLOT` on Redis 7.0.15.
        assert_eq!(crc16(b"123456789"), 0x31c3);
        assert_eq!(key_slot("foo"), 12182);
        assert_eq!(key_slot("{user1000}.following"), key_slot("user1000"));
        assert_eq!(key_slot("foo{}{bar}"), crc16(b"foo{}{bar}") % 16384);
    }

    #[test]
    fn one_bucket_is_the_plain_item() {
        let layout = Layout::new(LIVE_PREFIX, "moutai-1111", "1001", 1);
        assert_eq!(layout.bucket(0).keys, ItemKeys::live("moutai-1111", "1001"));
        assert_eq!(home_bucket("anyone", 1), 0);
    }

    #[test]
    fn buckets_spread_evenly_over_the_slot_space() {
        for n in [2, 3, 8, 100, 256] {
            let layout = Layout::new(LIVE_PREFIX, "moutai-1111", "1001", n);
            let mut previous = None;
            for b in 0..n {
                let keys = layout.bucket(b);
                let slot = u32::from(key_slot(&keys.keys.stock));
                let (low, high) = slot_window(b, n);
                assert!((low..=high).contains(&slot), "bucket {b}/{n} at {slot}");
                for key in keys.fixed() {
                    assert_eq!(u32::from(key_slot(key)), slot, "{key}");
                }
                assert!(previous < Some(slot));
                previous = Some(slot);
            }
        }
    }

    #[test]
    fn shares_add_up_and_homes_are_stable() {
        for (stock, n) in [(1000, 8), (7, 3), (256, 256), (100_000_000, 7)] {
            assert_eq!((0..n).map(|b| share(stock, n, b)).sum::<i64>(), stock);
        }
        assert_eq!(home_bucket("alice", 8), home_bucket("alice", 8));
        // FNV-1a 64 of "a" is 0xaf63dc4c8601ec8c.
        assert_eq!(
            home_bucket("a", 256),
            (0xaf63_dc4c_8601_ec8c_u64 % 256) as u32
        );
    }
}
