//! The one histogram type every scenario records into (HdrHistogram: 1 to
//! [`HISTOGRAM_MAX`], 3 significant digits; latencies in µs, or small
//! counts such as round trips per buy), and the latency percentiles that
//! reports print. Workers record into histograms of their own and merge
//! them at the end: nothing is shared on the hot path.
//!
//! Recording is `#[inline]`, as in `wire`: it runs on every reply.
//!
//! May import: nothing of the crate.

use std::time::Instant;

use serde::Serialize;

/// The largest value recorded (an hour, in µs); larger values are recorded as this.
pub const HISTOGRAM_MAX: u64 = 3_600_000_000;

/// Significant decimal digits kept of every value.
const SIGNIFICANT_DIGITS: u8 = 3;

/// A histogram of positive values (latencies in µs, or counts).
#[derive(Debug, Clone)]
pub struct Histogram(hdrhistogram::Histogram<u64>);

impl Default for Histogram {
    fn default() -> Histogram {
        Histogram::new()
    }
}

impl Histogram {
    pub fn new() -> Histogram {
        // Constant, valid bounds: creating it cannot fail.
        Histogram(
            hdrhistogram::Histogram::new_with_bounds(1, HISTOGRAM_MAX, SIGNIFICANT_DIGITS)
                .expect("the histogram's bounds are valid"),
        )
    }

    /// Record `value`, clamped to 1..=[`HISTOGRAM_MAX`].
    #[inline]
    pub fn record(&mut self, value: u64) {
        self.0.saturating_record(value.max(1));
    }

    /// Record the time from `from` to `to`, in µs (at least 1).
    #[inline]
    pub fn record_between(&mut self, from: Instant, to: Instant) {
        let micros = to.saturating_duration_since(from).as_micros();
        self.record(u64::try_from(micros).unwrap_or(HISTOGRAM_MAX));
    }

    /// Add `other`'s values to this one's.
    pub fn merge(&mut self, other: &Histogram) {
        // Both have the same bounds: adding cannot fail.
        self.0
            .add(&other.0)
            .expect("histograms of the same bounds add up");
    }

    /// Values recorded.
    pub fn len(&self) -> u64 {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value at `quantile` (0..=1): the highest value equivalent to it.
    pub fn value_at_quantile(&self, quantile: f64) -> u64 {
        self.0.value_at_quantile(quantile)
    }

    /// The latency percentiles of this histogram (values in µs), in ms.
    pub fn percentiles(&self) -> Percentiles {
        let ms = |micros: u64| micros as f64 / 1000.0;
        let at = |quantile: f64| ms(self.0.value_at_quantile(quantile));
        Percentiles {
            min_ms: ms(self.0.min()),
            avg_ms: self.0.mean() / 1000.0,
            p50_ms: at(0.50),
            p90_ms: at(0.90),
            p95_ms: at(0.95),
            p99_ms: at(0.99),
            p99_9_ms: at(0.999),
            max_ms: ms(self.0.max()),
        }
    }

    /// The HdrHistogram itself, for the `.hgrm` export.
    pub(crate) fn hdr(&self) -> &hdrhistogram::Histogram<u64> {
        &self.0
    }
}

/// Latency percentiles of one histogram, in milliseconds.
#[derive(Debug, Clone, Serialize)]
pub struct Percentiles {
    /// Fastest request, milliseconds.
    pub min_ms: f64,
    /// Mean, milliseconds.
    pub avg_ms: f64,
    /// Median, milliseconds.
    pub p50_ms: f64,
    /// 90th percentile, milliseconds.
    pub p90_ms: f64,
    /// 95th percentile, milliseconds.
    pub p95_ms: f64,
    /// 99th percentile, milliseconds.
    pub p99_ms: f64,
    /// 99.9th percentile, milliseconds.
    pub p99_9_ms: f64,
    /// Slowest request, milliseconds.
    pub max_ms: f64,
}

impl Percentiles {
    /// The percentiles of `latency` (µs).
    pub fn of(latency: &Histogram) -> Percentiles {
        latency.percentiles()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn values_are_clamped_and_merged() {
        let mut a = Histogram::new();
        a.record(0);
        a.record(HISTOGRAM_MAX * 2);
        let start = Instant::now();
        a.record_between(start + Duration::from_millis(5), start);
        let mut b = Histogram::new();
        b.record_between(start, start + Duration::from_millis(250));
        a.merge(&b);
        assert_eq!(a.len(), 4);
        assert_eq!(a.value_at_quantile(0.0), 1);
        assert!(a.value_at_quantile(1.0) >= HISTOGRAM_MAX);
        let p = b.percentiles();
        assert!((p.p50_ms - 250.0).abs() < 0.25, "{p:?}");
        // One value: min and max are the two ends of its bucket.
        assert!(p.min_ms <= p.max_ms && p.max_ms - p.min_ms < 0.25, "{p:?}");
    }

    #[test]
    fn percentiles_are_in_milliseconds() {
        let mut latency = Histogram::new();
        for micros in 1..=1000 {
            latency.record(micros * 10);
        }
        let p = Percentiles::of(&latency);
        assert_eq!(p.min_ms, 0.01);
        assert!((p.p50_ms - 5.0).abs() < 0.01, "{p:?}");
        assert!((p.p99_ms - 9.9).abs() < 0.01, "{p:?}");
        assert!((p.max_ms - 10.0).abs() < 0.01, "{p:?}");
        assert!((p.avg_ms - 5.005).abs() < 0.01, "{p:?}");
    }
}
