//! `seckill buy`: one purchase attempt, exactly as a shopper's request would
//! make it. The exit code is the outcome (see `exit_codes`).

use anyhow::Result;
use serde::Serialize;

use crate::buckets::{self, Layout};
use crate::buy::{self, BuyRequest, Outcome};
use crate::context::Context;
use crate::error::usage;
use crate::keys::ItemKeys;
use crate::output;
use crate::report::Report;

/// Flags of `seckill buy`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Item to buy (an `id` from the campaign's `items`).
    #[arg(long, value_name = "ID")]
    pub item: String,

    /// Shopper's user id (1..128 printable characters).
    #[arg(long, value_name = "UID")]
    pub user: String,

    /// Units to buy in this attempt (at most the campaign's per_user_limit).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub qty: u32,

    /// Idempotency key: a retry with the same id returns the first `ok` and buys nothing more.
    /// Default: a fresh ULID, printed so you can retry with it.
    #[arg(long, value_name = "ID")]
    pub request_id: Option<String>,
}

/// `seckill buy`'s report: one attempt and its outcome.
#[derive(Debug, Serialize)]
pub struct BuyReport {
    /// `ok`, `sold_out`, `duplicate`, `rate_limited`, `closed`, `not_started`,
    /// `ended` or `not_preheated`; the exit code says the same.
    pub outcome: Outcome,
    /// The order: new on `ok`, the user's existing one on `duplicate`; null otherwise.
    pub order_id: Option<String>,
    /// Units left after this attempt; null when the item is not preheated.
    pub stock_left: Option<i64>,
    /// The item bought.
    pub item: String,
    /// The shopper.
    pub user: String,
    /// Units asked for.
    pub qty: u32,
    /// The idempotency key: retry with it to get this answer again without buying twice.
    pub request_id: String,
}

impl Report for BuyReport {
    fn exit_code(&self) -> i32 {
        self.outcome.exit_code()
    }

    /// One field per line: the ids a shopper must copy are never cut.
    fn render(&self) -> String {
        let dash = || "-".to_string();
        output::fields(&[
            ("outcome", self.outcome.as_str().to_string()),
            ("order id", self.order_id.clone().unwrap_or_else(dash)),
            (
                "stock left",
                self.stock_left.map_or_else(dash, |s| s.to_string()),
            ),
            ("item", self.item.clone()),
            ("user", self.user.clone()),
            ("qty", self.qty.to_string()),
            ("request id", self.request_id.clone()),
        ])
    }
}

/// Validate a user id: it goes into a Redis key suffix and a database row.
pub fn check_user_id(user: &str) -> Result<()> {
    if user.is_empty() || user.len() > 128 || user.chars().any(char::is_control) {
        return Err(usage(format!(
            "--user {user:?} must be 1..128 characters without control characters"
        )));
    }
    Ok(())
}

/// Make one attempt; the exit code is the outcome's.
pub fn run(ctx: &Context, args: &Args) -> Result<BuyReport> {
    let campaign = ctx.campaign()?;
    let item = campaign.item(&args.item)?;
    check_user_id(&args.user)?;
    if args.qty > campaign.per_user_limit {
        return Err(usage(format!(
            "--qty {} is more than per_user_limit {} of campaign {}",
            args.qty, campaign.per_user_limit, campaign.id
        )));
    }
    let request_id = match &args.request_id {
        Some(id) if id.is_empty() || id.len() > 128 => {
            return Err(usage("--request-id must be 1..128 characters"));
        }
        Some(id) => id.clone(),
        None => buy::new_order_id(),
    };
    let mut conn = ctx.redis(&campaign)?.connect()?;
    let request = BuyRequest {
        campaign: &campaign.id,
        item: &item.id,
        user: &args.user,
        qty: args.qty,
        request_id: Some(&request_id),
    };
    let payment_timeout_ms = campaign.payment_timeout_ms();
    // A bucketed item (docs/buckets.md): the home bucket first, transfers when it is empty.
    let reply = if item.buckets > 1 {
        let layout = Layout::live(&campaign.id, item);
        buckets::buy::reserve(&mut conn, &layout, &request, payment_timeout_ms)?.0
    } else {
        let keys = ItemKeys::live(&campaign.id, &item.id);
        buy::reserve(&mut conn, &keys, &request, payment_timeout_ms)?
    };
    Ok(BuyReport {
        outcome: reply.outcome,
        order_id: reply.order_id,
        stock_left: reply.stock_left,
        item: item.id.clone(),
        user: args.user.clone(),
        qty: args.qty,
        request_id,
    })
}
