//! `seckill reconcile --fence`: reopen a sale the failover fence closed
//! (docs/failover.md, "The fence").
//!
//! A fenced slot answers every buy `fenced`: its Redis is not the process
//! preheat loaded the stock on, and may have lost acknowledged sales (their
//! stock units went back up, their buyers forgot them). The order database
//! holds what was sold: every order row of the item whose stream entry the
//! slot no longer holds, past the stream's end, is re-applied
//! (`lua/fence_reapply.lua`: the entry added again under its own stream id,
//! the stock debited, the buyer credited, so per-user limits hold), oldest
//! first. Then the usual reconcile proves the books; only when they
//! balance is the slot reopened (`lua/fence.lua` "reopen": the running
//! process recorded, the fence lifted).
//!
//! What is not re-applied keeps the slot fenced and is named: a
//! reservation (`payment_timeout`: its deadline and state are not in the
//! database), an order whose entry cannot be added in its place (later
//! entries exist), a stock too short for it. A bucketed item's lost orders
//! are not re-applied yet: its slots stay fenced when the database holds
//! an order no bucket's stream does, and reopen when none was lost
//! (docs/failover.md, "Limits").
//!
//! A region of a sale over several Redis deployments (docs/regions.md) may
//! also have lost a debit a peer already credited: its stock went back up
//! by units the peer holds too. Before the orders, every peer q is asked
//! what it credited from this region (`in:<region>` in q's own Redis, which
//! this region's failover cannot have touched) and `out:<q>` is raised to
//! it (`lua/region_debit.lua` mode "raise": the difference debited). A peer
//! that cannot be read proves nothing: the slot stays fenced, unless the
//! operator accepted that risk (`--accept-risk`, logged and reported).

use anyhow::{Context, Result};
use serde::Serialize;

use crate::domain::item::SaleItem;
use crate::domain::orders::entry::{OrderState, stream_id_key};
use crate::domain::orders::{OrderStore, stream};
use crate::domain::regions::{self, RegionConn, read_slot};
use crate::model::keys::ItemKeys;
use crate::redis_client::conn::Conn;
use crate::redis_client::node::NODE_PLACEHOLDER;
use crate::redis_client::scripts::ScriptCall;
use crate::redis_client::scripts::fence::{self, Fence, FenceState};
use crate::redis_client::scripts::fence_reapply::{self, FenceReapply, Reapplied};
use crate::redis_client::scripts::region_debit::{self, Debit, RegionDebit};

use super::PAGE;

/// What `reconcile --fence` did for one item.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct FenceReport {
    /// The fence before: `open`, `fenced`, `unarmed` (preheated before the
    /// fence: armed now) or `not_preheated`.
    pub(crate) before: String,
    /// The run_id preheat (or the last reopen) recorded.
    pub(crate) recorded_run_id: String,
    /// The run_id of the Redis process that holds the item now.
    pub(crate) running_run_id: String,
    /// Orders re-applied from the database (entry, stock, buyer).
    pub(crate) reapplied: Vec<ReappliedOrder>,
    /// Their units.
    pub(crate) units_reapplied: i64,
    /// Orders the database holds that the slot lacks and that were not
    /// re-applied, each with why: the slot stays fenced.
    pub(crate) not_reapplied: Vec<NotReapplied>,
    /// A region of a sale over several Redis deployments: what each peer
    /// proved this region sent it, and what was debited again for it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) peers: Vec<PeerRaise>,
    /// Units debited again because a peer credited them (Σ `raised`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) units_raised: Option<i64>,
    /// Peers that could not prove what they credited: the slot stays
    /// fenced, unless `accepted` (`--accept-risk`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) peers_unproven: Vec<PeerUnproven>,
    /// The slot was reopened (the books balanced after the re-apply).
    pub(crate) reopened: bool,
    /// Fenced now (after this run).
    pub(crate) fenced: bool,
}

impl FenceReport {
    /// Something the order database or a peer proves was lost is not back
    /// in the slot: it must stay fenced.
    pub(crate) fn held_back(&self) -> bool {
        !self.not_reapplied.is_empty() || self.peers_unproven.iter().any(|p| !p.accepted)
    }
}

/// What one peer proved a fenced region sent it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PeerRaise {
    pub(crate) peer: String,
    /// `out:<peer>` this region held: what it remembered sending.
    pub(crate) sent_before: i64,
    /// `in:<region>` the peer holds: what it credited from this region.
    pub(crate) peer_credited: i64,
    /// Units debited now (what the peer credited and this region forgot).
    pub(crate) raised: i64,
    /// This region's stock after.
    pub(crate) stock_after: i64,
}

/// A peer that could not prove what it credited.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PeerUnproven {
    pub(crate) peer: String,
    pub(crate) why: String,
    /// Reopened without its proof (`--accept-risk`).
    pub(crate) accepted: bool,
}

/// The other regions of a fenced region's sale (docs/regions.md), one link
/// each: what they credited from `region` is re-taken before the orders.
pub(crate) struct Peers<'a> {
    pub(crate) region: &'a str,
    pub(crate) links: &'a mut [RegionConn],
    /// Reopen even when a peer cannot be read (`--accept-risk`).
    pub(crate) accept_risk: bool,
}

/// One order re-applied.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ReappliedOrder {
    pub(crate) order_id: String,
    pub(crate) stream_id: String,
    pub(crate) user: String,
    pub(crate) qty: i64,
}

/// One order not re-applied, and why.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct NotReapplied {
    pub(crate) order_id: String,
    pub(crate) why: String,
}

/// The fence of `keys`' slot (`lua/fence.lua`), after `action`.
fn fence_call(conn: &mut Conn, keys: &ItemKeys, action: &str) -> Result<FenceState> {
    let reply = Fence {
        meta: keys.meta.as_str(),
        action,
    }
    .invoke(conn)
    .with_context(|| format!("the fence script failed on {}", keys.meta))?;
    fence::parse_reply(reply)
}

/// Whether any slot of `sale` is fenced, and each slot's state.
pub(crate) fn states(conn: &mut Conn, sale: &SaleItem) -> Result<Vec<FenceState>> {
    sale.slots()
        .iter()
        .map(|slot| fence_call(conn, &slot.keys, "read"))
        .collect()
}

/// Re-apply what the database proves `sale` sold and its fenced slot lost.
/// The slot stays fenced: [`reopen`] lifts it once reconcile balanced.
pub(crate) fn reapply(
    conn: &mut Conn,
    store: &mut dyn OrderStore,
    sale: &SaleItem,
    peers: Option<Peers<'_>>,
) -> Result<FenceReport> {
    let slots = sale.slots();
    let mut report = FenceReport::default();
    let mut fenced_slots = 0;
    for slot in &slots {
        // Marked first (meta `fenced` = 1, replicated): the slot stays
        // fenced even if the process preheat recorded comes back before
        // the books are proven (a failback).
        let state = fence_call(conn, &slot.keys, "fence")?;
        if state.is_fenced() {
            fenced_slots += 1;
        }
        if report.before.is_empty() || state.is_fenced() {
            report.before = state.state.clone();
            report.recorded_run_id = state.recorded_run_id.clone();
            report.running_run_id = state.seen_run_id.clone();
        }
    }
    report.fenced = fenced_slots > 0;
    if !report.fenced {
        return Ok(report);
    }
    if let Some(peers) = peers {
        // Before the orders: a unit a peer credited and this region still
        // counts as stock would be sold twice, once in each region.
        let keys = regions::item_keys(sale.campaign, sale.id());
        raise_from_peers(conn, &keys, peers, &mut report)?;
    }
    if slots.len() > 1 {
        // A bucketed item: what its buckets lost is not re-applied yet. When
        // every order the database holds is in one of its buckets' streams,
        // nothing was lost: the usual reconcile proves the books, and the
        // fence lifts (a clean failover of a bucket's master).
        let lost = lost_in_buckets(conn, store, sale)?;
        if !lost.is_empty() {
            report
                .not_reapplied
                .extend(lost.into_iter().map(|order_id| {
                    NotReapplied {
                        order_id,
                        why: "a bucketed item's lost orders are not re-applied yet: its fenced \
                      buckets stay fenced (docs/failover.md, \"Limits\")"
                            .to_string(),
                    }
                }));
        }
        return Ok(report);
    }
    let keys = &slots[0].keys;
    let (campaign, item) = (&sale.campaign.id, &sale.item.id);
    let mut lost = Vec::new();
    let mut after = String::new();
    loop {
        let page = store.item_orders_after(campaign, item, &after, PAGE)?;
        let Some(last) = page.last() else { break };
        after = last.order_id.clone();
        let rows: Vec<_> = page.into_iter().filter(|row| !row.carried).collect();
        let ids: Vec<&str> = rows.iter().map(|row| row.stream_id.as_str()).collect();
        let found = stream::order_ids_at(conn, &keys.orders, &ids)?;
        lost.extend(
            rows.into_iter()
                .zip(found)
                .filter(|(_, found)| found.is_none())
                .map(|(row, _)| row),
        );
    }
    lost.sort_by_key(|row| stream_id_key(&row.stream_id).unwrap_or((0, 0)));
    let ids: Vec<&str> = lost.iter().map(|row| row.order_id.as_str()).collect();
    let contents = store.stored_contents(&ids)?;
    for row in &lost {
        let not = |why: String| NotReapplied {
            order_id: row.order_id.clone(),
            why,
        };
        let Some(content) = contents.get(&row.order_id) else {
            report
                .not_reapplied
                .push(not("its row disappeared while reconcile ran".to_string()));
            continue;
        };
        if content.state != OrderState::Confirmed {
            report.not_reapplied.push(not(format!(
                "a reservation ({}): its deadline is not in the database",
                content.state.as_str()
            )));
            continue;
        }
        let Some((bought_at_ms, _)) = stream_id_key(&row.stream_id) else {
            report.not_reapplied.push(not(format!(
                "stream id {:?} is not <ms>-<seq>",
                row.stream_id
            )));
            continue;
        };
        let reply = FenceReapply {
            meta: keys.meta.clone(),
            stock: keys.stock.clone(),
            buyers: keys.buyers.clone(),
            buyer_orders: keys.buyer_orders.clone(),
            orders: keys.orders.clone(),
            stream_id: row.stream_id.clone(),
            order_id: row.order_id.clone(),
            campaign: campaign.clone(),
            item: item.clone(),
            user: content.user_id.clone(),
            qty: content.qty.to_string(),
            price_cents: content.price_cents.to_string(),
            bought_at_ms: bought_at_ms.to_string(),
        }
        .invoke(conn)
        .with_context(|| format!("re-applying order {} failed", row.order_id))?;
        let (status, _) = fence_reapply::parse_reply(reply)?;
        match status {
            Reapplied::Reapplied => {
                report.units_reapplied += content.qty;
                report.reapplied.push(ReappliedOrder {
                    order_id: row.order_id.clone(),
                    stream_id: row.stream_id.clone(),
                    user: content.user_id.clone(),
                    qty: content.qty,
                });
            }
            Reapplied::Present => {}
            Reapplied::Behind => report.not_reapplied.push(not(
                "the stream holds later entries: it cannot be added in its place".to_string(),
            )),
            Reapplied::Short => report.not_reapplied.push(not(format!(
                "fewer than its {} units are left",
                content.qty
            ))),
            Reapplied::Open => report
                .not_reapplied
                .push(not("the slot was reopened meanwhile".to_string())),
            Reapplied::NotPreheated => report
                .not_reapplied
                .push(not("the slot holds no stock".to_string())),
        }
    }
    Ok(report)
}

/// Raise this fenced region's `out:<q>` to what each peer q credited from
/// it (`in:<region>` in q's Redis), debiting the difference: a failover
/// that lost a debit q had already credited takes those units again.
fn raise_from_peers(
    conn: &mut Conn,
    keys: &ItemKeys,
    peers: Peers<'_>,
    report: &mut FenceReport,
) -> Result<()> {
    let Peers {
        region,
        links,
        accept_risk,
    } = peers;
    let own = read_slot(conn, keys).with_context(|| format!("region {region}"))?;
    let mut raised_total = 0;
    for link in links.iter_mut() {
        let peer = link.name.clone();
        let proof = link
            .conn()
            .and_then(|peer_conn| read_slot(peer_conn, keys))
            .with_context(|| format!("cannot read region {peer}"));
        let credited = match proof {
            Ok(slot) if slot.preheated => slot.received_from.get(region).copied().unwrap_or(0),
            Ok(_) => {
                unproven(
                    report,
                    &peer,
                    format!(
                        "region {peer} holds no slot of the item: it cannot say what it                          credited from {region}"
                    ),
                    accept_risk,
                );
                continue;
            }
            Err(error) => {
                let why = format!("{error:#}");
                // The connection may owe a reply: made afresh by the caller.
                link.conn = None;
                link.down = Some(why.clone());
                unproven(report, &peer, why, accept_risk);
                continue;
            }
        };
        let sent_before = own.sent_to.get(&peer).copied().unwrap_or(0);
        let credited_text = credited.to_string();
        let reply = RegionDebit {
            meta: keys.meta.as_str(),
            stock: keys.stock.as_str(),
            peer: peer.as_str(),
            units: credited_text.as_str(),
            mode: "raise",
            node: NODE_PLACEHOLDER,
        }
        .invoke(conn)
        .with_context(|| format!("raising out:{peer} in region {region} failed"))?;
        match region_debit::parse_reply(reply).with_context(|| format!("region {region}"))? {
            Debit::Sent { sent, stock_after } => {
                let raised = sent - sent_before;
                raised_total += raised;
                report.peers.push(PeerRaise {
                    peer,
                    sent_before,
                    peer_credited: credited,
                    raised,
                    stock_after,
                });
            }
            Debit::Short { sent, stock } => report.not_reapplied.push(NotReapplied {
                order_id: String::new(),
                why: format!(
                    "region {peer} credited {credited} units from {region}, which remembers                      sending {sent}: the {} units it lost are more than the {stock} left here",
                    credited - sent
                ),
            }),
            Debit::Fenced { .. } => anyhow::bail!(
                "region_debit answered `fenced` to a raise in region {region}, which it runs \
                 fenced: lua/region_debit.lua and this binary disagree"
            ),
            Debit::NotPreheated => report.not_reapplied.push(NotReapplied {
                order_id: String::new(),
                why: format!("region {region} holds no stock of the item"),
            }),
        }
    }
    report.units_raised = Some(raised_total);
    Ok(())
}

fn unproven(report: &mut FenceReport, peer: &str, why: String, accepted: bool) {
    if accepted {
        // Said even under -q: it is the one run that may sell a unit twice.
        crate::util::output::say(crate::util::log::stamped(&format!(
            "seckill reconcile: --accept-risk: reopening without region {peer}'s proof of what \
             it credited ({why}): units it credited and this region lost may be sold twice"
        )));
    }
    report.peers_unproven.push(PeerUnproven {
        peer: peer.to_string(),
        why,
        accepted,
    });
}

/// The orders of bucketed `sale` the database holds and no bucket's stream
/// does (each looked up in every bucket: an order is in its home bucket's
/// stream, or a sweep's).
fn lost_in_buckets(
    conn: &mut Conn,
    store: &mut dyn OrderStore,
    sale: &SaleItem,
) -> Result<Vec<String>> {
    let slots = sale.slots();
    let (campaign, item) = (&sale.campaign.id, &sale.item.id);
    let mut lost = Vec::new();
    let mut after = String::new();
    loop {
        let page = store.item_orders_after(campaign, item, &after, PAGE)?;
        let Some(last) = page.last() else { break };
        after = last.order_id.clone();
        let rows: Vec<_> = page.into_iter().filter(|row| !row.carried).collect();
        let ids: Vec<&str> = rows.iter().map(|row| row.stream_id.as_str()).collect();
        let mut found = vec![false; rows.len()];
        for slot in &slots {
            // Stream ids are per stream: another bucket may hold another
            // order under the same id.
            let here = stream::order_ids_at(conn, &slot.keys.orders, &ids)?;
            for ((seen, at), row) in found.iter_mut().zip(here).zip(&rows) {
                *seen |= at.as_deref() == Some(row.order_id.as_str());
            }
        }
        lost.extend(
            rows.into_iter()
                .zip(found)
                .filter(|(_, found)| !found)
                .map(|(row, _)| row.order_id),
        );
    }
    Ok(lost)
}

/// Lift the fence of every slot of `sale` (the books balanced): the running
/// process recorded as the one that holds the stock.
pub(crate) fn reopen(conn: &mut Conn, sale: &SaleItem, report: &mut FenceReport) -> Result<()> {
    for slot in sale.slots() {
        let state = fence_call(conn, &slot.keys, "reopen")?;
        report.running_run_id = state.seen_run_id;
    }
    report.reopened = true;
    report.fenced = false;
    Ok(())
}
