//! Pre-registration for a waiting room that takes registered users only:
//! one account per device and per IP prefix, up to the room's caps. Safe to
//! repeat: the first registration stands.

use redis::ConnectionLike;
use serde::Serialize;

use super::{Failure, Invalid, Retry, check_id, room_of};
use crate::domain::waiting_room::registration::check_device;
use crate::model::campaign::Campaign;
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
