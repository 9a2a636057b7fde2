//! What one worker measured: the scenario's counts, two latency histograms,
//! late, dropped and failed attempts. Workers record into their own
//! [`Tally`] (no sharing on the hot path) and the tallies are merged when
//! the run ends.
//!
//! Latency is recorded twice per attempt: from its planned send time
//! (corrected: what a shopper sees, stalls included) and from its actual
//! send (service time: what the server and the network took). In closed loop
//! the two are the same, by construction.
//!
//! May import: histogram, pace, scenario.

use std::time::Instant;

use crate::histogram::Histogram;
use crate::pace::{Attempt, LATE_AFTER};
use crate::scenario::Counts;

/// One worker's measurements (after the merge: the run's).
#[derive(Debug)]
pub struct Tally<C> {
    /// What the scenario counted.
    pub counts: C,
    /// From the planned send time to the reply, in µs.
    pub corrected: Histogram,
    /// From the actual send to the reply, in µs.
    pub service: Histogram,
    /// Attempts sent more than [`LATE_AFTER`] behind plan (open loop).
    pub late: u64,
    /// Attempts never sent because the plan could not be kept (open loop).
    pub dropped: u64,
    /// Attempts lost with their connection (scenarios that survive failures).
    pub failed: u64,
    /// When the last answer arrived: the end of the run's clock.
    pub last_answer: Option<Instant>,
}

impl<C: Counts> Default for Tally<C> {
    fn default() -> Tally<C> {
        Tally::new()
    }
}

impl<C: Counts> Tally<C> {
    pub fn new() -> Tally<C> {
        Tally {
            counts: C::default(),
            corrected: Histogram::new(),
            service: Histogram::new(),
            late: 0,
            dropped: 0,
            failed: 0,
            last_answer: None,
        }
    }

    /// Note that `attempt` went out (late or not).
    pub fn sent(&mut self, attempt: &Attempt) {
        if attempt.sent.duration_since(attempt.planned) > LATE_AFTER {
            self.late += 1;
        }
    }

    /// `attempt` was answered at `now`.
    pub fn answered(&mut self, attempt: &Attempt, now: Instant) {
        self.corrected.record_between(attempt.planned, now);
        self.service.record_between(attempt.sent, now);
        self.last_answer = Some(now);
    }

    /// Attempts answered.
    pub fn completed(&self) -> u64 {
        self.corrected.len()
    }

    /// Add another worker's tally to this one.
    pub fn absorb(&mut self, other: Tally<C>) {
        self.counts.absorb(other.counts);
        self.corrected.merge(&other.corrected);
        self.service.merge(&other.service);
        self.late += other.late;
        self.dropped += other.dropped;
        self.failed += other.failed;
        self.last_answer = self.last_answer.max(other.last_answer);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn late_sends_and_both_latencies_are_counted_and_merged() {
        let planned = Instant::now();
        let late = Attempt {
            number: 0,
            planned,
            sent: planned + Duration::from_millis(30),
        };
        let on_time = Attempt {
            number: 1,
            planned,
            sent: planned,
        };
        let mut a: Tally<()> = Tally::new();
        a.sent(&late);
        a.answered(&late, planned + Duration::from_millis(40));
        let mut b: Tally<()> = Tally::new();
        b.sent(&on_time);
        b.answered(&on_time, planned + Duration::from_millis(1));
        b.failed = 2;
        a.absorb(b);
        assert_eq!((a.late, a.failed, a.completed()), (1, 2, 2));
        let corrected = a.corrected.percentiles();
        let service = a.service.percentiles();
        assert!((corrected.max_ms - 40.0).abs() < 0.1, "{corrected:?}");
        assert!((service.max_ms - 10.0).abs() < 0.1, "{service:?}");
        assert_eq!(a.last_answer, Some(planned + Duration::from_millis(40)));
    }
}
