//! A seat item (docs/seats.md): each section is one slot whose stock is its
//! free seats and whose `seats` string holds one byte per seat. A buy names
//! its seats (one section, all or none) or asks for the best block of N side
//! by side in one row, section after section of the tier asked for; each
//! call is `lua/seat_buy.lua` in one section, the whole purchase in it.
//! [`preheat`] loads the sections; [`view`] reads them for `status`,
//! `reconcile` and the seat page.
//!
//! May import: domain::buckets, domain::slot, redis_client, model, util.

pub(crate) mod preheat;
pub mod view;

use anyhow::{Context, Result};
use redis::{Commands, ConnectionLike};

use crate::domain::buckets::buy::BuyCost;
use crate::domain::slot::{BuyReply, BuyRequest, Outcome, new_order_id};
use crate::model::layout::Layout;
use crate::model::seats::{SeatAsk, Seating};
use crate::redis_client::scripts::ScriptCall;
use crate::redis_client::scripts::buy::parse_seat_reply;
use crate::redis_client::scripts::seat_buy::SeatBuy;

/// One seat purchase: named seats are one call in their section; a best
/// block tries each candidate section in order until one sells (a section
/// that is sold out or has no block of that size passes the turn). A
/// retried request id goes first to the section that remembers it, so a
/// retry never buys a second block elsewhere.
pub(crate) fn reserve<C: ConnectionLike>(
    conn: &mut C,
    layout: &Layout,
    seating: &Seating,
    request: &BuyRequest,
    payment_timeout_ms: u64,
) -> Result<(BuyReply, BuyCost)> {
    let mut cost = BuyCost::default();
    let ask = request.seats.clone().unwrap_or(SeatAsk::Best {
        tier: None,
        section: None,
    });
    // (section, mode, wanted) of each call, in order.
    let calls: Vec<(usize, &str, String)> = match &ask {
        SeatAsk::Named(seats) => {
            let section = seats.first().map_or(0, |s| s.section);
            let indexes: Vec<String> = seats.iter().map(|s| s.index.to_string()).collect();
            vec![(section, "named", indexes.join(","))]
        }
        SeatAsk::Best { tier, section } => {
            let mut order = seating.candidates(tier.as_deref(), *section);
            if order.len() > 1
                && let Some(request_id) = request.request_id.filter(|r| !r.is_empty())
            {
                cost.round_trips += order.len() as u32;
                if let Some(at) = remembered_in(conn, layout, &order, request.user, request_id)? {
                    order.retain(|&s| s != at);
                    order.insert(0, at);
                }
            }
            order
                .into_iter()
                .map(|s| {
                    let prefer = if seating.sections[s].back_first {
                        "back"
                    } else {
                        "front"
                    };
                    (s, "best", prefer.to_string())
                })
                .collect()
        }
    };
    let mut refusals: Vec<BuyReply> = Vec::new();
    for (section, mode, wanted) in calls {
        let keys = layout.bucket(section as u32).keys;
        cost.round_trips += 1;
        let call = SeatBuy {
            meta: keys.meta.clone(),
            stock: keys.stock.clone(),
            buyers: keys.buyers.clone(),
            buyer_orders: keys.buyer_orders.clone(),
            requests: keys.requests.clone(),
            orders: keys.orders.clone(),
            rate: keys.rate(request.user),
            reservations: keys.reservations.clone(),
            deadlines: keys.deadlines.clone(),
            reservation_counts: keys.reservation_counts.clone(),
            seats: keys.seats.clone(),
            seat_orders: keys.seat_orders.clone(),
            user: request.user.to_string(),
            qty: request.qty.to_string(),
            request_id: request.request_id.unwrap_or("").to_string(),
            order_id: new_order_id(),
            campaign: request.campaign.to_string(),
            item: request.item.to_string(),
            payment_timeout_ms: payment_timeout_ms.to_string(),
            node: crate::redis_client::node::NODE_PLACEHOLDER.to_string(),
            mode: mode.to_string(),
            wanted,
        };
        let reply = call
            .invoke(conn)
            .map_err(anyhow::Error::from)
            .and_then(parse_seat_reply)
            .with_context(|| {
                format!(
                    "seat buy script failed for item {} section {} user {}",
                    request.item, seating.sections[section].id, request.user
                )
            })?;
        match reply.outcome {
            Outcome::NoBlock | Outcome::SoldOut => refusals.push(reply),
            _ => return Ok((reply, cost)),
        }
    }
    Ok((refused_everywhere(refusals), cost))
}

/// Every candidate section refused: `no_block` naming each closest block
/// when any section had free seats, else `sold_out`.
fn refused_everywhere(refusals: Vec<BuyReply>) -> BuyReply {
    let closest: Vec<String> = refusals
        .iter()
        .filter(|r| r.outcome == Outcome::NoBlock)
        .filter_map(|r| r.problem.clone())
        .collect();
    let stock_left = refusals.iter().filter_map(|r| r.stock_left).sum::<i64>();
    let mut reply = refusals
        .into_iter()
        .next()
        .expect("a best-available buy has at least one section");
    reply.stock_left = Some(stock_left);
    if closest.is_empty() {
        reply.outcome = Outcome::SoldOut;
        reply.problem = None;
    } else {
        reply.outcome = Outcome::NoBlock;
        reply.problem = Some(closest.join("; "));
    }
    reply
}

/// The section whose request memory holds `request_id` of `user`, if any
/// (the field lib/purchase writes: `<len(user)>:<user>:<request_id>`).
fn remembered_in<C: ConnectionLike>(
    conn: &mut C,
    layout: &Layout,
    sections: &[usize],
    user: &str,
    request_id: &str,
) -> Result<Option<usize>> {
    let field = format!("{}:{user}:{request_id}", user.len());
    for &section in sections {
        let keys = layout.bucket(section as u32).keys;
        let found: bool = conn
            .hexists(&keys.requests, &field)
            .with_context(|| format!("cannot read {}", keys.requests))?;
        if found {
            return Ok(Some(section));
        }
    }
    Ok(None)
}
