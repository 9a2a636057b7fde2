//! Pre-registration (预约) for a waiting room: a user registers with a
//! device id (and the IP it came from) before `registration.until`; join and
//! buy then refuse anyone unregistered, and a device or an IP prefix holds
//! at most `per_device` / `per_ip` accounts (`lua/queue_register.lua`: the
//! count and the record move in one atomic step, so the caps hold under any
//! concurrency).

use std::net::IpAddr;

use anyhow::{Context, Result, bail};
use redis::ConnectionLike;

use super::Room;
use crate::redis_client::scripts::ScriptCall;
use crate::redis_client::scripts::queue_register::{self, QueueRegister};
pub use crate::redis_client::scripts::queue_register::{RegisterOutcome, RegisterReply};

/// Longest device id accepted.
pub(crate) const MAX_DEVICE_BYTES: usize = 128;

/// The prefix an address counts under: IPv4 /24, IPv6 /64 (one household,
/// one mobile carrier's block of addresses for one device, one /64 per site).
/// An IPv4-mapped IPv6 address (`::ffff:203.0.113.200`, what a back end on a
/// dual-stack socket sees of every IPv4 caller) is its IPv4 address: under
/// `::/64` every IPv4 caller in the world shared one cap, and a caller
/// choosing the spelling got a second one per /24.
pub fn ip_prefix(address: &str) -> Result<String> {
    let ip: IpAddr = address
        .trim()
        .parse()
        .with_context(|| format!("{address:?} is not an IPv4 or IPv6 address"))?;
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    Ok(match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            format!("{a}.{b}.{c}.0/24")
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            let masked = std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0);
            format!("{masked}/64")
        }
    })
}

/// A device id: 1..128 bytes, no whitespace or control characters (it is
/// stored after the other fields of a registration record).
pub fn check_device(device: &str) -> Result<()> {
    if device.is_empty()
        || device.len() > MAX_DEVICE_BYTES
        || device.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        bail!(
            "device id {device:?} must be 1..{MAX_DEVICE_BYTES} bytes without spaces or control characters"
        );
    }
    Ok(())
}

impl Room {
    /// Register `user` on `device` (from `ip`, required when the room caps
    /// accounts per IP).
    pub fn register<C: ConnectionLike>(
        &self,
        conn: &mut C,
        user: &str,
        device: &str,
        ip: Option<&str>,
    ) -> Result<RegisterReply> {
        check_device(device)?;
        let prefix = ip.map(ip_prefix).transpose()?.unwrap_or_default();
        if prefix.is_empty() && self.settings.registration.is_some_and(|r| r.per_ip > 0) {
            bail!(
                "item {}'s registration caps accounts per IP (per_ip): give the caller's address (--ip)",
                self.item
            );
        }
        let r = &self.room;
        QueueRegister::<&str> {
            room: &r.room,
            registered: &r.registered,
            devices: &r.devices,
            ips: &r.ips,
            user,
            device,
            ip_prefix: &prefix,
        }
        .invoke(conn)
        .map_err(anyhow::Error::from)
        .and_then(queue_register::parse_reply)
        .with_context(|| format!("cannot register {user} for item {}", self.item))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_count_under_their_prefix() {
        assert_eq!(ip_prefix("203.0.113.77").unwrap(), "203.0.113.0/24");
        assert_eq!(
            ip_prefix("2001:db8:1:2:3:4:5:6").unwrap(),
            "2001:db8:1:2::/64"
        );
        assert!(ip_prefix("203.0.113").is_err());
        // An IPv4 caller seen through a dual-stack socket is that IPv4
        // address, however it is spelled (issue 25 item 31).
        for mapped in [
            "::ffff:203.0.113.200",
            "::FFFF:cb00:71c8",
            "0:0:0:0:0:ffff:203.0.113.1",
        ] {
            assert_eq!(ip_prefix(mapped).unwrap(), "203.0.113.0/24", "{mapped}");
        }
        assert_eq!(ip_prefix("::ffff:198.51.100.7").unwrap(), "198.51.100.0/24");
        // Other IPv6 addresses near it stay IPv6.
        assert_eq!(ip_prefix("::1").unwrap(), "::/64");
        assert_eq!(ip_prefix("64:ff9b::203.0.113.1").unwrap(), "64:ff9b::/64");
        assert!(check_device("phone-1").is_ok());
        assert!(check_device("phone 1").is_err());
        assert!(check_device("").is_err());
    }
}
