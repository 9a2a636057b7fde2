//! `status --check`: a status turned into the problems a probe (cron,
//! nagios, a deploy script) acts on, each with its own exit code.
//!
//! Checked per item, in this order: not preheated (nothing else is checked
//! then: there is nothing to sell), kill switch ON (in any bucket), keys that
//! expire before the next `--reconcile-at` (the nightly proof could no longer
//! check the item), lag or pending above `--max-lag`. The exit code is the
//! lowest code among the problems found — the codes run from the worst
//! (nothing on sale) to the mildest (the consumer is behind).

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
}

/// One problem of one item.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Problem {
    /// The item id.
    pub(crate) item: String,
    /// The exit code this problem alone would give.
    pub(crate) exit_code: i32,
    /// Its name: `check_preheat`, `check_switch_on`, `check_expiry`, `check_lag`
    pub(crate) kind: &'static str,
    /// What is wrong, for people.
    pub(crate) message: String,
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
                        time_or_dash(Some(reconcile_at))
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
