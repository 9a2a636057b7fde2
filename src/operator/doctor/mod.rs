//! Go / no-go before a launch: every check of what would wreck the sale,
//! read from the Redis servers (every master), the campaign file, this
//! machine's clock and the order database. Each [`Check`] says what it saw
//! and, when it is not fine, what to do. A check that cannot be made (a
//! command refused by the user's ACL) is never taken as passed: a critical
//! one is a no-go until it is made (run `doctor` as an admin user).
//!
//! Measurement only: `cmd::doctor` presents the list.

use std::collections::BTreeMap;

use anyhow::Result;
use serde::Serialize;

use crate::domain::item::SaleItem;
use crate::domain::orders::{StoreLocation, stream};
use crate::domain::registry;
use crate::domain::slot;
use crate::model::campaign::Campaign;
use crate::model::layout::key_slot;
use crate::model::role::Role;
use crate::operator::acl::dryrun;
use crate::redis_client::conn::{Conn, RedisTarget};
use crate::redis_client::server::{self, Answer, Eviction};
use crate::util::error_text::render;
use crate::util::text::{human_duration_ms, time_or_dash};

/// What a check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Verdict {
    Ok,
    /// Worth knowing; the sale can go.
    Warn,
    /// Would wreck the sale, or could not be checked and must be: no-go.
    Fail,
}

/// One check.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Check {
    /// Short name, e.g. `eviction`.
    pub(crate) check: &'static str,
    pub(crate) verdict: Verdict,
    /// What was seen.
    pub(crate) detail: String,
    /// What to do when it is not ok.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) fix: Option<String>,
}

impl Check {
    fn ok(check: &'static str, detail: impl Into<String>) -> Check {
        Check {
            check,
            verdict: Verdict::Ok,
            detail: detail.into(),
            fix: None,
        }
    }

    fn not_ok(
        check: &'static str,
        verdict: Verdict,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Check {
        Check {
            check,
            verdict,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }

    /// A check that could not be made: `critical` ones are no-go.
    fn unknown(check: &'static str, critical: bool, why: impl std::fmt::Display) -> Check {
        Check::not_ok(
            check,
            if critical {
                Verdict::Fail
            } else {
                Verdict::Warn
            },
            format!("cannot check: {why}"),
            "run `seckill doctor` with a user allowed INFO, CONFIG GET and ACL (the admin user), \
             e.g. --redis redis://admin:PASSWORD@host:port",
        )
    }
}

/// What `doctor` is asked.
pub(crate) struct Request<'a> {
    pub(crate) campaign: &'a Campaign,
    pub(crate) target: &'a RedisTarget,
    pub(crate) store: &'a StoreLocation,
    /// The role the URL's user plays.
    pub(crate) role: Role,
    /// The nightly reconcile's time of day, UTC minutes after midnight.
    pub(crate) reconcile_at_min: Option<u32>,
}

/// Replication lag (seconds since a replica's last ack) that is no-go.
const MAX_REPLICA_LAG_S: i64 = 3;
/// Clock difference that is worth a warning (ms).
const CLOCK_WARN_MS: i64 = 500;
/// Memory use (of maxmemory) that is no-go.
const MEMORY_FAIL: f64 = 0.9;
/// Memory use that is worth a warning.
const MEMORY_WARN: f64 = 0.7;

/// Run every check.
pub(crate) fn run(conn: &mut Conn, request: &Request) -> Vec<Check> {
    let at = request.target.display.as_str();
    let mut checks = Vec::new();
    checks.push(version(conn, at));
    checks.push(eviction(conn, at));
    checks.extend(memory(conn, at));
    checks.push(persistence(conn, at));
    checks.push(replicas(conn, at));
    checks.extend(cluster(conn, request));
    checks.extend(clocks(conn, at));
    checks.extend(window(request));
    checks.push(order_database(request.store));
    checks.push(consumer_group(conn, request.campaign));
    checks.push(other_campaigns(conn, request.campaign));
    checks.push(permissions(conn, request));
    checks.push(max_clients(conn, at));
    checks
}

/// Whether the checks say go (no `fail`).
pub(crate) fn go(checks: &[Check]) -> bool {
    checks.iter().all(|c| c.verdict != Verdict::Fail)
}

fn version(conn: &mut Conn, at: &str) -> Check {
    let masters = match server::info(conn, "server", at) {
        Ok(masters) => masters,
        Err(e) => return Check::unknown("redis_version", true, render(&e)),
    };
    let old: Vec<String> = masters
        .iter()
        .filter_map(|m| {
            let version = m.value.get("redis_version").cloned().unwrap_or_default();
            let major: u32 = version.split('.').next()?.parse().ok()?;
            (major < 7).then(|| format!("{} runs {version}", m.node))
        })
        .collect();
    let seen = masters
        .first()
        .and_then(|m| m.value.get("redis_version").cloned())
        .unwrap_or_default();
    if old.is_empty() {
        Check::ok(
            "redis_version",
            format!("{seen} on {} master(s)", masters.len()),
        )
    } else {
        Check::not_ok(
            "redis_version",
            Verdict::Fail,
            old.join(", "),
            "upgrade to Redis 7.0 or newer: the scripts need `#!lua` flags (refused under OOM before running)",
        )
    }
}

fn eviction(conn: &mut Conn, at: &str) -> Check {
    match server::eviction(conn, at) {
        Eviction::Never => Check::ok("eviction", "maxmemory-policy noeviction on every master"),
        Eviction::Unknown(why) => Check::unknown("eviction", true, why),
        evicts @ Eviction::Evicts(_) => {
            let problem = evicts.problem().unwrap_or_default();
            let (detail, fix) = problem
                .split_once("; set ")
                .map(|(d, f)| (d.to_string(), format!("set {f}")))
                .unwrap_or((problem.clone(), problem));
            Check::not_ok("eviction", Verdict::Fail, detail, fix)
        }
    }
}

fn memory(conn: &mut Conn, at: &str) -> Vec<Check> {
    let (memory, stats) = match (
        server::info(conn, "memory", at),
        server::info(conn, "stats", at),
    ) {
        (Ok(m), Ok(s)) => (m, s),
        (Err(e), _) | (_, Err(e)) => return vec![Check::unknown("memory", false, render(&e))],
    };
    let number = |a: &Answer<BTreeMap<String, String>>, f: &str| -> u64 {
        a.value.get(f).and_then(|v| v.parse().ok()).unwrap_or(0)
    };
    let mut worst = Check::ok("memory", "");
    let mut lines = Vec::new();
    for m in &memory {
        let (used, max) = (number(m, "used_memory"), number(m, "maxmemory"));
        if max == 0 {
            lines.push(format!("{}: {} MiB used, no maxmemory", m.node, used >> 20));
            if worst.verdict < Verdict::Warn {
                worst = Check::not_ok(
                    "memory",
                    Verdict::Warn,
                    "",
                    "set maxmemory below the machine's memory, with headroom for the sale (the OS \
                     kills a Redis that outgrows it; with noeviction Redis refuses writes instead, \
                     and the scripts refuse whole)",
                );
            }
            continue;
        }
        let share = used as f64 / max as f64;
        lines.push(format!(
            "{}: {:.0}% of maxmemory used ({} of {} MiB)",
            m.node,
            share * 100.0,
            used >> 20,
            max >> 20
        ));
        let verdict = if share >= MEMORY_FAIL {
            Verdict::Fail
        } else if share >= MEMORY_WARN {
            Verdict::Warn
        } else {
            Verdict::Ok
        };
        if verdict > worst.verdict {
            worst = Check::not_ok(
                "memory",
                verdict,
                "",
                "raise maxmemory, or free memory before the sale (a full Redis refuses the buys)",
            );
        }
    }
    worst.detail = lines.join("; ");
    let mut checks = vec![worst];
    let evicted: Vec<String> = stats
        .iter()
        .filter(|s| number(s, "evicted_keys") > 0)
        .map(|s| {
            format!(
                "{} evicted {} key(s) since it started",
                s.node,
                number(s, "evicted_keys")
            )
        })
        .collect();
    if !evicted.is_empty() {
        checks.push(Check::not_ok(
            "evicted_keys",
            Verdict::Warn,
            evicted.join("; "),
            "find out what was evicted before the sale (INFO stats); with noeviction it cannot happen again",
        ));
    }
    checks
}

fn persistence(conn: &mut Conn, at: &str) -> Check {
    let info = match server::info(conn, "persistence", at) {
        Ok(info) => info,
        Err(e) => return Check::unknown("persistence", true, render(&e)),
    };
    let without: Vec<String> = info
        .iter()
        .filter(|m| m.value.get("aof_enabled").map(String::as_str) != Some("1"))
        .map(|m| m.node.clone())
        .collect();
    if !without.is_empty() {
        return Check::not_ok(
            "persistence",
            Verdict::Fail,
            format!("no AOF on {}", without.join(", ")),
            "set appendonly yes and appendfsync always on every master: a restart without AOF \
             loses every acknowledged order not yet in the database",
        );
    }
    match server::config(conn, "appendfsync", at) {
        Ok(fsync) => {
            let relaxed: Vec<String> = fsync
                .iter()
                .filter(|m| m.value != "always")
                .map(|m| format!("{} appendfsync {}", m.node, m.value))
                .collect();
            if relaxed.is_empty() {
                Check::ok("persistence", "AOF with appendfsync always on every master")
            } else {
                Check::not_ok(
                    "persistence",
                    Verdict::Warn,
                    relaxed.join(", "),
                    "appendfsync always loses no acknowledged buy in a crash (everysec: up to a second)",
                )
            }
        }
        Err(e) => Check::not_ok(
            "persistence",
            Verdict::Warn,
            format!(
                "AOF on every master; appendfsync not readable ({})",
                render(&e)
            ),
            "check appendfsync always on every master (CONFIG GET is refused to this user)",
        ),
    }
}

fn replicas(conn: &mut Conn, at: &str) -> Check {
    let info = match server::info(conn, "replication", at) {
        Ok(info) => info,
        Err(e) => return Check::unknown("replicas", false, render(&e)),
    };
    let mut problems = Vec::new();
    let mut seen = Vec::new();
    for master in &info {
        let replicas: Vec<&String> = master
            .value
            .iter()
            .filter(|(field, _)| field.starts_with("slave") && field[5..].parse::<u32>().is_ok())
            .map(|(_, value)| value)
            .collect();
        if replicas.is_empty() {
            seen.push(format!("{}: no replica", master.node));
            continue;
        }
        for replica in replicas {
            let field = |name: &str| {
                replica
                    .split(',')
                    .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
                    .unwrap_or("")
                    .to_string()
            };
            let (addr, state) = (format!("{}:{}", field("ip"), field("port")), field("state"));
            let lag: i64 = field("lag").parse().unwrap_or(i64::MAX);
            if state != "online" {
                problems.push(format!("{}: replica {addr} is {state}", master.node));
            } else if lag > MAX_REPLICA_LAG_S {
                problems.push(format!(
                    "{}: replica {addr} has not acknowledged for {lag} s",
                    master.node
                ));
            } else {
                seen.push(format!(
                    "{}: replica {addr} online, lag {lag} s",
                    master.node
                ));
            }
        }
    }
    if !problems.is_empty() {
        return Check::not_ok(
            "replicas",
            Verdict::Fail,
            problems.join("; "),
            "bring the replica back (or remove it): a failover to a lagging or stopped replica \
             loses acknowledged orders, and `buy --wait-replicas` answers unreplicated",
        );
    }
    if seen.iter().all(|s| s.ends_with("no replica")) {
        return Check::not_ok(
            "replicas",
            Verdict::Warn,
            seen.join("; "),
            "without a replica a master's failure stops its items' sale until it is back (AOF keeps the data)",
        );
    }
    Check::ok("replicas", seen.join("; "))
}

fn cluster(conn: &mut Conn, request: &Request) -> Vec<Check> {
    let Conn::Cluster(_) = conn else {
        return Vec::new();
    };
    let state =
        server::on_every_master(conn, redis::cmd("CLUSTER").arg("INFO"), "").and_then(|answers| {
            answers
                .into_iter()
                .map(|a| {
                    let text: String = redis::from_redis_value(a.value)?;
                    Ok((a.node, server::parse_info(&text)))
                })
                .collect::<Result<Vec<_>>>()
        });
    let mut checks = Vec::new();
    match state {
        Err(e) => checks.push(Check::unknown("cluster_state", true, render(&e))),
        Ok(nodes) => {
            let bad: Vec<String> = nodes
                .iter()
                .filter(|(_, info)| info.get("cluster_state").map(String::as_str) != Some("ok"))
                .map(|(node, info)| {
                    format!(
                        "{node}: cluster_state {}",
                        info.get("cluster_state").cloned().unwrap_or_default()
                    )
                })
                .collect();
            checks.push(if bad.is_empty() {
                Check::ok("cluster_state", format!("ok on {} master(s)", nodes.len()))
            } else {
                Check::not_ok(
                    "cluster_state",
                    Verdict::Fail,
                    bad.join("; "),
                    "fix the cluster (redis-cli --cluster check HOST:PORT) before the sale: \
                     slots without a master refuse every buy of their items",
                )
            });
        }
    }
    let owners = slot_owners(conn);
    let mut placed = Vec::new();
    for sale in SaleItem::select(request.campaign, None).unwrap_or_default() {
        let slots: Vec<String> = sale
            .slots()
            .iter()
            .map(|b| {
                let slot = key_slot(&b.keys.stock);
                let owner = owners
                    .as_ref()
                    .ok()
                    .and_then(|o| o.iter().find(|(lo, hi, _)| (*lo..=*hi).contains(&slot)))
                    .map_or("?", |(_, _, node)| node.as_str());
                match sale.bucket_of(b) {
                    Some(n) => format!("bucket {n} → {owner}"),
                    None => owner.to_string(),
                }
            })
            .collect();
        placed.push(format!("item {}: {}", sale.id(), slots.join(", ")));
    }
    checks.push(match owners {
        Ok(_) => Check::ok("masters", placed.join("; ")),
        Err(e) => Check::unknown("masters", false, render(&e)),
    });
    checks
}

/// (first slot, last slot, master `host:port`) of every slot range.
fn slot_owners(conn: &mut Conn) -> Result<Vec<(u16, u16, String)>> {
    let reply: Vec<Vec<redis::Value>> = redis::cmd("CLUSTER").arg("SLOTS").query(conn)?;
    let mut ranges = Vec::new();
    for range in reply {
        let (Some(lo), Some(hi), Some(master)) = (range.first(), range.get(1), range.get(2)) else {
            continue;
        };
        let (host, port): (String, u16) =
            match redis::from_redis_value::<Vec<redis::Value>>(master.clone()) {
                Ok(parts) if parts.len() >= 2 => (
                    redis::from_redis_value(parts[0].clone())?,
                    redis::from_redis_value(parts[1].clone())?,
                ),
                _ => continue,
            };
        ranges.push((
            redis::from_redis_value(lo.clone())?,
            redis::from_redis_value(hi.clone())?,
            format!("{host}:{port}"),
        ));
    }
    Ok(ranges)
}

fn clocks(conn: &mut Conn, at: &str) -> Vec<Check> {
    let local_before = chrono::Utc::now().timestamp_millis();
    let clocks = match server::clocks(conn, at) {
        Ok(clocks) => clocks,
        Err(e) => return vec![Check::unknown("clock", false, render(&e))],
    };
    let local_after = chrono::Utc::now().timestamp_millis();
    let local = (local_before + local_after) / 2;
    let mut checks = Vec::new();
    let worst = clocks
        .iter()
        .map(|c| (c.value - local, &c.node))
        .max_by_key(|(skew, _)| skew.abs());
    if let Some((skew, node)) = worst {
        let detail = format!(
            "this machine's clock is {} {} {node}'s (Redis TIME decides the window; reports show local times)",
            human_duration_ms(skew.abs()),
            if skew > 0 { "behind" } else { "ahead of" }
        );
        checks.push(if skew.abs() > CLOCK_WARN_MS {
            Check::not_ok(
                "clock",
                Verdict::Warn,
                detail,
                "synchronise the clocks (NTP, chrony)",
            )
        } else {
            Check::ok(
                "clock",
                format!("within {} of every master", human_duration_ms(skew.abs())),
            )
        });
    }
    if clocks.len() > 1 {
        let (lo, hi) = (
            clocks.iter().map(|c| c.value).min().unwrap_or(0),
            clocks.iter().map(|c| c.value).max().unwrap_or(0),
        );
        let spread = hi - lo;
        checks.push(if spread > CLOCK_WARN_MS {
            Check::not_ok(
                "clock_between_masters",
                Verdict::Warn,
                format!("the masters' clocks differ by {}", human_duration_ms(spread)),
                "synchronise the masters' clocks: each bucket opens and closes by its own master's clock",
            )
        } else {
            Check::ok(
                "clock_between_masters",
                format!("within {}", human_duration_ms(spread)),
            )
        });
    }
    checks
}

fn window(request: &Request) -> Vec<Check> {
    let campaign = request.campaign;
    let now = chrono::Utc::now().timestamp_millis();
    let mut checks = vec![match campaign.starts_at_ms {
        Some(at) if at > now => Check::ok(
            "window",
            format!(
                "opens {} (in {})",
                time_or_dash(Some(at)),
                human_duration_ms(at - now)
            ),
        ),
        Some(at) => Check::not_ok(
            "window",
            Verdict::Warn,
            format!(
                "starts_at {} is past: the sale opens at preheat",
                time_or_dash(Some(at))
            ),
            "set starts_at to the launch time if the sale must not open before it",
        ),
        None => Check::not_ok(
            "window",
            Verdict::Warn,
            "no starts_at: the sale opens at preheat",
            "set starts_at to the launch time if the sale must not open before it",
        ),
    }];
    let Some(ends) = campaign.ends_at_ms else {
        checks.push(Check::not_ok(
            "keys_outlive_reconcile",
            Verdict::Warn,
            "no ends_at: the keys never expire",
            "set ends_at and keep_after_end, so the sale's keys go once the nightly reconcile has run",
        ));
        return checks;
    };
    let expire = campaign.expire_at_ms().unwrap_or(ends);
    let reconcile = match request.reconcile_at_min {
        // The first reconcile at that time of day after the sale ends.
        Some(minute) => {
            let day_ms = 86_400_000;
            let at_of_day = i64::from(minute) * 60_000;
            let day_start = ends - ends.rem_euclid(day_ms);
            let mut at = day_start + at_of_day;
            if at <= ends {
                at += day_ms;
            }
            at
        }
        // A nightly job runs within a day of the end.
        None => ends + 86_400_000,
    };
    checks.push(if expire > reconcile {
        Check::ok(
            "keys_outlive_reconcile",
            format!(
                "keys expire {}, after the reconcile of {}",
                time_or_dash(Some(expire)),
                time_or_dash(Some(reconcile))
            ),
        )
    } else {
        Check::not_ok(
            "keys_outlive_reconcile",
            Verdict::Fail,
            format!(
                "keys expire {}, before the reconcile of {} (keep_after_end is too short)",
                time_or_dash(Some(expire)),
                time_or_dash(Some(reconcile))
            ),
            "raise keep_after_end (e.g. 26h): reconcile proves nothing once the keys are gone",
        )
    });
    checks
}

fn order_database(store: &StoreLocation) -> Check {
    let shown = store.display();
    if store.require_existing().is_err() {
        return Check::not_ok(
            "order_database",
            Verdict::Warn,
            format!("{shown} does not exist yet"),
            "`seckill consume` creates it; start it before the sale opens",
        );
    }
    let mut opened = match store.open_existing() {
        Ok(opened) => opened,
        Err(e) => {
            return Check::not_ok(
                "order_database",
                Verdict::Fail,
                format!("{shown}: {}", render(&e)),
                "make the order database reachable (URL, password, network) before the sale: consume stores nothing without it",
            );
        }
    };
    if !opened.accepts_writes() {
        return Check::not_ok(
            "order_database",
            Verdict::Fail,
            format!("{shown} refuses writes"),
            "give the database user INSERT/UPDATE on the orders table, and free disk",
        );
    }
    Check::ok(
        "order_database",
        format!("{shown}: reachable, writable, schema current"),
    )
}

fn consumer_group(conn: &mut Conn, campaign: &Campaign) -> Check {
    let mut missing = Vec::new();
    let mut preheated = 0;
    for (item, keys) in crate::domain::item::order_streams(campaign) {
        match stream::group_info(conn, &keys) {
            Ok(Some(_)) => preheated += 1,
            Ok(None) => missing.push(format!("{} ({})", item.id, keys.orders)),
            Err(e) => return Check::unknown("consumer_group", false, render(&e)),
        }
    }
    if missing.is_empty() {
        Check::ok(
            "consumer_group",
            format!("{preheated} stream(s) have the orders-db group"),
        )
    } else {
        Check::not_ok(
            "consumer_group",
            Verdict::Warn,
            format!("no consumer group yet on {}", missing.join(", ")),
            "`seckill preheat` creates it (consume does too)",
        )
    }
}

fn other_campaigns(conn: &mut Conn, campaign: &Campaign) -> Check {
    let now = match slot::redis_now_ms(conn) {
        Ok(now) => now,
        Err(e) => return Check::unknown("other_campaigns", false, render(&e)),
    };
    match registry::collisions(conn, campaign, now) {
        Err(e) => Check::unknown("other_campaigns", false, render(&e)),
        Ok(collisions) if collisions.is_empty() => {
            let live = registry::live(conn, now).unwrap_or_default();
            Check::ok(
                "other_campaigns",
                format!("live on this Redis: {}", registry::describe(&live)),
            )
        }
        Ok(collisions) => Check::not_ok(
            "other_campaigns",
            Verdict::Fail,
            collisions
                .iter()
                .map(|(e, items)| {
                    format!(
                        "{} ({}) sells item(s) {} in the same window",
                        e.campaign,
                        e.file,
                        items.join(", ")
                    )
                })
                .collect::<Vec<_>>()
                .join("; "),
            "one sale per item at a time: is the campaign id a typo of that one's? (preheat refuses it)",
        ),
    }
}

/// `ACL DRYRUN` of everything the role sends, for the URL's user, on the
/// first item: each of its scripts and each command inside them, as
/// `acl --apply` proves a role it wrote (`acl::dryrun`).
fn permissions(conn: &mut Conn, request: &Request) -> Check {
    let user: redis::RedisResult<String> = redis::cmd("ACL").arg("WHOAMI").query(conn);
    let user = match user {
        Ok(user) => user,
        Err(e) => return Check::unknown("permissions", false, e),
    };
    let Some(item) = request.campaign.items.first() else {
        return Check::ok("permissions", format!("user {user}"));
    };
    let checks = match dryrun::verify(conn, &user, request.role, &request.campaign.id, &item.id) {
        Ok(checks) => checks,
        Err(e) => return Check::unknown("permissions", false, render(&e)),
    };
    let refused: Vec<String> = checks
        .iter()
        .filter(|check| !check.ok && check.expected == dryrun::Expect::Allowed)
        .map(|check| format!("{}: {}", check.what, check.answer))
        .collect();
    if user == "default" {
        return Check::not_ok(
            "permissions",
            Verdict::Warn,
            "the default user runs this role (it may do everything)",
            "give each job its own user with only its role's rights (`docs/security.md`)",
        );
    }
    if refused.is_empty() {
        Check::ok(
            "permissions",
            format!("user {user} may run the {} scripts", request.role.name()),
        )
    } else {
        Check::not_ok(
            "permissions",
            Verdict::Fail,
            format!("user {user} may not run: {}", refused.join("; ")),
            "set the role's ACL line of docs/security.md for this campaign",
        )
    }
}

fn max_clients(conn: &mut Conn, at: &str) -> Check {
    let info = match server::info(conn, "clients", at) {
        Ok(info) => info,
        Err(e) => return Check::unknown("maxclients", false, render(&e)),
    };
    let mut low = Vec::new();
    let mut seen = Vec::new();
    for m in &info {
        let max: u64 = m
            .value
            .get("maxclients")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let connected: u64 = m
            .value
            .get("connected_clients")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        seen.push(format!("{}: {connected} of {max}", m.node));
        if max < 1000 || connected * 10 > max * 8 {
            low.push(format!(
                "{}: {connected} connected, maxclients {max}",
                m.node
            ));
        }
    }
    if low.is_empty() {
        Check::ok("maxclients", seen.join("; "))
    } else {
        Check::not_ok(
            "maxclients",
            Verdict::Warn,
            low.join("; "),
            "raise maxclients (and the open-files limit) above the sale's connections: every buyer process and serve instance holds some",
        )
    }
}
