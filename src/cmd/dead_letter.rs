//! `seckill dead-letter list|redrive`: the dead letters with their reasons,
//! and the way back once their cause is fixed. The work is
//! `orders::dead_letters`; this file is flags and output.

use anyhow::Result;
use serde::Serialize;

use crate::domain::orders::dead_letters::{self, DeadLetter, Redriven};
use crate::domain::orders::{StoreArgs, StoreLocation};
use crate::invocation::context::Context;
use crate::invocation::report::Report;
use crate::model::error::usage;
use crate::model::exit_codes;
use crate::util::output;

/// Flags of `seckill dead-letter`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "redrive exits 0 when every selected dead letter is stored, 1 when one is still refused."
)]
pub(crate) struct Args {
    #[arg(value_enum)]
    pub(crate) action: Action,

    /// Only this item (default: every item).
    #[arg(long, value_name = "ID")]
    pub(crate) item: Option<String>,

    /// Only these dead letters: a dead-letter stream id, an original stream id or an order id
    /// (repeatable; default: all).
    #[arg(long = "id", value_name = "ID")]
    pub(crate) ids: Vec<String>,

    /// The order database (`--orders-db`), for redrive.
    #[command(flatten)]
    pub(crate) store: StoreArgs,
}

/// What to do with the dead letters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Action {
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

/// `seckill dead-letter`'s report.
#[derive(Debug, Serialize)]
pub(crate) struct DeadLetterReport {
    /// `list` or `redrive`.
    pub(crate) action: &'static str,
    /// The selected dead letters (`list`), with the reason each was dead-lettered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) letters: Option<Vec<DeadLetter>>,
    /// What re-driving each selected dead letter did (`redrive`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) redriven: Option<Vec<Redriven>>,
}

impl Report for DeadLetterReport {
    /// `redrive`: 1 while a selected dead letter is still refused.
    fn exit_code(&self) -> i32 {
        match &self.redriven {
            Some(results) if results.iter().any(|r| !r.stored) => exit_codes::RUNTIME_ERROR,
            _ => exit_codes::SUCCESS,
        }
    }

    fn failure(&self) -> Option<String> {
        let still = self.redriven.as_ref()?.iter().filter(|r| !r.stored).count();
        (still > 0).then(|| format!("{still} dead letter(s) could not be re-driven (see result)"))
    }

    fn render(&self) -> String {
        if let Some(letters) = &self.letters {
            // The original stream id and the stream are in the JSON: the
            // table keeps to what fits 80 columns.
            let mut table = output::table(["item", "dead id", "order id", "tries", "reason"]);
            for l in letters {
                table.add_row(vec![
                    l.item.clone(),
                    l.dead_id.clone(),
                    l.order_id
                        .clone()
                        .unwrap_or_else(|| "(not an order)".into()),
                    l.deliveries.map_or_else(|| "-".into(), |d| d.to_string()),
                    l.reason.clone(),
                ]);
            }
            output::fit(&mut table, &[4]);
            return format!("{table}\n");
        }
        let mut table = output::table(["item", "dead id", "order id", "result"]);
        for r in self.redriven.iter().flatten() {
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
        output::fit(&mut table, &[3]);
        format!("{table}\n")
    }
}

/// List or re-drive the campaign's dead letters.
pub(crate) fn run(ctx: &Context, args: &Args) -> Result<DeadLetterReport> {
    let campaign = ctx.campaign()?;
    let items = campaign.select_items(args.item.as_deref())?;
    let location = StoreLocation::resolve(&args.store, &campaign)?;
    let mut conn = ctx.redis(&campaign)?.connect()?;
    let mut letters = Vec::new();
    for item in items {
        letters.extend(
            dead_letters::list(&mut conn, &campaign, item)?
                .into_iter()
                .filter(|l| selected(l, &args.ids)),
        );
    }
    let unknown: Vec<&str> = args
        .ids
        .iter()
        .filter(|id| {
            !letters
                .iter()
                .any(|l| selected(l, std::slice::from_ref(id)))
        })
        .map(String::as_str)
        .collect();
    let refuse = |unknown: &[&str]| {
        usage(format!(
            "no dead letter of campaign {}{} has the id {}: `seckill dead-letter list` shows them",
            campaign.id,
            args.item
                .as_deref()
                .map(|i| format!(" item {i}"))
                .unwrap_or_default(),
            unknown.join(", ")
        ))
    };
    if args.action == Action::List {
        if !unknown.is_empty() {
            return Err(refuse(&unknown));
        }
        return Ok(DeadLetterReport {
            action: "list",
            letters: Some(letters),
            redriven: None,
        });
    }
    let mut store = location.open()?;
    // An order id re-driven before is stored and gone from the dead
    // letters: asking again is safe and changes nothing. Any other id is
    // a mistake, said rather than ignored.
    let stored = store.existing_order_ids(&unknown)?;
    let unknown: Vec<&str> = unknown
        .into_iter()
        .filter(|id| !stored.contains(*id))
        .collect();
    if !unknown.is_empty() {
        return Err(refuse(&unknown));
    }
    let results = dead_letters::redrive(&mut conn, store.as_mut(), &letters)?;
    Ok(DeadLetterReport {
        action: "redrive",
        letters: None,
        redriven: Some(results),
    })
}
