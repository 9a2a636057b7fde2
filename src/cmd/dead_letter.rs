//! `seckill dead-letter list|redrive`: the dead letters with their reasons,
//! and the way back once their cause is fixed. The work is
//! `orders::dead_letters`; this file is flags and output.

use anyhow::Result;

use crate::context::Globals;
use crate::exit_codes;
use crate::orders::dead_letters::{self, DeadLetter};
use crate::orders::{StoreArgs, StoreLocation};
use crate::output::{self, Format};

/// Flags of `seckill dead-letter`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  seckill -c campaigns/moutai.yaml dead-letter list\n  \
seckill -c campaigns/moutai.yaml dead-letter redrive --id 1764460800000-0\n\
redrive exits 0 when every selected dead letter is stored, 1 when one is still refused."
)]
pub struct Args {
    #[arg(value_enum)]
    pub action: Action,

    /// Only this item (default: every item).
    #[arg(long, value_name = "ID")]
    pub item: Option<String>,

    /// Only these dead letters: a dead-letter stream id, an original stream id or an order id
    /// (repeatable; default: all).
    #[arg(long = "id", value_name = "ID")]
    pub ids: Vec<String>,

    /// The order database (`--orders-db`), for redrive.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// What to do with the dead letters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Action {
    /// Show them, with the reason each was dead-lettered.
    List,
    /// Store them in the order database (idempotent) and remove them from the dead letters.
    Redrive,
}

fn selected(letter: &DeadLetter, ids: &[String]) -> bool {
    ids.is_empty()
        || ids.iter().any(|id| {
            *id == letter.dead_id
                || *id == letter.original_id
                || letter.order_id.as_deref() == Some(id.as_str())
        })
}

/// List or re-drive the campaign's dead letters.
pub fn run(globals: &Globals, args: &Args) -> Result<i32> {
    let campaign = globals.campaign()?;
    let items = campaign.select_items(args.item.as_deref())?;
    let location = StoreLocation::resolve(&args.store, &campaign)?;
    let target = globals.redis(&campaign)?;
    let mut conn = target.connect()?;
    let mut letters = Vec::new();
    for item in items {
        letters.extend(
            dead_letters::list(&mut conn, &campaign, item)?
                .into_iter()
                .filter(|l| selected(l, &args.ids)),
        );
    }
    if args.action == Action::List {
        match globals.format {
            Format::Json => output::print_json(&letters)?,
            Format::Table => {
                let mut table = output::table([
                    "item",
                    "dead id",
                    "original id",
                    "order id",
                    "deliveries",
                    "reason",
                ]);
                for l in &letters {
                    table.add_row(vec![
                        l.item.clone(),
                        l.dead_id.clone(),
                        l.original_id.clone(),
                        l.order_id
                            .clone()
                            .unwrap_or_else(|| "(not an order)".into()),
                        l.deliveries.clone(),
                        l.reason.clone(),
                    ]);
                }
                println!("{table}");
            }
        }
        return Ok(exit_codes::SUCCESS);
    }
    let mut store = location.open()?;
    let results = dead_letters::redrive(&mut conn, store.as_mut(), &campaign, &letters)?;
    match globals.format {
        Format::Json => output::print_json(&results)?,
        Format::Table => {
            let mut table = output::table(["item", "dead id", "order id", "result"]);
            for r in &results {
                table.add_row(vec![
                    r.item.clone(),
                    r.dead_id.clone(),
                    r.order_id.clone().unwrap_or_else(|| "-".into()),
                    match &r.problem {
                        None => "stored, removed from the dead letters".to_string(),
                        Some(problem) => format!("still dead: {problem}"),
                    },
                ]);
            }
            println!("{table}");
        }
    }
    Ok(if results.iter().all(|r| r.stored) {
        exit_codes::SUCCESS
    } else {
        exit_codes::RUNTIME_ERROR
    })
}
