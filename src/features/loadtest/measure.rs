//! What one worker measured: outcomes, two latency histograms, late and
//! dropped attempts. Workers record into their own [`Tally`] (no sharing on
//! the hot path) and the tallies are merged when the variant ends.
//!
//! Latency is recorded twice per request: from its planned send time
//! (corrected: what a shopper sees, stalls included) and from its actual
//! send (service time: what Redis and the network took). In closed loop the
//! two are the same, by construction.

use std::time::Instant;

use anyhow::{Context, Result};
use hdrhistogram::Histogram;

use super::schedule::{Attempt, LATE_AFTER};
use super::variants::Counts;

/// Latencies are recorded in microseconds, up to an hour, 3 significant digits.
pub(crate) const HISTOGRAM_MAX_MICROS: u64 = 3_600_000_000;

/// One worker's measurements (after the merge: the variant's).
#[derive(Debug)]
pub(crate) struct Tally {
    pub(crate) counts: Counts,
    /// From the planned send time to the reply, in µs.
    pub(crate) corrected: Histogram<u64>,
    /// From the actual send to the reply, in µs.
    pub(crate) service: Histogram<u64>,
    /// Requests sent more than [`LATE_AFTER`] behind plan (open loop).
    pub(crate) late: u64,
    /// Attempts never sent because the plan could not be kept (open loop).
    pub(crate) dropped: u64,
    /// When the last answer arrived: the end of the run's clock.
    pub(crate) last_answer: Option<Instant>,
}

impl Tally {
    pub(crate) fn new() -> Result<Tally> {
        Ok(Tally {
            counts: Counts::default(),
            corrected: new_histogram()?,
            service: new_histogram()?,
            late: 0,
            dropped: 0,
            last_answer: None,
        })
    }

    /// Note that `attempt` went out (late or not).
    pub(crate) fn sent(&mut self, attempt: &Attempt) {
        if attempt.sent.duration_since(attempt.planned) > LATE_AFTER {
            self.late += 1;
        }
    }

    /// `attempt` was answered at `now`.
    pub(crate) fn answered(&mut self, attempt: &Attempt, now: Instant) -> Result<()> {
        let micros = |since: Instant| {
            (now.saturating_duration_since(since).as_micros() as u64).clamp(1, HISTOGRAM_MAX_MICROS)
        };
        self.corrected
            .record(micros(attempt.planned))
            .context("cannot record a latency")?;
        self.service
            .record(micros(attempt.sent))
            .context("cannot record a latency")?;
        self.last_answer = Some(now);
        Ok(())
    }

    /// Add another worker's tally to this one.
    pub(crate) fn absorb(&mut self, other: Tally) -> Result<()> {
        self.counts.absorb(other.counts);
        self.corrected
            .add(&other.corrected)
            .context("cannot merge latency histograms")?;
        self.service
            .add(&other.service)
            .context("cannot merge latency histograms")?;
        self.late += other.late;
        self.dropped += other.dropped;
        self.last_answer = self.last_answer.max(other.last_answer);
        Ok(())
    }
}

fn new_histogram() -> Result<Histogram<u64>> {
    Histogram::new_with_bounds(1, HISTOGRAM_MAX_MICROS, 3)
        .context("cannot create a latency histogram")
}
