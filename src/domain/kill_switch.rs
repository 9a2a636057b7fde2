//! The kill switch's audit trail: who flips it (`--by`, `SECKILL_OPERATOR`,
//! else the OS account) and the last flips of each item, kept in Redis next
//! to the switch (`lua/set_switch.lua`, a list capped at [`HISTORY_CAP`]),
//! read a page at a time (`shutdown-switch status --history --limit --skip`).
//! The account name (`util::identity`) is never "unknown", which tells an
//! incident review nothing.
//!
//! May import: redis_client, model, util.

use anyhow::{Context, Result};
use redis::ConnectionLike;
use serde::{Deserialize, Serialize};

use crate::model::error::usage;
use crate::model::keys::ItemKeys;
use crate::redis_client::scripts::ScriptCall;
use crate::redis_client::scripts::set_switch::SetSwitch;
use crate::util::identity;

/// Flips kept per item (newest first). A sale day flips a switch a handful
/// of times; a thousand flips of ~150 bytes is ~150 KB per item at most, and
/// covers an incident with a flapping automation that flips every minute
/// for half a day. Older flips are trimmed by the script that adds one.
pub const HISTORY_CAP: u32 = 1000;

/// One page of the history, and how many flips are kept in all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HistoryPage {
    /// Newest first, starting after the `skip` newest.
    pub(crate) flips: Vec<Flip>,
    /// Flips kept for the item.
    pub(crate) kept: u64,
}

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

    pub(crate) fn serialize<S: Serializer>(ms: &i64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i64(*ms)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
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
pub(crate) fn operator(by: Option<&str>) -> Result<String> {
    if let Some(by) = by {
        let by = by.trim();
        if by.is_empty() || by.chars().count() > 128 || by.chars().any(char::is_control) {
            return Err(usage(format!(
                "--by {by:?} must be 1..128 characters without control characters"
            )));
        }
        return Ok(by.to_string());
    }
    Ok(format!(
        "{}@{}",
        identity::os_account(),
        identity::host_name()
    ))
}

/// Flip the switch of one item and append the flip to its history, in one
/// script. Takes effect on the buy script's next call. `expire_at_ms` (the
/// campaign's) gives the meta hash an expiry when it has none, so a switch
/// flipped on a never-preheated item does not stay forever.
pub(crate) fn set<C: ConnectionLike>(
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

/// `limit` kept flips of one item after its `skip` newest, newest first,
/// and how many are kept.
pub(crate) fn history<C: ConnectionLike>(
    conn: &mut C,
    keys: &ItemKeys,
    skip: u32,
    limit: u32,
) -> Result<HistoryPage> {
    let (entries, kept): (Vec<String>, u64) = redis::pipe()
        .cmd("LRANGE")
        .arg(&keys.switch_log)
        .arg(i64::from(skip))
        .arg(i64::from(skip) + i64::from(limit) - 1)
        .cmd("LLEN")
        .arg(&keys.switch_log)
        .query(conn)
        .with_context(|| format!("cannot read the kill-switch history of {}", keys.base))?;
    let flips = entries
        .iter()
        .map(|e| {
            serde_json::from_str(e)
                .with_context(|| format!("unreadable flip in {}: {e}", keys.switch_log))
        })
        .collect::<Result<_>>()?;
    Ok(HistoryPage { flips, kept })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operator_is_never_unknown() {
        let account = identity::os_account();
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
