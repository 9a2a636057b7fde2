//! Times and durations as people read them.
//!
//! Every time a command shows people goes through [`time_or_dash`] (or its
//! shorter [`seconds_or_dash`], [`minutes_or_dash`]), in one offset for the
//! whole process: UTC until the command line chooses another with
//! [`show_times_at`] (`--tz`, or the campaign file's own offset). JSON and
//! log lines never call [`show_times_at`]: they stay UTC (`…Z`).

use std::sync::atomic::{AtomicI32, Ordering};

/// The offset from UTC, in seconds, of the times shown to people.
static SHOWN_OFFSET_S: AtomicI32 = AtomicI32::new(0);

/// `--tz`: where the times shown to people are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Tz {
    /// UTC, `…Z`.
    Utc,
    /// The offset the campaign file writes its `starts_at` (else `ends_at`)
    /// in; UTC for a file with neither.
    #[default]
    File,
    /// A fixed offset, `+08:00`, in seconds east of UTC.
    Fixed(i32),
}

impl std::fmt::Display for Tz {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Tz::Utc => f.write_str("utc"),
            Tz::File => f.write_str("file"),
            Tz::Fixed(seconds) => f.write_str(&offset_text(*seconds)),
        }
    }
}

/// clap value parser of `--tz`: `utc`, `file` or `+HH:MM` / `-HH:MM`.
pub(crate) fn parse_tz_arg(text: &str) -> Result<Tz, String> {
    let wrong = || format!("{text:?} is not utc, file or an offset like +08:00 or -05:30");
    match text.trim().to_ascii_lowercase().as_str() {
        "utc" | "z" => return Ok(Tz::Utc),
        "file" => return Ok(Tz::File),
        _ => {}
    }
    let text = text.trim();
    let sign = match text.chars().next() {
        Some('+') => 1,
        Some('-') => -1,
        _ => return Err(wrong()),
    };
    let (hours, minutes) = text[1..].split_once(':').ok_or_else(wrong)?;
    let number = |part: &str| {
        (part.len() == 2 && part.bytes().all(|b| b.is_ascii_digit()))
            .then(|| part.parse::<i32>().ok())
            .flatten()
    };
    match (number(hours), number(minutes)) {
        (Some(h), Some(m)) if h <= 23 && m <= 59 => Ok(Tz::Fixed(sign * (h * 3600 + m * 60))),
        _ => Err(wrong()),
    }
}

/// Show every later time at `offset_s` seconds east of UTC (`--tz`, or the
/// campaign file's offset): called by the command line for the output people
/// read, never for JSON.
pub(crate) fn show_times_at(offset_s: i32) {
    SHOWN_OFFSET_S.store(offset_s, Ordering::Relaxed);
}

/// `+08:00`, `-05:30`, `Z` for zero.
fn offset_text(offset_s: i32) -> String {
    if offset_s == 0 {
        return "Z".to_string();
    }
    let sign = if offset_s < 0 { '-' } else { '+' };
    let abs = offset_s.unsigned_abs();
    format!("{sign}{:02}:{:02}", abs / 3600, abs / 60 % 60)
}

/// How precise a shown time is.
#[derive(Clone, Copy)]
enum Precision {
    Millis,
    Seconds,
    Minutes,
}

/// Unix milliseconds as RFC 3339 at `offset_s` seconds east of UTC (`Z` for
/// zero), or "-" when absent or out of range.
fn format_at(ms: Option<i64>, offset_s: i32, precision: Precision) -> String {
    let Some(offset) = chrono::FixedOffset::east_opt(offset_s) else {
        return format_at(ms, 0, precision);
    };
    let Some(t) = ms.and_then(chrono::DateTime::from_timestamp_millis) else {
        return "-".to_string();
    };
    let t = t.with_timezone(&offset);
    match precision {
        Precision::Millis => t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        Precision::Seconds => t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        Precision::Minutes => format!("{}{}", t.format("%Y-%m-%dT%H:%M"), offset_text(offset_s)),
    }
}

fn shown_offset() -> i32 {
    SHOWN_OFFSET_S.load(Ordering::Relaxed)
}

/// Unix milliseconds as RFC 3339 at the shown offset (UTC, `…Z`, unless
/// [`show_times_at`] chose another), or "-" when absent.
pub(crate) fn time_or_dash(ms: Option<i64>) -> String {
    format_at(ms, shown_offset(), Precision::Millis)
}

/// [`time_or_dash`] to the second: `2026-11-11T10:00:00+08:00`.
pub(crate) fn seconds_or_dash(ms: Option<i64>) -> String {
    format_at(ms, shown_offset(), Precision::Seconds)
}

/// [`time_or_dash`] to the minute, for narrow tables: `2026-11-11T10:00+08:00`.
pub(crate) fn minutes_or_dash(ms: Option<i64>) -> String {
    format_at(ms, shown_offset(), Precision::Minutes)
}

/// An RFC 3339 time of [`time_or_dash`] without its fraction of a second,
/// the offset kept: `…T10:00:00.123+08:00` → `…T10:00:00+08:00`.
pub(crate) fn without_fraction(at: &str) -> String {
    match at.split_once('.') {
        Some((seconds, rest)) => {
            let offset = rest.trim_start_matches(|c: char| c.is_ascii_digit());
            format!("{seconds}{offset}")
        }
        None => at.to_string(),
    }
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
    fn times_show_at_the_chosen_offset_and_utc_says_z() {
        // The process-wide offset is left alone: other tests run beside this one.
        let ms = Some(1_794_362_400_123); // 2026-11-11T02:00:00.123Z
        let east = 8 * 3600;
        assert_eq!(
            format_at(ms, east, Precision::Millis),
            "2026-11-11T10:00:00.123+08:00"
        );
        assert_eq!(
            format_at(ms, east, Precision::Seconds),
            "2026-11-11T10:00:00+08:00"
        );
        assert_eq!(
            format_at(ms, east, Precision::Minutes),
            "2026-11-11T10:00+08:00"
        );
        let west = -(5 * 3600 + 30 * 60);
        assert_eq!(
            format_at(ms, west, Precision::Minutes),
            "2026-11-10T20:30-05:30"
        );
        assert_eq!(
            format_at(ms, 0, Precision::Millis),
            "2026-11-11T02:00:00.123Z"
        );
        assert_eq!(format_at(ms, 0, Precision::Minutes), "2026-11-11T02:00Z");
        assert_eq!(format_at(None, east, Precision::Millis), "-");
        assert_eq!(
            without_fraction("2026-11-11T10:00:00.123+08:00"),
            "2026-11-11T10:00:00+08:00"
        );
        assert_eq!(
            without_fraction("2026-11-11T02:00:00.123Z"),
            "2026-11-11T02:00:00Z"
        );
    }

    #[test]
    fn tz_takes_utc_file_or_an_offset() {
        assert_eq!(parse_tz_arg("utc"), Ok(Tz::Utc));
        assert_eq!(parse_tz_arg("FILE"), Ok(Tz::File));
        assert_eq!(parse_tz_arg("+08:00"), Ok(Tz::Fixed(28_800)));
        assert_eq!(parse_tz_arg("-05:30"), Ok(Tz::Fixed(-19_800)));
        for wrong in ["08:00", "+8:00", "+24:00", "+08:60", "Asia/Shanghai", ""] {
            assert!(parse_tz_arg(wrong).is_err(), "{wrong}");
        }
        assert_eq!(Tz::Fixed(-19_800).to_string(), "-05:30");
    }

    #[test]
    fn one_is_singular() {
        assert_eq!(counted(1, "unit"), "1 unit");
        assert_eq!(counted(0, "unit"), "0 units");
        assert_eq!(counted(3, "buyer"), "3 buyers");
    }
}
