//! The proof behind `seckill acl --apply`: Redis itself (`ACL DRYRUN`) is
//! asked whether the user it just wrote can run each script of its role and
//! none that writes for another role.
//!
//! `ACL DRYRUN user EVALSHA sha n keys...` checks the call and its keys
//! only: Redis 7.0 runs a script's commands with the caller's permissions,
//! one by one, so a script may start and be refused halfway. Each script's
//! own commands are therefore read from its source (every
//! `'CMD'[, 'SUB'], KEYS[n]` call) and dry-run one by one on the key the
//! script gives them, padded to the command's arity from `COMMAND INFO`. A
//! role "can run" a script when the call and every command are allowed; it
//! "cannot run" one when the call or one of its writes is refused. A
//! read-only script of another role may go either way: reading harms nothing.

use std::collections::HashMap;

use anyhow::{Context, Result, bail};
use redis::{ConnectionLike, Value};
use serde::Serialize;

use super::Role;
use crate::domain::item::shape::Shape;
use crate::model::keys::{ItemKeys, LIVE_PREFIX, LOADTEST_PREFIX, ORDER_GROUP};
use crate::redis_client::scripts::{ALL, Purpose, Spec};

/// What a check expects of the role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Expect {
    /// The role needs it.
    Allowed,
    /// Another role's writes: refused somewhere before or inside the script.
    Denied,
    /// Another role's read-only script: allowed or not, nothing is at stake.
    Either,
}

/// One question asked of Redis, and its answer.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Check {
    /// `script buy`, `command XREADGROUP ...`.
    pub(crate) what: String,
    pub(crate) expected: Expect,
    /// What `ACL DRYRUN` said, shortened: `allowed`, or the first refusal.
    pub(crate) answer: String,
    /// The answer is what the role must have.
    pub(crate) ok: bool,
}

/// Operator scripts whose only writes are on a key the role must write
/// itself, so no key rule can refuse them: the waiting room's hash holds
/// the join counters (the buyer's `queue join`) beside the settings that
/// `queue_setup` and `queue_fanout` write. A buyer credential can therefore
/// change the room's settings — it can already buy as any user, so this is
/// no new power over the stock, but it can open the room early
/// (docs/security.md, "Limits").
fn writes_only_shared_keys(role: Role, spec: &Spec) -> bool {
    role == Role::Buyer && matches!(spec.name(), "queue_setup" | "queue_fanout")
}

/// Commands the consumer sends itself, outside scripts (`{orders}` and
/// `{dead}` stand for the keys).
const CONSUMER_COMMANDS: &[&[&str]] = &[
    &[
        "XREADGROUP",
        "GROUP",
        ORDER_GROUP,
        "c",
        "COUNT",
        "1",
        "STREAMS",
        "{orders}",
        ">",
    ],
    &["XACK", "{orders}", ORDER_GROUP, "0-1"],
    &["XAUTOCLAIM", "{orders}", ORDER_GROUP, "c", "0", "0-0"],
    &["XPENDING", "{orders}", ORDER_GROUP],
    &["XRANGE", "{orders}", "-", "+"],
    &["XLEN", "{dead}"],
    &["EXISTS", "{orders}"],
    &["XINFO", "GROUPS", "{orders}"],
    &["XINFO", "CONSUMERS", "{orders}", ORDER_GROUP],
    &["XGROUP", "CREATE", "{orders}", ORDER_GROUP, "0"],
];

/// Dry-run every script (and, for the consumer, its own commands) as `user`
/// of `role` on `campaign`, whose items include `item`.
pub(crate) fn verify<C: ConnectionLike>(
    conn: &mut C,
    user: &str,
    role: Role,
    campaign: &str,
    item: &str,
) -> Result<Vec<Check>> {
    let mut info = CommandInfo::default();
    let mut checks = Vec::new();
    for spec in ALL {
        let keys = example_keys(spec, campaign, item);
        let mut evalsha = vec![
            "EVALSHA".to_string(),
            spec.sha().to_string(),
            keys.len().to_string(),
        ];
        evalsha.extend(keys.iter().cloned());
        let call = dryrun(conn, user, &evalsha)?;
        let mut refused: Vec<String> = call
            .err()
            .into_iter()
            .map(|why| format!("EVALSHA: {why}"))
            .collect();
        let mut writes_refused = !refused.is_empty();
        let mut writes = false;
        for (words, index) in inner_calls(spec.source) {
            let Some(key) = keys.get(index - 1) else {
                bail!("lua/{}: KEYS[{index}] beyond its header", spec.file);
            };
            let (arity, write) = info.of(conn, &words)?;
            let mut command = words.clone();
            command.push(key.clone());
            while command.len() < arity {
                command.push("0".to_string());
            }
            writes |= write;
            if let Err(why) = dryrun(conn, user, &command)? {
                writes_refused |= write;
                refused.push(format!("{} {key}: {why}", words.join(" ")));
            }
        }
        let needed = spec.runs(role);
        let expected = match (needed, writes) {
            (true, _) => Expect::Allowed,
            (false, true) if writes_only_shared_keys(role, spec) => Expect::Either,
            (false, true) => Expect::Denied,
            (false, false) => Expect::Either,
        };
        let ok = match expected {
            Expect::Allowed => refused.is_empty(),
            Expect::Denied => writes_refused,
            Expect::Either => true,
        };
        checks.push(Check {
            what: format!("script {}", spec.name()),
            expected,
            answer: refused
                .first()
                .cloned()
                .unwrap_or_else(|| "allowed".to_string()),
            ok,
        });
    }
    if role == Role::Consumer {
        let keys = ItemKeys::live(campaign, item);
        for words in CONSUMER_COMMANDS {
            let command: Vec<String> = words
                .iter()
                .map(|w| match *w {
                    "{orders}" => keys.orders.clone(),
                    "{dead}" => keys.dead.clone(),
                    other => other.to_string(),
                })
                .collect();
            let answer = dryrun(conn, user, &command)?;
            checks.push(Check {
                what: format!("command {}", words[..2].join(" ")),
                expected: Expect::Allowed,
                ok: answer.is_ok(),
                answer: answer.err().unwrap_or_else(|| "allowed".to_string()),
            });
        }
    }
    Ok(checks)
}

/// The keys a script gets when run as an example on `campaign`'s `item`:
/// the load test's namespace for its own scripts, else the slot the
/// script's shape runs on (`Shape::example_slot`).
pub(crate) fn example_keys(spec: &Spec, campaign: &str, item: &str) -> Vec<String> {
    let prefix = match spec.purpose {
        Purpose::LoadTest => LOADTEST_PREFIX,
        Purpose::Sale => LIVE_PREFIX,
    };
    let slot = Shape::example_slot(spec, prefix, campaign, item);
    spec.keys
        .iter()
        .map(|name| slot.keys.named(name, "acl-dryrun"))
        .collect()
}

/// `ACL DRYRUN user words...`: `Ok(())` when allowed, `Err(why)` when refused.
fn dryrun<C: ConnectionLike>(
    conn: &mut C,
    user: &str,
    words: &[String],
) -> Result<std::result::Result<(), String>> {
    let reply: Value = redis::cmd("ACL")
        .arg("DRYRUN")
        .arg(user)
        .arg(words)
        .query(conn)
        .with_context(|| format!("ACL DRYRUN {user} {} failed", words[0]))?;
    Ok(match reply {
        Value::Okay => Ok(()),
        Value::SimpleString(s) if s == "OK" => Ok(()),
        other => Err(redis::from_redis_value::<String>(other).unwrap_or_else(|_| "refused".into())),
    })
}

/// Arity and write flag of commands, from `COMMAND INFO`, asked once each.
#[derive(Default)]
struct CommandInfo(HashMap<String, (usize, bool)>);

impl CommandInfo {
    /// (words a call needs at least, whether it writes) of `words` (`XGROUP CREATE` → `xgroup|create`).
    fn of<C: ConnectionLike>(&mut self, conn: &mut C, words: &[String]) -> Result<(usize, bool)> {
        let name = words.join("|").to_lowercase();
        if let Some(known) = self.0.get(&name) {
            return Ok(*known);
        }
        let reply: Vec<Value> = redis::cmd("COMMAND")
            .arg("INFO")
            .arg(&name)
            .query(conn)
            .with_context(|| format!("COMMAND INFO {name} failed"))?;
        let Some(Value::Array(fields)) = reply.first() else {
            bail!("Redis does not know the command {name} a script sends");
        };
        let arity = match fields.get(1) {
            Some(Value::Int(n)) => n.unsigned_abs() as usize,
            other => bail!("COMMAND INFO {name}: arity is {other:?}"),
        };
        let write = match fields.get(2) {
            Some(Value::Array(flags)) => flags
                .iter()
                .any(|f| redis::from_redis_value_ref::<String>(f).is_ok_and(|f| f == "write")),
            _ => false,
        };
        self.0.insert(name, (arity, write));
        Ok((arity, write))
    }
}

/// Every `'CMD', KEYS[n]` and `'CMD', 'SUB', KEYS[n]` call of a Lua source
/// (comments and double-quoted strings skipped), with n; calls on a key
/// held in a variable are not seen (the scripts pass keys as KEYS[n]).
fn inner_calls(source: &str) -> Vec<(Vec<String>, usize)> {
    let code = without_comments(source);
    let mut calls: Vec<(Vec<String>, usize)> = Vec::new();
    let mut rest = code.as_str();
    while let Some((word, after)) = quoted(rest) {
        rest = after;
        if !is_command(word) {
            continue;
        }
        let mut words = vec![word.to_string()];
        let mut tail = after;
        if let Some(next) = tail.strip_prefix(", '")
            && let Some(end) = next.find('\'')
            && is_command(&next[..end])
        {
            words.push(next[..end].to_string());
            tail = &next[end + 1..];
        }
        let Some(index) = tail
            .strip_prefix(", KEYS[")
            .and_then(|t| t.split_once(']'))
            .and_then(|(n, _)| n.parse::<usize>().ok())
        else {
            continue;
        };
        rest = tail;
        if !calls.iter().any(|(w, i)| *w == words && *i == index) {
            calls.push((words, index));
        }
    }
    calls
}

/// The next single-quoted string of `text` and what follows it.
fn quoted(text: &str) -> Option<(&str, &str)> {
    let start = text.find('\'')? + 1;
    let end = start + text[start..].find('\'')?;
    Some((&text[start..end], &text[end + 1..]))
}

fn is_command(word: &str) -> bool {
    !word.is_empty() && word.bytes().all(|b| b.is_ascii_uppercase())
}

/// `source` without `--` comments, its double-quoted strings emptied.
fn without_comments(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut chars = source.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '-' if chars.peek() == Some(&'-') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '"' => {
                out.push_str("\"\"");
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '\'' => {
                out.push('\'');
                while let Some(c) = chars.next() {
                    out.push(c);
                    match c {
                        '\\' => {
                            if let Some(escaped) = chars.next() {
                                out.push(escaped);
                            }
                        }
                        '\'' => break,
                        _ => {}
                    }
                }
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scripts_own_calls_are_read_from_its_source() {
        let source = "-- don't count 'DEL', KEYS[9]\n\
                      local e = \"can't\"\n\
                      redis.call('HSET', KEYS[1], 'f', 'v')\n\
                      read(KEYS[2], 'XPENDING', KEYS[2], ARGV[1])\n\
                      redis.call('XGROUP', 'CREATE', KEYS[3], ARGV[1], '0')\n\
                      redis.call('TYPE', KEYS[i])\n\
                      redis.call('HSET', KEYS[1], 'g', 'w')";
        assert_eq!(
            inner_calls(source),
            vec![
                (vec!["HSET".to_string()], 1),
                (vec!["XPENDING".to_string()], 2),
                (vec!["XGROUP".to_string(), "CREATE".to_string()], 3),
            ]
        );
        // Every script of the toolkit has calls the reader sees.
        for spec in ALL {
            assert!(!inner_calls(spec.source).is_empty(), "lua/{}", spec.file);
        }
    }
}
