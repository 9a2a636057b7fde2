//! One variant's result as people and scripts read it: counts, the stock
//! books (oversold, undersold, sold + left = initial), rates and latency
//! percentiles. Built from what the engine measured
//! ([`seckill_loadgen::Measured`]); printed by the command layer (table,
//! JSON) and the exporters (`export`). The CI thresholds too.
//!
//! Within loadtest it uses: variants.

use std::time::Duration;

use seckill_loadgen::{Measured, Percentiles};
use serde::Serialize;

use super::variants::Counts;
use super::{Plan, Variant};

/// A Redis Cluster master's part of the run's commands.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct MasterShare {
    /// The master's address, `host:port`.
    pub(crate) node: String,
    /// Commands the master processed during the variant.
    pub(crate) commands: u64,
    /// Its fraction of all masters' commands, 0–1.
    pub(crate) share: f64,
}

/// One variant's figures: a row of the comparison table, an object of the JSON.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct VariantReport {
    /// v1, v2, v3, v4, full or lock.
    pub(crate) variant: Variant,
    /// `closed` (each connection sends when answered) or `open` (at --rate).
    pub(crate) mode: &'static str,
    /// Attempts planned.
    pub(crate) requests: u64,
    /// Attempts answered.
    pub(crate) completed: u64,
    /// Wall time of the variant, seconds.
    pub(crate) elapsed_s: f64,
    /// Answered attempts per second (= achieved_rate).
    pub(crate) qps: f64,
    /// --rate, attempts per second; null in closed loop.
    pub(crate) requested_rate: Option<f64>,
    /// Answered attempts per second.
    pub(crate) achieved_rate: f64,
    /// Purchases that succeeded (with --wait-replicas: and were replicated).
    pub(crate) succeeded: u64,
    /// `full --wait-replicas`: purchases fewer replicas confirmed in time.
    /// They sold their units: the books count them with `succeeded`.
    pub(crate) unreplicated: u64,
    /// `--wait-replicas` of the run (full only); null without it.
    pub(crate) wait_replicas: Option<u32>,
    /// Attempts answered "sold out".
    pub(crate) sold_out: u64,
    /// Duplicate or rate-limited (full), gave up waiting for the lock (lock).
    pub(crate) rejected: u64,
    /// Units sold beyond the stock: max(sold − stock, −final_stock, 0),
    /// sold = succeeded + unreplicated.
    pub(crate) oversold: u64,
    /// Units still in stock although some attempt was answered sold out.
    pub(crate) undersold: u64,
    /// Stock left in Redis afterwards (negative: oversold).
    pub(crate) final_stock: i64,
    /// The identity sold + left = initial (succeeded + unreplicated + final_stock = stock).
    pub(crate) books_balance: bool,
    /// Entries in the order stream afterwards (full only; 0 for the others).
    pub(crate) stream_len: i64,
    /// Fastest request, ms. This and the latencies up to `max_ms` are
    /// corrected: from the planned send time (= service time in closed loop).
    pub(crate) min_ms: f64,
    /// Mean latency, ms (corrected).
    pub(crate) avg_ms: f64,
    /// Median latency, ms (corrected).
    pub(crate) p50_ms: f64,
    /// 90th percentile latency, ms (corrected).
    pub(crate) p90_ms: f64,
    /// 95th percentile latency, ms (corrected).
    pub(crate) p95_ms: f64,
    /// 99th percentile latency, ms (corrected).
    pub(crate) p99_ms: f64,
    /// 99.9th percentile latency, ms (corrected).
    pub(crate) p99_9_ms: f64,
    /// Slowest request, ms (corrected).
    pub(crate) max_ms: f64,
    /// From the actual send to the reply.
    pub(crate) service: Percentiles,
    /// Attempts sent more than 2 ms behind plan (open loop).
    pub(crate) late_sends: u64,
    /// Attempts never sent because the plan could not be kept (open loop).
    pub(crate) dropped: u64,
    /// v2: aborted transactions; v4: stock seen below zero; lock: busy-lock waits.
    pub(crate) retries: u64,
    /// v4 only: the lowest stock any DECR saw.
    pub(crate) lowest_stock_seen: Option<i64>,
    /// `--stock`: units at the start.
    pub(crate) stock: i64,
    /// `--connections`.
    pub(crate) connections: usize,
    /// Worker threads that drove them.
    pub(crate) threads: usize,
    /// `--pipeline` (1 for the multi-step variants).
    pub(crate) pipeline: usize,
    /// Distinct synthetic shoppers.
    pub(crate) users: u64,
    /// Redis Cluster only: how the commands spread over the masters.
    pub(crate) masters: Option<Vec<MasterShare>>,
    /// "exact", "OVERSOLD n", ...
    pub(crate) verdict: String,
    /// Thresholds this variant failed (--max-p99, --min-qps, books); empty when none.
    pub(crate) thresholds_failed: Vec<String>,
}

/// What Redis held after the variant.
pub(crate) struct Books {
    pub(crate) final_stock: i64,
    pub(crate) stream_len: i64,
}

/// Build the report of `variant` from what the workers measured.
pub(crate) fn build(
    variant: Variant,
    plan: &Plan,
    measured: &Measured<Counts>,
    books: Books,
) -> VariantReport {
    let settings = &plan.settings;
    let tally = &measured.tally;
    let counts = &tally.counts;
    let stock = settings.stock;
    let Books {
        final_stock,
        stream_len,
    } = books;
    // An unreplicated buy sold its unit like any other.
    let sold = counts.succeeded + counts.unreplicated;
    let oversold = (sold as i64 - stock).max(-final_stock).max(0) as u64;
    let undersold = if counts.sold_out > 0 {
        final_stock.max(0) as u64
    } else {
        0
    };
    let completed = tally.completed();
    let elapsed_s = measured.elapsed.as_secs_f64();
    let achieved_rate = completed as f64 / elapsed_s.max(1e-9);
    let corrected = tally.corrected.percentiles();
    VariantReport {
        variant,
        mode: settings.pace.mode(),
        requests: settings.requests,
        completed,
        elapsed_s,
        qps: achieved_rate,
        requested_rate: settings.pace.rate(),
        achieved_rate,
        succeeded: counts.succeeded,
        unreplicated: counts.unreplicated,
        wait_replicas: match variant {
            Variant::Full => settings.wait_replicas,
            _ => None,
        },
        sold_out: counts.sold_out,
        rejected: counts.rejected,
        oversold,
        undersold,
        final_stock,
        books_balance: sold as i64 + final_stock == stock,
        stream_len,
        min_ms: corrected.min_ms,
        avg_ms: corrected.avg_ms,
        p50_ms: corrected.p50_ms,
        p90_ms: corrected.p90_ms,
        p95_ms: corrected.p95_ms,
        p99_ms: corrected.p99_ms,
        p99_9_ms: corrected.p99_9_ms,
        max_ms: corrected.max_ms,
        service: tally.service.percentiles(),
        late_sends: tally.late,
        dropped: tally.dropped,
        retries: counts.retries,
        lowest_stock_seen: counts.lowest_stock_seen,
        stock,
        connections: settings.connections,
        threads: measured.workers,
        pipeline: if variant.pipelines() {
            settings.pipeline
        } else {
            1
        },
        users: settings.users,
        masters: None,
        verdict: verdict(
            variant,
            stock,
            sold,
            oversold,
            undersold,
            final_stock,
            stream_len,
        ),
        thresholds_failed: Vec::new(),
    }
}

/// One line a person can act on: did the books balance?
fn verdict(
    variant: Variant,
    stock: i64,
    succeeded: u64,
    oversold: u64,
    undersold: u64,
    final_stock: i64,
    stream_len: i64,
) -> String {
    let expected_left = stock - succeeded as i64;
    if oversold > 0 {
        format!("OVERSOLD {oversold}")
    } else if final_stock != expected_left {
        format!("STOCK DRIFT: {final_stock} left, {expected_left} expected")
    } else if variant == Variant::Full && stream_len != succeeded as i64 {
        format!("STREAM DRIFT: {stream_len} orders for {succeeded} sales")
    } else if undersold > 0 {
        format!("UNDERSOLD {undersold}")
    } else if final_stock > 0 {
        format!("exact ({final_stock} unsold)")
    } else {
        "exact".to_string()
    }
}

/// The CI thresholds of a run (k6-style): a run that breaks one exits with
/// `exit_codes::THRESHOLD_FAILED`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Thresholds {
    /// Corrected p99 must not exceed this.
    pub(crate) max_p99: Option<Duration>,
    /// Achieved attempts per second must reach this.
    pub(crate) min_qps: Option<f64>,
    /// Oversold fails `v1` too (the variant that oversells by design).
    pub(crate) fail_on_oversell: bool,
}

impl Thresholds {
    /// What `report` failed, in words. Every variant but v1 promises exact
    /// books, so oversold, undersold or drift there always fails.
    pub(crate) fn check(&self, report: &VariantReport) -> Vec<String> {
        let mut failed = Vec::new();
        if let Some(limit) = self.max_p99 {
            let limit_ms = limit.as_secs_f64() * 1000.0;
            if report.p99_ms > limit_ms {
                failed.push(format!(
                    "p99 {:.3} ms > --max-p99 {}",
                    report.p99_ms,
                    humantime::format_duration(limit)
                ));
            }
        }
        if let Some(min) = self.min_qps
            && report.qps < min
        {
            failed.push(format!("qps {:.0} < --min-qps {min}", report.qps));
        }
        let exact = report.variant != Variant::V1;
        if report.oversold > 0 && (exact || self.fail_on_oversell) {
            failed.push(format!("oversold {}", report.oversold));
        }
        if exact && report.undersold > 0 {
            failed.push(format!("undersold {}", report.undersold));
        }
        if exact && report.oversold == 0 && !report.verdict.starts_with("exact") {
            failed.push(report.verdict.clone());
        }
        failed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_name_the_problem() {
        assert_eq!(verdict(Variant::V1, 10, 13, 3, 0, -3, 0), "OVERSOLD 3");
        assert_eq!(verdict(Variant::V3, 10, 10, 0, 0, 0, 0), "exact");
        assert_eq!(verdict(Variant::V3, 10, 4, 0, 0, 6, 0), "exact (6 unsold)");
        assert_eq!(verdict(Variant::V3, 10, 4, 0, 6, 6, 0), "UNDERSOLD 6");
        assert_eq!(
            verdict(Variant::V4, 10, 9, 0, 0, 0, 0),
            "STOCK DRIFT: 0 left, 1 expected"
        );
        assert_eq!(
            verdict(Variant::Full, 10, 10, 0, 0, 0, 9),
            "STREAM DRIFT: 9 orders for 10 sales"
        );
    }
}
