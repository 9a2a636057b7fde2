//! The checks of each Redis node ([`Fleet`]): version, eviction, memory
//! against the sale, persistence, replicas, the cluster's state and slot
//! owners, the users each node holds, clocks and `maxclients`. Those a
//! failover would hand to a replica read every node; the ones that are a
//! master's alone (replication, clocks, where each item lives) read the
//! masters.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context, Result};

use super::fleet::{Fleet, Kind, Nodes, Reading, Why};
use super::memory::{self, SaleMemory};
use super::{CLOCK_WARN_MS, Check, Request, Verdict};
use crate::domain::item::SaleItem;
use crate::model::campaign::Campaign;
use crate::model::layout::{key_slot, share};
use crate::operator::acl::dryrun;
use crate::redis_client::conn::Conn;
use crate::redis_client::server::{self, parse_info};
use crate::util::error_text::render;
use crate::util::text::human_duration_ms;

/// Replication lag (seconds since a replica's last ack) that is no-go.
const MAX_REPLICA_LAG_S: i64 = 3;
/// Projected memory use (of maxmemory) that is no-go.
const MEMORY_FAIL: f64 = 0.9;
/// Projected memory use that is worth a warning.
const MEMORY_WARN: f64 = 0.7;

/// What the nodes answered, sorted by what came back.
struct Gathered<T> {
    /// (`master host:port`, address, kind, answer).
    seen: Vec<(String, String, Kind, T)>,
    /// Nodes without an answer: no connection, no reply, an error.
    missing: Vec<String>,
    /// Nodes whose ACL refused the question to this user.
    refused: Vec<String>,
}

fn gather<T>(readings: Vec<Reading<T>>) -> Gathered<T> {
    let mut gathered = Gathered {
        seen: Vec::new(),
        missing: Vec::new(),
        refused: Vec::new(),
    };
    for reading in readings {
        let named = match reading.kind {
            Kind::Master => format!("master {}", reading.node),
            Kind::Replica(_) => format!("replica {}", reading.node),
        };
        match reading.value {
            Ok(value) => gathered
                .seen
                .push((named, reading.node, reading.kind, value)),
            Err(Why::Refused(why)) => gathered.refused.push(format!("{named} ({why})")),
            Err(Why::Unreachable(why) | Why::Failed(why)) => {
                gathered.missing.push(format!("{named}: {why}"))
            }
        }
    }
    gathered
}

/// The check's verdict once its problems are known: `found` (a problem the
/// answers show) wins; then nodes that could not be read (no-go); then no
/// node at all (no-go); then refusals (unchecked: no-go when `critical`,
/// unless `--allow-unchecked`); else `ok`.
fn conclude<T>(
    name: &'static str,
    critical: bool,
    fleet: &Fleet,
    request: &Request,
    gathered: &Gathered<T>,
    found: Option<Check>,
    ok: String,
) -> Check {
    let mut notes = Vec::new();
    if !gathered.missing.is_empty() {
        notes.push(format!("not read: {}", gathered.missing.join("; ")));
    }
    if !gathered.refused.is_empty() {
        notes.push(format!(
            "refused to user {}: {}",
            request.url_user,
            gathered.refused.join("; ")
        ));
    }
    let with_notes = |detail: String| {
        std::iter::once(detail)
            .chain(notes.iter().cloned())
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("; ")
    };
    if let Some(failed) = found.as_ref().filter(|c| c.verdict == Verdict::Fail) {
        let mut failed = failed.clone();
        failed.detail = with_notes(failed.detail);
        return failed;
    }
    if !gathered.missing.is_empty() {
        return Check::not_ok(
            name,
            Verdict::Fail,
            with_notes(String::new()),
            "every node must answer before the sale: bring it back (a stopped replica is what a \
             failover promotes), or remove it from the topology",
        );
    }
    if gathered.seen.is_empty() && gathered.refused.is_empty() {
        let why = fleet
            .unknown
            .clone()
            .unwrap_or_else(|| "no node to read".to_string());
        return Check::not_ok(
            name,
            Verdict::Fail,
            format!("reached no node: {why}"),
            "doctor must reach every node to say go: see the connect check",
        );
    }
    if !gathered.refused.is_empty() {
        let verdict = if critical && !request.allow_unchecked {
            Verdict::Fail
        } else {
            Verdict::Warn
        };
        let detail = match &found {
            Some(found) => with_notes(found.detail.clone()),
            None if gathered.seen.is_empty() => with_notes("cannot check".to_string()),
            None => with_notes(ok),
        };
        return Check::not_ok(
            name,
            verdict,
            detail,
            "run `seckill doctor` as a user allowed INFO, CONFIG GET, CLUSTER NODES and ACL LIST \
             (the admin user, --redis redis://admin:PASSWORD@host:port; --user NAME checks a \
             role's user from there), or accept the gap with --allow-unchecked",
        );
    }
    match found {
        Some(found) => found,
        None => Check::ok(name, ok),
    }
}

/// `INFO section` of a node, as `field → value`.
fn info(conn: &mut Conn, section: &str) -> Result<BTreeMap<String, String>> {
    let text: String = redis::cmd("INFO")
        .arg(section)
        .query(conn)
        .with_context(|| format!("INFO {section}"))?;
    Ok(parse_info(&text))
}

fn number(fields: &BTreeMap<String, String>, name: &str) -> u64 {
    fields.get(name).and_then(|v| v.parse().ok()).unwrap_or(0)
}

pub(super) fn version(fleet: &mut Fleet, request: &Request) -> Check {
    let gathered = gather(fleet.read(Nodes::All, &["INFO", "server"], |c| info(c, "server")));
    let old: Vec<String> = gathered
        .seen
        .iter()
        .filter_map(|(named, _, _, fields)| {
            let version = fields.get("redis_version").cloned().unwrap_or_default();
            let major: u32 = version.split('.').next()?.parse().ok()?;
            (major < 7).then(|| format!("{named} runs {version}"))
        })
        .collect();
    let seen = gathered
        .seen
        .first()
        .and_then(|(_, _, _, fields)| fields.get("redis_version").cloned())
        .unwrap_or_default();
    let found = (!old.is_empty()).then(|| {
        Check::not_ok(
            "redis_version",
            Verdict::Fail,
            old.join(", "),
            "upgrade to Redis 7.0 or newer: the scripts need `#!lua` flags (refused under OOM before running)",
        )
    });
    let ok = format!("{seen} on every node ({})", fleet.census());
    conclude("redis_version", true, fleet, request, &gathered, found, ok)
}

pub(super) fn eviction(fleet: &mut Fleet, request: &Request) -> Check {
    let gathered = gather(fleet.read(Nodes::All, &["INFO", "memory"], |c| info(c, "memory")));
    let evicting: Vec<String> = gathered
        .seen
        .iter()
        .filter_map(|(named, _, _, fields)| {
            let policy = fields.get("maxmemory_policy").cloned().unwrap_or_default();
            (policy != "noeviction").then(|| format!("{named} has maxmemory-policy {policy}"))
        })
        .collect();
    let found = (!evicting.is_empty()).then(|| {
        Check::not_ok(
            "eviction",
            Verdict::Fail,
            format!(
                "{}: under memory pressure Redis deletes sale state (stock, buyers, request ids, \
                 the order stream with orders not yet in the database)",
                evicting.join(", ")
            ),
            "set `maxmemory-policy noeviction` on every node, replicas included (CONFIG SET \
             maxmemory-policy noeviction, and in redis.conf): a preheat after an eviction would \
             load the full stock again",
        )
    });
    let ok = format!(
        "maxmemory-policy noeviction on every node ({})",
        fleet.census()
    );
    conclude("eviction", true, fleet, request, &gathered, found, ok)
}

/// The units still to sell on each master, and the bytes they will take.
fn sale_estimate(
    fleet: &Fleet,
    mut main: Option<&mut Conn>,
    campaign: &Campaign,
) -> Vec<SaleMemory> {
    let per_order = memory::per_order(campaign.payment_timeout.is_some());
    let mut by_master: BTreeMap<String, u64> = BTreeMap::new();
    for item in &campaign.items {
        let sale = SaleItem::live(campaign, item);
        let buckets = sale.layout().buckets;
        for slot in sale.slots() {
            let in_file = match sale.bucket_of(&slot) {
                Some(b) => share(item.stock, buckets, b),
                None => item.stock,
            };
            let in_redis: Option<i64> = main.as_deref_mut().and_then(|conn| {
                redis::cmd("GET")
                    .arg(&slot.keys.stock)
                    .query::<Option<i64>>(conn)
                    .ok()
                    .flatten()
            });
            let units = in_redis.unwrap_or(in_file).max(0) as u64;
            if let Some(owner) = fleet.owner_of(key_slot(&slot.keys.stock)) {
                *by_master.entry(owner.to_string()).or_default() += units;
            }
        }
    }
    fleet
        .masters()
        .map(|master| {
            let units = by_master.get(&master.addr).copied().unwrap_or(0);
            SaleMemory {
                node: master.addr.clone(),
                units,
                estimate_bytes: units * per_order,
                used_bytes: 0,
                maxmemory_bytes: 0,
            }
        })
        .collect()
}

/// Memory on every node against the sale: each node's use now plus what
/// the units still to sell on its master will take ([`memory`]), against
/// its `maxmemory` (or the machine's memory without one); and keys evicted.
pub(super) fn memory(
    fleet: &mut Fleet,
    main: Option<&mut Conn>,
    request: &Request,
) -> (Vec<Check>, Vec<SaleMemory>) {
    let mut sale = sale_estimate(fleet, main, request.campaign);
    let per_order = memory::per_order(request.campaign.payment_timeout.is_some());
    let gathered = gather(fleet.read(Nodes::All, &["INFO", "memory"], |c| {
        let mut fields = info(c, "memory")?;
        fields.extend(info(c, "stats")?);
        Ok(fields)
    }));
    let mut worst = Verdict::Ok;
    let mut lines = Vec::new();
    let mut unlimited = Vec::new();
    let mut short = Vec::new();
    for (named, addr, kind, fields) in &gathered.seen {
        let master = match kind {
            Kind::Master => addr,
            Kind::Replica(master) => master,
        };
        let estimate = sale.iter().find(|s| &s.node == master);
        let (units, adds) = estimate.map_or((0, 0), |s| (s.units, s.estimate_bytes));
        let (used, max) = (number(fields, "used_memory"), number(fields, "maxmemory"));
        let system = number(fields, "total_system_memory");
        if let (Kind::Master, Some(entry)) = (kind, sale.iter_mut().find(|s| &s.node == addr)) {
            entry.used_bytes = used;
            entry.maxmemory_bytes = max;
        }
        let projected = used + adds;
        let (limit, verdict) = if max > 0 {
            let share = projected as f64 / max as f64;
            lines.push(format!(
                "{named}: {} used + ~{} for {units} units to sell = {:.0}% of maxmemory {}",
                memory::shown(used),
                memory::shown(adds),
                share * 100.0,
                memory::shown(max)
            ));
            let verdict = if share >= MEMORY_FAIL {
                Verdict::Fail
            } else if share >= MEMORY_WARN {
                Verdict::Warn
            } else {
                Verdict::Ok
            };
            (max, verdict)
        } else {
            unlimited.push(named.clone());
            if units > 0 {
                lines.push(format!(
                    "{named}: {} used + ~{} for {units} units to sell",
                    memory::shown(used),
                    memory::shown(adds)
                ));
            }
            let too_big = system > 0 && projected as f64 >= system as f64 * MEMORY_FAIL;
            (
                system,
                if too_big {
                    Verdict::Fail
                } else {
                    Verdict::Warn
                },
            )
        };
        if verdict == Verdict::Fail {
            short.push(format!(
                "{named} needs at least {} (has {})",
                memory::shown(((projected as f64) / MEMORY_WARN) as u64),
                memory::shown(limit)
            ));
        }
        worst = worst.max(verdict);
    }
    if !unlimited.is_empty() {
        lines.push(if unlimited.len() == gathered.seen.len() {
            "no maxmemory on any node".to_string()
        } else {
            format!("no maxmemory on {}", unlimited.join(", "))
        });
    }
    let found = match worst {
        Verdict::Ok => None,
        Verdict::Warn if !unlimited.is_empty() => Some(Check::not_ok(
            "memory",
            Verdict::Warn,
            lines.join("; "),
            "set maxmemory below the machine's memory, with headroom for the sale (the OS \
                 kills a Redis that outgrows it; with noeviction Redis refuses writes instead, \
                 and the scripts refuse whole)",
        )),
        Verdict::Warn => Some(Check::not_ok(
            "memory",
            Verdict::Warn,
            lines.join("; "),
            format!(
                "the sale leaves little headroom: raise maxmemory, or free memory before the sale \
                 (each order keeps ~{per_order} bytes until the keys expire)"
            ),
        )),
        Verdict::Fail => Some(Check::not_ok(
            "memory",
            Verdict::Fail,
            lines.join("; "),
            format!(
                "{}: raise maxmemory on every node of that master (replicas too), or spread the \
                 stock over more masters (buckets on a cluster); each order keeps ~{per_order} \
                 bytes until the keys expire, and a full Redis refuses the buys",
                short.join("; ")
            ),
        )),
    };
    let mut checks = vec![conclude(
        "memory",
        false,
        fleet,
        request,
        &gathered,
        found,
        lines.join("; "),
    )];
    let evicted: Vec<String> = gathered
        .seen
        .iter()
        .filter(|(_, _, _, fields)| number(fields, "evicted_keys") > 0)
        .map(|(named, _, _, fields)| {
            format!(
                "{named} evicted {} key(s) since it started",
                number(fields, "evicted_keys")
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
    (checks, sale)
}

pub(super) fn persistence(fleet: &mut Fleet, request: &Request) -> Check {
    let gathered = gather(fleet.read(Nodes::All, &["INFO", "persistence"], |c| {
        let aof = number(&info(c, "persistence")?, "aof_enabled") == 1;
        // CONFIG is @admin: a user without it still has the AOF from INFO
        // (and is asked first, so its refusal never reaches ACL LOG).
        let words = ["CONFIG", "GET", "appendfsync"];
        let fsync: Result<String, String> = if dryrun::may_send(c, &words).unwrap_or(true) {
            redis::cmd("CONFIG")
                .arg("GET")
                .arg("appendfsync")
                .query::<Vec<String>>(c)
                .map(|pair| pair.get(1).cloned().unwrap_or_default())
                .map_err(|e| e.to_string())
        } else {
            Err("refused".to_string())
        };
        Ok((aof, fsync))
    }));
    let without: Vec<&str> = gathered
        .seen
        .iter()
        .filter(|(_, _, _, (aof, _))| !aof)
        .map(|(named, ..)| named.as_str())
        .collect();
    let relaxed: Vec<String> = gathered
        .seen
        .iter()
        .filter_map(|(named, _, _, (_, fsync))| match fsync {
            Ok(value) if value != "always" => Some(format!("{named} appendfsync {value}")),
            _ => None,
        })
        .collect();
    let unread: Vec<&str> = gathered
        .seen
        .iter()
        .filter(|(_, _, _, (_, fsync))| fsync.is_err())
        .map(|(named, ..)| named.as_str())
        .collect();
    let found = if !without.is_empty() {
        Some(Check::not_ok(
            "persistence",
            Verdict::Fail,
            format!("no AOF on {}", without.join(", ")),
            "set appendonly yes and appendfsync always on every node, replicas included: a \
             restart without AOF loses every acknowledged order not yet in the database",
        ))
    } else if !relaxed.is_empty() {
        Some(Check::not_ok(
            "persistence",
            Verdict::Warn,
            relaxed.join(", "),
            "appendfsync always loses no acknowledged buy in a crash (everysec: up to a second)",
        ))
    } else if !unread.is_empty() {
        Some(Check::not_ok(
            "persistence",
            Verdict::Warn,
            format!(
                "AOF on every node ({}); appendfsync not readable on {} (CONFIG GET refused)",
                fleet.census(),
                unread.join(", ")
            ),
            "check appendfsync always on every node (CONFIG GET is refused to this user)",
        ))
    } else {
        None
    };
    let ok = format!(
        "AOF with appendfsync always on every node ({})",
        fleet.census()
    );
    conclude("persistence", true, fleet, request, &gathered, found, ok)
}

pub(super) fn replicas(fleet: &mut Fleet, request: &Request) -> Check {
    let gathered = gather(fleet.read(Nodes::Masters, &["INFO", "replication"], |c| {
        info(c, "replication")
    }));
    let mut problems = Vec::new();
    let mut seen = Vec::new();
    // The cluster's own word on replicas it deems down: a failed replica is
    // no longer listed by its master, so it would read as "no replica".
    for node in &fleet.nodes {
        if let (Kind::Replica(master), Some(trouble)) = (&node.kind, &node.trouble) {
            problems.push(format!(
                "replica {} of master {master} is down in the cluster's view ({trouble})",
                node.addr
            ));
        }
    }
    for (named, addr, _, fields) in &gathered.seen {
        let attached: Vec<&String> = fields
            .iter()
            .filter(|(field, _)| field.starts_with("slave") && field[5..].parse::<u32>().is_ok())
            .map(|(_, value)| value)
            .collect();
        let mut online = BTreeSet::new();
        for replica in &attached {
            let field = |name: &str| {
                replica
                    .split(',')
                    .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
                    .unwrap_or("")
                    .to_string()
            };
            let (at, state) = (format!("{}:{}", field("ip"), field("port")), field("state"));
            let lag: i64 = field("lag").parse().unwrap_or(i64::MAX);
            if state != "online" {
                problems.push(format!("{named}: replica {at} is {state}"));
            } else if lag > MAX_REPLICA_LAG_S {
                problems.push(format!(
                    "{named}: replica {at} has not acknowledged for {lag} s"
                ));
            } else {
                seen.push(format!("{named}: replica {at} online, lag {lag} s"));
            }
            online.insert(at);
        }
        for node in &fleet.nodes {
            if node.kind == Kind::Replica(addr.clone())
                && node.trouble.is_none()
                && !online.contains(&node.addr)
            {
                problems.push(format!(
                    "{named}: replica {} is not attached to it",
                    node.addr
                ));
            }
        }
        if attached.is_empty()
            && !fleet
                .nodes
                .iter()
                .any(|n| n.kind == Kind::Replica(addr.clone()))
        {
            seen.push(format!("{named}: no replica"));
        }
    }
    let found = if !problems.is_empty() {
        Some(Check::not_ok(
            "replicas",
            Verdict::Fail,
            problems.join("; "),
            "bring the replica back (or remove it): a failover to a lagging or stopped replica \
             loses acknowledged orders, and `buy --wait-replicas` answers unreplicated",
        ))
    } else if !seen.is_empty() && seen.iter().all(|s| s.ends_with("no replica")) {
        Some(Check::not_ok(
            "replicas",
            Verdict::Warn,
            seen.join("; "),
            "without a replica a master's failure stops its items' sale until it is back (AOF keeps the data)",
        ))
    } else {
        None
    };
    conclude(
        "replicas",
        false,
        fleet,
        request,
        &gathered,
        found,
        seen.join("; "),
    )
}

pub(super) fn cluster_state(fleet: &mut Fleet, request: &Request) -> Check {
    let gathered = gather(fleet.read(Nodes::All, &["CLUSTER", "INFO"], |c| {
        let text: String = redis::cmd("CLUSTER")
            .arg("INFO")
            .query(c)
            .context("CLUSTER INFO")?;
        Ok(parse_info(&text)
            .get("cluster_state")
            .cloned()
            .unwrap_or_default())
    }));
    let bad: Vec<String> = gathered
        .seen
        .iter()
        .filter(|(_, _, _, state)| state != "ok")
        .map(|(named, _, _, state)| format!("{named}: cluster_state {state}"))
        .collect();
    let found = (!bad.is_empty()).then(|| {
        Check::not_ok(
            "cluster_state",
            Verdict::Fail,
            bad.join("; "),
            "fix the cluster (redis-cli --cluster check HOST:PORT) before the sale: slots without \
             a master refuse every buy of their items",
        )
    });
    let ok = format!("ok on every node ({})", fleet.census());
    conclude("cluster_state", true, fleet, request, &gathered, found, ok)
}

/// Which master serves each item (each bucket).
pub(super) fn placement(fleet: &Fleet, campaign: &Campaign) -> Check {
    if fleet.masters().next().is_none() {
        return Check::not_ok(
            "masters",
            Verdict::Fail,
            format!(
                "reached no master: {}",
                fleet.unknown.clone().unwrap_or_default()
            ),
            "doctor must read the cluster's slot owners: see the connect check",
        );
    }
    let mut placed = Vec::new();
    for item in &campaign.items {
        let sale = SaleItem::live(campaign, item);
        let slots: Vec<String> = sale
            .slots()
            .iter()
            .map(|b| {
                let owner = fleet.owner_of(key_slot(&b.keys.stock)).unwrap_or("?");
                match sale.bucket_of(b) {
                    Some(n) => format!("bucket {n} → {owner}"),
                    None => owner.to_string(),
                }
            })
            .collect();
        placed.push(format!("item {}: {}", sale.id(), slots.join(", ")));
    }
    Check::ok("masters", placed.join("; "))
}

/// Every node holds the same users with the same rules: ACL users are per
/// node, and a replica without the roles' users locks them out the moment
/// a failover promotes it.
pub(super) fn acl_users(fleet: &mut Fleet, request: &Request) -> Check {
    let gathered = gather(fleet.read(Nodes::All, &["ACL", "LIST"], |c| {
        let lines: Vec<String> = redis::cmd("ACL").arg("LIST").query(c).context("ACL LIST")?;
        Ok(lines
            .into_iter()
            .filter_map(|line| {
                let name = line.split_whitespace().nth(1)?.to_string();
                Some((name, rules_in_order(&line)))
            })
            .collect::<BTreeMap<String, String>>())
    }));
    let everywhere: BTreeSet<&String> = gathered
        .seen
        .iter()
        .flat_map(|(_, _, _, users)| users.keys())
        .collect();
    let mut problems = Vec::new();
    for (named, _, kind, users) in &gathered.seen {
        let missing: Vec<&str> = everywhere
            .iter()
            .filter(|u| !users.contains_key(**u))
            .map(|u| u.as_str())
            .collect();
        if !missing.is_empty() {
            problems.push(format!("{named} lacks user(s) {}", missing.join(", ")));
        }
        // A replica against its master; a master against the first master.
        let reference = match kind {
            Kind::Replica(master) => gathered
                .seen
                .iter()
                .find(|(_, addr, k, _)| addr == master && *k == Kind::Master),
            Kind::Master => gathered.seen.iter().find(|(_, _, k, _)| *k == Kind::Master),
        };
        if let Some((reference_named, _, _, reference_users)) = reference {
            let differ: Vec<&str> = users
                .iter()
                .filter(|(name, line)| {
                    reference_users
                        .get(*name)
                        .is_some_and(|other| other != *line)
                })
                .map(|(name, _)| name.as_str())
                .collect();
            if !differ.is_empty() && reference_named != named {
                problems.push(format!(
                    "{named}: the rules of {} differ from {reference_named}'s",
                    differ.join(", ")
                ));
            }
        }
    }
    let found = (!problems.is_empty()).then(|| {
        Check::not_ok(
            "acl_users",
            Verdict::Fail,
            problems.join("; "),
            "run each role's `seckill acl --apply` on every node, replicas included (ACL users \
             are per node; a failover promotes a replica), or copy the users with ACL SAVE / \
             aclfile",
        )
    });
    let ok = format!(
        "the same {} user(s) on every node ({})",
        everywhere.len(),
        fleet.census()
    );
    conclude("acl_users", true, fleet, request, &gathered, found, ok)
}

/// This machine's clock against every master's (`TIME`, asked through the
/// connection the sale's commands use: the masters it routes to), and the
/// masters' against each other.
/// An `ACL LIST` line with its rules sorted (the root's, and each
/// selector's inside it): Redis lists a user's commands in no fixed order,
/// so two nodes holding the same user print it differently.
fn rules_in_order(line: &str) -> String {
    let mut root = Vec::new();
    let mut selectors = Vec::new();
    let mut open: Option<Vec<String>> = None;
    for word in line.split_whitespace() {
        match open.as_mut() {
            Some(selector) => {
                selector.push(word.trim_end_matches(')').to_string());
                if word.ends_with(')') {
                    let mut done = open.take().unwrap_or_default();
                    done.sort();
                    selectors.push(format!("({})", done.join(" ")));
                }
            }
            None if word.starts_with('(') => {
                let first = word.trim_start_matches('(');
                if word.ends_with(')') {
                    selectors.push(word.to_string());
                } else {
                    open = Some(vec![first.to_string()]);
                }
            }
            None => root.push(word.to_string()),
        }
    }
    root.sort();
    selectors.sort();
    root.extend(selectors);
    root.join(" ")
}

pub(super) fn clocks(main: Option<&mut Conn>, display: &str) -> Vec<Check> {
    let local_before = chrono::Utc::now().timestamp_millis();
    let clocks = match main.map(|conn| server::clocks(conn, display)) {
        Some(Ok(clocks)) if !clocks.is_empty() => clocks,
        Some(Ok(_)) => {
            return vec![Check::not_ok(
                "clock",
                Verdict::Fail,
                "reached no master",
                "doctor must reach every master to say go: see the connect check",
            )];
        }
        Some(Err(e)) => {
            return vec![Check::not_ok(
                "clock",
                Verdict::Warn,
                format!("cannot check: {}", render(&e)),
                "run doctor as a user allowed TIME",
            )];
        }
        None => {
            return vec![Check::not_ok(
                "clock",
                Verdict::Warn,
                "cannot check: no connection",
                "see the connect check",
            )];
        }
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
                format!(
                    "within {} of every master ({})",
                    human_duration_ms(skew.abs()),
                    clocks.len()
                ),
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

pub(super) fn max_clients(fleet: &mut Fleet, request: &Request) -> Check {
    let gathered = gather(fleet.read(Nodes::All, &["INFO", "clients"], |c| info(c, "clients")));
    let mut low = Vec::new();
    let mut seen = Vec::new();
    for (named, _, _, fields) in &gathered.seen {
        let (max, connected) = (
            number(fields, "maxclients"),
            number(fields, "connected_clients"),
        );
        seen.push(format!("{named}: {connected} of {max}"));
        if max < 1000 || connected * 10 > max * 8 {
            low.push(format!("{named}: {connected} connected, maxclients {max}"));
        }
    }
    let found = (!low.is_empty()).then(|| {
        Check::not_ok(
            "maxclients",
            Verdict::Warn,
            low.join("; "),
            "raise maxclients (and the open-files limit) above the sale's connections: every buyer process and serve instance holds some",
        )
    });
    conclude(
        "maxclients",
        false,
        fleet,
        request,
        &gathered,
        found,
        seen.join("; "),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_rules_in_another_order_are_the_same_user() {
        let a = "user b on #h ~k:* -@all +get +hget (+incr +set ~k:*:rate:*) (+decrby ~k:*:stock)";
        let b = "user b on #h ~k:* -@all +hget +get (+decrby ~k:*:stock) (+set +incr ~k:*:rate:*)";
        assert_eq!(rules_in_order(a), rules_in_order(b));
        let c = "user b on #h ~k:* -@all +hget (+decrby ~k:*:stock) (+set +incr ~k:*:rate:*)";
        assert_ne!(rules_in_order(a), rules_in_order(c));
    }
}
