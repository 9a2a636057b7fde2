//! The variants' results in the files other tools read, written by the
//! engine's exporters: `--format csv` (redis-benchmark's `--csv` columns
//! first, ours after) and `--hdr-out` (one `.hgrm` per variant). Latency
//! columns are the corrected latency (from the planned send time; in closed
//! loop that equals the service time).
//!
//! Within loadtest it uses: report.

use std::io::Write;

use anyhow::Result;
use seckill_loadgen::export::{csv, hgrm};

use super::VariantRun;
use super::report::VariantReport;

/// Our columns after redis-benchmark's.
pub(crate) const OUR_COLUMNS: [&str; 17] = [
    "oversold",
    "undersold",
    "succeeded",
    "unreplicated",
    "sold_out",
    "rejected",
    "final_stock",
    "stream_len",
    "p90_latency_ms",
    "p99_9_latency_ms",
    "service_p50_latency_ms",
    "service_p99_latency_ms",
    "requested_rate",
    "late_sends",
    "dropped",
    "connections",
    "verdict",
];

/// `--format csv`: the header and one line per variant.
pub(crate) fn csv(out: &mut impl Write, reports: &[VariantReport]) -> Result<()> {
    let corrected: Vec<_> = reports.iter().map(corrected_latency).collect();
    let rows: Vec<csv::Row<'_>> = reports
        .iter()
        .zip(&corrected)
        .map(|(r, latency)| {
            let ms = |value: f64| format!("{value:.3}");
            csv::Row {
                test: r.variant.as_str(),
                rps: r.qps,
                latency,
                more: vec![
                    r.oversold.to_string(),
                    r.undersold.to_string(),
                    r.succeeded.to_string(),
                    r.unreplicated.to_string(),
                    r.sold_out.to_string(),
                    r.rejected.to_string(),
                    r.final_stock.to_string(),
                    r.stream_len.to_string(),
                    ms(r.p90_ms),
                    ms(r.p99_9_ms),
                    ms(r.service.p50_ms),
                    ms(r.service.p99_ms),
                    r.requested_rate
                        .map_or(String::new(), |rate| format!("{rate:.2}")),
                    r.late_sends.to_string(),
                    r.dropped.to_string(),
                    r.connections.to_string(),
                    r.verdict.clone(),
                ],
            }
        })
        .collect();
    csv::write(out, &OUR_COLUMNS, &rows)
}

/// The corrected latency of a report, which carries it flat beside the service time's.
fn corrected_latency(r: &VariantReport) -> seckill_loadgen::Percentiles {
    seckill_loadgen::Percentiles {
        min_ms: r.min_ms,
        avg_ms: r.avg_ms,
        p50_ms: r.p50_ms,
        p90_ms: r.p90_ms,
        p95_ms: r.p95_ms,
        p99_ms: r.p99_ms,
        p99_9_ms: r.p99_9_ms,
        max_ms: r.max_ms,
    }
}

/// `--hdr-out PREFIX`: one `.hgrm` per variant (and the service time's in open loop).
pub(crate) fn hgrm_files(prefix: &str, runs: &[VariantRun]) -> Result<()> {
    for run in runs {
        let name = run.report.variant.as_str();
        hgrm::write_file(&hgrm::path(prefix, name, ""), &run.corrected)?;
        if run.report.mode == "open" {
            hgrm::write_file(&hgrm::path(prefix, name, ".service"), &run.service)?;
        }
    }
    Ok(())
}
