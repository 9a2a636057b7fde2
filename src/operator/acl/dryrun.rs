//! The proof behind `seckill acl --apply` and `doctor`'s permissions: Redis
//! itself is asked whether a user may send every command of its role's
//! whole path — connecting (`PING`, on a cluster `CLUSTER SLOTS`), the
//! commands its subcommands send outside scripts (`acl::path`), each script
//! it runs and every command inside them — and, for `acl --apply`, that it
//! may run no script that writes for another role.
//!
//! Two ways to ask: `ACL DRYRUN user ...` (an admin asks about any user:
//! `acl --apply`, `doctor --user`), or [`Asker::Probe`], a read-only script
//! the user runs itself, asking `redis.acl_check_cmd` about each command
//! (no admin needed, nothing written, nothing in `ACL LOG`): how `doctor`
//! checks a role's own URL, whose user may not run `ACL DRYRUN` (`@admin`).
//!
//! `EVALSHA sha n keys...` is checked as a call with its keys only: Redis
//! 7.0 runs a script's commands with the caller's permissions, one by one,
//! so a script may start and be refused halfway. Each script's own commands
//! are therefore read from its source (every `'CMD'[, 'SUB'], KEYS[n]`
//! call) and asked about one by one on the key the script gives them,
//! padded to the command's arity from `COMMAND INFO`. A role "can run" a
//! script when the call and every command are allowed; it "cannot run" one
//! when the call or one of its writes is refused. A read-only script of
//! another role may go either way: reading harms nothing.

use std::collections::HashMap;

use anyhow::{Context, Result, bail};
use redis::{ConnectionLike, Value};
use serde::Serialize;

pub(crate) mod path;
mod probe;

use self::path::{Key, Sent};
use super::Role;
use crate::domain::item::shape::Shape;
use crate::domain::registry::REGISTRY_KEY;
use crate::model::keys::{ItemKeys, LIVE_PREFIX, LOADTEST_PREFIX};
use crate::model::layout::Layout;
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
    /// `script buy`, `command HSCAN :buyers`, `command CLUSTER SLOTS`.
    pub(crate) what: String,
    pub(crate) expected: Expect,
    /// What Redis said, shortened: `allowed`, or the first refusal.
    pub(crate) answer: String,
    /// The answer is what the role must have.
    pub(crate) ok: bool,
    /// For a command outside scripts: which subcommand sends it, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) sent_by: Option<&'static str>,
    /// For a command outside scripts: its name (`HSCAN`, `CLUSTER SLOTS`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) command: Option<String>,
    /// For a command outside scripts: the kind of key it is sent on
    /// (`buyers`, `bucket:xfer_pending`, `*` any of an item's, `registry`,
    /// `loadtest:stock`; empty for none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) key: Option<String>,
}

/// Who answers.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Asker<'a> {
    /// `ACL DRYRUN user ...`, asked by a user allowed it (an admin).
    Dryrun(&'a str),
    /// The connection's own user, through `redis.acl_check_cmd` in a
    /// read-only script (it needs `EVALSHA` and `SCRIPT LOAD`, which every
    /// role has).
    Probe,
}

/// Which checks to make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// The role's whole path: everything it must be allowed.
    Needs,
    /// The whole path, and every other role's script (a writing one must be
    /// refused): what `acl --apply` proves of a user it wrote.
    Everything,
}

/// The kind of connection the role's commands go over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Topology {
    /// A Redis Cluster node: the cluster client's own commands are checked.
    pub(crate) cluster: bool,
    /// The database the URL names (`SELECT` is checked when it is not 0).
    pub(crate) db: i64,
}

/// Operator scripts whose only writes are on a key the role must write
/// itself, so no key rule can refuse them: the waiting room's hash holds
/// the join counters (the buyer's `queue join`) beside the settings that
/// `queue_setup` and `queue_fanout` write. A buyer credential can therefore
/// change the room's settings — it can already buy as any user, so this is
/// no new power over the stock, but it can open the room early
/// (docs/security.md, "Limits"). `fence_reapply` (reconcile --fence) writes
/// what a sale writes — an order entry, the stock debited, a buyer credited
/// — which the buyer's own rules allow command by command; its read of the
/// stream (XRANGE) is refused to the buyer, so the script fails before its
/// first write when a buyer runs it.
fn writes_only_shared_keys(role: Role, spec: &Spec) -> bool {
    role == Role::Buyer
        && matches!(
            spec.name(),
            "queue_setup" | "queue_fanout" | "fence_reapply"
        )
}

/// One check before it is asked: the commands whose answers decide it.
struct Plan {
    what: String,
    /// `None` for a script until its commands' write flags are known.
    expected: Option<Expect>,
    /// The row of a command outside scripts.
    sent: Option<&'static Sent>,
    /// Each command, and how a refusal of it is named.
    commands: Vec<(Vec<String>, String)>,
    /// Whether a refused command writes (a script's own commands).
    writes: Vec<bool>,
    /// The script, for the expectation once the writes are known.
    script: Option<&'static Spec>,
}

/// Ask about the whole path of `role` on `campaign` (whose items include
/// `item`), as `asker`, over a connection of `topology`.
pub(crate) fn verify<C: ConnectionLike>(
    conn: &mut C,
    asker: Asker,
    role: Role,
    campaign: &str,
    item: &str,
    topology: Topology,
    scope: Scope,
) -> Result<Vec<Check>> {
    let mut info = CommandInfo::default();
    let mut plans = Vec::new();
    for row in path::sent_by(role).filter(|row| row.applies(topology.cluster, topology.db)) {
        let words = row_words(row, campaign, item, topology.db);
        plans.push(Plan {
            what: format!("command {}", row.shown()),
            expected: Some(Expect::Allowed),
            sent: Some(row),
            commands: vec![(words, "refused".to_string())],
            writes: vec![false],
            script: None,
        });
    }
    for spec in ALL {
        if scope == Scope::Needs && !spec.runs(role) {
            continue;
        }
        let keys = example_keys(spec, campaign, item);
        let mut evalsha = vec![
            "EVALSHA".to_string(),
            spec.sha().to_string(),
            keys.len().to_string(),
        ];
        evalsha.extend(keys.iter().cloned());
        let mut commands = vec![(evalsha, "EVALSHA".to_string())];
        let mut writes = vec![false];
        for (words, index) in inner_calls(spec.source) {
            let Some(key) = keys.get(index - 1) else {
                bail!("lua/{}: KEYS[{index}] beyond its header", spec.file);
            };
            // The probe counts no arguments and asks only about the role's
            // own needs: COMMAND INFO (refused to the roles) is not sent.
            let (arity, write) = match asker {
                Asker::Dryrun(_) => info.of(conn, &words)?,
                Asker::Probe => (0, false),
            };
            let mut command = words.clone();
            command.push(key.clone());
            while command.len() < arity {
                command.push("0".to_string());
            }
            commands.push((command, format!("{} {key}", words.join(" "))));
            writes.push(write);
        }
        plans.push(Plan {
            what: format!("script {}", spec.name()),
            expected: None,
            sent: None,
            commands,
            writes,
            script: Some(spec),
        });
    }
    if scope == Scope::Everything && (info.refused || matches!(asker, Asker::Probe)) {
        bail!("which scripts write cannot be told without COMMAND INFO (ask as an admin)");
    }
    let questions: Vec<&[String]> = plans
        .iter()
        .flat_map(|plan| plan.commands.iter().map(|(words, _)| words.as_slice()))
        .collect();
    let mut answers = ask(conn, asker, &questions)?.into_iter();
    let mut checks = Vec::new();
    for plan in plans {
        let mut refused = Vec::new();
        let mut writes_refused = false;
        for ((_, label), write) in plan.commands.iter().zip(&plan.writes) {
            let Some(answer) = answers.next() else {
                bail!("fewer answers than questions");
            };
            if let Err(why) = answer {
                writes_refused |= *write || label == "EVALSHA";
                refused.push(match label.as_str() {
                    "refused" => why,
                    label => format!("{label}: {why}"),
                });
            }
        }
        let expected = plan.expected.unwrap_or_else(|| {
            let spec = plan.script.expect("a script's plan");
            let writes = plan.writes.iter().any(|w| *w);
            match (spec.runs(role), writes) {
                (true, _) => Expect::Allowed,
                (false, true) if writes_only_shared_keys(role, spec) => Expect::Either,
                (false, true) => Expect::Denied,
                (false, false) => Expect::Either,
            }
        });
        let ok = match expected {
            Expect::Allowed => refused.is_empty(),
            Expect::Denied => writes_refused,
            Expect::Either => true,
        };
        checks.push(Check {
            what: plan.what,
            expected,
            answer: refused
                .first()
                .cloned()
                .unwrap_or_else(|| "allowed".to_string()),
            ok,
            sent_by: plan.sent.map(|row| row.by),
            command: plan.sent.map(Sent::command),
            key: plan.sent.map(|row| row.key.kind()),
        });
    }
    Ok(checks)
}

/// Whether the connection's own user may send `words` (the probe: no
/// `@admin` needed, nothing sent to `ACL LOG`): a command that is only worth
/// sending when allowed (`CONFIG GET` for a detail) is asked about first.
pub(crate) fn may_send<C: ConnectionLike>(conn: &mut C, words: &[&str]) -> Result<bool> {
    let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
    let answers = probe::ask(conn, &[words.as_slice()])?;
    Ok(answers.first().is_some_and(|answer| answer.is_ok()))
}

/// A row's words with its key (the example item's, or the registry, or the
/// load test's) and the database number in place.
fn row_words(row: &Sent, campaign: &str, item: &str, db: i64) -> Vec<String> {
    let key = match row.key {
        Key::None => String::new(),
        Key::Item(name) => ItemKeys::live(campaign, item).named(name, "acl-dryrun"),
        Key::AnyOfItem => ItemKeys::live(campaign, item).meta,
        Key::Bucket(name) => Layout::new(LIVE_PREFIX, campaign, item, 2)
            .bucket(0)
            .keys
            .named(name, "acl-dryrun"),
        Key::Registry => REGISTRY_KEY.to_string(),
        Key::LoadTest(name) => {
            ItemKeys::new(LOADTEST_PREFIX, campaign, item).named(name, "acl-dryrun")
        }
    };
    row.words
        .iter()
        .map(|word| match *word {
            "{key}" => key.clone(),
            "{db}" => db.to_string(),
            other => other.to_string(),
        })
        .collect()
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

/// Each command's answer: `Ok(())` allowed, `Err(why)` refused.
fn ask<C: ConnectionLike>(
    conn: &mut C,
    asker: Asker,
    questions: &[&[String]],
) -> Result<Vec<std::result::Result<(), String>>> {
    match asker {
        Asker::Dryrun(user) => {
            let mut pipe = redis::pipe();
            for words in questions {
                pipe.cmd("ACL").arg("DRYRUN").arg(user).arg(*words);
            }
            let replies: Vec<Value> = pipe
                .query(conn)
                .with_context(|| format!("ACL DRYRUN {user} failed"))?;
            Ok(replies
                .into_iter()
                .map(|reply| match reply {
                    Value::Okay => Ok(()),
                    Value::SimpleString(s) if s == "OK" => Ok(()),
                    other => Err(redis::from_redis_value::<String>(other)
                        .unwrap_or_else(|_| "refused".into())),
                })
                .collect())
        }
        Asker::Probe => probe::ask(conn, questions),
    }
}

/// Arity and write flag of commands, from `COMMAND INFO`, asked once each.
#[derive(Default)]
struct CommandInfo {
    known: HashMap<String, (usize, bool)>,
    /// `COMMAND INFO` was refused to this user (a role asking about itself):
    /// commands go unpadded (`redis.acl_check_cmd` does not count
    /// arguments) and their write flags are unknown.
    refused: bool,
}

impl CommandInfo {
    /// (words a call needs at least, whether it writes) of `words` (`XGROUP CREATE` → `xgroup|create`).
    fn of<C: ConnectionLike>(&mut self, conn: &mut C, words: &[String]) -> Result<(usize, bool)> {
        let name = words.join("|").to_lowercase();
        if let Some(known) = self.known.get(&name) {
            return Ok(*known);
        }
        if self.refused {
            return Ok((0, false));
        }
        let reply: Vec<Value> = match redis::cmd("COMMAND").arg("INFO").arg(&name).query(conn) {
            Ok(reply) => reply,
            Err(e) if e.code() == Some("NOPERM") => {
                self.refused = true;
                return Ok((0, false));
            }
            Err(e) => return Err(e).with_context(|| format!("COMMAND INFO {name} failed")),
        };
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
        self.known.insert(name, (arity, write));
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
