//! Every region's slot of an item, read and proven (docs/regions.md,
//! "Invariants"):
//!
//! - **I1** every region's stock ≥ 0;
//! - **I2** for every pair, what q credited from r ≤ what r sent q;
//! - **ledger** each region holds what its share, credits and debits say
//!   (`initial_stock = share + Σ in − Σ out`, read atomically per region);
//! - **I3** Σ (stock + sold) + in transit = Σ shares, which the ledgers and
//!   I2 make exact; its figures are shown.
//!
//! The `in` counters are read in a first pass over the regions and the
//! `out` counters in a second: `out` only grows, so a transfer that ran
//! between two reads can never look like a credit without its debit.

use std::collections::BTreeMap;

use anyhow::Result;
use serde::Serialize;

use crate::model::campaign::{Campaign, Item};
use crate::redis_client::scripts::region_state::SlotLedger;

use super::{RegionConn, item_keys, read_slot};

/// One region's slot of the item.
#[derive(Debug, Clone, Serialize)]
pub struct RegionBooks {
    pub region: String,
    /// Its share in the campaign file.
    pub share: i64,
    /// What it holds (None: unreachable or not readable, see `error`).
    pub slot: Option<SlotLedger>,
    pub error: Option<String>,
}

/// Units sent and not (yet) credited, one pair.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct InTransit {
    pub from: String,
    pub to: String,
    pub units: i64,
}

/// One invariant broken.
#[derive(Debug, Clone, Serialize)]
pub struct Breach {
    /// `I1`, `I2`, `ledger`, `unreadable`.
    pub invariant: &'static str,
    pub message: String,
}

/// The item over every region.
#[derive(Debug, Clone, Serialize)]
pub struct ItemBooks {
    pub item: String,
    /// Σ shares: the file's stock.
    pub total: i64,
    pub regions: Vec<RegionBooks>,
    pub stock: i64,
    pub sold: i64,
    pub in_transit: Vec<InTransit>,
    /// Units held by regions with stock while another region has none.
    pub stranded: i64,
    pub breaches: Vec<Breach>,
}

impl ItemBooks {
    /// Units in transit, all pairs.
    pub fn in_transit_total(&self) -> i64 {
        self.in_transit.iter().map(|t| t.units).sum()
    }

    /// Every region read, nothing broken.
    pub fn balanced(&self) -> bool {
        self.breaches.is_empty()
    }
}

/// Read `item` in every region of `regions` (in the campaign's order) and
/// prove it.
pub fn read(campaign: &Campaign, item: &Item, regions: &mut [RegionConn]) -> Result<ItemBooks> {
    let keys = item_keys(campaign, &item.id);
    let first: Vec<Result<SlotLedger>> = regions
        .iter_mut()
        .map(|r| r.conn().and_then(|conn| read_slot(conn, &keys)))
        .collect();
    let second: Vec<Result<SlotLedger>> = regions
        .iter_mut()
        .map(|r| r.conn().and_then(|conn| read_slot(conn, &keys)))
        .collect();
    let mut books = ItemBooks {
        item: item.id.clone(),
        total: item.total_stock(),
        regions: Vec::new(),
        stock: 0,
        sold: 0,
        in_transit: Vec::new(),
        stranded: 0,
        breaches: Vec::new(),
    };
    // Received counts from the first pass, everything else from the second.
    let mut received: BTreeMap<(String, String), i64> = BTreeMap::new();
    for (region, read) in regions.iter().zip(&first) {
        if let Ok(slot) = read {
            for (peer, &units) in &slot.received_from {
                received.insert((peer.clone(), region.name.clone()), units);
            }
        }
    }
    for ((region, read), index) in regions.iter().zip(second).zip(0..) {
        let share = item.region_stock.get(index).copied().unwrap_or(0);
        let (slot, error) = match read {
            Ok(slot) => (Some(slot), None),
            Err(error) => {
                let message = format!("region {}: {error:#}", region.name);
                books.breaches.push(Breach {
                    invariant: "unreadable",
                    message: message.clone(),
                });
                (None, Some(message))
            }
        };
        if let Some(slot) = &slot {
            check_region(&mut books, &region.name, share, slot);
        }
        books.regions.push(RegionBooks {
            region: region.name.clone(),
            share,
            slot,
            error,
        });
    }
    check_pairs(&mut books, &received);
    let anyone_empty = books
        .regions
        .iter()
        .any(|r| r.slot.as_ref().is_some_and(|s| s.preheated && s.stock == 0));
    if anyone_empty {
        books.stranded = books
            .regions
            .iter()
            .filter_map(|r| r.slot.as_ref())
            .map(|s| s.stock)
            .sum();
    }
    Ok(books)
}

fn check_region(books: &mut ItemBooks, region: &str, share: i64, slot: &SlotLedger) {
    if !slot.preheated {
        books.breaches.push(Breach {
            invariant: "unreadable",
            message: format!("region {region}: the item is not preheated there"),
        });
        return;
    }
    books.stock += slot.stock;
    books.sold += slot.sold();
    if slot.stock < 0 {
        books.breaches.push(Breach {
            invariant: "I1",
            message: format!("region {region}: stock {} is below 0", slot.stock),
        });
    }
    let sent: i64 = slot.sent_to.values().sum();
    let got: i64 = slot.received_from.values().sum();
    let expected = share + got - sent;
    if slot.initial != expected {
        books.breaches.push(Breach {
            invariant: "ledger",
            message: format!(
                "region {region} holds {} units in all, but its share {share} + {got} credited \
                 − {sent} sent is {expected}: {} units appeared or vanished outside a transfer",
                slot.initial,
                slot.initial - expected
            ),
        });
    }
}

fn check_pairs(books: &mut ItemBooks, received: &BTreeMap<(String, String), i64>) {
    let sent: BTreeMap<(String, String), i64> = books
        .regions
        .iter()
        .filter_map(|r| r.slot.as_ref().map(|s| (r, s)))
        .flat_map(|(r, s)| {
            s.sent_to
                .iter()
                .map(move |(peer, &units)| ((r.region.clone(), peer.clone()), units))
        })
        .collect();
    let readable: Vec<&str> = books
        .regions
        .iter()
        .filter(|r| r.slot.is_some())
        .map(|r| r.region.as_str())
        .collect();
    let mut pairs: Vec<&(String, String)> = sent.keys().chain(received.keys()).collect();
    pairs.sort();
    pairs.dedup();
    for pair in pairs {
        let (from, to) = pair;
        if !readable.contains(&from.as_str()) || !readable.contains(&to.as_str()) {
            continue;
        }
        let out = sent.get(pair).copied().unwrap_or(0);
        let got = received.get(pair).copied().unwrap_or(0);
        if got > out {
            books.breaches.push(Breach {
                invariant: "I2",
                message: format!(
                    "region {to} credited {got} units from {from}, but {from} remembers sending \
                     {out}: a failover in {from} lost a debit of {} units that {to} already \
                     credited (`seckill reconcile --fence --region {from}` takes them again)",
                    got - out
                ),
            });
        } else if out > got {
            books.in_transit.push(InTransit {
                from: from.clone(),
                to: to.clone(),
                units: out - got,
            });
        }
    }
}
