//! `seckill buy`: one purchase attempt, exactly as a shopper's request would
//! make it. The exit code is the outcome (see `exit_codes`).

use anyhow::Result;
use serde::Serialize;

use crate::domain::item::SaleItem;
use crate::domain::item::answer::PurchaseAnswer;
use crate::domain::operation::buy::{Buy, SeatWish};
use crate::domain::operation::limits;
use crate::domain::slot::TicketClaim;
use crate::domain::slot::{Outcome, new_order_id};
use crate::domain::waiting_room::ticket::{RoomSecret, Ticket, prequeue_place, prequeue_rank};
use crate::invocation::context::Context;
use crate::invocation::failure;
use crate::invocation::report::Report;
use crate::model::error::usage;
use crate::model::exit_codes;
use crate::model::layout::key_slot;
use crate::model::role::Role;
use crate::operator::acl::dryrun::Check;
use crate::operator::credential::{self, Credential, Job, NodeProof};
use crate::redis_client::replicas;
use crate::util::output;
use crate::util::text;

/// Flags of `seckill buy`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Item to buy (an `id` from the campaign's `items`).
    #[arg(long, value_name = "ID")]
    pub(crate) item: String,

    /// Shopper's user id (1..128 bytes of UTF-8, no control characters).
    #[arg(long, value_name = "UID")]
    pub(crate) user: String,

    /// Units to buy in this attempt (at most the campaign's per_user_limit).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub(crate) qty: u32,

    /// After an `ok`, WAIT until this many replicas confirmed it; fewer within
    /// --wait-timeout is the outcome `unreplicated` (exit 20): bought, but a failover
    /// now could lose it. On a cluster WAIT goes to the item's master (and, for a
    /// bucketed item, every master the attempt wrote to).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=16))]
    pub(crate) wait_replicas: Option<u32>,

    /// Longest WAIT for --wait-replicas (the buy's reply waits this long at most;
    /// must be shorter than --response-timeout).
    #[arg(long, default_value = "1s", value_parser = crate::redis_client::conn::parse_duration_arg, value_name = "DURATION")]
    pub(crate) wait_timeout: std::time::Duration,

    /// Idempotency key: a retry with the same id returns the first `ok` and buys nothing more.
    /// Default: a fresh ULID, printed so you can retry with it.
    #[arg(long, value_name = "ID")]
    pub(crate) request_id: Option<String>,

    /// Buy nothing, write nothing: prove that this credential may send the
    /// buy's whole path for --item on every node it needs (the item's
    /// masters and their replicas): connecting, the buy's scripts and each
    /// command inside them, WAIT with --wait-replicas. One row per node;
    /// exit 0 proven, 7 a check refused (each named), 1 a node not asked.
    #[arg(long)]
    pub(crate) dry_run: bool,

    /// The shopper's ticket, for an item with a ticket waiting room (`serve`
    /// hands it out on a join, `seckill queue join` prints one): verified
    /// with --room-key-file, then its arrival time goes to the buy script,
    /// which sells only once the room's cursor passed it.
    #[arg(long, value_name = "TICKET", requires = "room_key_file")]
    pub(crate) ticket: Option<String>,

    /// A seat item: buy these seats, `<section>-<row>-<seat>` (1-based),
    /// comma-separated, all in one section: all or none (exit 27
    /// `seat_taken` names any that is held, sold or blocked). --qty
    /// defaults to their count.
    #[arg(long, value_name = "SEATS", value_delimiter = ',', conflicts_with_all = ["section", "tier"])]
    pub(crate) seats: Vec<String>,

    /// A seat item: the best --qty seats side by side in one row of this
    /// section (front rows first unless the file says `prefer: back`).
    /// Without --seats, --section or --tier: any section, in file order.
    #[arg(long, value_name = "ID")]
    pub(crate) section: Option<String>,

    /// A seat item: the best --qty seats side by side in one row, in the
    /// sections of this tier in file order (exit 28 `no_block` names the
    /// closest block when none fits).
    #[arg(long, value_name = "TIER")]
    pub(crate) tier: Option<String>,
    /// The shop's hash of the shopper's identity document, for an item with
    /// a per_identity_limit (docs/limits.md): the limit counts every account
    /// presenting it. Redis keeps only a SHA-256 of it with the campaign id.
    /// An account bound by `register --identity` need not give it; giving
    /// another one is refused (identity_mismatch, exit 26).
    #[arg(long, value_name = "HASH")]
    pub(crate) identity: Option<String>,

    /// A seat item: one attendee identity per seat (the shop's hashes of
    /// their documents, comma-separated, as many as the seats): each counts
    /// its seats against the item's per_identity_limit, in place of
    /// --identity (docs/seats.md, "Attendees").
    #[arg(long, value_name = "HASHES", value_delimiter = ',')]
    pub(crate) attendees: Vec<String>,

    /// A file holding the campaign's ticket-room secret (as `serve --room-key-file`).
    #[arg(long, value_name = "FILE", env = "SECKILL_ROOM_KEY_FILE")]
    pub(crate) room_key_file: Option<std::path::PathBuf>,
}

/// `seckill buy`'s report: the attempt's answer, or `--dry-run`'s proof.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum BuyOutput {
    Bought(Box<BuyReport>),
    DryRun {
        item: String,
        /// One row per node the buy needs.
        credentials: Vec<NodeProof>,
    },
}

impl Report for BuyOutput {
    fn exit_code(&self) -> i32 {
        match self {
            BuyOutput::Bought(report) => report.exit_code(),
            BuyOutput::DryRun { credentials, .. } => credential::exit_code(credentials),
        }
    }

    fn render(&self) -> String {
        match self {
            BuyOutput::Bought(report) => report.render(),
            BuyOutput::DryRun { item, credentials } => {
                let proven = credential::exit_code(credentials) == exit_codes::SUCCESS;
                format!(
                    "dry run of a buy of item {item}: nothing bought, nothing written; {}\n{}",
                    match proven {
                        true => "the credential may send its whole path on every node it needs",
                        false => "NOT proven on every node it needs",
                    },
                    credential::render_table(credentials)
                )
            }
        }
    }

    fn failure(&self) -> Option<String> {
        match self {
            BuyOutput::Bought(_) => None,
            BuyOutput::DryRun { credentials, .. } => credential::failure(credentials),
        }
    }
}

/// One attempt's answer, and what an operator does next.
#[derive(Debug, Serialize)]
pub(crate) struct BuyReport {
    #[serde(flatten)]
    pub(crate) answer: PurchaseAnswer,
    /// What to do about a refusal that is not the shopper's doing (`not_preheated`:
    /// the preheat command; `not_started`: when the sale opens; `closed`: where to
    /// look); null otherwise.
    pub(crate) next_step: Option<String>,
}

impl Report for BuyReport {
    fn exit_code(&self) -> i32 {
        self.answer.outcome.exit_code()
    }

    /// One field per line: the ids a shopper must copy are never cut.
    fn render(&self) -> String {
        let dash = || "-".to_string();
        // A reservation says so where people look first: the outcome line.
        let outcome = match (&self.answer.reservation_state, self.answer.outcome) {
            (Some(state), Outcome::Ok) => state.clone(),
            _ => self.answer.outcome.as_str().to_string(),
        };
        let mut rows = vec![
            ("outcome", outcome),
            (
                "order id",
                self.answer.order_id.clone().unwrap_or_else(dash),
            ),
        ];
        if let (Some(deadline), Some(ms)) = (&self.answer.deadline, self.answer.deadline_ms) {
            rows.push(("pay before", format!("{deadline} ({ms} ms)")));
        }
        rows.extend([
            (
                "stock left",
                self.answer.stock_left.map_or_else(dash, |s| s.to_string()),
            ),
            ("item", self.answer.item.clone()),
            ("user", self.answer.user.clone()),
            ("qty", self.answer.qty.to_string()),
            ("request id", self.answer.request_id.clone()),
        ]);
        if let Some(waiting) = &self.answer.waiting {
            rows.push(("queue", waiting.describe()));
        }
        if let Some(seats) = &self.answer.seats {
            rows.push(("seats", seats.join(", ")));
        }
        output::fields(&rows)
            + &self
                .answer
                .problem
                .as_ref()
                .map(|p| match self.answer.outcome {
                    Outcome::Fenced | Outcome::SeatTaken | Outcome::NoBlock => {
                        format!("nothing written: {p}\n")
                    }
                    Outcome::LimitReached
                    | Outcome::IdentityRequired
                    | Outcome::IdentityMismatch
                    | Outcome::RequestIdReused => {
                        output::hanging(&format!("nothing bought: {p}"), 16)
                    }
                    _ => format!("corrupt state, nothing written: {p}\n"),
                })
                .unwrap_or_default()
            + &self
                .answer
                .replicas_acked
                .map(|n| format!("replicas that confirmed it: {n}\n"))
                .unwrap_or_default()
            + &self
                .next_step
                .as_ref()
                .map(|step| output::hanging(&format!("next: {step}"), 6))
                .unwrap_or_default()
    }
}

/// The attempt the flags ask for, checked as every buy is before anything is sent.
fn checked<'a>(
    ctx: &Context,
    args: &'a Args,
    campaign: &crate::model::campaign::Campaign,
    request_id: &'a str,
) -> Result<Buy<'a>> {
    let ticket = match (&args.ticket, &args.room_key_file) {
        (Some(text), Some(path)) => {
            let secret = RoomSecret::read(path).map_err(|e| usage(format!("{e:#}")))?;
            let ticket = Ticket::verify(text, &secret, &campaign.id, &args.item, &args.user, &[])
                .map_err(|refused| {
                usage(format!(
                    "--ticket: {} (campaign {}, item {}, user {})",
                    refused.says(),
                    campaign.id,
                    args.item,
                    args.user
                ))
            })?;
            Some(TicketClaim {
                arrival_ms: ticket.arrival_ms,
                key_id: ticket.key_id,
            })
        }
        _ => None,
    };
    let buy = Buy {
        item: &args.item,
        user: &args.user,
        qty: SeatWish::qty_of(args.qty, &args.seats),
        request_id,
        wait: args.wait_replicas.map(|n| (n, args.wait_timeout)),
        ticket,
        seats: SeatWish {
            named: &args.seats,
            section: args.section.as_deref(),
            tier: args.tier.as_deref(),
        },
        identity: args.identity.as_deref(),
        attendees: &args.attendees,
    };
    buy.check(campaign)
        .map_err(|failure| failure::say(failure, "the attempt"))?;
    if buy.wait.is_some() {
        replicas::check_timeout(args.wait_timeout, ctx.connection.response_timeout)?;
    }
    Ok(buy)
}

/// Make one attempt (or, with `--dry-run`, prove the credential may).
pub(crate) fn run(ctx: &Context, args: &Args) -> Result<BuyOutput> {
    match args.dry_run {
        true => dry_run(ctx, args),
        false => attempt(ctx, args).map(|report| BuyOutput::Bought(Box::new(report))),
    }
}

/// `--dry-run`: the request checked as a buy checks it, then the buyer's
/// credential proven on the item's masters and their replicas for what the
/// buy sends there; nothing is sent that writes.
fn dry_run(ctx: &Context, args: &Args) -> Result<BuyOutput> {
    let campaign = ctx.campaign()?;
    let request_id = args.request_id.clone().unwrap_or_else(new_order_id);
    let buy = checked(ctx, args, &campaign, &request_id)?;
    ctx.redis(&campaign)?;
    let item = SaleItem::select(&campaign, Some(&args.item))?
        .into_iter()
        .next()
        .ok_or_else(|| anyhow::anyhow!("item {} is not in the campaign", args.item))?;
    // An item under a limit above it (docs/limits.md) also claims and
    // releases in limit buckets, on any master, and reads the account's
    // identity binding.
    let limited = limits::has_limits(&campaign, campaign.item(&args.item)?);
    let mut scripts: Vec<&str> = item.buy_scripts().iter().map(|s| s.name()).collect();
    if limited {
        scripts.extend(["limit_claim", "limit_release"]);
    }
    let wait = buy.wait.is_some();
    // What a bucketed item's sweep sends beside its scripts (the role
    // table's rows for it): only an item that moves stock sweeps.
    let sweeps = item.moves_stock_between_slots();
    let part = |check: &Check| {
        credential::is_connection_setup(check)
            || scripts
                .iter()
                .any(|name| credential::is_script(check, name))
            || (wait && check.command.as_deref() == Some("WAIT"))
            || (limited
                && check.sent_by.is_some_and(|by| {
                    by.starts_with("buy and serve") && by.contains("docs/limits.md")
                }))
            || (sweeps
                && check
                    .sent_by
                    .is_some_and(|by| by.contains("a bucketed item's sweep")))
    };
    let buyer = Credential::of_args("buyer", Role::Buyer, &ctx.connection, &campaign)?;
    let credentials = credential::prove(
        &buyer,
        &Job {
            items: vec![args.item.clone()],
            part: &part,
            slots: (!limited).then(|| {
                item.slots()
                    .iter()
                    .map(|slot| key_slot(&slot.keys.stock))
                    .collect()
            }),
        },
        &campaign.id,
    )?;
    Ok(BuyOutput::DryRun {
        item: args.item.clone(),
        credentials,
    })
}

/// Make one attempt; the exit code is the outcome's.
fn attempt(ctx: &Context, args: &Args) -> Result<BuyReport> {
    let campaign = ctx.campaign()?;
    let request_id = args.request_id.clone().unwrap_or_else(new_order_id);
    let mut buy = checked(ctx, args, &campaign, &request_id)?;
    let target = ctx.redis(&campaign)?;
    let mut conn = target.connect()?;
    // A pre-queue ticket stands at its rank's place, known once the seed is
    // revealed at the start (before it: its arrival, not admitted yet).
    if let Some(claim) = buy.ticket.as_mut()
        && campaign.starts_at_ms.is_some_and(|s| claim.arrival_ms < s)
        && let Some(room) = SaleItem::select(&campaign, Some(&args.item))?
            .into_iter()
            .next()
            .and_then(SaleItem::into_room)
        && let Some(seed) = room.revealed_seed(&mut conn)?
        && let Some(starts) = room.starts_at_ms
    {
        claim.arrival_ms = prequeue_place(starts, prequeue_rank(&seed, &args.user));
    }
    let bought = buy
        .run(&campaign, &mut conn, &target.display)
        .map_err(|failure| failure::say(failure, "the attempt"))?;
    let answer = bought.answer;
    if let (Outcome::Unreplicated, Some(acked), Some((wanted, timeout))) =
        (answer.outcome, answer.replicas_acked, buy.wait)
    {
        output::say(format!(
            "seckill buy: order {} was bought on {} but only {acked} of {wanted} replica(s) \
             confirmed it within {timeout:?}: a failover now could lose it (`reconcile` would name it)",
            answer.order_id.as_deref().unwrap_or("-"),
            target.display,
        ));
    }
    let next_step = next_step(answer.outcome, &campaign, &args.item);
    Ok(BuyReport { answer, next_step })
}

/// What to do about a refusal that is not the shopper's doing.
fn next_step(
    outcome: Outcome,
    campaign: &crate::model::campaign::Campaign,
    item: &str,
) -> Option<String> {
    let file = campaign.path.display();
    let now = chrono::Utc::now().timestamp_millis();
    match outcome {
        Outcome::NotPreheated => Some(format!(
            "item {item} is not in Redis (never preheated, or its keys expired): run `seckill -c {file} preheat`"
        )),
        Outcome::NotStarted => Some(match campaign.starts_at_ms {
            Some(at) => format!(
                "the sale opens at {} (in {}, by this machine's clock; starts_at in {file})",
                text::time_or_dash(Some(at)),
                crate::util::text::human_duration_ms(at - now)
            ),
            None => format!(
                "the sale has not started per Redis, but {file} has no starts_at: re-run `seckill -c {file} preheat --update-meta`"
            ),
        }),
        Outcome::Closed => Some(format!(
            "the kill switch is ON: `seckill -c {file} shutdown-switch status` says why and who"
        )),
        Outcome::NotQueued => Some(format!(
            "item {item} has a waiting room: join it first, `seckill -c {file} queue join --item {item} --user USER`"
        )),
        Outcome::NotRegistered => Some(format!(
            "item {item}'s waiting room takes registered users only: `seckill -c {file} register --user USER --device DEVICE`"
        )),
        _ => None,
    }
}
