//! `seckill shutdown-switch`: the kill switch. The buy script reads it on
//! every call, so `on` refuses the very next attempt with `closed`.

use anyhow::Result;
use serde::Serialize;

use crate::context::{Context, Opened};
use crate::keys::ItemKeys;
use crate::output;
use crate::report::Report;
use crate::state;

/// What to do with the switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Action {
    /// Close the sale: every buy returns `closed` from its next call.
    On,
    /// Reopen the sale.
    Off,
    /// Show switch state, when and why it was set, and stock left, per item.
    Status,
}

/// Flags of `seckill shutdown-switch`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// on, off or status.
    #[arg(value_enum)]
    pub action: Action,

    /// Only this item (default: every item of the campaign).
    #[arg(long, value_name = "ID")]
    pub item: Option<String>,

    /// Why (kept with the switch, shown by status).
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub reason: String,
}

/// `seckill shutdown-switch`'s report: the switch of each item after the action.
#[derive(Debug, Serialize)]
pub struct SwitchReport {
    /// One entry per selected item.
    pub items: Vec<SwitchRow>,
    #[serde(skip)]
    campaign: String,
}

/// One item's switch.
#[derive(Debug, Serialize)]
pub struct SwitchRow {
    /// The item id.
    pub item: String,
    /// The switch is on: every buy returns `closed`.
    pub closed: bool,
    /// The item's stock is in Redis.
    pub preheated: bool,
    /// Units left; null when not preheated.
    pub stock_left: Option<i64>,
    /// `--reason` of the last switch, if any.
    pub reason: Option<String>,
    /// When the switch was last set, RFC 3339.
    pub switched_at: Option<String>,
    /// Who set it (`user@host`).
    pub switched_by: Option<String>,
}

impl Report for SwitchReport {
    fn render(&self) -> String {
        let mut table = output::table(["item", "switch", "stock\nleft", "reason", "switched"]);
        for row in &self.items {
            // Seconds are precise enough for people, and 4 columns narrower.
            let at = row
                .switched_at
                .as_deref()
                .map(|at| match at.split_once('.') {
                    Some((seconds, _)) => format!("{seconds}Z"),
                    None => at.to_string(),
                });
            let switched = match (at, &row.switched_by) {
                (Some(at), Some(by)) => format!("{at} by {by}"),
                (Some(at), None) => at,
                _ => "-".into(),
            };
            table.add_row(vec![
                row.item.clone(),
                if row.closed {
                    "ON (closed)"
                } else {
                    "off (open)"
                }
                .to_string(),
                match (row.preheated, row.stock_left) {
                    (true, Some(s)) => s.to_string(),
                    _ => "not preheated".to_string(),
                },
                row.reason.clone().unwrap_or_else(|| "-".into()),
                switched,
            ]);
        }
        output::fit(&mut table, &[3, 4]);
        format!("kill switch of campaign {}\n{table}\n", self.campaign)
    }
}

/// Flip or show the switch; the report is the per-item status afterwards.
pub fn run(ctx: &Context, args: &Args) -> Result<SwitchReport> {
    let Opened {
        campaign, mut conn, ..
    } = ctx.open()?;
    let items = campaign.select_items(args.item.as_deref())?;
    if args.action != Action::Status {
        let now = state::redis_now_ms(&mut conn)?;
        let by = state::operator_name();
        for item in &items {
            let keys = ItemKeys::live(&campaign.id, &item.id);
            state::set_switch(
                &mut conn,
                &keys,
                args.action == Action::On,
                &args.reason,
                &by,
                now,
                campaign.expire_at_ms(),
            )?;
        }
    }
    let mut rows = Vec::new();
    for item in &items {
        let s = state::item_state(&mut conn, &ItemKeys::live(&campaign.id, &item.id))?;
        rows.push(SwitchRow {
            item: item.id.clone(),
            closed: s.closed,
            preheated: s.preheated,
            stock_left: s.stock,
            reason: s.switch_reason,
            switched_at: s.switched_at_ms.map(|ms| output::time_or_dash(Some(ms))),
            switched_by: s.switched_by,
        });
    }
    Ok(SwitchReport {
        items: rows,
        campaign: campaign.id.clone(),
    })
}
