//! `seckill pay`: mark one reserved order paid (campaigns with
//! `payment_timeout`). The exit code is the outcome; paying twice is safe.

use anyhow::Result;
use serde::Serialize;

use crate::domain::operation::order::{Change, OrderChange};
use crate::domain::reservations::OrderResult;
use crate::invocation::context::Context;
use crate::invocation::failure;
use crate::invocation::report::Report;
use crate::util::output;
use crate::util::text::time_or_dash;

/// Flags of `seckill pay`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The order id `buy` printed.
    #[arg(long, value_name = "ID")]
    pub(crate) order: String,

    /// Look the order up in this item only (default: every item of the campaign).
    #[arg(long, value_name = "ID")]
    pub(crate) item: Option<String>,
}

/// `seckill pay`'s and `seckill cancel`'s report: one order and what became of it.
#[derive(Debug, Serialize)]
pub(crate) struct OrderReport {
    #[serde(flatten)]
    pub(crate) result: OrderResult,
}

impl Report for OrderReport {
    fn exit_code(&self) -> i32 {
        self.result.reply.outcome.exit_code()
    }

    /// One field per line: the order id a shopper must copy is never cut.
    fn render(&self) -> String {
        let reply = &self.result.reply;
        let known = reply.state.is_some();
        let dash = || "-".to_string();
        output::fields(&[
            ("outcome", reply.outcome.as_str().to_string()),
            ("order id", self.result.order_id.clone()),
            ("item", self.result.item.clone().unwrap_or_else(dash)),
            ("state", reply.state.clone().unwrap_or_else(dash)),
            ("qty", if known { reply.qty.to_string() } else { dash() }),
            ("deadline", time_or_dash(known.then_some(reply.deadline_ms))),
            ("since", time_or_dash(known.then_some(reply.changed_at_ms))),
            ("user", reply.user.clone().unwrap_or_else(dash)),
        ])
    }
}

/// Pay one order; the exit code is the outcome's.
pub(crate) fn run(ctx: &Context, args: &Args) -> Result<OrderReport> {
    apply(
        ctx,
        &OrderChange {
            order: &args.order,
            item: args.item.as_deref(),
            change: Change::Pay,
        },
    )
}

/// Check `change`, then apply it (`pay` and `cancel`).
pub(crate) fn apply(ctx: &Context, change: &OrderChange) -> Result<OrderReport> {
    let what = match change.change {
        Change::Pay => "the payment",
        Change::Cancel { .. } => "the cancellation",
    };
    let campaign = ctx.campaign()?;
    change.check(&campaign).map_err(|f| failure::say(f, what))?;
    let target = ctx.redis(&campaign)?;
    let mut conn = target.connect()?;
    let result = change
        .run(&campaign, &mut conn, &target.display)
        .map_err(|f| failure::say(f, what))?;
    Ok(OrderReport { result })
}
