//! `seckill cancel`: release one reserved order now (campaigns with
//! `payment_timeout`): its units go back on sale. A paid order is never
//! released; cancelling twice is safe.

use anyhow::Result;

use super::pay::OrderReport;
use crate::domain::operation::order::{Change, OrderChange};
use crate::invocation::context::Context;

/// Flags of `seckill cancel`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The order id `buy` printed.
    #[arg(long, value_name = "ID")]
    pub(crate) order: String,

    /// Look the order up in this item only (default: every item of the campaign).
    #[arg(long, value_name = "ID")]
    pub(crate) item: Option<String>,

    /// Why, kept in the order's `cancelled` event and the database row (at most 255 bytes).
    #[arg(long, default_value = "", value_name = "TEXT")]
    pub(crate) reason: String,
}

/// Cancel one order; the exit code is the outcome's.
pub(crate) fn run(ctx: &Context, args: &Args) -> Result<OrderReport> {
    super::pay::apply(
        ctx,
        &OrderChange {
            order: &args.order,
            item: args.item.as_deref(),
            change: Change::Cancel {
                reason: &args.reason,
            },
        },
    )
}
