//! May the role's user send its role's whole path — connecting, the
//! commands its subcommands send outside scripts, each script and every
//! command inside them (`acl::dryrun`, the table `acl --apply` proves) —
//! on every node? A node a failover may promote counts as much as a master.
//!
//! The URL's own user answers for itself through the probe (a read-only
//! script asking `redis.acl_check_cmd`: no `@admin` needed, which the roles
//! lack); another user (`--user`, checked from an admin URL) is asked about
//! with `ACL DRYRUN`. When neither can be asked, the check is not made, and
//! that is a no-go unless `--allow-unchecked`.

use std::collections::BTreeMap;

use super::fleet::{Fleet, Nodes, Why};
use super::{Check, Request, Verdict};
use crate::operator::acl::dryrun::{self, Asker, Scope, Topology};

pub(super) fn check(fleet: &mut Fleet, request: &Request) -> Check {
    let (user, role) = (request.user, request.role.name());
    let Some(item) = request.campaign.items.first() else {
        return Check::ok("permissions", format!("user {user}: no item to check"));
    };
    let asker = if request.user == request.url_user {
        Asker::Probe
    } else {
        Asker::Dryrun(request.user)
    };
    let topology = Topology {
        cluster: fleet.cluster,
        db: request.db,
    };
    let readings = fleet.read(Nodes::KnownOrSeeds, &[], |conn| {
        dryrun::verify(
            conn,
            asker,
            request.role,
            &request.campaign.id,
            &item.id,
            topology,
            Scope::Needs,
        )
    });
    let mut refused: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut missing = Vec::new();
    let mut unchecked = Vec::new();
    let mut counted = None;
    let mut answered = 0;
    for reading in &readings {
        match &reading.value {
            Ok(checks) => {
                answered += 1;
                counted.get_or_insert((
                    checks
                        .iter()
                        .filter(|c| c.what.starts_with("command "))
                        .count(),
                    checks
                        .iter()
                        .filter(|c| c.what.starts_with("script "))
                        .count(),
                ));
                for check in checks.iter().filter(|c| !c.ok) {
                    refused
                        .entry(format!("{} ({})", check.what, check.answer))
                        .or_default()
                        .push(reading.node.clone());
                }
            }
            Err(Why::Unreachable(why)) => missing.push(format!("{}: {why}", reading.node)),
            Err(Why::Refused(why) | Why::Failed(why)) => {
                unchecked.push(format!("{}: {why}", reading.node))
            }
        }
    }
    let everywhere = |nodes: &Vec<String>| {
        if nodes.len() == answered && fleet.nodes.is_empty() {
            format!("on the seed(s) {}", nodes.join(", "))
        } else if nodes.len() == answered {
            "on every node".to_string()
        } else {
            format!("on {}", nodes.join(", "))
        }
    };
    if !refused.is_empty() {
        let list: Vec<String> = refused
            .iter()
            .map(|(what, nodes)| format!("{what} {}", everywhere(nodes)))
            .collect();
        return Check::not_ok(
            "permissions",
            Verdict::Fail,
            format!(
                "user {user} may not send the {role}'s whole path: {}",
                list.join("; ")
            ),
            format!(
                "set the {role}'s line of `seckill acl --role {role}` on every node \
                 (`acl --apply` proves it on each): a role one command short fails its job \
                 (a script refused halfway has no rollback)"
            ),
        );
    }
    if fleet.nodes.is_empty() && answered > 0 {
        return Check::not_ok(
            "permissions",
            Verdict::Fail,
            format!(
                "checked on the seed(s) only: {}",
                fleet.unknown.clone().unwrap_or_default()
            ),
            "see the connect check",
        );
    }
    if !missing.is_empty() {
        return Check::not_ok(
            "permissions",
            Verdict::Fail,
            format!("not checked on {}", missing.join("; ")),
            "every node must answer: see the connect check",
        );
    }
    if answered == 0 && unchecked.is_empty() {
        return Check::not_ok(
            "permissions",
            Verdict::Fail,
            format!(
                "reached no node: {}",
                fleet.unknown.clone().unwrap_or_default()
            ),
            "see the connect check",
        );
    }
    if !unchecked.is_empty() {
        return Check::not_ok(
            "permissions",
            if request.allow_unchecked {
                Verdict::Warn
            } else {
                Verdict::Fail
            },
            format!("cannot check user {user} on {}", unchecked.join("; ")),
            "check the role from its own URL (it needs only EVALSHA and SCRIPT LOAD, which every \
             role has), or from an admin URL with --user NAME (ACL DRYRUN); --allow-unchecked \
             accepts the gap",
        );
    }
    let (commands, scripts) = counted.unwrap_or_default();
    if user == "default" {
        return Check::not_ok(
            "permissions",
            Verdict::Warn,
            "the default user runs this role (it may do everything)",
            "give each job its own user with only its role's rights (`docs/security.md`)",
        );
    }
    Check::ok(
        "permissions",
        format!(
            "user {user} may send the {role}'s whole path on every node ({}): {commands} \
             commands outside scripts, {scripts} scripts and every command inside them",
            fleet.census()
        ),
    )
}
