//! `seckill reconcile`: the nightly proof that nothing was lost or doubled
//! between Redis and the order database (see `orders::reconcile`).
//!
//! Exit codes, for cron: 0 balanced; 3 drift found (the offending order ids
//! are printed); 1 could not check (an item not preheated or expired, Redis
//! or the database unreachable). Drift wins over "could not check" when
//! both happen in one run, because drift is what someone must act on.

use anyhow::Result;
use serde::Serialize;

use crate::context::Globals;
use crate::exit_codes;
use crate::orders::reconcile::{ItemReport, reconcile_item};
use crate::orders::{StoreArgs, StoreLocation};
use crate::output::{self, Format};

/// Flags of `seckill reconcile`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit codes (for cron): 0 balanced; 3 drift found (the order ids are printed); \
                  1 could not check (item not preheated or expired, Redis or the database unreachable); \
                  2 usage error."
)]
pub struct Args {
    /// Insert orders that are in the stream but missing from the database (idempotent), then check again.
    #[arg(long)]
    pub repair: bool,

    /// Check only this item (default: every item of the campaign).
    #[arg(long, value_name = "ID")]
    pub item: Option<String>,

    /// The order database (`--orders-db`).
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Serialize)]
struct Summary<'a> {
    campaign: &'a str,
    redis: &'a str,
    database: String,
    balanced: bool,
    exit_code: i32,
    items: &'a [ItemReport],
}

/// Check every selected item; exit 0 balanced, 3 drift, 1 could not check.
pub fn run(globals: &Globals, args: &Args) -> Result<i32> {
    let campaign = globals.campaign()?;
    let location = StoreLocation::resolve(&args.store, &campaign)?;
    let target = globals.redis(&campaign)?;
    let mut conn = target.connect()?;
    let mut store = location.open()?;
    let mut reports = Vec::new();
    for item in campaign.select_items(args.item.as_deref())? {
        // One item's failure (Redis or the database) must not hide drift
        // already found on another: it is reported as "could not check".
        let checked = reconcile_item(&mut conn, store.as_mut(), &campaign, item, args.repair)
            .and_then(|report| {
                if !(args.repair && report.checked) {
                    return Ok(report);
                }
                let mut again = reconcile_item(&mut conn, store.as_mut(), &campaign, item, false)?;
                again.repaired = report.repaired;
                again.reservations.states_repaired = report.reservations.states_repaired;
                Ok(again)
            });
        let report = checked.unwrap_or_else(|error| {
            // After an error the connection may still owe a reply: start afresh.
            if let Ok(fresh) = target.connect() {
                conn = fresh;
            }
            ItemReport {
                item: item.id.clone(),
                problem: Some(format!("{error:#}")),
                ..ItemReport::default()
            }
        });
        reports.push(report);
    }
    let drift = reports.iter().any(|r| r.checked && !r.balanced);
    let unchecked = reports.iter().any(|r| !r.checked);
    let code = if drift {
        exit_codes::DRIFT_FOUND
    } else if unchecked {
        exit_codes::RUNTIME_ERROR
    } else {
        exit_codes::SUCCESS
    };
    match globals.format {
        Format::Json => output::print_json(&Summary {
            campaign: &campaign.id,
            redis: &target.display,
            database: store.display(),
            balanced: code == exit_codes::SUCCESS,
            exit_code: code,
            items: &reports,
        })?,
        Format::Table => print_table(&reports, &campaign.id, &store.display()),
    }
    for r in reports.iter().filter(|r| !r.checked) {
        eprintln!(
            "seckill reconcile: could not check item {}: {}",
            r.item,
            r.problem.as_deref().unwrap_or("?")
        );
    }
    Ok(code)
}

fn print_table(reports: &[ItemReport], campaign: &str, database: &str) {
    println!("reconcile campaign {campaign} against {database}");
    let mut table = output::table([
        "item",
        "initial",
        "in database",
        "in flight",
        "dead-lettered",
        "left in Redis",
        "sold per Redis (buyers)",
        "result",
    ]);
    for r in reports {
        if !r.checked {
            table.add_row(vec![
                r.item.clone(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "NOT CHECKED".into(),
            ]);
            continue;
        }
        table.add_row(vec![
            r.item.clone(),
            format!("{} ({})", r.initial_stock, r.initial_stock_from),
            format!("{} ({} rows)", r.stored.units, r.database.rows),
            r.in_flight.units.to_string(),
            r.dead_lettered.units.to_string(),
            r.remaining.to_string(),
            format!("{} ({})", r.sold_per_redis, r.buyers),
            if r.balanced {
                "balanced".into()
            } else {
                "DRIFT".into()
            },
        ]);
    }
    println!("{table}");
    for r in reports.iter().filter(|r| r.checked) {
        println!("{}: {}", r.item, r.equation);
        if r.repaired > 0 {
            println!(
                "{}: repaired {} order(s) missing from the database",
                r.item, r.repaired
            );
        }
        if r.sold_per_redis != r.initial_stock - r.remaining {
            println!(
                "{}: buyers hold {} units but {} were sold (initial - left)",
                r.item,
                r.sold_per_redis,
                r.initial_stock - r.remaining
            );
        }
        if r.reservations.states_repaired > 0 {
            println!(
                "{}: repaired {} order state(s) the database had not caught up with",
                r.item, r.reservations.states_repaired
            );
        }
        if r.reservations.state_mismatch_count > 0 {
            println!(
                "{}: {} order(s) whose Redis and database states differ: {}",
                r.item,
                r.reservations.state_mismatch_count,
                r.reservations.state_mismatch.join(", ")
            );
        }
        for (list, what) in [
            (&r.missing_from_database, "in Redis but not in the database"),
            (&r.not_in_redis, "in the database but not in Redis"),
        ] {
            if list.count > 0 {
                let more = list.count - list.ids.len() as u64;
                let tail = if more > 0 {
                    format!(" (and {more} more)")
                } else {
                    String::new()
                };
                println!(
                    "{}: {} order(s) {what}: {}{tail}",
                    r.item,
                    list.count,
                    list.ids.join(" ")
                );
            }
        }
    }
}
