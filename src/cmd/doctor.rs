//! `seckill doctor`: go / no-go before a launch (`operator::doctor` makes the
//! checks). Exit 0 is go, with warnings listed; exit 8 (`no_go`) names what
//! would wreck the sale and what to do. Run it as the admin user: the
//! checks read INFO, CONFIG and ACL, which the sale's roles may not.

use anyhow::Result;
use serde::Serialize;

use crate::domain::orders::{StoreArgs, StoreLocation};
use crate::invocation::context::{Context, Opened};
use crate::invocation::report::Report;
use crate::model::error::usage;
use crate::model::exit_codes;
use crate::model::role::Role;
use crate::operator::doctor::{self, Check, Request, Verdict};
use crate::util::output;

/// Flags of `seckill doctor`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The role the URL's user plays in the sale: its scripts are checked with ACL DRYRUN.
    #[arg(long, value_enum, default_value = "operator")]
    pub(crate) role: Role,

    /// When the nightly `reconcile` runs (UTC, HH:MM): the keys must outlive
    /// it [default: within 24 h of ends_at].
    #[arg(long, value_name = "HH:MM", value_parser = parse_time_of_day)]
    pub(crate) reconcile_at: Option<u32>,

    #[command(flatten)]
    pub(crate) store: StoreArgs,
}

/// `HH:MM` as minutes after midnight.
fn parse_time_of_day(text: &str) -> std::result::Result<u32, String> {
    let parsed = text
        .split_once(':')
        .and_then(|(h, m)| Some((h.parse::<u32>().ok()?, m.parse::<u32>().ok()?)));
    match parsed {
        Some((h, m)) if h < 24 && m < 60 && text.len() == 5 => Ok(h * 60 + m),
        _ => Err(format!("{text:?} is not a time of day HH:MM (e.g. 03:00)")),
    }
}

/// `seckill doctor`'s report.
#[derive(Debug, Serialize)]
pub(crate) struct DoctorReport {
    /// No check failed: the sale can go.
    pub(crate) go: bool,
    /// Every check, in order.
    pub(crate) checks: Vec<Check>,
}

impl Report for DoctorReport {
    fn exit_code(&self) -> i32 {
        if self.go {
            exit_codes::SUCCESS
        } else {
            exit_codes::NO_GO
        }
    }

    fn failure(&self) -> Option<String> {
        let failed: Vec<&str> = self
            .checks
            .iter()
            .filter(|c| c.verdict == Verdict::Fail)
            .map(|c| c.check)
            .collect();
        (!failed.is_empty()).then(|| format!("no-go: {}", failed.join(", ")))
    }

    fn render(&self) -> String {
        let rows = self
            .checks
            .iter()
            .map(|c| {
                vec![
                    c.check.to_string(),
                    match c.verdict {
                        Verdict::Ok => "ok",
                        Verdict::Warn => "WARN",
                        Verdict::Fail => "FAIL",
                    }
                    .to_string(),
                    c.detail.clone(),
                ]
            })
            .collect();
        let mut text = format!(
            "{}\n{}",
            if self.go {
                "GO: nothing found that would wreck the sale"
            } else {
                "NO-GO: fix every FAIL before the sale"
            },
            output::grid(&["check", "verdict", "what was seen"], rows, &[2])
        );
        for c in self.checks.iter().filter(|c| c.fix.is_some()) {
            text.push_str(&output::paragraph(&format!(
                "{} {}: {}",
                if c.verdict == Verdict::Fail {
                    "FAIL"
                } else {
                    "WARN"
                },
                c.check,
                c.fix.as_deref().unwrap_or_default()
            )));
        }
        text
    }
}

/// Run every check; exit 0 go, 6 no-go.
pub(crate) fn run(ctx: &Context, args: &Args) -> Result<DoctorReport> {
    let location = StoreLocation::resolve(&args.store, &ctx.campaign()?)?;
    let Opened {
        campaign,
        target,
        mut conn,
    } = ctx.open()?;
    if campaign.items.is_empty() {
        return Err(usage("the campaign has no item to check"));
    }
    let checks = doctor::run(
        &mut conn,
        &Request {
            campaign: &campaign,
            target: &target,
            store: &location,
            role: args.role,
            reconcile_at_min: args.reconcile_at,
        },
    );
    Ok(DoctorReport {
        go: doctor::go(&checks),
        checks,
    })
}
