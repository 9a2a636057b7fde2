//! The rate room's clock as a pure function — the Rust mirror of
//! `lua/lib/admission.lua`, which decides in Redis: position p is admitted
//! once the clock has run `ceil(p · per / count)` ms since the room opened,
//! pauses not counted, so the serving position at any moment is
//! `min(joined, floor((now − opened_at − paused) · count / per))` and needs
//! no admitter process. Used to predict and to check (the load test's wait
//! error, the tests' expected admissions), never to decide.

/// `count` admissions per `per_ms` milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateClock {
    pub count: u64,
    pub per_ms: u64,
}

impl RateClock {
    /// Positions admitted after the clock ran `elapsed_ms`: floor(elapsed · count / per).
    pub fn allowance(&self, elapsed_ms: i64) -> i64 {
        if elapsed_ms <= 0 {
            return 0;
        }
        (elapsed_ms as u128 * u128::from(self.count) / u128::from(self.per_ms)) as i64
    }

    /// The clock's milliseconds at which position `p` is admitted: ceil(p · per / count).
    pub fn reached_at(&self, position: i64) -> i64 {
        let p = position.max(0) as u128;
        p.saturating_mul(u128::from(self.per_ms))
            .div_ceil(u128::from(self.count)) as i64
    }

    /// The serving position (the last admitted) after `elapsed_ms` with `joined` users.
    pub fn serving(&self, joined: i64, elapsed_ms: i64) -> i64 {
        joined.min(self.allowance(elapsed_ms))
    }

    /// About how long position `p` still waits when the clock has run `elapsed_ms`.
    pub fn wait_ms(&self, position: i64, elapsed_ms: i64) -> i64 {
        (self.reached_at(position) - elapsed_ms).max(0)
    }
}

/// The room's pauses up to `now_ms`: the finished ones (`paused_ms`) and the
/// one running since `paused_since_ms`, counted from the room's opening at
/// the earliest.
pub fn paused_ms(
    paused_ms: i64,
    paused_since_ms: Option<i64>,
    opened_at_ms: Option<i64>,
    now_ms: i64,
) -> i64 {
    match (paused_since_ms, opened_at_ms) {
        (Some(since), Some(opened)) => paused_ms + (now_ms - since.max(opened)).max(0),
        _ => paused_ms,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hundred_a_second_for_ten_seconds_is_a_thousand() {
        let clock = RateClock {
            count: 100,
            per_ms: 1000,
        };
        assert_eq!(clock.allowance(10_000), 1000);
        assert_eq!(clock.allowance(9_999), 999);
        assert_eq!(clock.serving(400, 10_000), 400);
        assert_eq!(clock.reached_at(1), 10);
        assert_eq!(clock.wait_ms(150, 1000), 500);
        assert_eq!(clock.allowance(-5), 0);
    }

    #[test]
    fn each_position_is_admitted_exactly_when_the_clock_reaches_it() {
        for (count, per_ms) in [
            (1, 1),
            (3, 1000),
            (500, 1000),
            (7, 60_000),
            (10_000_000, 86_400_000),
        ] {
            let clock = RateClock { count, per_ms };
            for p in [1, 2, 3, 10, 999, 1_000_001, 123_456_789] {
                let at = clock.reached_at(p);
                assert!(clock.allowance(at) >= p, "{count}/{per_ms}: {p} at {at}");
                assert!(
                    clock.allowance(at - 1) < p,
                    "{count}/{per_ms}: {p} before {at}"
                );
            }
        }
    }

    #[test]
    fn a_pause_counts_from_the_opening_at_the_earliest() {
        assert_eq!(paused_ms(500, None, Some(0), 9_000), 500);
        assert_eq!(paused_ms(500, Some(1_000), Some(0), 3_000), 2_500);
        // Paused before the room opened: only the time since the opening counts.
        assert_eq!(paused_ms(0, Some(1_000), Some(2_000), 3_000), 1_000);
        assert_eq!(paused_ms(0, Some(1_000), None, 3_000), 0);
        assert_eq!(paused_ms(0, Some(5_000), Some(0), 3_000), 0);
    }
}
