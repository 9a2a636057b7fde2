//! `seckill cancel`: release one reserved order now (campaigns with
//! `payment_timeout`): its units go back on sale. A paid order is never
//! released; cancelling twice is safe.

use anyhow::Result;

use super::pay::OrderReport;
use crate::domain::reservations;
use crate::invocation::context::Context;

/// Flags of `seckill cancel`.
#[derive(Debug, clap::Args)]
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

/// Cancel one order; the exit code is the outcome's.
pub fn run(ctx: &Context, args: &Args) -> Result<OrderReport> {
    let mut opened = ctx.open()?;
    let result = reservations::cancel(
        &mut opened.conn,
        &opened.campaign,
        args.item.as_deref(),
        &args.order,
        &args.reason,
    )?;
    Ok(OrderReport { result })
}
