//! A bucketed item's state across its buckets: preheat (split the stock),
//! reset, kill switch and status. The per-bucket work is the plain item's
//! (`crate::domain::slot`) run on each bucket's keys; what is added is the item-level
//! rule: all buckets or none (a refusal in one bucket refuses the item), and
//! a changed bucket count is refused (it would move every user's home).

use anyhow::{Context, Result};
use redis::{Commands, ConnectionLike};
use serde::Serialize;

use super::scripts::{self, Snapshot};
use crate::domain::slot::{self, PreheatMode, PreheatReport, PreheatStatus};
use crate::model::campaign::{Campaign, Item};
use crate::model::layout::{Layout, key_slot, share};

/// One bucket's preheat result.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct BucketPreheat {
    pub(crate) bucket: u32,
    /// The cluster slot of this bucket's keys.
    pub(crate) slot: u16,
    /// A seat item: the section this slot holds (docs/seats.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) section: Option<String>,
    #[serde(flatten)]
    pub(crate) report: PreheatReport,
}

/// A bucketed item's preheat: the item-level status and each bucket's.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct BucketsPreheat {
    #[serde(flatten)]
    pub(crate) summary: PreheatReport,
    pub(crate) buckets: Vec<BucketPreheat>,
    /// Set when the whole item was refused before any bucket was looked at.
    pub(crate) refused_because: Option<String>,
}

/// An item-level preheat result before any bucket is looked at.
pub(crate) fn summary_of(item: &Item, status: PreheatStatus) -> PreheatReport {
    PreheatReport {
        item: item.id.clone(),
        name: item.name.clone(),
        status,
        file_stock: item.stock,
        redis_stock_before: None,
        redis_stock_after: None,
    }
}

/// The whole item refused before any bucket was looked at (its layout in
/// Redis differs from the file's: `why`).
pub(crate) fn refused(item: &Item, why: String) -> BucketsPreheat {
    BucketsPreheat {
        summary: summary_of(item, PreheatStatus::StockMissing),
        buckets: Vec::new(),
        refused_because: Some(why),
    }
}

/// Preheat every bucket of `item`: first decide every bucket (a dry run);
/// when any bucket refuses, or has transfers a reload would double, nothing
/// is written to any bucket.
pub(crate) fn preheat_item<C: ConnectionLike>(
    conn: &mut C,
    layout: &Layout,
    campaign: &Campaign,
    item: &Item,
    mode: PreheatMode,
    dry_run: bool,
) -> Result<BucketsPreheat> {
    let buckets = layout.all();
    let mut decided = Vec::new();
    for bucket in &buckets {
        let part = Item {
            stock: share(item.stock, layout.buckets, bucket.bucket),
            ..item.clone()
        };
        let mut report = slot::preheat_item(conn, &bucket.keys, campaign, &part, mode, true)?;
        let moved = scripts::snapshot(conn, bucket)?;
        if moved.out_count + moved.in_count > 0 {
            // A bucket that ever transferred is part of a sale: reloading it
            // would double or lose the units it moved.
            report.status = match report.status {
                PreheatStatus::Loaded => PreheatStatus::StockMissing,
                PreheatStatus::Overwritten => PreheatStatus::HasSales,
                other => other,
            };
        }
        decided.push((part, report));
    }
    let refused = decided.iter().any(|(_, r)| r.status.refused());
    let mut reports = Vec::new();
    if !dry_run && !refused {
        let () = conn
            .set(layout.marker(), layout.buckets)
            .with_context(|| format!("cannot write {}", layout.marker()))?;
        if let Some(at) = campaign.expire_at_ms() {
            let _: i64 = conn
                .pexpire_at(layout.marker(), at)
                .with_context(|| format!("cannot set the expiry of {}", layout.marker()))?;
        }
        for (bucket, (part, _)) in buckets.iter().zip(&decided) {
            reports.push(slot::preheat_item(
                conn,
                &bucket.keys,
                campaign,
                part,
                mode,
                false,
            )?);
        }
    } else {
        reports = decided.into_iter().map(|(_, r)| r).collect();
    }
    Ok(BucketsPreheat {
        summary: summed(item, &reports),
        buckets: buckets
            .iter()
            .zip(reports)
            .map(|(bucket, report)| BucketPreheat {
                bucket: bucket.bucket,
                slot: key_slot(&bucket.keys.stock),
                section: None,
                report,
            })
            .collect(),
        refused_because: None,
    })
}

/// The item's preheat from its slots' reports: their status summarized,
/// their stock before and after added up.
pub(crate) fn summed(item: &Item, reports: &[PreheatReport]) -> PreheatReport {
    let mut summary = summary_of(item, summarize(reports.iter().map(|r| r.status)));
    let total = |get: fn(&PreheatReport) -> Option<i64>| -> Option<i64> {
        reports.iter().map(get).sum::<Option<i64>>()
    };
    summary.redis_stock_before = total(|r| r.redis_stock_before);
    summary.redis_stock_after = total(|r| r.redis_stock_after);
    summary
}

/// The item's status from its buckets': a refusal wins, then a write, then "kept".
pub(crate) fn summarize(statuses: impl Iterator<Item = PreheatStatus>) -> PreheatStatus {
    let rank = |s: PreheatStatus| match s {
        PreheatStatus::StockMissing => 0,
        PreheatStatus::HasSales => 1,
        PreheatStatus::Overwritten => 2,
        PreheatStatus::Loaded => 3,
        PreheatStatus::MetaUpdated => 4,
        PreheatStatus::Kept => 5,
    };
    statuses
        .min_by_key(|s| rank(*s))
        .unwrap_or(PreheatStatus::Kept)
}

/// Delete every key of every bucket of the item — in the file's layout and in
/// the one Redis recorded, when they differ — and its bucket-count marker.
pub(crate) fn delete_item<C: ConnectionLike>(
    conn: &mut C,
    layout: &Layout,
    scan_too: bool,
) -> Result<u64> {
    let recorded: Option<u32> = conn
        .get(layout.marker())
        .with_context(|| format!("cannot read {}", layout.marker()))?;
    let mut deleted = 0;
    if let Some(n) = recorded.filter(|n| *n != layout.buckets && (1..=256).contains(n)) {
        deleted += delete_layout(
            conn,
            &Layout {
                buckets: n,
                ..layout.clone()
            },
            scan_too,
        )?;
    }
    Ok(deleted + delete_layout(conn, layout, scan_too)?)
}

fn delete_layout<C: ConnectionLike>(conn: &mut C, layout: &Layout, scan_too: bool) -> Result<u64> {
    let mut deleted: u64 = conn
        .del(layout.marker())
        .with_context(|| format!("cannot delete {}", layout.marker()))?;
    for bucket in layout.all() {
        let transfer_log: u64 = conn
            .del(&[&bucket.xfer_out, &bucket.xfer_pending, &bucket.xfer_in])
            .with_context(|| {
                format!(
                    "cannot delete bucket {} of item {}",
                    bucket.bucket, layout.item
                )
            })?;
        deleted += transfer_log;
        // Rate-limit keys (per user) by SCAN, as for a plain item.
        deleted += slot::delete_item(conn, &bucket.keys, scan_too)?;
    }
    Ok(deleted)
}

/// One bucket's kill switch and stock, as `shutdown-switch status --buckets` shows it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct BucketStatus {
    pub(crate) bucket: u32,
    pub(crate) slot: u16,
    pub(crate) closed: bool,
    pub(crate) preheated: bool,
    pub(crate) stock_left: Option<i64>,
    /// Debits from this bucket whose credit is not confirmed yet.
    pub(crate) transfers_pending: u64,
}

/// Every bucket's status, in bucket order.
pub(crate) fn bucket_statuses<C: ConnectionLike>(
    conn: &mut C,
    layout: &Layout,
) -> Result<Vec<BucketStatus>> {
    layout
        .all()
        .iter()
        .map(|bucket| {
            let Snapshot {
                initial_stock,
                stock,
                pending,
                closed,
                ..
            } = scripts::snapshot(conn, bucket)?;
            Ok(BucketStatus {
                bucket: bucket.bucket,
                slot: key_slot(&bucket.keys.stock),
                closed,
                preheated: initial_stock.is_some() && stock.is_some(),
                stock_left: stock,
                transfers_pending: pending,
            })
        })
        .collect()
}

/// The item's state summed over its buckets (`closed` only when every bucket is).
pub(crate) fn item_state<C: ConnectionLike>(
    conn: &mut C,
    layout: &Layout,
) -> Result<slot::ItemState> {
    let mut total = slot::ItemState {
        preheated: true,
        closed: true,
        ..slot::ItemState::default()
    };
    let (mut initial, mut stock) = (Some(0), Some(0));
    for bucket in layout.all() {
        let part = slot::item_state(conn, &bucket.keys)?;
        total.preheated &= part.preheated;
        total.closed &= part.closed;
        initial = initial.zip(part.initial_stock).map(|(a, b)| a + b);
        stock = stock.zip(part.stock).map(|(a, b)| a + b);
        (total.initial_stock, total.stock) = (initial, stock);
        total.buyers += part.buyers;
        total.stream_len += part.stream_len;
        if bucket.bucket == 0 {
            total.switch_reason = part.switch_reason;
            total.switched_at_ms = part.switched_at_ms;
            total.switched_by = part.switched_by;
        }
    }
    Ok(total)
}
