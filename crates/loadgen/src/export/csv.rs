//! CSV whose first eight columns are exactly redis-benchmark's `--csv`
//! columns (same names, same quoting, rps to 2 decimals, latencies in ms to
//! 3), so a spreadsheet or script that reads one reads the other; the
//! caller's own columns follow.
//!
//! May import: histogram.

use std::io::Write;

use anyhow::{Context, Result};

use crate::histogram::Percentiles;

/// redis-benchmark 7.0's `--csv` header, column for column.
pub const REDIS_BENCHMARK_COLUMNS: [&str; 8] = [
    "test",
    "rps",
    "avg_latency_ms",
    "min_latency_ms",
    "p50_latency_ms",
    "p95_latency_ms",
    "p99_latency_ms",
    "max_latency_ms",
];

/// One line: what redis-benchmark's columns say, then the caller's fields.
pub struct Row<'a> {
    /// The `test` column.
    pub test: &'a str,
    /// Requests per second.
    pub rps: f64,
    /// The latency the redis-benchmark columns show.
    pub latency: &'a Percentiles,
    /// The values of the caller's columns, in their order.
    pub more: Vec<String>,
}

/// Write the header (redis-benchmark's columns, then `more_columns`) and one line per row.
pub fn write(out: &mut impl Write, more_columns: &[&str], rows: &[Row<'_>]) -> Result<()> {
    let header: Vec<String> = REDIS_BENCHMARK_COLUMNS
        .iter()
        .chain(more_columns)
        .map(|name| quote(name))
        .collect();
    writeln!(out, "{}", header.join(",")).context("cannot write CSV")?;
    for row in rows {
        let ms = |value: f64| format!("{value:.3}");
        let l = row.latency;
        let fields = [
            row.test.to_string(),
            format!("{:.2}", row.rps),
            ms(l.avg_ms),
            ms(l.min_ms),
            ms(l.p50_ms),
            ms(l.p95_ms),
            ms(l.p99_ms),
            ms(l.max_ms),
        ];
        let line: Vec<String> = fields.iter().chain(&row.more).map(|f| quote(f)).collect();
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
    use crate::histogram::Histogram;

    #[test]
    fn fields_are_quoted_like_redis_benchmark() {
        assert_eq!(quote("rps"), "\"rps\"");
        assert_eq!(quote("a \"b\""), "\"a \"\"b\"\"\"");
    }

    #[test]
    fn lines_start_with_redis_benchmarks_columns() {
        let mut latency = Histogram::new();
        latency.record(1500);
        let latency = latency.percentiles();
        let mut text = Vec::new();
        let rows = [Row {
            test: "v3",
            rps: 1234.5678,
            latency: &latency,
            more: vec!["0".into(), "exact".into()],
        }];
        write(&mut text, &["oversold", "verdict"], &rows).unwrap();
        let text = String::from_utf8(text).unwrap();
        let mut lines = text.lines();
        assert_eq!(
            lines.next().unwrap(),
            "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\
             \"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\",\"oversold\",\"verdict\""
        );
        assert_eq!(
            lines.next().unwrap(),
            "\"v3\",\"1234.57\",\"1.500\",\"1.500\",\"1.500\",\"1.500\",\"1.500\",\"1.500\",\"0\",\"exact\""
        );
    }
}
