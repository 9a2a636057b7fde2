//! Scheme C of the source chapter: which region gives units to which
//! (docs/regions.md, "The scheduler"). Pure: it watches the books the mover
//! reads each round and plans moves; the mover ([`super::transfer`]) makes
//! them.
//!
//! - A region's **sell rate** is a moving average of what it sold between
//!   rounds; its **low-water mark** is that rate times twice the transfer
//!   latency plus one round: the units it sells before a pull could land.
//! - **Pull on shortage**: a region that sold lately (within `idle_after`)
//!   and holds no more than its low-water mark asks the peer with the most
//!   surplus (stock above that peer's own mark) for half of it.
//! - **Final sweep**: a peer that sold nothing for `idle_after` gives all
//!   its stock, not half: its demand stopped, the units would be stranded.
//! - **Sold out before the mover looked**: a region that sold units and
//!   was at 0 when this mover first read it (started or restarted after a
//!   regional sell-out) is short once: its shoppers' `sold_out` answers
//!   write nothing, so no later sale could show their demand.
//! - A fenced or unreadable region neither gives nor takes.
//! - At first sight (no rate yet: a one-round `rebalance`), a region that
//!   sold everything it held counts as selling lately.
//!
//! It also keeps the **stranded window**: how long a region that sold
//! lately sat at 0 while another held units (what its shoppers were told
//! `sold_out` for, with stock elsewhere), as the mover saw it each round.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::books::ItemBooks;

/// One planned move.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Move {
    pub from: String,
    pub to: String,
    pub units: i64,
    /// `shortage` (half the surplus) or `final_sweep` (all of an idle region's stock).
    pub why: &'static str,
}

/// What the scheduler knows of one region between rounds.
#[derive(Debug, Clone, Default)]
struct Seen {
    sold: i64,
    at: Option<Instant>,
    /// Units per second, moving average.
    rate: f64,
    last_sale: Option<Instant>,
    /// Since when it has sat at 0 while another region held units.
    stranded_since: Option<Instant>,
    stranded: Duration,
    longest_stranded: Duration,
    /// This mover has seen it hold units at least once.
    held: bool,
}

/// The stranded window of one region.
#[derive(Debug, Clone, Serialize)]
pub struct Stranded {
    pub region: String,
    /// Time at 0 with units elsewhere, in all.
    pub total_ms: u64,
    /// The longest such stretch.
    pub longest_ms: u64,
}

/// The scheduler of one item.
#[derive(Debug, Clone)]
pub struct Scheduler {
    seen: BTreeMap<String, Seen>,
    /// Moving average of a transfer's debit-to-credit time.
    latency: Duration,
    /// A round's period.
    interval: Duration,
    /// A region that sold nothing for this long has no demand.
    idle_after: Duration,
}

/// Weight of the newest sample in the moving averages.
const SMOOTHING: f64 = 0.5;

impl Scheduler {
    pub fn new(interval: Duration, idle_after: Duration) -> Scheduler {
        Scheduler {
            seen: BTreeMap::new(),
            latency: Duration::from_millis(5),
            interval,
            idle_after,
        }
    }

    /// A transfer took `elapsed`, debit to credit.
    pub fn note_latency(&mut self, elapsed: Duration) {
        let blended =
            self.latency.as_secs_f64() * (1.0 - SMOOTHING) + elapsed.as_secs_f64() * SMOOTHING;
        self.latency = Duration::from_secs_f64(blended);
    }

    /// The transfer latency the marks assume now.
    pub fn latency(&self) -> Duration {
        self.latency
    }

    /// Take in this round's books, read at `now`.
    pub fn observe(&mut self, books: &ItemBooks, now: Instant) {
        let someone_holds = books
            .regions
            .iter()
            .any(|r| r.slot.as_ref().is_some_and(|s| s.stock > 0));
        for region in &books.regions {
            let Some(slot) = region.slot.as_ref().filter(|s| s.preheated) else {
                continue;
            };
            let seen = self.seen.entry(region.region.clone()).or_default();
            if let Some(at) = seen.at {
                let dt = now.duration_since(at).as_secs_f64().max(1e-3);
                let sold = (slot.sold() - seen.sold).max(0);
                seen.rate = seen.rate * (1.0 - SMOOTHING) + (sold as f64 / dt) * SMOOTHING;
                if sold > 0 {
                    seen.last_sale = Some(now);
                }
            } else if slot.stock == 0 && slot.sold() > 0 {
                // First sight (a one-round `rebalance`, or the mover's start):
                // a region that sold all it held has had demand, when is
                // unknown; counting it recent lets idle stock come to it.
                seen.last_sale = Some(now);
            }
            seen.sold = slot.sold();
            seen.held |= slot.stock > 0;
            seen.at = Some(now);
            let recently = seen
                .last_sale
                .is_some_and(|t| now.duration_since(t) <= self.idle_after);
            let stranded_now = slot.stock == 0 && recently && someone_holds;
            match (stranded_now, seen.stranded_since) {
                (true, None) => seen.stranded_since = Some(now),
                (false, Some(since)) => {
                    let stretch = now.duration_since(since);
                    seen.stranded += stretch;
                    seen.longest_stranded = seen.longest_stranded.max(stretch);
                    seen.stranded_since = None;
                }
                _ => {}
            }
        }
    }

    /// The stranded windows so far (a stretch still open counts up to `now`).
    pub fn stranded(&self, now: Instant) -> Vec<Stranded> {
        self.seen
            .iter()
            .map(|(region, seen)| {
                let open = seen
                    .stranded_since
                    .map_or(Duration::ZERO, |since| now.duration_since(since));
                Stranded {
                    region: region.clone(),
                    total_ms: (seen.stranded + open).as_millis() as u64,
                    longest_ms: seen.longest_stranded.max(open).as_millis() as u64,
                }
            })
            .collect()
    }

    /// A region's low-water mark, units.
    fn low_water(&self, seen: &Seen) -> i64 {
        let horizon = self.latency.as_secs_f64() * 2.0 + self.interval.as_secs_f64();
        (seen.rate * horizon).ceil() as i64
    }

    /// The moves for this round's books, read at `now`.
    pub fn plan(&self, books: &ItemBooks, now: Instant) -> Vec<Move> {
        struct Region<'a> {
            name: &'a str,
            stock: i64,
            low: i64,
            recently: bool,
            /// Sold out before this mover first saw it: its shoppers are
            /// told sold_out, which writes nothing, so no sale will ever
            /// show its demand again (a mover started or restarted after
            /// a regional sell-out). Short once; after a pull it holds
            /// units, so two idle regions never pass stock back and forth.
            sold_out_unseen: bool,
        }
        let mut regions: Vec<Region> = books
            .regions
            .iter()
            .filter_map(|r| {
                let slot = r.slot.as_ref().filter(|s| s.preheated && !s.fenced)?;
                let seen = self.seen.get(&r.region)?;
                Some(Region {
                    name: &r.region,
                    stock: slot.stock,
                    low: self.low_water(seen),
                    recently: seen
                        .last_sale
                        .is_some_and(|t| now.duration_since(t) <= self.idle_after),
                    sold_out_unseen: slot.stock == 0 && slot.sold() > 0 && !seen.held,
                })
            })
            .collect();
        let mut short: Vec<usize> = (0..regions.len())
            .filter(|&i| {
                (regions[i].recently && regions[i].stock <= regions[i].low)
                    || regions[i].sold_out_unseen
            })
            .collect();
        short.sort_by_key(|&i| regions[i].stock - regions[i].low);
        let mut moves = Vec::new();
        for q in short {
            let surplus = |r: &Region| {
                if r.recently { r.stock - r.low } else { r.stock }
            };
            let Some(giver) = (0..regions.len())
                .filter(|&r| r != q)
                .max_by_key(|&r| (surplus(&regions[r]), std::cmp::Reverse(r)))
            else {
                continue;
            };
            let spare = surplus(&regions[giver]);
            if spare <= 0 {
                continue;
            }
            let (units, why) = if regions[giver].recently {
                ((spare + 1) / 2, "shortage")
            } else {
                (spare, "final_sweep")
            };
            regions[giver].stock -= units;
            regions[q].stock += units;
            moves.push(Move {
                from: regions[giver].name.to_string(),
                to: regions[q].name.to_string(),
                units,
                why,
            });
        }
        moves
    }
}
