//! The item's shape: how its stock lies in Redis, decided once when the item
//! is built. Every place that does something different for a plain item
//! and a bucketed one is a `match` on [`Shape`] here or in the item layer,
//! so a new shape (regions, seats) is a compile error at each place that
//! needs an arm — never an `if` someone forgets.

use anyhow::{Context, Result};
use redis::{Commands, ConnectionLike};

use crate::model::keys::ItemKeys;
use crate::model::layout::{BucketKeys, Layout};
use crate::model::seats::Seating;
use crate::redis_client::scripts::Spec;

/// How one item's stock lies in Redis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// One slot: the item's own hash tag (a layout of one bucket).
    Plain(Layout),
    /// N ≥ 2 buckets, one hash tag each, spread over the cluster's masters
    /// (docs/buckets.md): a buy starts in the user's home bucket and sweeps
    /// the others by logged transfers when it is short.
    Bucketed(Layout),
    /// A seat item (docs/seats.md): one slot per section, in file order,
    /// each with its seats' state; no stock moves between sections.
    Seated(Layout, Seating),
}

impl Shape {
    /// The shape of an item laid out as `layout`.
    pub fn of(layout: Layout) -> Shape {
        if Shape::is_bucketed(layout.buckets) {
            Shape::Bucketed(layout)
        } else {
            Shape::Plain(layout)
        }
    }

    /// The shape of a seat item laid out as `layout` (one slot per section).
    pub fn seated(layout: Layout, seating: Seating) -> Shape {
        Shape::Seated(layout, seating)
    }

    /// Whether `buckets` (a layout's count) make an item bucketed.
    pub(crate) fn is_bucketed(buckets: u32) -> bool {
        buckets > 1
    }

    /// Where the item's keys are.
    pub fn layout(&self) -> &Layout {
        match self {
            Shape::Plain(layout) | Shape::Bucketed(layout) | Shape::Seated(layout, _) => layout,
        }
    }

    /// Every slot's keys, in bucket order (one for a plain item).
    pub fn slots(&self) -> Vec<BucketKeys> {
        self.layout().all()
    }

    /// The slot holding `user`'s purchases and reservations.
    pub fn home(&self, user: &str) -> BucketKeys {
        self.layout().home(user)
    }

    /// How many slots (1 for a plain item).
    pub fn count(&self) -> u32 {
        self.layout().buckets
    }

    /// The bucket number of `slot`, as reports show it (a plain item has none).
    pub fn bucket_of(&self, slot: &BucketKeys) -> Option<u32> {
        match self {
            Shape::Plain(_) => None,
            Shape::Bucketed(_) | Shape::Seated(..) => Some(slot.bucket),
        }
    }

    /// Whether stock moves between the item's slots (transfers, the rebalancer,
    /// a sell-out proven over every slot).
    pub fn moves_stock(&self) -> bool {
        match self {
            Shape::Plain(_) | Shape::Seated(..) => false,
            Shape::Bucketed(_) => true,
        }
    }

    /// The buckets a waiting room copies its admissions to (a bucketed
    /// item's buy checks them in the user's home bucket); none for a plain item.
    pub fn fan_out_targets(&self) -> Option<&Layout> {
        match self {
            Shape::Plain(_) | Shape::Seated(..) => None,
            Shape::Bucketed(layout) => Some(layout),
        }
    }

    /// Why the layout Redis recorded at preheat (`recorded`: its bucket-count
    /// marker) does not fit this shape, if it does not.
    pub fn conflict<C: ConnectionLike>(&self, conn: &mut C) -> Result<Option<String>> {
        let layout = self.layout();
        let marker = layout.marker();
        let recorded: Option<u32> = conn
            .get(&marker)
            .with_context(|| format!("cannot read {marker}"))?;
        let changed = |n: u32| {
            format!(
                "Redis holds item {} in {n} bucket(s), the file says {}: changing the count moves every \
                 user's home bucket; finish the sale with the old count, or `init --yes` to start over",
                layout.item, layout.buckets
            )
        };
        Ok(match (self, recorded) {
            (_, Some(n)) if n != layout.buckets => Some(changed(n)),
            (Shape::Bucketed(_), None) | (Shape::Seated(..), None) if layout.buckets > 1 => {
                let plain = ItemKeys::new(&layout.prefix, &layout.campaign, &layout.item);
                let exists: bool = conn
                    .exists(&plain.stock)
                    .with_context(|| format!("cannot read {}", plain.stock))?;
                exists.then(|| {
                    format!(
                        "Redis holds item {} in one slot ({} exists), the file says {} slots: \
                         `init --yes` to start over",
                        layout.item, plain.stock, layout.buckets
                    )
                })
            }
            _ => None,
        })
    }

    /// The slot a script of `spec` runs on, for checks that run it as an
    /// example (`doctor`, `acl --apply`): a bucket of an item split in two
    /// when the script's KEYS name a bucket's own keys (its transfer log or
    /// admissions), else the plain item's slot.
    pub fn example_slot(spec: &Spec, prefix: &str, campaign: &str, item: &str) -> BucketKeys {
        let bucket_only = ["xfer_in", "xfer_out", "xfer_pending", "admissions"];
        let shape = if spec.keys.iter().any(|k| bucket_only.contains(k)) {
            Shape::of(Layout::new(prefix, campaign, item, 2))
        } else {
            Shape::of(Layout::new(prefix, campaign, item, 1))
        };
        shape.slots().swap_remove(0)
    }

    /// The ACL key pattern of every slot's `suffix` key of `campaign` (under
    /// `prefix`) for each shape: a plain item's tag, and a bucket's
    /// (`{campaign:item:bN.salt}`, whose `.` no plain tag has).
    pub fn key_patterns(prefix: &str, campaign: &str, suffix: &str) -> [String; 2] {
        [
            format!("~{prefix}:{{{campaign}:*}}:{suffix}"),
            format!("~{prefix}:{{{campaign}:*:b*.*}}:{suffix}"),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::keys::LIVE_PREFIX;

    #[test]
    fn one_bucket_is_plain_and_more_are_bucketed() {
        let plain = Shape::of(Layout::new(LIVE_PREFIX, "c", "1", 1));
        let split = Shape::of(Layout::new(LIVE_PREFIX, "c", "1", 4));
        assert!(matches!(plain, Shape::Plain(_)));
        assert!(matches!(split, Shape::Bucketed(_)));
        assert_eq!(plain.slots().len(), 1);
        assert_eq!(split.slots().len(), 4);
        assert_eq!(plain.bucket_of(&plain.slots()[0]), None);
        assert_eq!(split.bucket_of(&split.slots()[3]), Some(3));
        assert_eq!(plain.home("anyone").keys, ItemKeys::live("c", "1"));
        assert!(plain.fan_out_targets().is_none() && split.fan_out_targets().is_some());
    }

    #[test]
    fn bucket_patterns_match_no_plain_tag() {
        let [plain, bucket] = Shape::key_patterns(LIVE_PREFIX, "c", "stock");
        assert_eq!(plain, "~seckill:{c:*}:stock");
        assert_eq!(bucket, "~seckill:{c:*:b*.*}:stock");
    }
}
