//! The kill switch's audit trail: who flips it (`--by`, `SECKILL_OPERATOR`,
//! else the OS account) and the last flips of each item, kept in Redis next
//! to the switch (`lua/set_switch.lua`, a list capped at [`HISTORY_CAP`]).
//!
//! The account name comes from the password database (`getpwuid_r`, so NSS
//! and LDAP accounts work too), then `$USER`/`$LOGNAME`, then `uid N`: never
//! "unknown", which tells an incident review nothing.

use std::ffi::CStr;

use anyhow::{Context, Result};
use redis::ConnectionLike;
use serde::{Deserialize, Serialize};

use crate::error::usage;
use crate::keys::ItemKeys;
use crate::scripts::ScriptCall;
use crate::scripts::set_switch::SetSwitch;

/// Flips kept per item (newest first).
pub const HISTORY_CAP: u32 = 20;

/// One flip of the switch, as kept in the history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flip {
    /// True when the flip turned the switch on (buys refused).
    pub closed: bool,
    pub reason: String,
    pub by: String,
    /// Redis time of the flip, Unix ms (kept as text by the script).
    #[serde(with = "ms_text")]
    pub at_ms: i64,
}

mod ms_text {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(ms: &i64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i64(*ms)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Ms {
            Text(String),
            Number(i64),
        }
        match Ms::deserialize(d)? {
            Ms::Number(n) => Ok(n),
            Ms::Text(t) => t.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// Who is flipping the switch: `--by`/`SECKILL_OPERATOR` as given, else
/// `account@host`.
pub fn operator(by: Option<&str>) -> Result<String> {
    if let Some(by) = by {
        let by = by.trim();
        if by.is_empty() || by.chars().count() > 128 || by.chars().any(char::is_control) {
            return Err(usage(format!(
                "--by {by:?} must be 1..128 characters without control characters"
            )));
        }
        return Ok(by.to_string());
    }
    Ok(format!("{}@{}", os_account(), crate::state::host_name()))
}

/// The name of this process' user: password database, then the environment,
/// then the numeric uid.
pub fn os_account() -> String {
    // SAFETY: getuid cannot fail and has no preconditions.
    let uid = unsafe { libc::getuid() };
    password_database_name(uid)
        .or_else(|| {
            ["USER", "LOGNAME"]
                .into_iter()
                .filter_map(|v| std::env::var(v).ok())
                .find(|v| !v.trim().is_empty())
        })
        .unwrap_or_else(|| format!("uid {uid}"))
}

/// `getpwuid_r(uid)`'s `pw_name`, when the password database has the uid.
fn password_database_name(uid: libc::uid_t) -> Option<String> {
    let mut buffer = vec![0 as libc::c_char; 4096];
    loop {
        // SAFETY: every pointer is to live, properly sized storage owned here;
        // `pw_name` points into `buffer`, read before `buffer` is dropped.
        let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        let rc = unsafe {
            libc::getpwuid_r(
                uid,
                &mut entry,
                buffer.as_mut_ptr(),
                buffer.len(),
                &mut found,
            )
        };
        if rc == libc::ERANGE && buffer.len() < 1 << 20 {
            buffer.resize(buffer.len() * 2, 0);
            continue;
        }
        if rc != 0 || found.is_null() || entry.pw_name.is_null() {
            return None;
        }
        let name = unsafe { CStr::from_ptr(entry.pw_name) }
            .to_string_lossy()
            .into_owned();
        return (!name.is_empty()).then_some(name);
    }
}

/// Flip the switch of one item and append the flip to its history, in one
/// script. Takes effect on the buy script's next call. `expire_at_ms` (the
/// campaign's) gives the meta hash an expiry when it has none, so a switch
/// flipped on a never-preheated item does not stay forever.
pub fn set<C: ConnectionLike>(
    conn: &mut C,
    keys: &ItemKeys,
    flip: &Flip,
    expire_at_ms: Option<i64>,
) -> Result<()> {
    let (at, expire_at, keep) = (
        flip.at_ms.to_string(),
        expire_at_ms.map(|ms| ms.to_string()).unwrap_or_default(),
        HISTORY_CAP.to_string(),
    );
    let call = SetSwitch {
        meta: keys.meta.as_str(),
        switch_log: keys.switch_log.as_str(),
        closed: if flip.closed { "1" } else { "0" },
        reason: flip.reason.as_str(),
        by: flip.by.as_str(),
        at_ms: at.as_str(),
        expire_at_ms: expire_at.as_str(),
        keep: keep.as_str(),
    };
    let _kept: i64 = call
        .invoke(conn)
        .map_err(anyhow::Error::from)
        .and_then(|v| Ok(redis::from_redis_value(v)?))
        .with_context(|| format!("cannot set the kill switch of {}", keys.base))?;
    Ok(())
}

/// The kept flips of one item, newest first.
pub fn history<C: ConnectionLike>(conn: &mut C, keys: &ItemKeys) -> Result<Vec<Flip>> {
    let entries: Vec<String> = redis::cmd("LRANGE")
        .arg(&keys.switch_log)
        .arg(0)
        .arg(i64::from(HISTORY_CAP) - 1)
        .query(conn)
        .with_context(|| format!("cannot read the kill-switch history of {}", keys.base))?;
    entries
        .iter()
        .map(|e| {
            serde_json::from_str(e)
                .with_context(|| format!("unreadable flip in {}: {e}", keys.switch_log))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operator_is_never_unknown() {
        let account = os_account();
        assert!(!account.is_empty() && account != "unknown");
        assert_eq!(operator(Some(" alice ")).unwrap(), "alice");
        assert!(operator(Some("")).is_err());
        assert!(operator(None).unwrap().contains('@'));
    }

    #[test]
    fn flips_read_back_from_the_scripts_json() {
        // cjson writes what the script was given; at_ms arrives as text.
        let flip: Flip = serde_json::from_str(
            r#"{"closed":true,"reason":"gateway down","by":"alice","at_ms":"1796035975165"}"#,
        )
        .unwrap();
        assert_eq!(flip.at_ms, 1_796_035_975_165);
        assert!(flip.closed);
    }
}
