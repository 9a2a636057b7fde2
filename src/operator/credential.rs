//! Proof, before the sale, that a Redis credential may send one job's whole
//! path on every node that job meets: `serve --check-credential` (the
//! door's buyer credential, and the operator endpoints' one) and `buy
//! --dry-run` (one item's buy).
//!
//! The path is the role's, from the one table `acl --apply` and `doctor`
//! prove (`acl::dryrun`: connecting, the commands sent outside scripts,
//! each script and every command inside it), narrowed to the job's part of
//! it by the caller. The nodes are found as `doctor` finds them
//! (`doctor::fleet`: every master and replica of a cluster — a failover
//! makes a replica the master the job then meets — or the standalone Redis
//! of the URL). Each node is asked by the credential's own user through the
//! probe, a read-only script asking `redis.acl_check_cmd`: no `@admin`
//! needed, nothing written, nothing in `ACL LOG`; a script the server does
//! not hold is loaded (`SCRIPT LOAD` touches no key).
//!
//! May import: domain, redis_client, model, util.

use anyhow::Result;
use serde::Serialize;

use super::acl::dryrun::{self, Asker, Check, Scope, Topology};
use super::doctor::fleet::{self, Fleet, Kind, Reach};
use crate::model::campaign::Campaign;
use crate::model::exit_codes;
use crate::model::role::Role;
use crate::redis_client::conn::{
    Conn, ConnectionArgs, DEFAULT_REDIS_URL, RedisTarget, UrlSource, read_password_file, split_urls,
};
use crate::util::error_text::render;

/// A credential and where it is used.
#[derive(Debug, Clone)]
pub(crate) struct Credential {
    /// How reports name it: `buyer`, `operator endpoints`.
    pub(crate) name: &'static str,
    /// The role whose path it must send.
    pub(crate) role: Role,
    /// The URL as given (comma-separated seeds with `--cluster`).
    pub(crate) url: String,
    /// The password of every URL that carries none (a password file).
    pub(crate) password: Option<String>,
    /// `--cluster`, TLS and the timeouts.
    pub(crate) args: ConnectionArgs,
    pub(crate) source: UrlSource,
}

impl Credential {
    /// The credential of the global connection flags (`--redis`, else the
    /// campaign file's `redis:`, else the default; `--redis-password-file`,
    /// else `REDISCLI_AUTH`), as every command resolves it.
    pub(crate) fn of_args(
        name: &'static str,
        role: Role,
        args: &ConnectionArgs,
        campaign: &Campaign,
    ) -> Result<Credential> {
        let url = args
            .redis_url
            .clone()
            .or_else(|| campaign.redis_url.clone())
            .unwrap_or_else(|| DEFAULT_REDIS_URL.to_string());
        let password = match &args.redis_password_file {
            Some(path) => Some(read_password_file(path, "--redis-password-file")?),
            None => std::env::var("REDISCLI_AUTH")
                .ok()
                .filter(|p| !p.is_empty()),
        };
        Ok(Credential {
            name,
            role,
            url,
            password,
            args: args.clone(),
            source: UrlSource::of(args, Some(campaign)),
        })
    }
}

/// What one job needs of its credential.
pub(crate) struct Job<'a> {
    /// The items whose keys the job touches (each item is asked about: a
    /// role's key patterns name the campaign, an operator's own rules may
    /// name items).
    pub(crate) items: Vec<String>,
    /// The job's part of the role's path (`true`: the check is needed).
    pub(crate) part: &'a dyn Fn(&Check) -> bool,
    /// The cluster slots the job's keys live in: only their masters and
    /// those masters' replicas are asked. `None`: every node.
    pub(crate) slots: Option<Vec<u16>>,
}

/// One node's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Verdict {
    /// Every check of the job's path allowed.
    Proven,
    /// At least one check refused: the job would fail there.
    Refused,
    /// No connection or no answer: not proven.
    Unreachable,
    /// Connected, but the question could not be asked (or the nodes could
    /// not all be found): not proven.
    Unchecked,
}

impl Verdict {
    fn word(self) -> &'static str {
        match self {
            Verdict::Proven => "ok",
            Verdict::Refused => "REFUSED",
            Verdict::Unreachable => "unreachable",
            Verdict::Unchecked => "unchecked",
        }
    }
}

/// A check Redis refused.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Refusal {
    /// `script buy`, `command HSCAN :buyers`.
    pub(crate) what: String,
    /// The first refusal inside it (`XADD seckill:{c:1}:orders: refused`).
    pub(crate) answer: String,
}

/// One credential on one node.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct NodeProof {
    pub(crate) credential: &'static str,
    /// The role whose path it was asked about.
    pub(crate) role: Role,
    pub(crate) user: String,
    /// `master 127.0.0.1:7001`, `replica 127.0.0.1:7004`; `nodes` for a
    /// topology that could not be read whole.
    pub(crate) node: String,
    pub(crate) verdict: Verdict,
    /// Checks asked there (the job's path, for every item).
    pub(crate) checks: usize,
    pub(crate) refused: Vec<Refusal>,
    /// Why it is not proven, when unreachable or unchecked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) why: Option<String>,
}

/// Every node's answer for `credential` doing `job` on `campaign`.
pub(crate) fn prove(credential: &Credential, job: &Job, campaign: &str) -> Result<Vec<NodeProof>> {
    let urls = split_urls(&credential.url);
    let first = urls.first().cloned().unwrap_or_default();
    let target = RedisTarget::of_url(
        &credential.url,
        credential.password.as_deref(),
        &credential.args,
        credential.source.clone(),
    )?;
    let (user, db) = user_and_db(&first);
    let seeds = urls
        .iter()
        .map(|url| fleet::addr_of_url(url))
        .collect::<Result<Vec<_>>>()?;
    let connect_target = || target.connect();
    let connect_node = |addr: &str| -> Result<Conn> {
        let Some(node_url) = fleet::url_of_node(&first, addr) else {
            anyhow::bail!("{addr}: the URL names no host and port to replace");
        };
        let args = ConnectionArgs {
            cluster: false,
            ..credential.args.clone()
        };
        RedisTarget::of_url(
            &node_url,
            credential.password.as_deref(),
            &args,
            credential.source.clone(),
        )?
        .connect()
    };
    let mut fleet = Fleet::discover(&Reach {
        cluster: target.cluster(),
        seeds: &seeds,
        target: &connect_target,
        node: &connect_node,
    });
    let topology = Topology {
        cluster: fleet.cluster,
        db,
    };
    let proof = |node: String, verdict, why: Option<String>| NodeProof {
        credential: credential.name,
        role: credential.role,
        user: user.clone(),
        node,
        verdict,
        checks: 0,
        refused: Vec::new(),
        why,
    };
    let proof_of = |answer: std::result::Result<(usize, Vec<Refusal>), (Verdict, String)>,
                    node: String| {
        let mut proof = proof(node, Verdict::Proven, None);
        match answer {
            Ok((asked, refused)) => {
                proof.checks = asked;
                if !refused.is_empty() {
                    proof.verdict = Verdict::Refused;
                    proof.refused = refused;
                }
            }
            Err((verdict, why)) => {
                proof.verdict = verdict;
                proof.why = Some(why);
            }
        }
        proof
    };
    let mut proofs = Vec::new();
    // A cluster whose nodes could not all be listed is not proven on every
    // node; a standalone Redis is the URL's server (replicas are listed
    // only to a user allowed INFO, and the job's connections never go there).
    if fleet.cluster
        && let Some(why) = &fleet.unknown
    {
        proofs.push(proof("nodes".into(), Verdict::Unchecked, Some(why.clone())));
    }
    let masters: Vec<String> = fleet
        .masters()
        .filter(|m| match &job.slots {
            None => true,
            Some(slots) => slots
                .iter()
                .any(|s| m.slots.iter().any(|(lo, hi)| (*lo..=*hi).contains(s))),
        })
        .map(|m| m.addr.clone())
        .collect();
    let scoped = job.slots.is_some() && fleet.cluster;
    let nodes = match fleet.nodes.is_empty() {
        true => &mut fleet.seeds,
        false => &mut fleet.nodes,
    };
    for node in nodes.iter_mut() {
        let needed = !scoped
            || match &node.kind {
                Kind::Master => masters.contains(&node.addr),
                Kind::Replica(master) => masters.contains(master),
            };
        if !needed {
            continue;
        }
        let named = node.named();
        let answer = match &mut node.conn {
            Ok(conn) => ask(conn, credential, job, campaign, topology),
            Err(why) => Err((Verdict::Unreachable, why.clone())),
        };
        proofs.push(proof_of(answer, named));
    }
    // A seed the slot map does not list (a replica CLUSTER SLOTS leaves out
    // while it is not linked yet): the credential may meet it all the same.
    if fleet.cluster && !scoped && !fleet.nodes.is_empty() {
        for seed in &seeds {
            if fleet.nodes.iter().any(|n| &n.addr == seed) {
                continue;
            }
            let named = format!("node {seed} (a seed the slot map leaves out)");
            let answer = match connect_node(seed) {
                Ok(mut conn) => ask(&mut conn, credential, job, campaign, topology),
                Err(error) => Err((Verdict::Unreachable, render(&error))),
            };
            proofs.push(proof_of(answer, named));
        }
    }
    if proofs.is_empty() {
        proofs.push(proof(
            "nodes".into(),
            Verdict::Unchecked,
            Some("no node serves the job's keys in the slot map read".into()),
        ));
    }
    Ok(proofs)
}

/// The job's path asked on one node, for every item: (checks asked, those
/// refused), or why it could not be asked.
fn ask(
    conn: &mut Conn,
    credential: &Credential,
    job: &Job,
    campaign: &str,
    topology: Topology,
) -> std::result::Result<(usize, Vec<Refusal>), (Verdict, String)> {
    let mut asked = 0;
    let mut refused: Vec<Refusal> = Vec::new();
    for item in &job.items {
        let checks = dryrun::verify(
            conn,
            Asker::Probe,
            credential.role,
            campaign,
            item,
            topology,
            Scope::Needs,
        )
        .map_err(|error| {
            let verdict = match fleet::why_of(&error) {
                fleet::Why::Unreachable(_) => Verdict::Unreachable,
                _ => Verdict::Unchecked,
            };
            (verdict, render(&error))
        })?;
        for check in checks.iter().filter(|c| (job.part)(c)) {
            asked += 1;
            if !check.ok && !refused.iter().any(|r| r.what == check.what) {
                refused.push(Refusal {
                    what: check.what.clone(),
                    answer: check.answer.clone(),
                });
            }
        }
    }
    Ok((asked, refused))
}

/// The exit code of a proof: 0 proven on every node, 7
/// (`acl_check_failed`) a check refused somewhere, 1 (`runtime_error`) a
/// node not proven (unreachable, or the question could not be asked).
pub(crate) fn exit_code(proofs: &[NodeProof]) -> i32 {
    if proofs.iter().any(|p| p.verdict == Verdict::Refused) {
        exit_codes::ACL_CHECK_FAILED
    } else if proofs.iter().any(|p| p.verdict != Verdict::Proven) {
        exit_codes::RUNTIME_ERROR
    } else {
        exit_codes::SUCCESS
    }
}

/// Why the proof failed, one line (the envelope's `error`), or none.
pub(crate) fn failure(proofs: &[NodeProof]) -> Option<String> {
    let refused: Vec<String> = proofs
        .iter()
        .filter(|p| p.verdict == Verdict::Refused)
        .map(|p| {
            let what: Vec<&str> = p.refused.iter().map(|r| r.what.as_str()).collect();
            format!(
                "{} (user {}) on {}: {}; give the user the line of `seckill acl --role {} \
                 --apply` on every node",
                p.credential,
                p.user,
                p.node,
                what.join(", "),
                p.role.name()
            )
        })
        .collect();
    if !refused.is_empty() {
        return Some(format!("refused: {}", refused.join("; ")));
    }
    let unproven: Vec<String> = proofs
        .iter()
        .filter(|p| p.verdict != Verdict::Proven)
        .map(|p| {
            format!(
                "{} on {}: {}",
                p.credential,
                p.node,
                p.why.as_deref().unwrap_or("-")
            )
        })
        .collect();
    (!unproven.is_empty()).then(|| format!("not proven: {}", unproven.join("; ")))
}

/// The table people read: one row per credential and node, then each
/// refusal and each reason on a line of its own (nothing cut).
pub(crate) fn render_table(proofs: &[NodeProof]) -> String {
    let rows = proofs
        .iter()
        .map(|p| {
            vec![
                p.credential.to_string(),
                p.user.clone(),
                p.node.clone(),
                p.checks.to_string(),
                p.verdict.word().to_string(),
            ]
        })
        .collect();
    let mut out = crate::util::output::grid(
        &["credential", "user", "node", "checks", "verdict"],
        rows,
        &[2],
    );
    for p in proofs {
        for refusal in &p.refused {
            out.push_str(&crate::util::output::hanging(
                &format!(
                    "REFUSED {} on {}: {} ({})",
                    p.credential, p.node, refusal.what, refusal.answer
                ),
                8,
            ));
        }
        if let Some(why) = &p.why {
            out.push_str(&crate::util::output::hanging(
                &format!("{} {} on {}: {why}", p.verdict.word(), p.credential, p.node),
                8,
            ));
        }
    }
    out
}

/// The URL's user (`default` without one) and database.
fn user_and_db(url: &str) -> (String, i64) {
    use redis::IntoConnectionInfo;
    match url.into_connection_info() {
        Ok(info) => (
            info.redis_settings()
                .username()
                .unwrap_or("default")
                .to_string(),
            info.redis_settings().db(),
        ),
        Err(_) => ("default".to_string(), 0),
    }
}

/// Whether `check` is one every role's connections send (connecting,
/// loading a lost script): rows common to every role's table.
pub(crate) fn is_connection_setup(check: &Check) -> bool {
    let Some(by) = check.sent_by else {
        return false;
    };
    Role::ALL.iter().all(|role| {
        dryrun::path::sent_by(*role).any(|row| row.by == by && Some(row.command()) == check.command)
    })
}

/// Whether `check` is the script named `name`.
pub(crate) fn is_script(check: &Check, name: &str) -> bool {
    check.what.strip_prefix("script ") == Some(name)
}
