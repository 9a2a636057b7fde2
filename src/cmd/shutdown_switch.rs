//! `seckill shutdown-switch`: the kill switch. The buy script reads it on
//! every call, so `on` refuses the very next attempt with `closed`.

use anyhow::Result;
use serde::Serialize;

use crate::context::Globals;
use crate::exit_codes;
use crate::keys::ItemKeys;
use crate::output::{self, Format};
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

#[derive(Debug, Serialize)]
struct SwitchRow {
    item: String,
    closed: bool,
    preheated: bool,
    stock_left: Option<i64>,
    reason: Option<String>,
    switched_at: Option<String>,
    switched_by: Option<String>,
}

/// Flip or show the switch, then print the per-item status.
pub fn run(globals: &Globals, args: &Args) -> Result<i32> {
    let campaign = globals.campaign()?;
    let items = campaign.select_items(args.item.as_deref())?;
    let target = globals.redis(&campaign)?;
    let mut conn = target.connect()?;
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
    match globals.format {
        Format::Json => output::print_json(&serde_json::json!({
            "campaign": campaign.id,
            "items": rows,
        }))?,
        Format::Table | Format::Prometheus => {
            let mut table = output::table([
                "item",
                "switch",
                "stock left",
                "reason",
                "switched at",
                "by",
            ]);
            for row in &rows {
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
                    row.switched_at.clone().unwrap_or_else(|| "-".into()),
                    row.switched_by.clone().unwrap_or_else(|| "-".into()),
                ]);
            }
            println!("kill switch of campaign {}", campaign.id);
            println!("{table}");
        }
    }
    Ok(exit_codes::SUCCESS)
}
