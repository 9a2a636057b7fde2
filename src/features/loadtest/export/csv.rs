//! `--format csv`: the first eight columns are exactly redis-benchmark's
//! `--csv` columns (same names, same quoting, rps to 2 decimals, latencies
//! in ms to 3), so a spreadsheet or script that reads one reads the other;
//! ours follow. Latency columns are the corrected latency (from the planned
//! send time; in closed loop that equals the service time).

use std::io::Write;

use anyhow::{Context, Result};

use crate::features::loadtest::report::VariantReport;

/// redis-benchmark 7.0's `--csv` header, column for column.
pub(crate) const REDIS_BENCHMARK_COLUMNS: [&str; 8] = [
    "test",
    "rps",
    "avg_latency_ms",
    "min_latency_ms",
    "p50_latency_ms",
    "p95_latency_ms",
    "p99_latency_ms",
    "max_latency_ms",
];

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

/// Write the header and one line per variant.
pub(crate) fn write(out: &mut impl Write, reports: &[VariantReport]) -> Result<()> {
    let header: Vec<String> = REDIS_BENCHMARK_COLUMNS
        .iter()
        .chain(OUR_COLUMNS.iter())
        .map(|name| quote(name))
        .collect();
    writeln!(out, "{}", header.join(",")).context("cannot write CSV")?;
    for r in reports {
        let ms = |value: f64| format!("{value:.3}");
        let fields = [
            r.variant.as_str().to_string(),
            format!("{:.2}", r.qps),
            ms(r.avg_ms),
            ms(r.min_ms),
            ms(r.p50_ms),
            ms(r.p95_ms),
            ms(r.p99_ms),
            ms(r.max_ms),
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
        ];
        let line: Vec<String> = fields.iter().map(|f| quote(f)).collect();
        writeln!(out, "{}", line.join(",")).context("cannot write CSV")?;
    }
    Ok(())
}

/// Every field quoted, as redis-benchmark does; quotes inside doubled (RFC 4180).
fn quote(field: &str) -> String {
    format!("\"{}\"", field.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_quoted_like_redis_benchmark() {
        assert_eq!(quote("rps"), "\"rps\"");
        assert_eq!(quote("a \"b\""), "\"a \"\"b\"\"\"");
    }
}
