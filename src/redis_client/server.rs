//! What the Redis servers behind a target say about themselves — `INFO`
//! sections, `CONFIG GET`, `TIME` — asked of every master (one on a
//! standalone Redis, each master of a cluster). A sale's safety depends on
//! every master: an eviction policy or a missing AOF on one of them loses
//! that master's items.
//!
//! `INFO` and `CONFIG` are in Redis's `@dangerous` category: a user without
//! them (the documented operator role has `+info` for this, docs/security.md)
//! gets `NOPERM`, which the callers report as "cannot check", never as safe.

use std::collections::BTreeMap;

use anyhow::{Context, Result, anyhow};
use redis::cluster_routing::{MultipleNodeRoutingInfo, RoutingInfo};
use redis::{Cmd, Value};

use super::conn::Conn;

/// One master's answer to a command.
#[derive(Debug, Clone)]
pub(crate) struct Answer<T> {
    /// `host:port` of the master (the target's display on a standalone Redis).
    pub(crate) node: String,
    pub(crate) value: T,
}

/// `cmd` sent to every master: the standalone server, or each master of a cluster.
pub(crate) fn on_every_master(
    conn: &mut Conn,
    cmd: &Cmd,
    single: &str,
) -> Result<Vec<Answer<Value>>> {
    if !conn.is_cluster() {
        let value = cmd.query(conn)?;
        return Ok(vec![Answer {
            node: single.to_string(),
            value,
        }]);
    }
    let routing = RoutingInfo::MultiNode((MultipleNodeRoutingInfo::AllMasters, None));
    let reply = conn.route(cmd, routing)?;
    let Value::Map(nodes) = reply else {
        return Err(anyhow!("the cluster's masters answered {reply:?}"));
    };
    let mut answers = Vec::new();
    for (node, value) in nodes {
        answers.push(Answer {
            node: redis::from_redis_value(node).context("a node address")?,
            value,
        });
    }
    answers.sort_by(|a, b| a.node.cmp(&b.node));
    Ok(answers)
}

/// `INFO section` of every master, as `field → value`.
pub(crate) fn info(
    conn: &mut Conn,
    section: &str,
    single: &str,
) -> Result<Vec<Answer<BTreeMap<String, String>>>> {
    on_every_master(conn, redis::cmd("INFO").arg(section), single)?
        .into_iter()
        .map(|answer| {
            let text: String = redis::from_redis_value(answer.value)
                .with_context(|| format!("INFO {section} of {}", answer.node))?;
            Ok(Answer {
                node: answer.node,
                value: parse_info(&text),
            })
        })
        .collect()
}

/// `CONFIG GET name` of every master.
pub(crate) fn config(conn: &mut Conn, name: &str, single: &str) -> Result<Vec<Answer<String>>> {
    on_every_master(conn, redis::cmd("CONFIG").arg("GET").arg(name), single)?
        .into_iter()
        .map(|answer| {
            let pair: Vec<String> = redis::from_redis_value(answer.value)
                .with_context(|| format!("CONFIG GET {name} of {}", answer.node))?;
            Ok(Answer {
                node: answer.node,
                value: pair.get(1).cloned().unwrap_or_default(),
            })
        })
        .collect()
}

/// Every master's clock (`TIME`), Unix ms.
pub(crate) fn clocks(conn: &mut Conn, single: &str) -> Result<Vec<Answer<i64>>> {
    on_every_master(conn, &redis::cmd("TIME"), single)?
        .into_iter()
        .map(|answer| {
            let (secs, micros): (i64, i64) = redis::from_redis_value(answer.value)
                .with_context(|| format!("TIME of {}", answer.node))?;
            Ok(Answer {
                node: answer.node,
                value: secs * 1000 + micros / 1000,
            })
        })
        .collect()
}

/// The `field:value` lines of an INFO reply (comments and blank lines skipped).
pub(crate) fn parse_info(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.trim_end().split_once(':'))
        .map(|(field, value)| (field.to_string(), value.to_string()))
        .collect()
}

/// How eviction stands on every master: `noeviction` everywhere is the only
/// policy that never deletes sale state under memory pressure (`allkeys-*`
/// deletes any key, the order stream included; `volatile-*` every key with
/// an expiry: stock, buyers, request ids).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Eviction {
    /// Every master says `noeviction`.
    Never,
    /// These masters evict: (node, policy).
    Evicts(Vec<(String, String)>),
    /// The servers would not say (`INFO` refused, e.g. by an ACL).
    Unknown(String),
}

/// Ask every master its `maxmemory_policy` (INFO memory).
pub(crate) fn eviction(conn: &mut Conn, single: &str) -> Eviction {
    match info(conn, "memory", single) {
        Err(error) => Eviction::Unknown(crate::util::error_text::render(&error)),
        Ok(masters) => {
            let evicting: Vec<(String, String)> = masters
                .into_iter()
                .filter_map(|m| {
                    let policy = m.value.get("maxmemory_policy").cloned().unwrap_or_default();
                    (policy != "noeviction").then_some((m.node, policy))
                })
                .collect();
            if evicting.is_empty() {
                Eviction::Never
            } else {
                Eviction::Evicts(evicting)
            }
        }
    }
}

impl Eviction {
    /// The refusal text, with what to do; `None` when nothing evicts.
    pub(crate) fn problem(&self) -> Option<String> {
        match self {
            Eviction::Never => None,
            Eviction::Evicts(nodes) => {
                let list: Vec<String> = nodes
                    .iter()
                    .map(|(node, policy)| format!("{node} has maxmemory-policy {policy}"))
                    .collect();
                Some(format!(
                    "{}: under memory pressure Redis deletes sale state (stock, buyers, \
                     request ids, the order stream with orders not yet in the database), and a \
                     preheat would then load the full stock again; set `maxmemory-policy \
                     noeviction` on every master (CONFIG SET maxmemory-policy noeviction, and in \
                     redis.conf)",
                    list.join(", ")
                ))
            }
            Eviction::Unknown(why) => Some(format!(
                "cannot tell whether Redis evicts keys ({why}); allow INFO for this user, or \
                 run `seckill doctor` as an admin"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_lines_become_fields() {
        let fields =
            parse_info("# Memory\r\nused_memory:914528\r\nmaxmemory_policy:noeviction\r\n\r\n");
        assert_eq!(fields["used_memory"], "914528");
        assert_eq!(fields["maxmemory_policy"], "noeviction");
        assert_eq!(fields.len(), 2);
    }
}
