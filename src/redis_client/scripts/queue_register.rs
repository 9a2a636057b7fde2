//! `lua/queue_register.lua`: pre-registration for an item's waiting room,
//! with per-device and per-IP caps. Its call, outcomes and reply.

use anyhow::{Result, bail};
use redis::Value;
use serde::Serialize;

use crate::model::exit_codes;

super::script_call! {
    /// Register: KEYS then ARGV of `lua/queue_register.lua`.
    QueueRegister = "queue_register.lua", Sale;
    roles { buyer, operator }
    keys { room, registered, devices, ips }
    argv { user, device, ip_prefix }
}

/// What a registration did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RegisterOutcome {
    /// New, or a repeat from the same device and prefix (nothing written).
    Registered,
    /// Registered before from another device or prefix: the first stands.
    AlreadyRegistered,
    DeviceLimit,
    IpLimit,
    RegistrationClosed,
}

impl RegisterOutcome {
    /// Every outcome.
    pub const ALL: [RegisterOutcome; 5] = [
        RegisterOutcome::Registered,
        RegisterOutcome::AlreadyRegistered,
        RegisterOutcome::DeviceLimit,
        RegisterOutcome::IpLimit,
        RegisterOutcome::RegistrationClosed,
    ];

    /// The name the script and JSON use.
    pub fn as_str(self) -> &'static str {
        match self {
            RegisterOutcome::Registered => "registered",
            RegisterOutcome::AlreadyRegistered => "already_registered",
            RegisterOutcome::DeviceLimit => "device_limit",
            RegisterOutcome::IpLimit => "ip_limit",
            RegisterOutcome::RegistrationClosed => "registration_closed",
        }
    }

    /// The exit code of `seckill register` for this outcome.
    pub fn exit_code(self) -> i32 {
        exit_codes::of_outcome(self.as_str())
    }
}

/// The reply of one registration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RegisterReply {
    pub outcome: RegisterOutcome,
    /// When the user's registration was made, Unix ms (Redis clock); 0 when refused.
    pub registered_at_ms: i64,
    /// Accounts on the device after this call.
    pub device_accounts: i64,
    /// Accounts from the IP prefix after this call (0 without one).
    pub ip_accounts: i64,
    pub now_ms: i64,
}

/// Parse `{outcome, registered_at_ms, device_accounts, ip_accounts, now_ms}`;
/// `registration_off` (no registration in this room) is an error.
pub(crate) fn parse_reply(reply: Value) -> Result<RegisterReply> {
    let (name, registered_at_ms, device_accounts, ip_accounts, now_ms): (
        String,
        i64,
        i64,
        i64,
        i64,
    ) = redis::from_redis_value(reply)?;
    if name == "registration_off" {
        bail!(
            "this item's waiting room in Redis takes no registrations (preheat the campaign, \
             whose file must give the room a `registration:`)"
        );
    }
    let Some(outcome) = RegisterOutcome::ALL
        .into_iter()
        .find(|o| o.as_str() == name)
    else {
        bail!("the register script returned an unknown outcome {name:?}");
    };
    Ok(RegisterReply {
        outcome,
        registered_at_ms,
        device_accounts,
        ip_accounts,
        now_ms,
    })
}
