//! `status --check`: a status turned into the problems a probe (cron,
//! Nagios, a deploy script) acts on, each with its own exit code.
//!
//! Checked per item, in this order: not preheated (nothing else is checked
//! then: there is nothing to sell), kill switch ON (in any bucket), keys that
//! expire before the next `--reconcile-at` (the nightly proof could no longer
//! check the item), lag or pending above `--max-lag`, reservations past
//! their payment deadline for longer than `--grace` (no `expire` releases
//! them), dead letters (orders the database never took), and a waiting room
//! whose admitter's work is later than `--grace` (no `queue admit --loop`
//! runs). The exit code is the lowest code among the problems found (40–46,
//! one per kind, stable for scripts).
//!
//! Nagios reads 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN, so `--nagios` maps
//! each kind to one of those ([`Problem::nagios`]) and writes the plugin
//! format ([`nagios_text`]): a status line, one line per problem, and
//! performance data per item.

use serde::Serialize;

use crate::model::exit_codes;
use crate::operator::monitor::status::ItemStatus;
use crate::util::text::{human_duration_ms, time_or_dash};

/// What `--check` looks for beyond preheat and the kill switch.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Thresholds {
    /// `--max-lag N`: lag or pending above N is a problem.
    pub(crate) max_lag: Option<i64>,
    /// `--reconcile-at`: Unix ms of the next nightly reconcile.
    pub(crate) reconcile_at_ms: Option<i64>,
    /// `--grace`: how late (ms) a loop's work may be — a reservation past its
    /// deadline, the room's admitter — before it is a problem.
    pub(crate) grace_ms: i64,
}

/// One problem of one item.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Problem {
    /// The item id.
    pub(crate) item: String,
    /// The exit code this problem alone would give.
    pub(crate) exit_code: i32,
    /// Its name: `check_preheat`, `check_switch_on`, `check_expiry`,
    /// `check_lag`, `check_overdue`, `check_dead_letters`, `check_admitter`.
    pub(crate) kind: &'static str,
    /// What is wrong, for people.
    pub(crate) message: String,
}

/// Nagios' plugin states (the exit codes a Nagios check returns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub(crate) enum NagiosState {
    Ok = 0,
    Warning = 1,
    Critical = 2,
    Unknown = 3,
}

impl NagiosState {
    pub(crate) fn name(self) -> &'static str {
        match self {
            NagiosState::Ok => "OK",
            NagiosState::Warning => "WARNING",
            NagiosState::Critical => "CRITICAL",
            NagiosState::Unknown => "UNKNOWN",
        }
    }
}

impl Problem {
    fn new(item: &str, exit_code: i32, message: String) -> Problem {
        Problem {
            item: item.to_string(),
            exit_code,
            kind: exit_codes::name_of(exit_code),
            message,
        }
    }

    /// The Nagios state of this kind of problem: CRITICAL when shoppers are
    /// turned away or their units are held by nobody (not preheated, overdue
    /// reservations, a stalled room), WARNING for what needs a person soon
    /// but sells on (a switch someone turned on, keys expiring before the
    /// reconcile, a consumer behind, dead letters).
    pub(crate) fn nagios(&self) -> NagiosState {
        match self.exit_code {
            exit_codes::CHECK_PREHEAT | exit_codes::CHECK_OVERDUE | exit_codes::CHECK_ADMITTER => {
                NagiosState::Critical
            }
            _ => NagiosState::Warning,
        }
    }
}

/// Every problem of `statuses`, item by item, in the order above.
pub(crate) fn problems(statuses: &[ItemStatus], thresholds: &Thresholds) -> Vec<Problem> {
    let mut found = Vec::new();
    for s in statuses {
        let item = s.item.as_str();
        if !s.preheated {
            found.push(Problem::new(
                item,
                exit_codes::CHECK_PREHEAT,
                "not preheated (never, or its keys expired): buys fail with not_preheated".into(),
            ));
            continue;
        }
        let closed = if s.slots.is_empty() {
            usize::from(s.kill_switch.on)
        } else {
            s.slots.iter().filter(|b| b.kill_switch.on).count()
        };
        if closed > 0 {
            let mut message = if s.slots.is_empty() {
                "kill switch ON: every buy is refused".to_string()
            } else {
                format!("kill switch ON in {closed} of {} buckets", s.slots.len())
            };
            if let Some(by) = &s.kill_switch.switched_by {
                message.push_str(&format!(" (set by {by}"));
                if let Some(reason) = &s.kill_switch.reason {
                    message.push_str(&format!(": \"{reason}\""));
                }
                message.push(')');
            }
            found.push(Problem::new(item, exit_codes::CHECK_SWITCH_ON, message));
        }
        if let Some(why) = &s.fenced {
            found.push(Problem::new(
                item,
                exit_codes::CHECK_FENCED,
                format!("fenced ({why}): every buy answers fenced until `reconcile --fence`"),
            ));
        }
        if let (Some(reconcile_at), Some(ttl)) = (thresholds.reconcile_at_ms, s.expires_in_ms) {
            let expires_at = s.redis_time_ms + ttl;
            if expires_at <= reconcile_at {
                found.push(Problem::new(
                    item,
                    exit_codes::CHECK_EXPIRY,
                    format!(
                        "keys expire at {} (in {}), before the reconcile at {}: run it earlier or extend ends_at (preheat --update-meta)",
                        time_or_dash(Some(expires_at)),
                        human_duration_ms(ttl),
                        local_time(reconcile_at)
                    ),
                ));
            }
        }
        if let Some(max) = thresholds.max_lag {
            let lag = s.stream.lag.unwrap_or(0);
            let pending = s.stream.pending;
            if lag > max || pending > max {
                found.push(Problem::new(
                    item,
                    exit_codes::CHECK_LAG,
                    format!(
                        "consumer behind: lag {lag}, pending {pending} (more than --max-lag {max}){}",
                        if s.consumers.is_empty() {
                            "; the group has no consumer"
                        } else {
                            ""
                        }
                    ),
                ));
            }
        }
        if let Some(overdue) = s.overdue
            && let Some(oldest) = overdue.oldest_ms.filter(|ms| *ms > thresholds.grace_ms)
        {
            found.push(Problem::new(
                item,
                exit_codes::CHECK_OVERDUE,
                format!(
                    "{} reservation(s) past their payment deadline, the oldest by {} (more than --grace {}): nothing releases them — is `seckill expire --loop` running?",
                    overdue.orders,
                    human_duration_ms(oldest),
                    human_duration_ms(thresholds.grace_ms)
                ),
            ));
        }
        if s.dead_letter > 0 {
            found.push(Problem::new(
                item,
                exit_codes::CHECK_DEAD_LETTERS,
                format!(
                    "{} order entr{} in the dead-letter stream, not in the order database: `seckill dead-letter list` says why; fix it, then `seckill dead-letter redrive`",
                    s.dead_letter,
                    if s.dead_letter == 1 { "y" } else { "ies" }
                ),
            ));
        }
        if let Some(room) = &s.room
            && room.admitter_behind_ms > thresholds.grace_ms
            && let Some(why) = &room.admitter_behind
        {
            found.push(Problem::new(
                item,
                exit_codes::CHECK_ADMITTER,
                format!(
                    "the waiting room needs `seckill queue admit --loop` and its work is late (more than --grace {}): {why}",
                    human_duration_ms(thresholds.grace_ms)
                ),
            ));
        }
    }
    found
}

/// The exit code of a check: the lowest code among `problems`, 0 without.
pub(crate) fn exit_code(problems: &[Problem]) -> i32 {
    problems
        .iter()
        .map(|p| p.exit_code)
        .min()
        .unwrap_or(exit_codes::SUCCESS)
}

/// The Nagios state of a check: the worst of its problems', OK without.
pub(crate) fn nagios_state(problems: &[Problem]) -> NagiosState {
    problems
        .iter()
        .map(Problem::nagios)
        .max()
        .unwrap_or(NagiosState::Ok)
}

/// `ms` (Unix) on this machine's clock and time zone, with its offset:
/// `--reconcile-at` is read there (as cron reads its crontab).
fn local_time(ms: i64) -> String {
    use chrono::TimeZone;
    match chrono::Local.timestamp_millis_opt(ms).single() {
        Some(at) => at.format("%Y-%m-%d %H:%M %:z").to_string(),
        None => time_or_dash(Some(ms)),
    }
}

/// The Nagios plugin output of a check: `SECKILL STATE - summary | perfdata`,
/// then one line per problem. `summary` names the campaign (and the first
/// problem); the performance data has, per item, units left, lag, pending,
/// dead letters and overdue reservations, with `--max-lag` as the warning
/// threshold of lag and pending.
pub(crate) fn nagios_text(
    campaign: &str,
    statuses: &[ItemStatus],
    problems: &[Problem],
    thresholds: &Thresholds,
) -> String {
    let state = nagios_state(problems);
    // The worst problem leads: it is what the status line is about.
    let worst = problems.iter().rev().max_by_key(|p| p.nagios());
    let summary = match (problems.len(), worst) {
        (1, Some(only)) => format!("campaign {campaign}: {}: {}", only.item, only.message),
        (n, Some(worst)) => format!(
            "campaign {campaign}: {n} problems; {}: {} (and {} more)",
            worst.item,
            worst.message,
            n - 1
        ),
        _ => format!(
            "{} item(s) of campaign {campaign}: no problem found",
            statuses.len()
        ),
    };
    let warn = thresholds
        .max_lag
        .map_or_else(String::new, |n| n.to_string());
    let mut perf = Vec::new();
    for s in statuses {
        let label = |what: &str| format!("'{}_{}'", what, s.item.replace(['\'', '='], "_"));
        if let (Some(left), Some(initial)) = (s.stock_left, s.initial_stock) {
            perf.push(format!("{}={left};;;0;{initial}", label("left")));
        }
        perf.push(format!(
            "{}={};{warn};;0",
            label("lag"),
            s.stream.lag.unwrap_or(0)
        ));
        perf.push(format!(
            "{}={};{warn};;0",
            label("pending"),
            s.stream.pending
        ));
        perf.push(format!("{}={};0;;0", label("dead"), s.dead_letter));
        if let Some(overdue) = s.overdue {
            perf.push(format!("{}={};;;0", label("overdue"), overdue.orders));
        }
    }
    let mut text = format!("SECKILL {} - {summary}", state.name());
    // The status line is one line whatever a message holds.
    text = text.replace(['\n', '|'], " ");
    if !perf.is_empty() {
        text.push_str(&format!(" | {}", perf.join(" ")));
    }
    text.push('\n');
    if problems.len() > 1 {
        for p in problems {
            text.push_str(&format!(
                "{} {}: {}\n",
                p.nagios().name(),
                p.item,
                p.message.replace('|', "/")
            ));
        }
    }
    text
}
