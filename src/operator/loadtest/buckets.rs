//! `seckill loadtest --buckets N` (N ≥ 2): the real bucket buy path (the
//! item layer's [`SaleItem::buy`]) driven by many threads against one
//! bucketed item in the load test's own namespace (`seckill-loadtest:`),
//! standalone or on a cluster. Besides the usual figures it reports what
//! buckets cost and buy: round trips per successful buy (mean, p99), the
//! share of successful buys that needed a transfer, "undersold" (units left
//! while someone was told `sold_out`: must be 0) and per-bucket stock,
//! orders and transfers.
//!
//! A scenario-level driver, not the engine's worker loop: a buy is the
//! domain's conversation of one to many round trips (home bucket, then the
//! sweep and its transfers, decided from each reply), run on a blocking
//! redis-rs connection per thread. It takes its attempts from the engine's
//! closed-loop [`Source`] and records into the engine's [`Tally`] and
//! [`Histogram`] (latency; round trips per buy).
//!
//! Within loadtest it uses: namespace.

use std::sync::atomic::AtomicU64;
use std::time::Instant;

use anyhow::{Context, Result, anyhow};
use redis::{Commands, ConnectionLike};
use seckill_loadgen::{Histogram, Pace, Source, Tally};
use serde::Serialize;

use super::namespace::MARKER_FIELD;
use crate::domain::buckets::scripts;
use crate::domain::item::{Attempt, SaleItem};
use crate::domain::slot::PreheatMode;
use crate::domain::slot::{BuyRequest, Outcome};
use crate::model::campaign::Campaign;
use crate::model::error::usage;
use crate::model::keys::LOADTEST_PREFIX;
use crate::model::layout::{Layout, home_bucket, key_slot};
use crate::redis_client::conn::RedisTarget;

/// What to run.
#[derive(Debug, Clone)]
pub(crate) struct BucketRun {
    pub(crate) threads: usize,
    pub(crate) requests: u64,
    pub(crate) users: u64,
    pub(crate) stock: i64,
    pub(crate) buckets: u32,
    /// Skewed demand: every synthetic user's home is one of the first K buckets.
    pub(crate) hot_buckets: Option<u32>,
    /// Keep the campaign's rate limit (`--rate-limit`).
    pub(crate) rate_limit: bool,
}

/// One bucket after the run.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct BucketFigures {
    pub(crate) bucket: u32,
    pub(crate) slot: u16,
    pub(crate) initial_stock: i64,
    pub(crate) final_stock: i64,
    /// Orders sold from this bucket (its stream's length).
    pub(crate) orders: u64,
    pub(crate) transfers_out: u64,
    pub(crate) transfers_in: u64,
}

/// The run's figures (one JSON object).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct BucketReport {
    pub(crate) variant: &'static str,
    pub(crate) buckets: u32,
    /// `uniform`, or `skewed: homes in K of N buckets`.
    pub(crate) demand: String,
    pub(crate) requests: u64,
    pub(crate) threads: usize,
    pub(crate) users: u64,
    pub(crate) stock: i64,
    pub(crate) elapsed_s: f64,
    pub(crate) qps: f64,
    pub(crate) succeeded: u64,
    pub(crate) sold_out: u64,
    pub(crate) rejected: u64,
    pub(crate) oversold: u64,
    /// Units left at the end although some attempt was told `sold_out`.
    pub(crate) undersold: u64,
    pub(crate) final_stock: i64,
    pub(crate) stream_len: u64,
    pub(crate) p50_ms: f64,
    pub(crate) p99_ms: f64,
    pub(crate) round_trips_per_ok_mean: f64,
    pub(crate) round_trips_per_ok_p99: u64,
    pub(crate) round_trips_per_sold_out_mean: f64,
    /// Share of successful buys that needed a transfer.
    pub(crate) transfer_share: f64,
    pub(crate) transfers: u64,
    pub(crate) per_bucket: Vec<BucketFigures>,
    pub(crate) verdict: String,
}

/// What one thread counted besides latency.
#[derive(Default)]
struct BucketCounts {
    succeeded: u64,
    sold_out: u64,
    rejected: u64,
    ok_with_transfer: u64,
    ok_round_trips: u64,
    sold_out_round_trips: u64,
    /// Round trips of each successful buy.
    ok_trips: Histogram,
}

impl seckill_loadgen::Counts for BucketCounts {
    fn absorb(&mut self, other: BucketCounts) {
        self.succeeded += other.succeeded;
        self.sold_out += other.sold_out;
        self.rejected += other.rejected;
        self.ok_with_transfer += other.ok_with_transfer;
        self.ok_round_trips += other.ok_round_trips;
        self.sold_out_round_trips += other.sold_out_round_trips;
        self.ok_trips.merge(&other.ok_trips);
    }
}

/// Run the bucketed `full` variant once: set the namespace up, drive it, read
/// the result, delete the namespace (unless `keep`).
pub(crate) fn run(
    target: &RedisTarget,
    campaign: &Campaign,
    item_id: &str,
    run: &BucketRun,
    keep: bool,
) -> Result<BucketReport> {
    // As the plain `full` variant: no sale window, the rate limit only on request.
    let mut copy = campaign.clone();
    copy.starts_at_ms = None;
    copy.ends_at_ms = None;
    if !run.rate_limit {
        copy.rate_limit = None;
    }
    copy.items.retain(|i| i.id == item_id);
    copy.items[0].stock = run.stock;
    copy.items[0].buckets = run.buckets;
    // The waiting room has its own scenario (`--variant queue`).
    copy.items[0].waiting_room = None;
    let sale = SaleItem::under(LOADTEST_PREFIX, &copy, &copy.items[0]);
    let layout = sale.layout().clone();
    let mut control = target.connect()?;
    ensure_ours(&mut control, &layout)?;
    let scan_too = !control.is_cluster();
    sale.delete(&mut control, scan_too)?;
    for bucket in layout.all() {
        let () = control
            .hset(&bucket.keys.meta, MARKER_FIELD, "buckets")
            .with_context(|| format!("cannot mark {}", bucket.keys.base))?;
    }
    let split = sale.preheat(&mut control, PreheatMode::Force, false)?;
    if split.report.status.refused() {
        return Err(anyhow!(
            "cannot set up the load-test buckets: {:?}",
            split.report.status
        ));
    }
    let users = synthetic_users(run);

    let issued = AtomicU64::new(0);
    let started = Instant::now();
    let tallies = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..run.threads)
            .map(|worker| {
                let (sale, users, issued) = (&sale, &users, &issued);
                scope.spawn(move || -> Result<Tally<BucketCounts>> {
                    let mut conn = target.connect()?;
                    let mut tally = Tally::<BucketCounts>::new();
                    let mut source = Source::new(
                        Pace::Closed,
                        run.requests,
                        issued,
                        worker,
                        run.threads,
                        Instant::now(),
                    );
                    let mut taken = Vec::with_capacity(1);
                    loop {
                        taken.clear();
                        source.take(Instant::now(), 1, &mut taken);
                        let Some(attempt) = taken.first() else {
                            break;
                        };
                        let user = &users[(attempt.number % users.len() as u64) as usize];
                        let request = BuyRequest {
                            campaign: &campaign.id,
                            item: item_id,
                            user,
                            qty: 1,
                            request_id: None,
                            ticket: None,
                            seats: None,
                        };
                        let Attempt { reply, cost, .. } = sale.buy(&mut conn, &request)?;
                        tally.answered(attempt, Instant::now());
                        let counts = &mut tally.counts;
                        match reply.outcome {
                            Outcome::Ok => {
                                counts.succeeded += 1;
                                counts.ok_round_trips += u64::from(cost.round_trips);
                                counts.ok_with_transfer += u64::from(cost.transfers > 0);
                                counts.ok_trips.record(u64::from(cost.round_trips));
                            }
                            Outcome::SoldOut => {
                                counts.sold_out += 1;
                                counts.sold_out_round_trips += u64::from(cost.round_trips);
                            }
                            _ => counts.rejected += 1,
                        }
                    }
                    Ok(tally)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| {
                worker
                    .join()
                    .map_err(|_| anyhow!("a load-test worker panicked"))?
            })
            .collect::<Result<Vec<_>>>()
    })?;
    let elapsed = started.elapsed().as_secs_f64();
    let mut merged = Tally::<BucketCounts>::new();
    for tally in tallies {
        merged.absorb(tally);
    }
    let total = &merged.counts;
    let mut per_bucket = Vec::new();
    for (bucket, part) in layout.all().iter().zip(&split.per_bucket) {
        let snap = scripts::snapshot(&mut control, bucket)?;
        per_bucket.push(BucketFigures {
            bucket: bucket.bucket,
            slot: key_slot(&bucket.keys.stock),
            initial_stock: part.report.redis_stock_after.unwrap_or(0),
            final_stock: snap.stock.unwrap_or(0),
            orders: snap.stream_len,
            transfers_out: snap.out_count,
            transfers_in: snap.in_count,
        });
    }
    if !keep {
        sale.delete(&mut control, scan_too)?;
    }
    let final_stock: i64 = per_bucket.iter().map(|b| b.final_stock).sum();
    let stream_len: u64 = per_bucket.iter().map(|b| b.orders).sum();
    let transfers: u64 = per_bucket.iter().map(|b| b.transfers_out).sum();
    let oversold = (total.succeeded as i64 - run.stock)
        .max(-final_stock)
        .max(0) as u64;
    let undersold = if total.sold_out > 0 {
        final_stock.max(0) as u64
    } else {
        0
    };
    let verdict = if oversold > 0 {
        format!("OVERSOLD {oversold}")
    } else if undersold > 0 {
        format!("UNDERSOLD {undersold}")
    } else if final_stock != run.stock - total.succeeded as i64 {
        format!("STOCK DRIFT: {final_stock} left (or in transit)")
    } else if stream_len != total.succeeded {
        format!(
            "STREAM DRIFT: {stream_len} orders for {} sales",
            total.succeeded
        )
    } else {
        "exact".into()
    };
    let latency = &merged.corrected;
    let per = |sum: u64, n: u64| if n == 0 { 0.0 } else { sum as f64 / n as f64 };
    Ok(BucketReport {
        variant: "full",
        buckets: run.buckets,
        demand: match run.hot_buckets {
            Some(k) => format!("skewed: homes in {k} of {} buckets", run.buckets),
            None => "uniform".into(),
        },
        requests: run.requests,
        threads: run.threads,
        users: users.len() as u64,
        stock: run.stock,
        elapsed_s: elapsed,
        qps: run.requests as f64 / elapsed.max(1e-9),
        succeeded: total.succeeded,
        sold_out: total.sold_out,
        rejected: total.rejected,
        oversold,
        undersold,
        final_stock,
        stream_len,
        p50_ms: latency.value_at_quantile(0.5) as f64 / 1000.0,
        p99_ms: latency.value_at_quantile(0.99) as f64 / 1000.0,
        round_trips_per_ok_mean: per(total.ok_round_trips, total.succeeded),
        round_trips_per_ok_p99: total.ok_trips.value_at_quantile(0.99),
        round_trips_per_sold_out_mean: per(total.sold_out_round_trips, total.sold_out),
        transfer_share: per(total.ok_with_transfer, total.succeeded),
        transfers,
        per_bucket,
        verdict,
    })
}

/// Refuse to touch bucket keys under the load-test prefix that no load test wrote.
fn ensure_ours<C: ConnectionLike>(conn: &mut C, layout: &Layout) -> Result<()> {
    for bucket in layout.all() {
        let existing: u64 = conn
            .exists(&bucket.fixed()[..])
            .with_context(|| format!("cannot check {}", bucket.keys.base))?;
        let marked: bool = conn
            .hexists(&bucket.keys.meta, MARKER_FIELD)
            .with_context(|| format!("cannot read {}", bucket.keys.meta))?;
        if existing > 0 && !marked {
            return Err(usage(format!(
                "refusing to load-test: keys under {}* exist but were not written by a load test",
                bucket.keys.base
            )));
        }
    }
    Ok(())
}

/// `u<n>` ids; for skewed demand only those whose home is among the first K buckets.
fn synthetic_users(run: &BucketRun) -> Vec<String> {
    let hot = run.hot_buckets.unwrap_or(run.buckets);
    (0..)
        .map(|n| format!("u{n}"))
        .filter(|u| home_bucket(u, run.buckets) < hot)
        .take(run.users as usize)
        .collect()
}
