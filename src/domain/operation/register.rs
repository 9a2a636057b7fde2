//! Pre-registration for a waiting room that takes registered users only:
//! one account per device and per IP prefix, up to the room's caps. Safe to
//! repeat: the first registration stands. And the binding of an account to
//! an identity document ([`BindIdentity`], docs/limits.md).

use redis::ConnectionLike;
use serde::Serialize;

use super::{Failure, Invalid, Retry, check_id, room_of};
use crate::domain::waiting_room::registration::check_device;
use crate::model::campaign::Campaign;
use crate::model::limits::{identity_bindings, identity_digest};
use crate::redis_client::scripts::queue_register::RegisterOutcome;

/// Register `user` from `device` (and `ip`, when the room caps accounts per IP).
#[derive(Debug, Clone)]
pub struct Register<'a> {
    pub item: &'a str,
    pub user: &'a str,
    pub device: &'a str,
    pub ip: Option<&'a str>,
}

/// What the registration did.
#[derive(Debug, Clone, Serialize)]
pub struct Registered {
    pub user: String,
    pub item: String,
    pub outcome: RegisterOutcome,
    /// When the user's registration was made (Unix ms, Redis clock); absent when refused.
    pub registered_at_ms: Option<i64>,
    /// Accounts on the device after this call.
    pub device_accounts: i64,
    /// Accounts from the IP prefix after this call (0 without one).
    pub ip_accounts: i64,
}

impl Register<'_> {
    /// Register on `conn` (Redis at `at`).
    pub fn run<C: ConnectionLike>(
        &self,
        campaign: &Campaign,
        conn: &mut C,
        at: &str,
    ) -> Result<Registered, Failure> {
        check_id("user", self.user, true)?;
        check_device(self.device).map_err(|error| {
            Failure::invalid(Invalid::Field {
                field: "device",
                value: None,
                problem: crate::util::error_text::render(&error),
            })
        })?;
        let room = room_of(campaign, self.item)?;
        let caps = room.settings.registration.ok_or_else(|| {
            Failure::invalid(Invalid::NoWaitingRoom(format!(
                "item {}'s waiting room takes no registrations (no `registration:` in its room)",
                self.item
            )))
        })?;
        if caps.per_ip > 0 && self.ip.is_none() {
            return Err(Failure::invalid(Invalid::Field {
                field: "ip",
                value: None,
                problem: format!(
                    "is required: item {}'s registration caps accounts per IP (per_ip)",
                    self.item
                ),
            }));
        }
        let reply = room
            .register(conn, self.user, self.device, self.ip)
            .map_err(|error| Failure::of(error, at, Retry::Repeat))?;
        Ok(Registered {
            user: self.user.to_string(),
            item: self.item.to_string(),
            outcome: reply.outcome,
            registered_at_ms: (reply.registered_at_ms > 0).then_some(reply.registered_at_ms),
            device_accounts: reply.device_accounts,
            ip_accounts: reply.ip_accounts,
        })
    }
}

/// Bind `user` to an identity (`seckill register --identity`,
/// docs/limits.md): the account's buys then count under that identity's
/// `per_identity_limit` without presenting it, and a buy presenting another
/// is refused. The first binding stands.
#[derive(Debug, Clone)]
pub struct BindIdentity<'a> {
    pub user: &'a str,
    /// The shop's hash of the identity document (Redis keeps a digest of it).
    pub identity: &'a str,
}

/// What a binding did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// Bound now, or bound to this identity before: nothing changed.
    Bound,
    /// Bound to another identity before: that binding stands.
    IdentityMismatch,
}

impl Bound {
    /// The name JSON and the table use.
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::Bound => "bound",
            Bound::IdentityMismatch => "identity_mismatch",
        }
    }

    /// The exit code of `seckill register` for this outcome.
    pub fn exit_code(self) -> i32 {
        match self {
            Bound::Bound => crate::model::exit_codes::SUCCESS,
            Bound::IdentityMismatch => crate::model::exit_codes::IDENTITY_MISMATCH,
        }
    }
}

impl BindIdentity<'_> {
    /// Bind on `conn` (Redis at `at`): one HSETNX (atomic: of two bindings
    /// at once, one stands), then, when the user was bound, a read of which.
    pub fn run<C: ConnectionLike>(
        &self,
        campaign: &Campaign,
        conn: &mut C,
        at: &str,
    ) -> Result<Bound, Failure> {
        check_id("user", self.user, true)?;
        check_id("identity", self.identity, false)?;
        let key = identity_bindings(&campaign.id, self.user);
        let digest = identity_digest(&campaign.id, self.identity);
        let fail = |error: redis::RedisError| {
            Failure::of(
                anyhow::Error::new(error).context(format!("cannot bind an identity in {key}")),
                at,
                Retry::Repeat,
            )
        };
        let set: bool = redis::cmd("HSETNX")
            .arg(&key)
            .arg(self.user)
            .arg(&digest)
            .query(conn)
            .map_err(fail)?;
        if set {
            if let Some(expire_at) = campaign.expire_at_ms() {
                redis::cmd("PEXPIREAT")
                    .arg(&key)
                    .arg(expire_at)
                    .query::<()>(conn)
                    .map_err(fail)?;
            }
            return Ok(Bound::Bound);
        }
        let bound: Option<String> = redis::cmd("HGET")
            .arg(&key)
            .arg(self.user)
            .query(conn)
            .map_err(fail)?;
        Ok(match bound {
            Some(bound) if bound == digest => Bound::Bound,
            _ => Bound::IdentityMismatch,
        })
    }
}
