//! `seckill cancel`: release one reserved order now (campaigns with
//! `payment_timeout`): its units go back on sale. A paid order is never
//! released; cancelling twice is safe.

use anyhow::Result;

use crate::context::Globals;
use crate::reservations;

/// Flags of `seckill cancel`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Exit codes: 0 cancelled (units back in stock); 30 already_paid (paid: never released); \
31 order_expired (released by its deadline before); 32 order_cancelled (cancelled before, \
nothing changed); 33 unknown_order; 16 not_preheated (the item's keys are gone); 1 runtime \
error (outcome unknown: cancelling again is safe); 2 usage error.
Example: seckill -c campaigns/moutai.yaml cancel --order 01M8MVJK1WDE3K2GTCRWF2KE6V --reason \"user asked\"")]
pub struct Args {
    /// The order id `buy` printed.
    #[arg(long, value_name = "ID")]
    pub order: String,

    /// Look the order up in this item only (default: every item of the campaign).
    #[arg(long, value_name = "ID")]
    pub item: Option<String>,

    /// Why, kept in the order's `cancelled` event and the database row (at most 255 bytes).
    #[arg(long, default_value = "", value_name = "TEXT")]
    pub reason: String,
}

/// Cancel one order and print the outcome; the exit code is the outcome's.
pub fn run(globals: &Globals, args: &Args) -> Result<i32> {
    let campaign = globals.campaign()?;
    let target = globals.redis(&campaign)?;
    let mut conn = target.connect()?;
    let result = reservations::cancel(
        &mut conn,
        &campaign,
        args.item.as_deref(),
        &args.order,
        &args.reason,
    )?;
    super::pay::print(globals, &campaign.id, &result)
}
