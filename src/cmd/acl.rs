//! `seckill acl`: the `ACL SETUSER` line of a role for this campaign,
//! quoted for a shell and `redis-cli`; with `--apply`, written to Redis and
//! proven there with `ACL DRYRUN`, the role's whole path
//! (`operator::acl::dryrun`). docs/security.md shows
//! this command's output (a test keeps them equal).

use std::path::PathBuf;

use anyhow::{Context as _, Result};
use serde::Serialize;

use crate::invocation::context::Context;
use crate::invocation::report::Report;
use crate::model::error::usage;
use crate::model::exit_codes;
use crate::operator::acl::dryrun::{self, Asker, Check, Scope, Topology};
use crate::operator::acl::{self, Password, Role};
use crate::util::output;

/// Flags of `seckill acl`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The job the user is for: buyer (the web tier's `buy`), consumer (`consume`,
    /// `pending-claim`), operator (everything else), or all three.
    #[arg(long, value_enum, value_name = "ROLE")]
    pub(crate) role: Which,

    /// The user's name (one role only; default seckill-ROLE). On a Redis shared by several
    /// campaigns, give each campaign's users their own names: the line replaces the user.
    #[arg(long, value_name = "NAME")]
    pub(crate) user: Option<String>,

    /// Read the password from FILE (one role only; a final newline is not part of it): the
    /// line then sets its SHA-256 (`#<hex>`) and never shows it. Without: a `>PASSWORD`
    /// placeholder to replace.
    #[arg(long, value_name = "FILE")]
    pub(crate) password_file: Option<PathBuf>,

    /// Write the user to the Redis given by --redis (connect as an admin user there), then
    /// prove with ACL DRYRUN that it can send every command of its role's whole path
    /// (connecting, on a cluster node the slot map; the commands its subcommands send outside
    /// scripts; each script and every command inside it) and run no other role's writing
    /// script (exit 7 when a check fails). Needs --password-file; one node at a time.
    #[arg(long, requires = "password_file")]
    pub(crate) apply: bool,
}

/// `--role`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Which {
    Buyer,
    Consumer,
    Operator,
    All,
}

impl Which {
    fn roles(self) -> Vec<Role> {
        match self {
            Which::Buyer => vec![Role::Buyer],
            Which::Consumer => vec![Role::Consumer],
            Which::Operator => vec![Role::Operator],
            Which::All => Role::ALL.to_vec(),
        }
    }
}

/// One role's user.
#[derive(Debug, Serialize)]
pub(crate) struct RoleUser {
    pub(crate) role: Role,
    pub(crate) user: String,
    /// The arguments of `ACL SETUSER`, unquoted (a selector is one argument).
    pub(crate) args: Vec<String>,
    /// The line to paste after `redis-cli -u URL`, or to pipe into `redis-cli`.
    pub(crate) line: String,
    /// `--apply`: written to Redis.
    pub(crate) applied: bool,
    /// `--apply`: what `ACL DRYRUN` answered.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) checks: Vec<Check>,
}

/// `seckill acl`'s report.
#[derive(Debug, Serialize)]
pub(crate) struct AclReport {
    /// The campaign id in every key pattern.
    pub(crate) campaign_id: String,
    pub(crate) users: Vec<RoleUser>,
    #[serde(skip)]
    redis: Option<String>,
}

impl AclReport {
    fn failed(&self) -> usize {
        self.users
            .iter()
            .flat_map(|u| &u.checks)
            .filter(|c| !c.ok)
            .count()
    }
}

impl Report for AclReport {
    fn render(&self) -> String {
        let Some(redis) = &self.redis else {
            return self.users.iter().map(|u| format!("{}\n", u.line)).collect();
        };
        let mut out = String::new();
        for user in &self.users {
            let failed = user.checks.iter().filter(|c| !c.ok).count();
            out.push_str(&output::paragraph(&format!(
                "user {} ({}) written on {redis}; ACL DRYRUN: {} of {} checks as expected",
                user.user,
                user.role.name(),
                user.checks.len() - failed,
                user.checks.len()
            )));
            let rows = user
                .checks
                .iter()
                .map(|c| {
                    vec![
                        c.what.clone(),
                        format!("{:?}", c.expected).to_lowercase(),
                        c.answer.clone(),
                        if c.ok { "ok".into() } else { "WRONG".into() },
                    ]
                })
                .collect();
            out.push_str(&output::grid(
                &["check", "expected", "ACL DRYRUN answered", "result"],
                rows,
                &[2],
            ));
        }
        out
    }

    /// 7 (`acl_check_failed`) when a dry run answered what the role must not have.
    fn exit_code(&self) -> i32 {
        if self.failed() > 0 {
            exit_codes::ACL_CHECK_FAILED
        } else {
            exit_codes::SUCCESS
        }
    }
}

/// Print the lines, or write and prove the users with `--apply`.
pub(crate) fn run(ctx: &Context, args: &Args) -> Result<AclReport> {
    let roles = args.role.roles();
    if roles.len() > 1 && (args.user.is_some() || args.password_file.is_some()) {
        return Err(usage(
            "--user and --password-file name one user: give one --role with them",
        ));
    }
    let password = match &args.password_file {
        Some(path) => Password::of(&read_password(path)?),
        None => Password::Placeholder,
    };
    let campaign = ctx.campaign()?;
    let mut users: Vec<RoleUser> = roles
        .iter()
        .map(|&role| {
            let user = args.user.clone().unwrap_or_else(|| role.default_user());
            let words = acl::setuser_args(role, &user, &campaign.id, &password);
            RoleUser {
                role,
                line: acl::shell_line(&words),
                args: words,
                user,
                applied: false,
                checks: Vec::new(),
            }
        })
        .collect();
    if !args.apply {
        if password == Password::Placeholder {
            output::say(
                "seckill acl: replace PASSWORD in the line, or pass --password-file FILE \
                 (the line then carries the password's SHA-256, never the password)",
            );
        }
        return Ok(AclReport {
            campaign_id: campaign.id,
            users,
            redis: None,
        });
    }
    if ctx.connection.cluster {
        return Err(usage(
            "ACL users live on each node: run `seckill acl --apply` once per node of the \
             cluster (--redis redis://admin@node:port, without --cluster)",
        ));
    }
    let target = ctx.redis(&campaign)?;
    let mut conn = target.connect()?;
    let item = &campaign.items[0].id;
    // The node's own kind decides the path: a cluster node's users also
    // need the cluster client's commands.
    let info: String = redis::cmd("INFO")
        .arg("cluster")
        .query(&mut conn)
        .with_context(|| format!("INFO cluster on {} failed", target.display))?;
    let topology = Topology {
        cluster: info.lines().any(|line| line.trim() == "cluster_enabled:1"),
        db: redis::ConnectionLike::get_db(&conn),
    };
    for user in &mut users {
        let () = redis::cmd("ACL")
            .arg("SETUSER")
            .arg(&user.args)
            .query(&mut conn)
            .with_context(|| format!("ACL SETUSER {} on {} failed", user.user, target.display))?;
        user.applied = true;
        user.checks = dryrun::verify(
            &mut conn,
            Asker::Dryrun(&user.user),
            user.role,
            &campaign.id,
            item,
            topology,
            Scope::Everything,
        )?;
    }
    Ok(AclReport {
        campaign_id: campaign.id,
        users,
        redis: Some(target.display.clone()),
    })
}

/// The password in `path`: its contents without one final newline; never empty.
fn read_password(path: &std::path::Path) -> Result<String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        usage(format!(
            "cannot read --password-file {}: {e}",
            path.display()
        ))
    })?;
    let password = text
        .strip_suffix("\r\n")
        .or_else(|| text.strip_suffix('\n'))
        .unwrap_or(&text);
    if password.is_empty() {
        return Err(usage(format!(
            "--password-file {} is empty: a user without a password is refused",
            path.display()
        )));
    }
    Ok(password.to_string())
}
