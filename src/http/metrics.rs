//! What one `serve` instance counts for its `/metrics`: requests by
//! endpoint, outcome and HTTP status; their latency (a histogram); requests
//! in flight; Redis round trips; answers given from the cache. Counted with
//! atomics on the request path, rendered in the text format only on a scrape,
//! with what every seckill service exports beside its own: whether the
//! scrape reached Redis (`seckill_redis_up`) and `seckill_build_info`.

use std::collections::BTreeMap;
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::operator::monitor::metrics::{REDIS_UP, add_build_info};
use crate::util::prometheus::{Exposition, Metric, counter, gauge};

const REQUESTS: Metric = counter(
    "seckill_serve_requests_total",
    "HTTP requests answered, by endpoint, outcome (the buy outcome, or the refusal) and status.",
);
const DURATION: Metric = Metric {
    name: "seckill_serve_request_duration_seconds",
    kind: "histogram",
    help: "Time from a request's arrival to its answer, by endpoint.",
};
const IN_FLIGHT: Metric = gauge(
    "seckill_serve_in_flight",
    "Requests being answered now (the --max-in-flight limit answers 503 beyond it).",
);
const ROUND_TRIPS: Metric = counter(
    "seckill_serve_redis_round_trips_total",
    "Redis round trips made for requests (a plain buy: 1; a bucketed buy that swept: more).",
);
const CACHE_HITS: Metric = counter(
    "seckill_serve_cache_hits_total",
    "Buy attempts refused from memory, without a Redis call, by outcome.",
);

/// Upper bounds of the latency histogram, seconds.
const BOUNDS: [f64; 12] = [
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

/// One endpoint's latency histogram. Each request adds to the one bucket
/// it falls in (one atomic on the request path, not one per bound above
/// it); a scrape sums them into Prometheus' cumulative `le` buckets.
#[derive(Debug, Default)]
struct Histogram {
    buckets: [AtomicU64; BOUNDS.len()],
    count: AtomicU64,
    sum_us: AtomicU64,
}

/// The endpoints counted apart.
pub(crate) const ENDPOINTS: [&str; 4] = ["buy", "orders", "pay", "cancel"];

/// The outcomes a cache answers.
const CACHED: [&str; 3] = ["sold_out", "not_started", "ended"];

/// The counters of one instance. The request path takes a read lock (a new
/// (endpoint, outcome, status) takes the write lock once) and atomics only.
#[derive(Debug, Default)]
pub(crate) struct Metrics {
    /// (endpoint, outcome, status) → requests.
    requests: RwLock<BTreeMap<(&'static str, &'static str, u16), AtomicU64>>,
    durations: [Histogram; ENDPOINTS.len()],
    pub(crate) in_flight: AtomicU64,
    pub(crate) round_trips: AtomicU64,
    cache_hits: [AtomicU64; CACHED.len()],
}

impl Metrics {
    /// One answered request.
    pub(crate) fn answered(
        &self,
        endpoint: &'static str,
        outcome: &'static str,
        status: u16,
        took: Duration,
    ) {
        let key = (endpoint, outcome, status);
        let counted = {
            let requests = self.requests.read().unwrap_or_else(|e| e.into_inner());
            requests
                .get(&key)
                .map(|n| n.fetch_add(1, Ordering::Relaxed))
        };
        if counted.is_none() {
            self.requests
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .entry(key)
                .or_default()
                .fetch_add(1, Ordering::Relaxed);
        }
        let Some(at) = ENDPOINTS.iter().position(|e| *e == endpoint) else {
            return;
        };
        let histogram = &self.durations[at];
        let seconds = took.as_secs_f64();
        if let Some(at) = BOUNDS.iter().position(|bound| seconds <= *bound) {
            histogram.buckets[at].fetch_add(1, Ordering::Relaxed);
        }
        histogram.count.fetch_add(1, Ordering::Relaxed);
        histogram
            .sum_us
            .fetch_add(took.as_micros() as u64, Ordering::Relaxed);
    }

    /// One attempt refused from memory.
    pub(crate) fn cache_hit(&self, outcome: &'static str) {
        if let Some(at) = CACHED.iter().position(|o| *o == outcome) {
            self.cache_hits[at].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The exposition text; `redis_up`: this scrape's probe reached Redis.
    pub(crate) fn render(&self, campaign: &str, redis_up: bool) -> String {
        let mut e = Exposition::default();
        e.add(
            REDIS_UP,
            &[("campaign", campaign)],
            if redis_up { 1.0 } else { 0.0 },
        );
        add_build_info(&mut e);
        for ((endpoint, outcome, status), n) in self
            .requests
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            let status = status.to_string();
            e.add(
                REQUESTS,
                &[
                    ("campaign", campaign),
                    ("endpoint", endpoint),
                    ("outcome", outcome),
                    ("status", &status),
                ],
                n.load(Ordering::Relaxed) as f64,
            );
        }
        for (endpoint, h) in ENDPOINTS.iter().zip(&self.durations) {
            let mut below = 0;
            for (bound, bucket) in BOUNDS.iter().zip(&h.buckets) {
                below += bucket.load(Ordering::Relaxed);
                let le = bound.to_string();
                e.add_suffixed(
                    DURATION,
                    "_bucket",
                    &[("campaign", campaign), ("endpoint", endpoint), ("le", &le)],
                    below as f64,
                );
            }
            let count = h.count.load(Ordering::Relaxed) as f64;
            let labels = [("campaign", campaign), ("endpoint", *endpoint)];
            e.add_suffixed(
                DURATION,
                "_bucket",
                &[labels[0], labels[1], ("le", "+Inf")],
                count,
            );
            e.add_suffixed(
                DURATION,
                "_sum",
                &labels,
                h.sum_us.load(Ordering::Relaxed) as f64 / 1e6,
            );
            e.add_suffixed(DURATION, "_count", &labels, count);
        }
        e.add(
            IN_FLIGHT,
            &[("campaign", campaign)],
            self.in_flight.load(Ordering::Relaxed) as f64,
        );
        e.add(
            ROUND_TRIPS,
            &[("campaign", campaign)],
            self.round_trips.load(Ordering::Relaxed) as f64,
        );
        for (outcome, hits) in CACHED.iter().zip(&self.cache_hits) {
            e.add(
                CACHE_HITS,
                &[("campaign", campaign), ("outcome", outcome)],
                hits.load(Ordering::Relaxed) as f64,
            );
        }
        e.render()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_buckets_are_cumulative_in_the_exposition() {
        let m = Metrics::default();
        for ms in [0.2, 0.7, 0.7, 30.0, 9000.0] {
            m.answered("buy", "ok", 200, Duration::from_secs_f64(ms / 1000.0));
        }
        let text = m.render("c", true);
        let bucket = |le: &str| -> f64 {
            let prefix = format!(
                "seckill_serve_request_duration_seconds_bucket{{campaign=\"c\",endpoint=\"buy\",le=\"{le}\"}} "
            );
            let line = text.lines().find(|l| l.starts_with(&prefix)).unwrap();
            line[prefix.len()..].parse().unwrap()
        };
        assert_eq!(bucket("0.0005"), 1.0);
        assert_eq!(bucket("0.001"), 3.0);
        assert_eq!(bucket("0.025"), 3.0);
        assert_eq!(bucket("0.05"), 4.0);
        assert_eq!(bucket("5"), 4.0);
        assert_eq!(bucket("+Inf"), 5.0);
    }
}
