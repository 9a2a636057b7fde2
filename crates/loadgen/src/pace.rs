//! When each attempt is due: closed loop (as soon as a connection is free)
//! or open loop (at a planned time, whatever the server is doing).
//!
//! Closed loop is what most load testers do and what the reference chapter
//! measures, but it hides stalls: when the server stops for half a second,
//! the workers stop with it and the attempts that would have arrived
//! meanwhile are never made, so the percentiles barely move (coordinated
//! omission). Open loop plans attempt `n` at `start + n / rate`; its latency
//! is measured from that planned time (the corrected latency, what a shopper
//! sees) and from the moment it was actually sent (the service time). An
//! attempt that finds no free connection waits and goes out late; one still
//! unsent [`DROP_AFTER`] past the end of the run's window is dropped and
//! counted.
//!
//! What runs per attempt is `#[inline]`, as in `wire`.
//!
//! May import: nothing of the crate.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A send more than this behind its planned time counts as late (the event
/// loop's timer resolution is 1 ms).
pub const LATE_AFTER: Duration = Duration::from_millis(2);

/// How long after the end of the window late attempts may still go out.
pub const DROP_AFTER: Duration = Duration::from_secs(1);

/// How attempts are paced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pace {
    /// Each connection sends its next attempt when the last one is answered.
    Closed,
    /// Attempts per second over all connections.
    Open { rate: f64 },
}

impl Pace {
    /// `closed` or `open`, as reports name the mode.
    pub fn mode(self) -> &'static str {
        match self {
            Pace::Closed => "closed",
            Pace::Open { .. } => "open",
        }
    }

    /// The open loop's attempts per second; `None` in closed loop.
    pub fn rate(self) -> Option<f64> {
        match self {
            Pace::Closed => None,
            Pace::Open { rate } => Some(rate),
        }
    }
}

/// One attempt: its number, when it should have gone out and when it did.
#[derive(Debug, Clone, Copy)]
pub struct Attempt {
    pub number: u64,
    pub planned: Instant,
    pub sent: Instant,
}

/// Where one worker takes its attempts from.
pub enum Source<'a> {
    /// Request numbers from one shared counter: whichever connection is free
    /// takes the next, as redis-benchmark hands them out (a fixed share per
    /// worker would leave the slowest-scheduled ones running alone at the end).
    Closed {
        issued: &'a AtomicU64,
        total: u64,
    },
    Open(OpenPlan),
}

/// Worker `w` of `workers` owns attempts `w`, `w + workers`, ...
pub struct OpenPlan {
    next: u64,
    step: u64,
    total: u64,
    start: Instant,
    interval_s: f64,
    give_up_at: Instant,
    dropped: u64,
}

impl OpenPlan {
    #[inline]
    fn due_at(&self) -> Option<Instant> {
        (self.next < self.total)
            .then(|| self.start + Duration::from_secs_f64(self.next as f64 * self.interval_s))
    }
}

impl<'a> Source<'a> {
    /// Worker `worker` of `workers`' share of `total` attempts paced by
    /// `pace` from `start`; `issued` is the closed loop's shared counter.
    pub fn new(
        pace: Pace,
        total: u64,
        issued: &'a AtomicU64,
        worker: usize,
        workers: usize,
        start: Instant,
    ) -> Source<'a> {
        match pace {
            Pace::Closed => Source::Closed { issued, total },
            Pace::Open { rate } => {
                let window = Duration::from_secs_f64(total as f64 / rate);
                Source::Open(OpenPlan {
                    next: worker as u64,
                    step: workers as u64,
                    total,
                    start,
                    interval_s: 1.0 / rate,
                    give_up_at: start + window + DROP_AFTER,
                    dropped: 0,
                })
            }
        }
    }

    /// Up to `limit` attempts due at `now` (request numbers and planned
    /// times pushed into `into`); none when nothing is due yet.
    #[inline]
    pub fn take(&mut self, now: Instant, limit: usize, into: &mut Vec<Attempt>) {
        match self {
            Source::Closed { issued, total } => {
                let first = issued.fetch_add(limit as u64, Ordering::Relaxed);
                for number in first..(first + limit as u64).min(*total) {
                    into.push(Attempt {
                        number,
                        planned: now,
                        sent: now,
                    });
                }
            }
            Source::Open(plan) => {
                if now > plan.give_up_at && plan.next < plan.total {
                    // Past the end of the window: every attempt not sent yet is dropped.
                    plan.dropped += (plan.total - plan.next).div_ceil(plan.step);
                    plan.next = plan.total;
                }
                for _ in 0..limit {
                    match plan.due_at() {
                        Some(planned) if planned <= now => {
                            into.push(Attempt {
                                number: plan.next,
                                planned,
                                sent: now,
                            });
                            plan.next += plan.step;
                        }
                        _ => break,
                    }
                }
            }
        }
    }

    /// When the next attempt is due (open loop); `None` when none are left
    /// or in closed loop (always due).
    #[inline]
    pub fn due_at(&self) -> Option<Instant> {
        match self {
            Source::Closed { .. } => None,
            Source::Open(plan) => plan.due_at(),
        }
    }

    /// Whether every attempt has been handed out (or dropped).
    #[inline]
    pub fn exhausted(&self) -> bool {
        match self {
            Source::Closed { issued, total } => issued.load(Ordering::Relaxed) >= *total,
            Source::Open(plan) => plan.next >= plan.total,
        }
    }

    /// Attempts given up on because they could not be sent in time.
    pub fn dropped(&self) -> u64 {
        match self {
            Source::Closed { .. } => 0,
            Source::Open(plan) => plan.dropped,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_loop_hands_out_attempts_on_plan_and_drops_the_unsendable() {
        let issued = AtomicU64::new(0);
        let start = Instant::now();
        // 1,000 attempts/s, worker 1 of 2: attempts 1, 3, 5, ... at 1 ms, 3 ms, 5 ms, ...
        let mut source = Source::new(Pace::Open { rate: 1000.0 }, 10, &issued, 1, 2, start);
        let mut taken = Vec::new();
        source.take(start, 4, &mut taken);
        assert!(taken.is_empty());
        source.take(start + Duration::from_millis(4), 4, &mut taken);
        let numbers: Vec<u64> = taken.iter().map(|a| a.number).collect();
        assert_eq!(numbers, [1, 3]);
        assert_eq!(taken[1].planned, start + Duration::from_millis(3));
        assert_eq!(source.due_at(), Some(start + Duration::from_millis(5)));
        // Window 10 ms, plus the grace: attempts 5, 7, 9 are dropped.
        source.take(
            start + Duration::from_millis(10) + DROP_AFTER * 2,
            1,
            &mut taken,
        );
        assert_eq!(taken.len(), 2);
        assert_eq!(source.dropped(), 3);
        assert!(source.exhausted());
    }

    #[test]
    fn closed_loop_shares_one_counter() {
        let issued = AtomicU64::new(0);
        let now = Instant::now();
        let mut a = Source::new(Pace::Closed, 5, &issued, 0, 2, now);
        let mut b = Source::new(Pace::Closed, 5, &issued, 1, 2, now);
        let mut taken = Vec::new();
        a.take(now, 2, &mut taken);
        b.take(now, 2, &mut taken);
        a.take(now, 2, &mut taken);
        let numbers: Vec<u64> = taken.iter().map(|a| a.number).collect();
        assert_eq!(numbers, [0, 1, 2, 3, 4]);
        assert!(a.exhausted() && b.exhausted());
    }

    #[test]
    fn modes_are_named_as_reports_print_them() {
        assert_eq!((Pace::Closed.mode(), Pace::Closed.rate()), ("closed", None));
        let open = Pace::Open { rate: 250.0 };
        assert_eq!((open.mode(), open.rate()), ("open", Some(250.0)));
    }
}
