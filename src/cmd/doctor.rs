//! `seckill doctor`: go / no-go before a launch (`operator::doctor` makes the
//! checks, on every node). Exit 0 is go, with warnings listed; exit 8
//! (`no_go`) names what would wreck the sale and what to do. Run it as the
//! admin user: the checks read INFO, CONFIG, CLUSTER NODES and ACL LIST,
//! which the sale's roles may not (`--user` checks a role's user from
//! there); run from a role's own URL, it proves that role's whole path and
//! says what it could not check.

use anyhow::Result;
use redis::IntoConnectionInfo;
use serde::Serialize;

use crate::domain::orders::{StoreArgs, StoreLocation};
use crate::invocation::context::Context;
use crate::invocation::report::Report;
use crate::model::error::usage;
use crate::model::exit_codes;
use crate::model::role::Role;
use crate::operator::doctor::fleet::{self, Reach};
use crate::operator::doctor::memory::SaleMemory;
use crate::operator::doctor::{self, Check, Request, Verdict};
use crate::redis_client::conn::{ConnectionArgs, DEFAULT_REDIS_URL, RedisTarget, split_urls};
use crate::util::columns::{self, Column};
use crate::util::error_text::render;
use crate::util::output;

/// Flags of `seckill doctor`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The role whose whole path is checked on every node: connecting, the commands its
    /// subcommands send outside scripts, each script and every command inside them.
    #[arg(long, value_enum, default_value = "operator")]
    pub(crate) role: Role,

    /// The Redis user playing --role [default: the URL's own user, which then checks itself
    /// without admin rights]. Another user is checked with ACL DRYRUN: run doctor as an admin.
    #[arg(long, value_name = "NAME")]
    pub(crate) user: Option<String>,

    /// When the nightly `reconcile` runs (HH:MM, this machine's local time, as cron reads
    /// it): the keys must outlive it [default: within 24 h of ends_at].
    #[arg(long, value_name = "HH:MM", value_parser = parse_time_of_day)]
    pub(crate) reconcile_at: Option<u32>,

    /// A check this user may not make (its ACL refuses INFO, CONFIG GET, CLUSTER NODES, ACL
    /// LIST, or the permission check itself) is a warning instead of a no-go. Without it,
    /// what doctor could not see is never taken as passed.
    #[arg(long)]
    pub(crate) allow_unchecked: bool,

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
    /// Each master's memory against the units still to sell on it.
    pub(crate) sale_memory: Vec<SaleMemory>,
    /// `-v`: every detail whole in the table.
    #[serde(skip)]
    verbose: bool,
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

    /// One line per check (the seen column cut to the line, or wrapped in
    /// full under `-v`), then each problem whose cell was cut in full, then
    /// what to do, one paragraph per fix.
    fn render(&self) -> String {
        let rows: Vec<Vec<String>> = self
            .checks
            .iter()
            .map(|c| {
                vec![
                    c.check.to_string(),
                    verdict_word(c.verdict).to_string(),
                    if self.verbose {
                        c.detail.clone()
                    } else {
                        c.summary.clone().unwrap_or_else(|| c.detail.clone())
                    },
                ]
            })
            .collect();
        let seen = if self.verbose {
            Column::wrap("SEEN")
        } else {
            Column::cut("SEEN")
        };
        let listing = columns::list(
            &[Column::whole("CHECK"), Column::whole("VERDICT"), seen],
            &rows,
        );
        let mut text = format!(
            "{}\n{}",
            if self.go {
                "GO: nothing found that would wreck the sale"
            } else {
                "NO-GO: fix every FAIL before the sale"
            },
            listing.text
        );
        // A problem's whole detail, when the table had to cut it (a cut ok
        // line is whole under -v and in JSON).
        for (c, cut) in self.checks.iter().zip(&listing.cut) {
            if c.verdict != Verdict::Ok && (*cut || c.summary.is_some()) {
                text.push_str(&output::hanging(&format!("{}: {}", c.check, c.detail), 2));
            }
        }
        // One paragraph per fix, naming every check it fixes: the same
        // "run doctor as an admin" need not be read six times.
        let mut fixes: Vec<(Verdict, Vec<&str>, &str)> = Vec::new();
        for c in &self.checks {
            let Some(fix) = c.fix.as_deref() else {
                continue;
            };
            match fixes.iter_mut().find(|(_, _, f)| *f == fix) {
                Some((verdict, names, _)) => {
                    *verdict = (*verdict).max(c.verdict);
                    names.push(c.check);
                }
                None => fixes.push((c.verdict, vec![c.check], fix)),
            }
        }
        for (verdict, names, fix) in fixes {
            text.push_str(&output::hanging(
                &format!("{} {}: {fix}", verdict_word(verdict), names.join(", ")),
                2,
            ));
        }
        text
    }
}

/// How a verdict reads in the table: what needs a person in capitals.
fn verdict_word(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Ok => "ok",
        Verdict::Warn => "WARN",
        Verdict::Fail => "FAIL",
    }
}

/// Run every check; exit 0 go, 8 no-go.
/// `seckill doctor` in a campaign with regions and no `--region`: every
/// region's Redis, each checked as a one-region sale (docs/regions.md).
/// GO only when every region is.
#[derive(Debug, Serialize)]
pub(crate) struct RegionsDoctor {
    pub(crate) go: bool,
    pub(crate) regions: Vec<RegionDoctor>,
}

#[derive(Debug, Serialize)]
pub(crate) struct RegionDoctor {
    pub(crate) region: String,
    /// The region's report; `None` when it could not be checked (`error`).
    pub(crate) report: Option<DoctorReport>,
    pub(crate) error: Option<String>,
}

impl Report for RegionsDoctor {
    fn exit_code(&self) -> i32 {
        if self.go {
            exit_codes::SUCCESS
        } else {
            exit_codes::NO_GO
        }
    }

    fn failure(&self) -> Option<String> {
        let failed: Vec<String> = self
            .regions
            .iter()
            .filter_map(|r| match (&r.report, &r.error) {
                (_, Some(error)) => Some(format!("region {}: {error}", r.region)),
                (Some(report), None) => report
                    .failure()
                    .map(|failure| format!("region {}: {failure}", r.region)),
                (None, None) => None,
            })
            .collect();
        (!failed.is_empty()).then(|| failed.join("; "))
    }

    fn render(&self) -> String {
        let mut out = String::new();
        for region in &self.regions {
            out.push_str(&format!("== region {} ==\n", region.region));
            match (&region.report, &region.error) {
                (Some(report), _) => out.push_str(&report.render()),
                (None, Some(error)) => out.push_str(&format!("NO-GO: cannot check: {error}\n")),
                (None, None) => {}
            }
        }
        out.push_str(if self.go {
            "GO in every region\n"
        } else {
            "NO-GO: a region is not ready (above)\n"
        });
        out
    }
}

/// `seckill doctor`: one Redis, or every region of a campaign with regions
/// when no `--region` says which (a region that cannot be checked is NO-GO).
pub(crate) fn run_anywhere(ctx: &Context, args: &Args) -> Result<i32> {
    let campaign = ctx.campaign_everywhere()?;
    if campaign.regions.is_empty() || ctx.connection.region.is_some() {
        return crate::invocation::report::emit(ctx, &run(ctx, args)?);
    }
    let mut regions = Vec::new();
    for region in &campaign.regions {
        let (report, error) = match run(&ctx.in_region(&region.name), args) {
            Ok(report) => (Some(report), None),
            Err(error) => (None, Some(format!("{error:#}"))),
        };
        regions.push(RegionDoctor {
            region: region.name.clone(),
            report,
            error,
        });
    }
    let go = regions
        .iter()
        .all(|r| r.report.as_ref().is_some_and(|report| report.go));
    crate::invocation::report::emit(ctx, &RegionsDoctor { go, regions })
}

pub(crate) fn run(ctx: &Context, args: &Args) -> Result<DoctorReport> {
    let campaign = ctx.campaign()?;
    let location = StoreLocation::resolve(&args.store, &campaign)?;
    if campaign.items.is_empty() {
        return Err(usage("the campaign has no item to check"));
    }
    let target = ctx.redis(&campaign)?;
    let url = ctx
        .connection
        .redis_url
        .clone()
        .or_else(|| campaign.redis_url.clone())
        .unwrap_or_else(|| DEFAULT_REDIS_URL.to_string());
    let urls = split_urls(&url);
    let first = urls.first().cloned().unwrap_or_default();
    let settings = first
        .as_str()
        .into_connection_info()
        .map(|info| info.redis_settings().clone())
        .map_err(|e| usage(format!("invalid Redis URL: {e}")))?;
    let url_user = settings.username().unwrap_or("default").to_string();
    let seeds = urls
        .iter()
        .map(|u| fleet::addr_of_url(u))
        .collect::<Result<Vec<_>>>()?;
    let connect_target = || target.connect();
    let connect_node = |addr: &str| {
        let Some(node_url) = fleet::url_of_node(&first, addr) else {
            anyhow::bail!("{addr}: the URL names no host and port to replace");
        };
        let args = ConnectionArgs {
            redis_url: Some(node_url),
            cluster: false,
            ..ctx.connection.clone()
        };
        RedisTarget::resolve(&args, None)?.connect()
    };
    let mut main = target.connect();
    let request = Request {
        campaign: &campaign,
        store: &location,
        role: args.role,
        user: args.user.as_deref().unwrap_or(&url_user),
        url_user: &url_user,
        db: settings.db(),
        display: target.display.clone(),
        reconcile_at_min: args.reconcile_at,
        allow_unchecked: args.allow_unchecked,
        reach: Reach {
            cluster: target.cluster(),
            seeds: &seeds,
            target: &connect_target,
            node: &connect_node,
        },
    };
    let findings = doctor::run(main.as_mut().map_err(|e| render(e)), &request);
    Ok(DoctorReport {
        go: doctor::go(&findings.checks),
        checks: findings.checks,
        sale_memory: findings.sale_memory,
        verbose: crate::redis_client::trace::enabled(),
    })
}
