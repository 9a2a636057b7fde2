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
use crate::util::text::time_or_dash;

/// Flags of `seckill campaigns` (none of its own: `--redis URL` or `-c FILE`).
#[derive(Debug, clap::Args)]
pub(crate) struct Args {}

/// `seckill campaigns`'s report.
#[derive(Debug, Serialize)]
pub(crate) struct CampaignsReport {
    /// Every campaign live on this Redis, by id.
    pub(crate) live: Vec<Entry>,
}

impl Report for CampaignsReport {
    fn render(&self) -> String {
        if self.live.is_empty() {
            return "no live campaign on this Redis (none preheated, or every one's keys expired)\n"
                .to_string();
        }
        let never =
            |ms: Option<i64>| ms.map_or_else(|| "-".to_string(), |ms| time_or_dash(Some(ms)));
        let rows = self
            .live
            .iter()
            .map(|e| {
                vec![
                    e.campaign.clone(),
                    e.items.join(" "),
                    format!("{} → {}", never(e.starts_at_ms), never(e.ends_at_ms)),
                    e.expire_at_ms
                        .map_or_else(|| "never".to_string(), |ms| time_or_dash(Some(ms))),
                    format!("{} by {}", e.file, e.by),
                ]
            })
            .collect();
        output::grid(
            &[
                "campaign",
                "items",
                "window",
                "keys expire",
                "preheated from",
            ],
            rows,
            &[1, 4],
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
    Ok(CampaignsReport {
        live: registry::live(&mut conn, now)?,
    })
}
