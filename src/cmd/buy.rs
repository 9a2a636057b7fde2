//! `seckill buy`: one purchase attempt, exactly as a shopper's request would
//! make it. The exit code is the outcome (see `exit_codes`).

use anyhow::Result;
use serde::Serialize;

use crate::buy::{self, BuyRequest, Outcome};
use crate::context::Globals;
use crate::error::usage;
use crate::keys::ItemKeys;
use crate::output::{self, Format};

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

#[derive(Debug, Serialize)]
struct BuyOutput<'a> {
    outcome: Outcome,
    order_id: Option<&'a str>,
    stock_left: Option<i64>,
    campaign: &'a str,
    item: &'a str,
    user: &'a str,
    qty: u32,
    request_id: &'a str,
    exit_code: i32,
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

/// Make one attempt and print it; the exit code is the outcome's.
pub fn run(globals: &Globals, args: &Args) -> Result<i32> {
    let campaign = globals.campaign()?;
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
    let target = globals.redis(&campaign)?;
    let mut conn = target.connect()?;
    let keys = ItemKeys::live(&campaign.id, &item.id);
    let reply = buy::reserve(
        &mut conn,
        &keys,
        &BuyRequest {
            campaign: &campaign.id,
            item: &item.id,
            user: &args.user,
            qty: args.qty,
            request_id: Some(&request_id),
        },
        campaign.payment_timeout_ms(),
    )?;
    let code = reply.outcome.exit_code();
    let shown = BuyOutput {
        outcome: reply.outcome,
        order_id: reply.order_id.as_deref(),
        stock_left: reply.stock_left,
        campaign: &campaign.id,
        item: &item.id,
        user: &args.user,
        qty: args.qty,
        request_id: &request_id,
        exit_code: code,
    };
    match globals.format {
        Format::Json => output::print_json(&shown)?,
        Format::Table => {
            let mut table = output::table([
                "outcome",
                "order id",
                "stock left",
                "item",
                "user",
                "request id",
            ]);
            table.add_row(vec![
                reply.outcome.as_str().to_string(),
                shown.order_id.unwrap_or("-").to_string(),
                shown
                    .stock_left
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| "-".into()),
                item.id.clone(),
                args.user.clone(),
                request_id.clone(),
            ]);
            println!("{table}");
        }
    }
    Ok(code)
}
