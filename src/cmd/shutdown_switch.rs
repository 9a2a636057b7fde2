//! `seckill shutdown-switch`: the kill switch. The buy script reads it on
//! every call, so `on` refuses the very next attempt with `closed`.

use anyhow::Result;
use serde::Serialize;

use crate::buckets::state::BucketStatus;
use crate::buckets::{self, Layout};
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
#[command(
    after_help = "A bucketed item (docs/buckets.md) is closed in every bucket before `on` returns; \
a bucket that cannot be written fails the command, naming it.\n\
Examples:\n  seckill -c campaigns/moutai.yaml shutdown-switch on --reason \"payment gateway down\"\n  \
seckill -c campaigns/moutai-cluster.yaml --cluster shutdown-switch status --buckets"
)]
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

    /// Also show each bucket of a bucketed item (switch, slot, stock, pending transfers).
    #[arg(long)]
    pub buckets: bool,
}

#[derive(Debug, Serialize)]
struct SwitchRow {
    item: String,
    buckets: u32,
    /// Bucketed items: how many buckets are closed (`closed` means all are).
    #[serde(skip_serializing_if = "Option::is_none")]
    buckets_closed: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    per_bucket: Option<Vec<BucketStatus>>,
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
            let layout = Layout::live(&campaign.id, item);
            if layout.is_bucketed() {
                buckets::state::set_switch(
                    &mut conn,
                    &layout,
                    args.action == Action::On,
                    &args.reason,
                    &by,
                    now,
                    campaign.expire_at_ms(),
                )?;
                continue;
            }
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
        let layout = Layout::live(&campaign.id, item);
        let (s, per_bucket) = if layout.is_bucketed() {
            let per_bucket = buckets::state::bucket_statuses(&mut conn, &layout)?;
            (
                buckets::state::item_state(&mut conn, &layout)?,
                Some(per_bucket),
            )
        } else {
            (
                state::item_state(&mut conn, &ItemKeys::live(&campaign.id, &item.id))?,
                None,
            )
        };
        let buckets_closed = per_bucket
            .as_ref()
            .map(|parts| parts.iter().filter(|b| b.closed).count() as u32);
        rows.push(SwitchRow {
            buckets: item.buckets,
            buckets_closed,
            per_bucket: per_bucket.filter(|_| args.buckets),
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
        Format::Table => {
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
                    match row.buckets_closed {
                        Some(k) if k > 0 && k < row.buckets => {
                            format!("PARTLY ON ({k}/{} buckets closed)", row.buckets)
                        }
                        _ if row.closed => "ON (closed)".to_string(),
                        _ => "off (open)".to_string(),
                    },
                    match (row.preheated, row.stock_left) {
                        (true, Some(s)) => s.to_string(),
                        _ => "not preheated".to_string(),
                    },
                    row.reason.clone().unwrap_or_else(|| "-".into()),
                    row.switched_at.clone().unwrap_or_else(|| "-".into()),
                    row.switched_by.clone().unwrap_or_else(|| "-".into()),
                ]);
                for part in row.per_bucket.iter().flatten() {
                    table.add_row(vec![
                        format!("  bucket {} (slot {})", part.bucket, part.slot),
                        if part.closed {
                            "ON (closed)"
                        } else {
                            "off (open)"
                        }
                        .to_string(),
                        match (part.preheated, part.stock_left) {
                            (true, Some(s)) => s.to_string(),
                            _ => "not preheated".to_string(),
                        },
                        format!("{} transfer(s) pending", part.transfers_pending),
                        String::new(),
                        String::new(),
                    ]);
                }
            }
            println!("kill switch of campaign {}", campaign.id);
            println!("{table}");
        }
    }
    Ok(exit_codes::SUCCESS)
}
