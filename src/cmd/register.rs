//! `seckill register`: pre-registration (预约) for the waiting rooms that
//! take registered users only (docs/waiting-room.md) — one user, one device
//! (and the IP it came from), before `registration.until` on the Redis
//! clock, at most `per_device` accounts per device and `per_ip` per IP
//! prefix. The shop's back end calls it with what it knows of the caller.
//! With `--identity`, it binds each account to an identity document
//! (实名制, docs/limits.md): the account's buys count under that identity's
//! `per_identity_limit`; `--device` is then needed only for a room.

use anyhow::Result;
use serde::Serialize;

use crate::domain::item::SaleItem;
use crate::domain::operation::check_id;
use crate::domain::operation::register::{BindIdentity, Bound, Register};
use crate::domain::waiting_room::registration::{RegisterOutcome, check_device, ip_prefix};
use crate::invocation::context::{Context, Opened};
use crate::invocation::failure;
use crate::invocation::report::Report;
use crate::model::error::usage;
use crate::model::exit_codes;
use crate::util::output;
use crate::util::text::time_or_dash;

/// Flags of `seckill register`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The user to register (repeat the flag to register several on the same
    /// device, e.g. a household's or a batch the shop imports).
    #[arg(long = "user", value_name = "UID", required = true)]
    pub(crate) users: Vec<String>,

    /// The device the user registers from (an id the shop's app knows it by;
    /// no spaces). Required unless only --identity is bound.
    #[arg(long, value_name = "DEVICE", required_unless_present = "identity")]
    pub(crate) device: Option<String>,

    /// Bind the user to this identity (the shop's hash of an ID document):
    /// its buys then count under the item's per_identity_limit without
    /// presenting it, and a buy presenting another identity is refused.
    /// The first binding stands (another one: identity_mismatch, exit 26).
    /// Redis keeps only a SHA-256 of it with the campaign id.
    #[arg(long, value_name = "HASH")]
    pub(crate) identity: Option<String>,

    /// The caller's IP address (IPv4 or IPv6); counted under its /24 or /64.
    /// Required when a room caps accounts per IP (per_ip).
    #[arg(long, value_name = "IP")]
    pub(crate) ip: Option<String>,

    /// Only this item (default: every item whose waiting room takes registrations).
    #[arg(long, value_name = "ID")]
    pub(crate) item: Option<String>,
}

/// One user's registration for one item.
#[derive(Debug, Serialize)]
pub(crate) struct RegisterRow {
    pub(crate) user: String,
    pub(crate) item: String,
    /// `registered` (new, or a repeat from the same device: nothing changed) or a refusal.
    pub(crate) outcome: RegisterOutcome,
    /// When the user's registration was made (RFC 3339, Redis clock); null when refused.
    pub(crate) registered_at: Option<String>,
    /// Accounts on the device, and from the IP prefix, after this call.
    pub(crate) device_accounts: i64,
    pub(crate) ip_accounts: i64,
}

/// One user's identity binding.
#[derive(Debug, Serialize)]
pub(crate) struct BindRow {
    pub(crate) user: String,
    /// `bound` (now, or to this identity before) or `identity_mismatch`.
    pub(crate) outcome: Bound,
}

/// `seckill register`'s report.
#[derive(Debug, Serialize)]
pub(crate) struct RegisterReport {
    /// The device (null when only an identity was bound).
    pub(crate) device: Option<String>,
    /// `--identity`: each user's binding (empty without it).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) identities: Vec<BindRow>,
    /// The prefix the IP counts under (null without --ip).
    pub(crate) ip_prefix: Option<String>,
    pub(crate) registrations: Vec<RegisterRow>,
}

impl Report for RegisterReport {
    /// The first refused registration's outcome, else 0.
    fn exit_code(&self) -> i32 {
        self.identities
            .iter()
            .map(|row| row.outcome.exit_code())
            .chain(self.registrations.iter().map(|row| row.outcome.exit_code()))
            .find(|code| *code != exit_codes::SUCCESS)
            .unwrap_or(exit_codes::SUCCESS)
    }

    fn render(&self) -> String {
        let identities = match self.identities.is_empty() {
            true => String::new(),
            false => format!(
                "identity binding\n{}",
                output::grid(
                    &["user", "outcome"],
                    self.identities
                        .iter()
                        .map(|row| vec![row.user.clone(), row.outcome.as_str().to_string()])
                        .collect(),
                    &[],
                )
            ),
        };
        let Some(device) = &self.device else {
            return identities;
        };
        let rows = self
            .registrations
            .iter()
            .map(|row| {
                vec![
                    row.user.clone(),
                    row.item.clone(),
                    row.outcome.as_str().to_string(),
                    row.registered_at.clone().unwrap_or_else(|| "-".into()),
                    row.device_accounts.to_string(),
                    row.ip_accounts.to_string(),
                ]
            })
            .collect();
        identities
            + &format!(
                "registration on device {}{}\n{}",
                device,
                self.ip_prefix
                    .as_ref()
                    .map(|p| format!(" from {p}"))
                    .unwrap_or_default(),
                output::grid(
                    &[
                        "user",
                        "item",
                        "outcome",
                        "registered at",
                        "accounts\non device",
                        "accounts\nfrom IP",
                    ],
                    rows,
                    &[],
                )
            )
    }
}

/// Register the user for each selected item.
pub(crate) fn run(ctx: &Context, args: &Args) -> Result<RegisterReport> {
    for user in &args.users {
        check_id("user", user, true).map_err(|f| failure::say(f, "the registration"))?;
    }
    if let Some(device) = &args.device {
        check_device(device).map_err(|e| usage(format!("--device: {e}")))?;
    }
    let prefix = args
        .ip
        .as_deref()
        .map(ip_prefix)
        .transpose()
        .map_err(|e| usage(format!("--ip: {e:#}")))?;
    let Opened {
        campaign,
        target,
        mut conn,
    } = ctx.open()?;
    let mut identities = Vec::new();
    if let Some(identity) = &args.identity {
        for user in &args.users {
            let outcome = BindIdentity { user, identity }
                .run(&campaign, &mut conn, &target.display)
                .map_err(|f| failure::say(f, "the identity binding"))?;
            identities.push(BindRow {
                user: user.clone(),
                outcome,
            });
        }
    }
    let Some(device) = &args.device else {
        return Ok(RegisterReport {
            device: None,
            identities,
            ip_prefix: prefix,
            registrations: Vec::new(),
        });
    };
    let rooms: Vec<_> = SaleItem::select(&campaign, args.item.as_deref())?
        .into_iter()
        .filter_map(SaleItem::into_room)
        .filter(|room| room.settings.registration.is_some())
        .collect();
    if rooms.is_empty() {
        return Err(usage(format!(
            "no {} of {} has a waiting room with `registration:` (docs/waiting-room.md)",
            args.item
                .as_ref()
                .map_or_else(|| "item".to_string(), |i| format!("item {i}")),
            campaign.path.display()
        )));
    }
    if args.ip.is_none()
        && let Some(room) = rooms
            .iter()
            .find(|room| room.settings.registration.is_some_and(|r| r.per_ip > 0))
    {
        return Err(usage(format!(
            "item {}'s registration caps accounts per IP (per_ip): give the caller's address, --ip IP",
            room.item
        )));
    }
    let mut items = Vec::new();
    for (user, room) in args
        .users
        .iter()
        .flat_map(|user| rooms.iter().map(move |room| (user, room)))
    {
        let registered = Register {
            item: &room.item,
            user,
            device,
            ip: args.ip.as_deref(),
        }
        .run(&campaign, &mut conn, &target.display)
        .map_err(|f| failure::say(f, "the registration"))?;
        items.push(RegisterRow {
            user: registered.user,
            item: registered.item,
            outcome: registered.outcome,
            registered_at: registered.registered_at_ms.map(|at| time_or_dash(Some(at))),
            device_accounts: registered.device_accounts,
            ip_accounts: registered.ip_accounts,
        });
    }
    Ok(RegisterReport {
        device: Some(device.clone()),
        identities,
        ip_prefix: prefix,
        registrations: items,
    })
}
