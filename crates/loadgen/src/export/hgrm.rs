//! One HdrHistogram percentile-distribution file (`.hgrm`) per histogram:
//! the text `outputPercentileDistribution` prints in the reference (Java)
//! implementation, values in milliseconds, so the standard HdrHistogram
//! plotter draws it and several runs overlay.
//!
//! May import: histogram.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::histogram::Histogram;

/// Percentile steps per halving of the distance to 100% (the reference default).
const TICKS_PER_HALF_DISTANCE: u32 = 5;
/// Recorded values are µs; files are in ms.
const MICROS_PER_MS: f64 = 1000.0;

/// `<prefix><name><suffix>.hgrm`, e.g. `runs/a-v3.hgrm`.
pub fn path(prefix: &str, name: &str, suffix: &str) -> PathBuf {
    PathBuf::from(format!("{prefix}{name}{suffix}.hgrm"))
}

/// Write `latency` (µs) to `path`.
pub fn write_file(path: &Path, latency: &Histogram) -> Result<()> {
    let mut text = Vec::new();
    write(&mut text, latency).context("cannot format a percentile distribution")?;
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// The percentile distribution of `latency` (µs) in the `.hgrm` text format.
pub fn write(out: &mut impl Write, latency: &Histogram) -> std::io::Result<()> {
    let latency = latency.hdr();
    let digits = usize::from(latency.sigfig());
    writeln!(
        out,
        "{:>12} {:>14} {:>10} {:>14}\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    )?;
    let mut total = 0u64;
    for step in latency.iter_quantiles(TICKS_PER_HALF_DISTANCE) {
        total += step.count_since_last_iteration();
        let value = step.value_iterated_to() as f64 / MICROS_PER_MS;
        let quantile = step.quantile_iterated_to();
        if quantile < 1.0 {
            writeln!(
                out,
                "{value:12.digits$} {quantile:2.12} {total:10} {:14.2}",
                1.0 / (1.0 - quantile)
            )?;
        } else {
            writeln!(out, "{value:12.digits$} {quantile:2.12} {total:10}")?;
        }
    }
    let ms = |micros: f64| micros / MICROS_PER_MS;
    writeln!(
        out,
        "#[Mean    = {:12.digits$}, StdDeviation   = {:12.digits$}]",
        ms(latency.mean()),
        ms(latency.stdev())
    )?;
    writeln!(
        out,
        "#[Max     = {:12.digits$}, Total count    = {:12}]",
        ms(latency.max() as f64),
        latency.len()
    )?;
    // Sub-buckets: the power of two covering 2 × 10^digits (2048 at 3 digits).
    let sub_buckets = (2 * 10u64.pow(digits as u32)).next_power_of_two();
    writeln!(
        out,
        "#[Buckets = {:12}, SubBuckets     = {:12}]",
        latency.buckets(),
        sub_buckets
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distribution_ends_at_the_total_count() {
        let mut latency = Histogram::new();
        for micros in 1..=1000 {
            latency.record(micros * 10);
        }
        let mut text = Vec::new();
        write(&mut text, &latency).unwrap();
        let text = String::from_utf8(text).unwrap();
        let last = text
            .lines()
            .rfind(|l| !l.starts_with('#') && !l.trim().is_empty())
            .unwrap();
        let columns: Vec<&str> = last.split_whitespace().collect();
        assert_eq!(columns[1], "1.000000000000");
        assert_eq!(columns[2], "1000");
        assert!(text.contains("Total count    =         1000]"));
        assert_eq!(
            path("runs/a-", "v3", ".service"),
            PathBuf::from("runs/a-v3.service.hgrm")
        );
    }
}
