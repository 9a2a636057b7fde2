//! `seckill shutdown-switch`: the kill switch. The buy script reads it on
//! every call, so `on` refuses the very next attempt with `closed`.

use anyhow::Result;
use serde::Serialize;

use crate::context::Globals;
use crate::error::usage;
use crate::exit_codes;
use crate::keys::ItemKeys;
use crate::kill_switch::{self, Flip};
use crate::output::{self, Format};
use crate::state;
use crate::status::{StatusReader, WindowState};

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

    /// Who flips the switch, kept with it [default: the OS account, as user@host].
    #[arg(long, value_name = "NAME", env = "SECKILL_OPERATOR")]
    pub by: Option<String>,

    /// With `status`: also list the last flips of each item (newest first).
    #[arg(long)]
    pub history: bool,
}

#[derive(Debug, Serialize)]
struct SwitchRow {
    item: String,
    closed: bool,
    preheated: bool,
    /// The sale window on the Redis clock: not_preheated, not_started, open, ended.
    window: WindowState,
    stock_left: Option<i64>,
    reason: Option<String>,
    switched_at: Option<String>,
    switched_by: Option<String>,
    /// The last flips, newest first (`--history` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    history: Option<Vec<Flip>>,
}

/// Flip or show the switch, then print the per-item status.
pub fn run(globals: &Globals, args: &Args) -> Result<i32> {
    let campaign = globals.campaign()?;
    let items = campaign.select_items(args.item.as_deref())?;
    if args.history && args.action != Action::Status {
        return Err(usage("--history goes with `shutdown-switch status`"));
    }
    let by = kill_switch::operator(args.by.as_deref())?;
    let target = globals.redis(&campaign)?;
    let mut conn = target.connect()?;
    if args.action != Action::Status {
        let now = state::redis_now_ms(&mut conn)?;
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
    let statuses =
        StatusReader::without_rate_scan().read_campaign(&mut conn, &campaign, &items, 0)?;
    let mut rows = Vec::new();
    let mut windows = Vec::new();
    for s in statuses {
        let history = if args.history {
            let keys = ItemKeys::live(&campaign.id, &s.item);
            Some(kill_switch::history(&mut conn, &keys)?)
        } else {
            None
        };
        rows.push(SwitchRow {
            item: s.item,
            closed: s.kill_switch.on,
            preheated: s.preheated,
            window: s.window.state,
            stock_left: s.stock_left,
            reason: s.kill_switch.reason,
            switched_at: s
                .kill_switch
                .switched_at_ms
                .map(|ms| output::time_or_dash(Some(ms))),
            switched_by: s.kill_switch.switched_by,
            history,
        });
        windows.push(s.window);
    }
    match globals.format {
        Format::Json => output::print_json(&serde_json::json!({
            "campaign": campaign.id,
            "items": rows,
        }))?,
        Format::Table | Format::Prometheus => {
            let mut table = output::table([
                "item",
                "switch",
                "sale window",
                "stock left",
                "reason",
                "switched at",
                "by",
            ]);
            for (row, window) in rows.iter().zip(&windows) {
                table.add_row(vec![
                    row.item.clone(),
                    // "off" only: whether buys go through also depends on the window.
                    if row.closed { "ON (closed)" } else { "off" }.to_string(),
                    window.describe(),
                    match (row.preheated, row.stock_left) {
                        (true, Some(s)) => s.to_string(),
                        _ => "not preheated".to_string(),
                    },
                    row.reason.clone().unwrap_or_else(|| "-".into()),
                    row.switched_at.clone().unwrap_or_else(|| "-".into()),
                    row.switched_by.clone().unwrap_or_else(|| "-".into()),
                ]);
            }
            println!("kill switch of campaign {}", campaign.id);
            println!("{table}");
            for row in &rows {
                let Some(history) = &row.history else {
                    continue;
                };
                println!(
                    "last {} flip(s) of item {}, newest first",
                    history.len(),
                    row.item
                );
                let mut table = output::table(["at", "switch", "reason", "by"]);
                for flip in history {
                    table.add_row(vec![
                        output::time_or_dash(Some(flip.at_ms)),
                        if flip.closed { "ON" } else { "off" }.to_string(),
                        if flip.reason.is_empty() {
                            "-".to_string()
                        } else {
                            flip.reason.clone()
                        },
                        flip.by.clone(),
                    ]);
                }
                println!("{table}");
            }
        }
    }
    Ok(exit_codes::SUCCESS)
}
