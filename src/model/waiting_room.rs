//! The waiting room of an item as the campaign file turns it on
//! (`waiting_room:` campaign-wide or per item; docs/waiting-room.md): how
//! shoppers are admitted (at a rate, or into a bounded active set), how long
//! an admission lasts, whether joins before `starts_at` are shuffled, and
//! who may join at all (registration with per-device and per-IP caps).
//!
//! Parsed from the raw YAML with every value's `line:column`, like the rest
//! of the campaign file; the room is off unless the file says it.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use serde::Deserialize;
use serde_saphyr::Spanned;

use crate::model::fields::{at, parse_duration, parse_time};

/// Most admissions per second a rate room may ask for: above it the room
/// admits faster than one Redis thread sells, so it would pace nothing.
pub(crate) const MAX_ADMIT_PER_SECOND: u64 = 1_000_000;
/// Largest `max_active`.
pub(crate) const MAX_ACTIVE: i64 = 10_000_000;
/// Largest per-device or per-IP cap (beyond it a cap is a typo, not a rule).
pub(crate) const MAX_ACCOUNTS_PER: i64 = 1_000;
/// Longest `admission_ttl`: an admission is a turn at the counter, not a day pass.
pub(crate) const MAX_ADMISSION_TTL: Duration = Duration::from_secs(24 * 3600);
/// `admission_ttl` when the file says none.
pub(crate) const DEFAULT_ADMISSION_TTL: Duration = Duration::from_secs(120);

/// `waiting_room:` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawWaitingRoom {
    mode: Spanned<String>,
    #[serde(default)]
    admit_rate: Option<Spanned<String>>,
    #[serde(default)]
    max_active: Option<Spanned<i64>>,
    #[serde(default)]
    admission_ttl: Option<Spanned<String>>,
    #[serde(default)]
    prequeue: Option<Spanned<bool>>,
    #[serde(default)]
    registration: Option<RawRegistration>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRegistration {
    until: Spanned<String>,
    #[serde(default)]
    per_device: Option<Spanned<i64>>,
    #[serde(default)]
    per_ip: Option<Spanned<i64>>,
}

/// A validated waiting room.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitingRoom {
    pub mode: AdmissionMode,
    /// An admission lets its shopper buy for this long (Redis time), then it
    /// is `admission_expired`; in `max_active` mode it then gives its place back.
    pub admission_ttl: Duration,
    /// Joins before `starts_at` are shuffled at the start (seeded
    /// Fisher–Yates), later ones follow in order.
    pub prequeue: bool,
    /// Only registered users may join and buy.
    pub registration: Option<Registration>,
}

/// How the room admits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdmissionMode {
    /// `count` admissions per `per_ms` milliseconds, a pure function of the
    /// Redis clock: no admitter process (see `domain::waiting_room::clock`).
    Rate { count: u64, per_ms: u64 },
    /// At most this many admitted shoppers who have not bought yet; `seckill
    /// queue admit --loop` fills the free places.
    MaxActive(u32),
    /// Signed tickets handed out by `serve` with no Redis call, admitted by
    /// an arrival-time cursor moving at most `count` per `per_ms`
    /// (`domain::waiting_room::ticket`).
    Ticket { count: u64, per_ms: u64 },
}

/// Pre-registration (预约): who may join, and how many accounts per device / IP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Registration {
    /// Registration closes at this Unix time in ms (Redis clock).
    pub until_ms: i64,
    /// Accounts per device id; 0 = no cap.
    pub per_device: u32,
    /// Accounts per IP prefix (IPv4 /24, IPv6 /64); 0 = no cap.
    pub per_ip: u32,
}

impl WaitingRoom {
    /// The configuration as one canonical line: what Redis records and
    /// `preheat` compares with the file.
    pub(crate) fn config_text(&self) -> String {
        let mode = match self.mode {
            AdmissionMode::Rate { count, per_ms } => format!("rate {count}/{per_ms}ms"),
            AdmissionMode::MaxActive(n) => format!("max_active {n}"),
            AdmissionMode::Ticket { count, per_ms } => format!("ticket {count}/{per_ms}ms"),
        };
        let mut text = format!(
            "{mode} ttl {}ms prequeue {}",
            self.admission_ttl.as_millis(),
            u8::from(self.prequeue)
        );
        match &self.registration {
            Some(r) => text.push_str(&format!(
                " registration until {} per_device {} per_ip {}",
                r.until_ms, r.per_device, r.per_ip
            )),
            None => text.push_str(" registration off"),
        }
        text
    }

    /// The settings for people: "rate 500/s, admissions last 2m, ...".
    pub fn describe(&self) -> String {
        let per = |per_ms: u64| {
            let per = humantime::format_duration(Duration::from_millis(per_ms)).to_string();
            if per == "1s" { "s".to_string() } else { per }
        };
        let mode = match self.mode {
            AdmissionMode::Rate { count, per_ms } => format!("rate {count}/{}", per(per_ms)),
            AdmissionMode::MaxActive(n) => format!("at most {n} active"),
            AdmissionMode::Ticket { count, per_ms } => {
                format!("tickets, admitting {count}/{}", per(per_ms))
            }
        };
        let registration = match &self.registration {
            Some(r) => {
                let cap = |n: u32, what: &str| match n {
                    0 => String::new(),
                    n => format!(", {n} per {what}"),
                };
                format!(
                    ", registration until {}{}{}",
                    crate::util::text::time_or_dash(Some(r.until_ms)),
                    cap(r.per_device, "device"),
                    cap(r.per_ip, "IP prefix")
                )
            }
            None => String::new(),
        };
        format!(
            "{mode}, admissions last {}{}{registration}",
            humantime::format_duration(self.admission_ttl),
            if self.prequeue { ", pre-queue" } else { "" },
        )
    }

    /// The mode's name, as Redis stores it.
    pub(crate) fn mode_name(&self) -> &'static str {
        match self.mode {
            AdmissionMode::Rate { .. } => "rate",
            AdmissionMode::MaxActive(_) => "max_active",
            AdmissionMode::Ticket { .. } => "ticket",
        }
    }

    /// Whether shoppers hold signed tickets instead of a place in Redis.
    pub fn is_ticket(&self) -> bool {
        matches!(self.mode, AdmissionMode::Ticket { .. })
    }

    /// Admissions per second of a rate room (`None` in max_active mode).
    pub fn per_second(&self) -> Option<f64> {
        match self.mode {
            AdmissionMode::Rate { count, per_ms } | AdmissionMode::Ticket { count, per_ms } => {
                Some(count as f64 * 1000.0 / per_ms as f64)
            }
            AdmissionMode::MaxActive(_) => None,
        }
    }
}

/// Validate `raw`; `starts_at_ms` is the campaign's (a pre-queue needs one).
pub(crate) fn validate(
    path: &Path,
    raw: &RawWaitingRoom,
    starts_at_ms: Option<i64>,
) -> Result<WaitingRoom> {
    let mode = match raw.mode.value.trim() {
        name @ ("rate" | "ticket") => {
            if let Some(max) = &raw.max_active {
                return Err(at(
                    path,
                    max,
                    format!(
                        "max_active applies to mode max_active; a {name} room admits at admit_rate"
                    ),
                ));
            }
            let Some(rate) = &raw.admit_rate else {
                return Err(at(
                    path,
                    &raw.mode,
                    format!("mode {name} needs admit_rate, e.g. admit_rate: 500/s"),
                ));
            };
            let (count, per_ms) = parse_rate(path, rate)?;
            if name == "ticket" {
                AdmissionMode::Ticket { count, per_ms }
            } else {
                AdmissionMode::Rate { count, per_ms }
            }
        }
        "max_active" => {
            if let Some(rate) = &raw.admit_rate {
                return Err(at(
                    path,
                    rate,
                    "admit_rate applies to mode rate; a max_active room admits as places free up",
                ));
            }
            let Some(max) = &raw.max_active else {
                return Err(at(
                    path,
                    &raw.mode,
                    "mode max_active needs max_active, e.g. max_active: 1000",
                ));
            };
            if !(1..=MAX_ACTIVE).contains(&max.value) {
                return Err(at(
                    path,
                    max,
                    format!(
                        "max_active must be between 1 and {MAX_ACTIVE}, got {}",
                        max.value
                    ),
                ));
            }
            AdmissionMode::MaxActive(max.value as u32)
        }
        other => {
            return Err(at(
                path,
                &raw.mode,
                format!("waiting_room mode {other:?} is not rate, max_active or ticket"),
            ));
        }
    };
    let admission_ttl = match &raw.admission_ttl {
        Some(text) => {
            let ttl = parse_duration(path, text, "waiting_room.admission_ttl")?;
            if ttl < Duration::from_secs(1) || ttl > MAX_ADMISSION_TTL {
                return Err(at(
                    path,
                    text,
                    "waiting_room.admission_ttl must be between 1s and 24h",
                ));
            }
            ttl
        }
        None => DEFAULT_ADMISSION_TTL,
    };
    let prequeue = raw.prequeue.as_ref().is_some_and(|p| p.value);
    if let Some(flag) = &raw.prequeue
        && flag.value
        && starts_at_ms.is_none()
    {
        return Err(at(
            path,
            flag,
            "prequeue shuffles the joins made before starts_at: the campaign needs a starts_at",
        ));
    }
    let registration = match &raw.registration {
        Some(r) => Some(Registration {
            until_ms: parse_time(path, &r.until, "waiting_room.registration.until")?,
            per_device: cap(path, r.per_device.as_ref(), "per_device")?,
            per_ip: cap(path, r.per_ip.as_ref(), "per_ip")?,
        }),
        None => None,
    };
    Ok(WaitingRoom {
        mode,
        admission_ttl,
        prequeue,
        registration,
    })
}

fn cap(path: &Path, value: Option<&Spanned<i64>>, what: &str) -> Result<u32> {
    match value {
        Some(n) if !(0..=MAX_ACCOUNTS_PER).contains(&n.value) => Err(at(
            path,
            n,
            format!(
                "waiting_room.registration.{what} must be between 0 (no cap) and {MAX_ACCOUNTS_PER}, got {}",
                n.value
            ),
        )),
        Some(n) => Ok(n.value as u32),
        None => Ok(0),
    }
}

/// `500/s`, `30/min`, `2/100ms`: a whole count per a duration.
fn parse_rate(path: &Path, text: &Spanned<String>) -> Result<(u64, u64)> {
    let bad = |why: &str| {
        at(
            path,
            text,
            format!(
                "admit_rate {:?} {why}: write admissions per time, like 500/s, 30/min or 2/100ms",
                text.value
            ),
        )
    };
    let (count, per) = text
        .value
        .trim()
        .split_once('/')
        .ok_or_else(|| bad("has no '/'"))?;
    let count: u64 = count
        .trim()
        .parse()
        .ok()
        .filter(|c| *c >= 1)
        .ok_or_else(|| bad("does not start with a whole count of at least 1"))?;
    let per = per.trim();
    // "s" alone means "1s": humantime wants the number.
    let per = if per.starts_with(|c: char| c.is_ascii_digit()) {
        per.to_string()
    } else {
        format!("1{per}")
    };
    let per = humantime::parse_duration(&per).map_err(|_| bad("has no duration after '/'"))?;
    let per_ms = per.as_millis() as u64;
    if per_ms < 1 || per > Duration::from_secs(24 * 3600) {
        return Err(bad("must be per 1ms to 24h"));
    }
    if count.saturating_mul(1000) / per_ms > MAX_ADMIT_PER_SECOND {
        return Err(bad(&format!(
            "is more than {MAX_ADMIT_PER_SECOND} admissions per second"
        )));
    }
    Ok((count, per_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn room(yaml: &str) -> Result<WaitingRoom> {
        let raw: RawWaitingRoom = serde_saphyr::from_str(yaml).unwrap();
        validate(Path::new("c.yaml"), &raw, Some(1))
    }

    #[test]
    fn rates_are_counts_per_duration() {
        let rate = |text: &str| room(&format!("{{ mode: rate, admit_rate: {text} }}"));
        assert_eq!(
            rate("500/s").unwrap().mode,
            AdmissionMode::Rate {
                count: 500,
                per_ms: 1000
            }
        );
        assert_eq!(
            rate("30/min").unwrap().mode,
            AdmissionMode::Rate {
                count: 30,
                per_ms: 60_000
            }
        );
        assert_eq!(rate("2/100ms").unwrap().per_second(), Some(20.0));
        assert!(rate("0/s").is_err());
        assert!(rate("5").is_err());
        assert!(rate("5/parsec").is_err());
        assert!(rate("2000000/s").is_err());
    }

    #[test]
    fn the_canonical_text_names_every_setting() {
        let r = room("{ mode: max_active, max_active: 10, admission_ttl: 30s, prequeue: true, registration: { until: 2026-11-11T09:00:00Z, per_device: 3 } }").unwrap();
        assert_eq!(
            r.config_text(),
            "max_active 10 ttl 30000ms prequeue 1 registration until 1794387600000 per_device 3 per_ip 0"
        );
        assert!(room("{ mode: rate }").is_err());
        assert!(room("{ mode: max_active, max_active: 0 }").is_err());
        assert!(room("{ mode: rate, admit_rate: 1/s, max_active: 3 }").is_err());
        assert!(room("{ mode: rate, admit_rate: 1/s, admission_ttl: 0s }").is_err());
    }

    #[test]
    fn a_ticket_room_admits_at_a_rate_and_may_have_a_prequeue() {
        let r = room("{ mode: ticket, admit_rate: 2000/s, admission_ttl: 2m }").unwrap();
        assert_eq!(
            r.mode,
            AdmissionMode::Ticket {
                count: 2000,
                per_ms: 1000
            }
        );
        assert!(r.is_ticket());
        assert_eq!(
            r.config_text(),
            "ticket 2000/1000ms ttl 120000ms prequeue 0 registration off"
        );
        assert!(room("{ mode: ticket }").is_err());
        assert!(
            room("{ mode: ticket, admit_rate: 1/s, prequeue: true }")
                .unwrap()
                .prequeue
        );
        assert!(room("{ mode: ticket, admit_rate: 1/s, max_active: 3 }").is_err());
    }
}
