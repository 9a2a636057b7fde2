//! Times and durations as people read them.

/// Unix milliseconds as RFC 3339 UTC, or "-" when absent.
pub(crate) fn time_or_dash(ms: Option<i64>) -> String {
    ms.and_then(chrono::DateTime::from_timestamp_millis)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_else(|| "-".to_string())
}

/// `2h 13m`, `41m 5s`, `12s`, `850ms`: two units at most, for people.
pub(crate) fn human_duration_ms(ms: i64) -> String {
    let ms = ms.max(0);
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let secs = ms / 1000;
    let (d, h, m, s) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    match (d, h, m) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, _) => format!("{m}m {s}s"),
        (0, _, _) => format!("{h}h {m}m"),
        _ => format!("{d}d {h}h"),
    }
}

/// `n` and its noun, singular for one: `1 unit`, `3 units`, `1 buyer`.
pub(crate) fn counted(n: i64, noun: &str) -> String {
    match n {
        1 => format!("1 {noun}"),
        _ => format!("{n} {noun}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_a_clock() {
        assert_eq!(human_duration_ms(850), "850ms");
        assert_eq!(human_duration_ms(12_000), "12s");
        assert_eq!(human_duration_ms(41 * 60_000 + 5_000), "41m 5s");
        assert_eq!(human_duration_ms((2 * 3600 + 13 * 60) * 1000), "2h 13m");
        assert_eq!(human_duration_ms(26 * 3600 * 1000), "1d 2h");
    }

    #[test]
    fn one_is_singular() {
        assert_eq!(counted(1, "unit"), "1 unit");
        assert_eq!(counted(0, "unit"), "0 units");
        assert_eq!(counted(3, "buyer"), "3 buyers");
    }
}
