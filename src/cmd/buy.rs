//! `seckill buy`: one purchase attempt, exactly as a shopper's request would
//! make it. The exit code is the outcome (see `exit_codes`).

use anyhow::Result;
use serde::Serialize;

use crate::buy::{self, BuyRequest, Outcome};
use crate::context::Globals;
use crate::error::{self, OutcomeUnknown, usage};
use crate::keys::ItemKeys;
use crate::output::{self, Format};
use crate::redis_failure::{self, Failure};

/// Flags of `seckill buy`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Item to buy (an `id` from the campaign's `items`).
    #[arg(long, value_name = "ID")]
    pub item: String,

    /// Shopper's user id (1..128 bytes of UTF-8, no control characters).
    #[arg(long, value_name = "UID")]
    pub user: String,

    /// Units to buy in this attempt (at most the campaign's per_user_limit).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub qty: u32,

    /// After an `ok`, WAIT until this many replicas confirmed it; fewer within
    /// --wait-timeout is the outcome `unreplicated` (exit 20): bought, but a failover
    /// now could lose it. Standalone Redis only (on a cluster WAIT would not reach
    /// the item's master).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=16))]
    pub wait_replicas: Option<u32>,

    /// Longest WAIT for --wait-replicas (the buy's reply waits this long at most).
    #[arg(long, default_value = "1s", value_parser = crate::redis_conn::parse_duration_arg, value_name = "DURATION")]
    pub wait_timeout: std::time::Duration,

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
    /// `--wait-replicas` only: replicas that confirmed the buy.
    #[serde(skip_serializing_if = "Option::is_none")]
    replicas_acked: Option<i64>,
    /// `corrupt_state` only: the key and what is wrong with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    problem: Option<&'a str>,
}

/// Validate a user id: it goes into a Redis key suffix and a database row.
pub fn check_user_id(user: &str) -> Result<()> {
    if user.is_empty() || user.len() > 128 || user.chars().any(char::is_control) {
        return Err(usage(format!(
            "--user {user:?} must be 1..128 bytes (UTF-8) without control characters, got {} bytes",
            user.len()
        )));
    }
    Ok(())
}

/// Say what a failed attempt means: refused before running (safe to retry),
/// unknown (retry only with the same request id), or failed at the server.
fn explain_failure(error: anyhow::Error, at: &str, request_id: &str) -> anyhow::Error {
    let Some(redis_error) = redis_failure::find(&error) else {
        return error;
    };
    match redis_failure::classify(redis_error) {
        Failure::NotExecuted(code) => error.context(format!(
            "Redis at {at} refused the attempt, it was not executed ({code}); nothing was bought, a new attempt is safe"
        )),
        Failure::Unknown => {
            let message = format!(
                "outcome unknown: the attempt was sent to Redis at {at} but its reply was lost ({}); \
                 retry with --request-id {request_id}, never a new one",
                error::render(&error)
            );
            anyhow::Error::new(OutcomeUnknown(message))
        }
        Failure::Failed => error.context(format!(
            "Redis at {at} reported an error running the attempt; retry with --request-id {request_id}"
        )),
    }
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
            return Err(usage(format!(
                "--request-id must be 1..128 bytes (UTF-8), got {} bytes",
                id.len()
            )));
        }
        Some(id) => id.clone(),
        None => buy::new_order_id(),
    };
    let target = globals.redis(&campaign)?;
    if args.wait_replicas.is_some() && globals.connection.cluster {
        return Err(usage(
            "--wait-replicas works on a standalone Redis only: on a cluster WAIT would not reach the item's master",
        ));
    }
    let mut conn = target.connect()?;
    let keys = ItemKeys::live(&campaign.id, &item.id);
    let reply = buy::buy(
        &mut conn,
        &keys,
        &BuyRequest {
            campaign: &campaign.id,
            item: &item.id,
            user: &args.user,
            qty: args.qty,
            request_id: Some(&request_id),
        },
    )
    .map_err(|e| explain_failure(e, &target.display, &request_id))?;
    let mut reply = reply;
    let mut replicas_acked = None;
    if let (Some(wanted), Outcome::Ok) = (args.wait_replicas, reply.outcome) {
        let acked = buy::wait_replicas(&mut conn, wanted, args.wait_timeout).map_err(|e| {
            e.context(format!(
                "bought order {} at {}, but could not wait for replicas",
                reply.order_id.as_deref().unwrap_or("-"),
                target.display
            ))
        })?;
        replicas_acked = Some(acked);
        if acked < i64::from(wanted) {
            reply.outcome = Outcome::Unreplicated;
            eprintln!(
                "seckill buy: order {} was bought on {} but only {acked} of {wanted} replica(s) \
                 confirmed it within {:?}: a failover now could lose it (`reconcile` would name it)",
                reply.order_id.as_deref().unwrap_or("-"),
                target.display,
                args.wait_timeout
            );
        }
    }
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
        problem: reply.problem.as_deref(),
        replicas_acked,
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
            if let Some(problem) = shown.problem {
                println!("corrupt state, nothing written: {problem}");
            }
        }
    }
    Ok(code)
}
