//! `seckill loadtest --variant seats`: a seat item's sale rehearsed in the
//! load test's namespace (docs/seats.md, docs/guide.md): concurrent buyers,
//! half asking for the best block of [`BEST_QTY`] seats, half for
//! [`NAMED_QTY`] named seats side by side somewhere in the first
//! [`FRONT_ROWS`] rows of a section (contention on the front rows), until a
//! best block answers that none is left or the attempts run out.
//!
//! It reports seats sold per second, the conflicts (`seat_taken` for named
//! buys, `no_block` for best ones), the holes left in rows (single free seats
//! between two taken seats or a taken seat and the row's end: no pair can
//! have them) and the proof afterwards, section by section: no seat in two
//! orders, the sold bytes of the state are exactly the orders' seats, the
//! stock is exactly the free seats.
//!
//! Within loadtest it uses: namespace (the marker field).

use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use anyhow::{Context, Result, anyhow};
use rand::Rng;
use redis::{Commands, ConnectionLike};
use serde::Serialize;

use super::namespace::MARKER_FIELD;
use crate::domain::item::SaleItem;
use crate::domain::slot::{BuyRequest, Outcome, PreheatMode};
use crate::model::campaign::Campaign;
use crate::model::error::usage;
use crate::model::keys::LOADTEST_PREFIX;
use crate::model::layout::Layout;
use crate::model::seats::{Seat, SeatAsk, Seating};
use crate::redis_client::conn::RedisTarget;

/// Seats of a best-available buy.
pub(crate) const BEST_QTY: u32 = 4;
/// Seats of a named buy (side by side in one row).
pub(crate) const NAMED_QTY: u32 = 2;
/// Named buys aim at the first rows of a section.
pub(crate) const FRONT_ROWS: u32 = 3;

/// How the seat load test runs.
#[derive(Debug, Clone)]
pub(crate) struct SeatRun {
    pub(crate) threads: usize,
    /// Most attempts in all.
    pub(crate) requests: u64,
}

/// What the seat sale did, and whether every seat was sold at most once.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct SeatReport {
    pub(crate) sections: usize,
    /// Seats on sale (blocked ones not counted).
    pub(crate) seats: i64,
    pub(crate) threads: usize,
    pub(crate) attempts: u64,
    pub(crate) best_ok: u64,
    pub(crate) named_ok: u64,
    /// Named buys that met a seat already taken.
    pub(crate) seat_taken: u64,
    /// Best buys with no block of their size left.
    pub(crate) no_block: u64,
    pub(crate) sold_out: u64,
    /// Any other answer (none expected: no limit, window or rate limit here).
    pub(crate) other: u64,
    pub(crate) seats_sold: u64,
    pub(crate) elapsed_s: f64,
    pub(crate) seats_per_s: f64,
    /// Single free seats stranded between taken seats (or a taken seat and
    /// the row's end), summed over the sections.
    pub(crate) holes: u64,
    pub(crate) free_left: u64,
    /// Seats named by two orders (must be 0).
    pub(crate) sold_twice: u64,
    pub(crate) orders_checked: u64,
    /// "exact", or what is wrong.
    pub(crate) verdict: String,
}

/// Run the seat sale once on the load-test namespace of `item_id`, then
/// delete it (unless `keep`).
pub(crate) fn run(
    target: &RedisTarget,
    campaign: &Campaign,
    item_id: &str,
    settings: &SeatRun,
    keep: bool,
) -> Result<SeatReport> {
    // Every ok final (no hold), no window, no limit: the seats run out, not
    // the buyers' patience.
    let mut copy = campaign.clone();
    copy.starts_at_ms = None;
    copy.ends_at_ms = None;
    copy.rate_limit = None;
    copy.payment_timeout = None;
    copy.per_user_limit = u32::MAX / 2;
    copy.items.retain(|item| item.id == item_id);
    let item = copy
        .items
        .first()
        .ok_or_else(|| anyhow!("the campaign has no item {item_id}"))?;
    let seating = item.seating.clone().ok_or_else(|| {
        usage(format!(
            "--variant seats needs a seat item (docs/seats.md); item {item_id} of campaign {} has a stock, not seats (--item ID)",
            campaign.id
        ))
    })?;
    let sale = SaleItem::under(LOADTEST_PREFIX, &copy, item);
    let layout = sale.layout().clone();
    let mut control = target.connect()?;
    ensure_ours(&mut control, &layout)?;
    let scan_too = !control.is_cluster();
    sale.delete(&mut control, scan_too)?;
    for slot in layout.all() {
        let () = control
            .hset(&slot.keys.meta, MARKER_FIELD, "seats")
            .with_context(|| format!("cannot mark {}", slot.keys.base))?;
    }
    let outcome = sell(target, &copy, &sale, &seating, settings).and_then(|mut report| {
        check(&mut control, &layout, &seating, &mut report)?;
        Ok(report)
    });
    if !keep {
        sale.delete(&mut control, scan_too)?;
    }
    outcome
}

/// The buyers, until a best block is refused everywhere or the attempts run out.
fn sell(
    target: &RedisTarget,
    campaign: &Campaign,
    sale: &SaleItem,
    seating: &Seating,
    settings: &SeatRun,
) -> Result<SeatReport> {
    let mut control = target.connect()?;
    let preheat = sale.preheat(&mut control, PreheatMode::Force, false)?;
    if preheat.report.status.refused() {
        return Err(anyhow!(
            "cannot set up the load-test seats: {:?}",
            preheat.report.status
        ));
    }
    let issued = AtomicU64::new(0);
    let over = AtomicBool::new(false);
    let totals = Mutex::new(SeatReport::default());
    let started = Instant::now();
    std::thread::scope(|scope| -> Result<()> {
        let workers: Vec<_> = (0..settings.threads)
            .map(|_| {
                scope.spawn(|| -> Result<()> {
                    let mut conn = target.connect()?;
                    let mut mine = SeatReport::default();
                    let mut rng = rand::rng();
                    while !over.load(Ordering::Relaxed) {
                        let n = issued.fetch_add(1, Ordering::Relaxed);
                        if n >= settings.requests {
                            break;
                        }
                        let named = rng.random_bool(0.5);
                        let (qty, ask) = if named {
                            (NAMED_QTY, front_pair(seating, &mut rng))
                        } else {
                            (
                                BEST_QTY,
                                SeatAsk::Best {
                                    tier: None,
                                    section: None,
                                },
                            )
                        };
                        let user = format!("s{n}");
                        let reply = sale
                            .reserve(
                                &mut conn,
                                &BuyRequest {
                                    campaign: &campaign.id,
                                    item: sale.id(),
                                    user: &user,
                                    qty,
                                    request_id: None,
                                    ticket: None,
                                    seats: Some(ask),
                                },
                                0,
                            )?
                            .reply;
                        mine.attempts += 1;
                        match reply.outcome {
                            Outcome::Ok if named => mine.named_ok += 1,
                            Outcome::Ok => mine.best_ok += 1,
                            Outcome::SeatTaken => mine.seat_taken += 1,
                            Outcome::NoBlock | Outcome::SoldOut => {
                                if reply.outcome == Outcome::NoBlock {
                                    mine.no_block += 1;
                                } else {
                                    mine.sold_out += 1;
                                }
                                if !named {
                                    over.store(true, Ordering::Relaxed);
                                }
                            }
                            _ => mine.other += 1,
                        }
                        if reply.outcome == Outcome::Ok {
                            mine.seats_sold += u64::from(qty);
                        }
                    }
                    let mut all = totals.lock().unwrap_or_else(|e| e.into_inner());
                    all.attempts += mine.attempts;
                    all.best_ok += mine.best_ok;
                    all.named_ok += mine.named_ok;
                    all.seat_taken += mine.seat_taken;
                    all.no_block += mine.no_block;
                    all.sold_out += mine.sold_out;
                    all.other += mine.other;
                    all.seats_sold += mine.seats_sold;
                    Ok(())
                })
            })
            .collect();
        for worker in workers {
            worker
                .join()
                .map_err(|_| anyhow!("a seat buyer thread panicked"))??;
        }
        Ok(())
    })?;
    let mut report = totals.into_inner().unwrap_or_else(|e| e.into_inner());
    report.elapsed_s = started.elapsed().as_secs_f64();
    report.seats_per_s = report.seats_sold as f64 / report.elapsed_s.max(1e-9);
    report.sections = seating.sections.len();
    report.seats = seating.sellable();
    report.threads = settings.threads;
    Ok(report)
}

/// [`NAMED_QTY`] seats side by side in one of the first [`FRONT_ROWS`] rows
/// of a random section (its preferred end: the back rows when it sells back first).
fn front_pair(seating: &Seating, rng: &mut impl Rng) -> SeatAsk {
    let section_index = rng.random_range(0..seating.sections.len());
    let section = &seating.sections[section_index];
    let rows = section.rows.min(FRONT_ROWS);
    let mut row = rng.random_range(0..rows);
    if section.back_first {
        row = section.rows - 1 - row;
    }
    let width = NAMED_QTY.min(section.seats_per_row);
    let first = rng.random_range(0..=section.seats_per_row - width);
    SeatAsk::Named(
        (0..width)
            .map(|k| Seat {
                section: section_index,
                index: row * section.seats_per_row + first + k,
            })
            .collect(),
    )
}

/// The proof, section by section: each order's seats from the stream, no
/// seat in two orders, the sold bytes = their union, stock = free seats;
/// and the holes left.
fn check<C: ConnectionLike>(
    conn: &mut C,
    layout: &Layout,
    seating: &Seating,
    report: &mut SeatReport,
) -> Result<()> {
    let mut problems = Vec::new();
    for (s, section) in seating.sections.iter().enumerate() {
        let keys = layout.bucket(s as u32).keys;
        let (state, stock): (Vec<u8>, i64) = redis::pipe()
            .atomic()
            .get(&keys.seats)
            .get(&keys.stock)
            .query(conn)
            .with_context(|| format!("cannot read {}", keys.seats))?;
        let entries: redis::streams::StreamRangeReply = conn
            .xrange_all(&keys.orders)
            .with_context(|| format!("cannot read {}", keys.orders))?;
        let mut sold: HashSet<u32> = HashSet::new();
        for entry in &entries.ids {
            let Some(labels) = entry.get::<String>("seats") else {
                continue;
            };
            report.orders_checked += 1;
            for label in labels.split(',') {
                let seat = seating
                    .seat(label)
                    .map_err(|why| anyhow!("order entry {}: seat {label} {why}", entry.id))?;
                if seat.section != s || !sold.insert(seat.index) {
                    report.sold_twice += 1;
                }
            }
        }
        let in_state: HashSet<u32> = (0..state.len() as u32)
            .filter(|&i| state[i as usize] == b's')
            .collect();
        if in_state != sold {
            problems.push(format!(
                "section {}: {} seats sold in the state, {} in the orders",
                section.id,
                in_state.len(),
                sold.len()
            ));
        }
        let free = state.iter().filter(|&&b| b == b'.').count() as i64;
        if free != stock {
            problems.push(format!(
                "section {}: stock {stock}, {free} free seats",
                section.id
            ));
        }
        report.free_left += free as u64;
        let per_row = section.seats_per_row as usize;
        for row in state.chunks(per_row.max(1)) {
            for (i, &byte) in row.iter().enumerate() {
                let walled =
                    |j: Option<usize>| j.and_then(|j| row.get(j)).is_none_or(|&b| b != b'.');
                if byte == b'.' && walled(i.checked_sub(1)) && walled(Some(i + 1)) {
                    report.holes += 1;
                }
            }
        }
    }
    if report.sold_twice > 0 {
        problems.insert(0, format!("{} seats sold twice", report.sold_twice));
    }
    report.verdict = if problems.is_empty() {
        "exact".to_string()
    } else {
        problems.join("; ")
    };
    Ok(())
}

/// Refuse to touch section keys under the load-test prefix that no load test wrote.
fn ensure_ours<C: ConnectionLike>(conn: &mut C, layout: &Layout) -> Result<()> {
    for slot in layout.all() {
        let existing: u64 = conn
            .exists(&slot.fixed()[..])
            .with_context(|| format!("cannot check {}", slot.keys.base))?;
        let marked: bool = conn
            .hexists(&slot.keys.meta, MARKER_FIELD)
            .with_context(|| format!("cannot read {}", slot.keys.meta))?;
        if existing > 0 && !marked {
            return Err(usage(format!(
                "refusing to load-test: keys under {}* exist but were not written by a load test",
                slot.keys.base
            )));
        }
    }
    Ok(())
}
