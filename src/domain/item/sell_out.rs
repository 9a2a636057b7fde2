//! What a front door needs to refuse attempts without asking Redis each
//! time: whether an item is sold out for good (a plain item's stock at 0;
//! a bucketed item's proof in every bucket, docs/buckets.md), its window on
//! the Redis clock, and who bought it (a retry of an attempt that bought
//! must reach Redis to get its order back, never a cached refusal).

use std::collections::HashSet;

use anyhow::{Context, Result};
use redis::ConnectionLike;

use super::SaleItem;
use super::shape::Shape;

/// An item's window as preheated (Unix ms, Redis clock).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Window {
    pub starts_at_ms: Option<i64>,
    pub ends_at_ms: Option<i64>,
}

/// Users read per HSCAN page.
const PAGE: usize = 1000;

impl SaleItem<'_> {
    /// Whether nothing can be bought now and only units coming back (a
    /// release, a preheat) would change that: a plain item with no stock, a
    /// seat item with no free seat in any section, a
    /// bucketed item whose sell-out every bucket records (a bucket short of
    /// stock while others hold units, or units in transit, is not sold out).
    /// `None`: not preheated.
    pub fn sold_out_now<C: ConnectionLike>(&self, conn: &mut C) -> Result<Option<bool>> {
        let stock_of = |conn: &mut C, key: &str| -> Result<Option<i64>> {
            redis::cmd("GET")
                .arg(key)
                .query(conn)
                .with_context(|| format!("cannot read {key}"))
        };
        match self.shape() {
            Shape::Plain(layout) => {
                return Ok(stock_of(conn, &layout.bucket(0).keys.stock)?.map(|s| s <= 0));
            }
            // Every section empty: one section's last seat is not the hall's.
            Shape::Seated(layout, _) => {
                let mut all_empty = Some(true);
                for slot in layout.all() {
                    match stock_of(conn, &slot.keys.stock)? {
                        None => return Ok(None),
                        Some(left) if left > 0 => all_empty = Some(false),
                        Some(_) => {}
                    }
                }
                return Ok(all_empty);
            }
            Shape::Bucketed(_) => {}
        }
        for slot in self.slots() {
            let (stock, proof): (Option<i64>, Option<String>) = (
                redis::cmd("GET")
                    .arg(&slot.keys.stock)
                    .query(conn)
                    .with_context(|| format!("cannot read {}", slot.keys.stock))?,
                redis::cmd("HGET")
                    .arg(&slot.keys.meta)
                    .arg("sold_out")
                    .query(conn)
                    .with_context(|| format!("cannot read {}", slot.keys.meta))?,
            );
            match stock {
                None => return Ok(None),
                Some(_) if proof.is_none() => return Ok(Some(false)),
                Some(_) => {}
            }
        }
        Ok(Some(true))
    }

    /// One region's item of a sale over several (docs/regions.md): sold out
    /// only while the scheduler's mark says every region is (meta
    /// `sold_out_everywhere`, `lua/region_mark.lua`) and this region's stock
    /// is 0 — a regional zero alone is not a sell-out.
    pub fn sold_out_everywhere<C: ConnectionLike>(&self, conn: &mut C) -> Result<bool> {
        let keys = &self.layout().bucket(0).keys;
        let (stock, mark): (Option<i64>, Option<String>) = (
            redis::cmd("GET")
                .arg(&keys.stock)
                .query(conn)
                .context("cannot read the stock")?,
            redis::cmd("HGET")
                .arg(&keys.meta)
                .arg("sold_out_everywhere")
                .query(conn)
                .with_context(|| format!("cannot read {}", keys.meta))?,
        );
        Ok(stock.is_some_and(|s| s <= 0) && mark.as_deref() == Some("1"))
    }

    /// The window Redis holds for the item (its first slot's meta).
    pub fn window<C: ConnectionLike>(&self, conn: &mut C) -> Result<Window> {
        let meta = &self.layout().bucket(0).keys.meta;
        let (starts, ends): (Option<String>, Option<String>) = redis::cmd("HMGET")
            .arg(meta)
            .arg("starts_at_ms")
            .arg("ends_at_ms")
            .query(conn)
            .with_context(|| format!("cannot read {meta}"))?;
        let ms = |v: Option<String>| v.and_then(|v| v.parse::<i64>().ok());
        Ok(Window {
            starts_at_ms: ms(starts),
            ends_at_ms: ms(ends),
        })
    }

    /// Every user who bought the item, from its buyers hashes (HSCAN pages:
    /// bounded by the stock, since every buyer took at least one unit).
    pub fn buyers<C: ConnectionLike>(&self, conn: &mut C) -> Result<HashSet<String>> {
        let mut users = HashSet::new();
        for slot in self.slots() {
            let mut cursor: u64 = 0;
            loop {
                let (next, pairs): (u64, Vec<(String, String)>) = redis::cmd("HSCAN")
                    .arg(&slot.keys.buyers)
                    .arg(cursor)
                    .arg("COUNT")
                    .arg(PAGE)
                    .query(conn)
                    .with_context(|| format!("cannot read {}", slot.keys.buyers))?;
                users.extend(pairs.into_iter().map(|(user, _)| user));
                if next == 0 {
                    break;
                }
                cursor = next;
            }
        }
        Ok(users)
    }
}
