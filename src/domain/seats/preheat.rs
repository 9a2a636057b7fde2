//! Preheat a seat item: every section's state and geometry
//! (`lua/seat_load.lua`), then its stock — its sellable seats — and meta at
//! the section's price (the plain item's preheat on the section's keys). All
//! sections or none: each is decided first (a dry run), and a refusal in any
//! (a section Redis holds with another geometry, one that has sales) writes
//! nothing anywhere.

use anyhow::{Context, Result};
use redis::{Commands, ConnectionLike};

use crate::domain::buckets::state::{BucketPreheat, BucketsPreheat, summed};
use crate::domain::slot::{self, PreheatMode, PreheatReport, PreheatStatus};
use crate::model::campaign::{Campaign, Item};
use crate::model::layout::{BucketKeys, Layout, key_slot};
use crate::model::seats::{Seating, Section};
use crate::redis_client::scripts::ScriptCall;
use crate::redis_client::scripts::seat_load::{self, SeatLoad, SeatLoaded};

/// Load (or, with `dry_run`, decide) every section of `item`.
pub(crate) fn preheat_item<C: ConnectionLike>(
    conn: &mut C,
    layout: &Layout,
    seating: &Seating,
    campaign: &Campaign,
    item: &Item,
    mode: PreheatMode,
    dry_run: bool,
) -> Result<BucketsPreheat> {
    let slots = layout.all();
    let parts: Vec<Item> = seating
        .sections
        .iter()
        .map(|section| Item {
            stock: section.sellable(),
            price_cents: section.price_cents,
            ..item.clone()
        })
        .collect();
    let mut decided: Vec<PreheatReport> = Vec::new();
    let mut refused_because = None;
    for ((slot, section), part) in slots.iter().zip(&seating.sections).zip(&parts) {
        if let SeatLoaded::Refused(why) = load(conn, slot, section, campaign, "dry")? {
            refused_because = Some(format!(
                "section {}: {why}; `init --yes` starts over",
                section.id
            ));
        }
        decided.push(slot::preheat_item(
            conn, &slot.keys, campaign, part, mode, true,
        )?);
    }
    let refused = refused_because.is_some() || decided.iter().any(|r| r.status.refused());
    let mut reports = Vec::new();
    if !dry_run && !refused {
        if layout.buckets > 1 {
            let () = conn
                .set(layout.marker(), layout.buckets)
                .with_context(|| format!("cannot write {}", layout.marker()))?;
            if let Some(at) = campaign.expire_at_ms() {
                let _: i64 = conn
                    .pexpire_at(layout.marker(), at)
                    .with_context(|| format!("cannot set the expiry of {}", layout.marker()))?;
            }
        }
        for ((slot, section), part) in slots.iter().zip(&seating.sections).zip(&parts) {
            // The seats before the stock: a section never sells without its map.
            load(conn, slot, section, campaign, "create")?;
            let report = slot::preheat_item(conn, &slot.keys, campaign, part, mode, false)?;
            if report.status == PreheatStatus::Overwritten {
                load(conn, slot, section, campaign, "reset")?;
            }
            reports.push(report);
        }
    } else {
        reports = decided;
        if refused_because.is_some() {
            for report in &mut reports {
                report.status = PreheatStatus::StockMissing;
            }
        }
    }
    Ok(BucketsPreheat {
        summary: summed(item, &reports),
        buckets: slots
            .iter()
            .zip(&seating.sections)
            .zip(reports)
            .map(|((slot, section), report)| BucketPreheat {
                bucket: slot.bucket,
                slot: key_slot(&slot.keys.stock),
                section: Some(section.id.clone()),
                report,
            })
            .collect(),
        refused_because,
    })
}

/// One `lua/seat_load.lua` call on `slot` for `section`.
fn load<C: ConnectionLike>(
    conn: &mut C,
    slot: &BucketKeys,
    section: &Section,
    campaign: &Campaign,
    mode: &str,
) -> Result<SeatLoaded> {
    let call = SeatLoad {
        meta: slot.keys.meta.clone(),
        seats: slot.keys.seats.clone(),
        rows: section.rows.to_string(),
        per_row: section.seats_per_row.to_string(),
        section: section.id.clone(),
        state: String::from_utf8(section.initial_state()).expect("seat states are ASCII"),
        expire_at_ms: campaign
            .expire_at_ms()
            .map(|at| at.to_string())
            .unwrap_or_default(),
        mode: mode.to_string(),
    };
    call.invoke(conn)
        .map_err(anyhow::Error::from)
        .and_then(seat_load::parse_reply)
        .with_context(|| format!("seat_load failed for section {}", section.id))
}
