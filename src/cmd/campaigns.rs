//! `seckill campaigns`: the sales live on a Redis, as `preheat` recorded
//! them (`domain::registry`): which campaign, which items, its window, when
//! its keys expire, which file and who. Runs with `--redis URL` alone, or on
//! the Redis of `-c FILE`.

use anyhow::Result;
use serde::Serialize;

use crate::domain::registry::{self, Entry};
use crate::domain::slot;
use crate::invocation::context::Context;
use crate::invocation::report::Report;
use crate::util::output;
use crate::util::text::minutes_or_dash;

/// Flags of `seckill campaigns` (none of its own: `--redis URL` or `-c FILE`).
#[derive(Debug, clap::Args)]
pub(crate) struct Args {}

/// `seckill campaigns`'s report.
#[derive(Debug, Serialize)]
pub(crate) struct CampaignsReport {
    /// Every campaign whose keys are on this Redis, by id.
    pub(crate) live: Vec<Listed>,
}

/// One campaign and where its sale stands now (Redis clock).
#[derive(Debug, Serialize)]
pub(crate) struct Listed {
    #[serde(flatten)]
    pub(crate) entry: Entry,
    /// `not_started`, `selling` (inside its window) or `ended` (its keys stay
    /// until `keys expire` for the nightly reconcile).
    pub(crate) state: &'static str,
}

/// Where a sale with `entry`'s window stands at `now_ms`.
fn state_of(entry: &Entry, now_ms: i64) -> &'static str {
    match (entry.starts_at_ms, entry.ends_at_ms) {
        (Some(start), _) if now_ms < start => "not_started",
        (_, Some(end)) if now_ms >= end => "ended",
        _ => "selling",
    }
}

impl Report for CampaignsReport {
    fn render(&self) -> String {
        if self.live.is_empty() {
            return "no live campaign on this Redis (none preheated, or every one's keys expired)\n"
                .to_string();
        }
        let when = |ms: Option<i64>| match ms {
            Some(ms) => minutes_or_dash(Some(ms)),
            None => "-".to_string(),
        };
        let rows = self
            .live
            .iter()
            .map(|listed| {
                let e = &listed.entry;
                vec![
                    e.campaign.clone(),
                    listed.state.replace('_', " "),
                    e.items.join(" "),
                    format!("{}\n{}", when(e.starts_at_ms), when(e.ends_at_ms)),
                    format!(
                        "keys until {}; from {} by {}",
                        e.expire_at_ms
                            .map_or_else(|| "never".to_string(), |ms| when(Some(ms))),
                        e.file,
                        e.by
                    ),
                ]
            })
            .collect();
        output::grid(
            &["campaign", "state", "items", "opens\ncloses", "keys, file"],
            rows,
            &[2, 4],
        )
    }
}

/// List the live campaigns.
pub(crate) fn run(ctx: &Context, _args: &Args) -> Result<CampaignsReport> {
    let campaign = match &ctx.campaign_file {
        Some(_) => Some(ctx.campaign()?),
        None => None,
    };
    let target = ctx.redis_of(campaign.as_ref())?;
    let mut conn = target.connect()?;
    let now = slot::redis_now_ms(&mut conn)?;
    let live = registry::live(&mut conn, now)?
        .into_iter()
        .map(|entry| Listed {
            state: state_of(&entry, now),
            entry,
        })
        .collect();
    Ok(CampaignsReport { live })
}
