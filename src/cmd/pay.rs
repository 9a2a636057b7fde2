//! `seckill pay`: mark one reserved order paid (campaigns with
//! `payment_timeout`). The exit code is the outcome; paying twice is safe.

use anyhow::Result;

use crate::context::Globals;
use crate::reservations::{self, OrderResult};

/// Flags of `seckill pay`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Exit codes: 0 paid; 30 already_paid (paid before, nothing changed); 31 order_expired \
(the deadline passed: never paid); 32 order_cancelled; 33 unknown_order; 16 not_preheated \
(the item's keys are gone); 1 runtime error (outcome unknown: paying again is safe); 2 usage error.
Example: seckill -c campaigns/moutai.yaml pay --order 01M8MVJK1WDE3K2GTCRWF2KE6V")]
pub struct Args {
    /// The order id `buy` printed.
    #[arg(long, value_name = "ID")]
    pub order: String,

    /// Look the order up in this item only (default: every item of the campaign).
    #[arg(long, value_name = "ID")]
    pub item: Option<String>,
}

/// Pay one order and print the outcome; the exit code is the outcome's.
pub fn run(globals: &Globals, args: &Args) -> Result<i32> {
    let campaign = globals.campaign()?;
    let target = globals.redis(&campaign)?;
    let mut conn = target.connect()?;
    let result = reservations::pay(&mut conn, &campaign, args.item.as_deref(), &args.order)?;
    print(globals, &campaign.id, &result)
}

/// Print a `pay` or `cancel` result (table or JSON); returns its exit code.
pub fn print(globals: &Globals, campaign: &str, result: &OrderResult) -> Result<i32> {
    use crate::output::{self, Format, time_or_dash};
    let code = reservations::exit_code(result.reply.outcome);
    match globals.format {
        Format::Json => output::print_json(&serde_json::json!({
            "campaign": campaign,
            "result": result,
            "exit_code": code,
        }))?,
        Format::Table => {
            let mut table = output::table([
                "outcome", "order id", "item", "state", "qty", "deadline", "since", "user",
            ]);
            let reply = &result.reply;
            let known = reply.state.is_some();
            let dash = || "-".to_string();
            table.add_row(vec![
                reply.outcome.as_str().to_string(),
                result.order_id.clone(),
                result.item.clone().unwrap_or_else(dash),
                reply.state.clone().unwrap_or_else(dash),
                if known { reply.qty.to_string() } else { dash() },
                time_or_dash(known.then_some(reply.deadline_ms)),
                time_or_dash(known.then_some(reply.changed_at_ms)),
                reply.user.clone().unwrap_or_else(dash),
            ]);
            println!("{table}");
        }
    }
    Ok(code)
}
