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
use crate::operator::acl::dryrun::{self, Asker, Check, Expect, Scope, Topology};
use crate::operator::acl::{self, Password, Role};
use crate::util::columns::{self, Column};
use crate::util::{output, text};

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
    /// script (exit 7 when a check fails). Prints two lines per role and each wrong answer
    /// in full; -v (or --format json) every check. Needs --password-file; one node at a time.
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
    /// `-v`: every check in the table.
    #[serde(skip)]
    verbose: bool,
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
    /// Without --apply, the lines. With it, per role a summary (what was
    /// proven on this node, each wrong answer in full); every check under
    /// `-v` (and in JSON).
    fn render(&self) -> String {
        let Some(redis) = &self.redis else {
            return self.users.iter().map(|u| format!("{}\n", u.line)).collect();
        };
        let mut out = String::new();
        for user in &self.users {
            out.push_str(&summary(user, redis));
            if self.verbose {
                out.push_str(&matrix(&user.checks));
            }
        }
        if !self.verbose {
            out.push_str(&output::paragraph(
                "every check and Redis's answer: add -v, or --format json",
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

/// A role's proof in a few lines: the total, the parts of its path, then
/// each check that answered wrong, spelled out in full.
fn summary(user: &RoleUser, redis: &str) -> String {
    let checks = &user.checks;
    let wrong: Vec<&Check> = checks.iter().filter(|c| !c.ok).collect();
    let count = |pick: &dyn Fn(&Check) -> bool| checks.iter().filter(|c| pick(c)).count();
    let commands = count(&|c| c.what.starts_with("command "));
    let own_scripts = count(&|c| c.what.starts_with("script ") && c.expected == Expect::Allowed);
    let refused = count(&|c| c.expected == Expect::Denied);
    let mut text = output::hanging(
        &format!(
            "{} written on {redis}: {} of {} checks as expected",
            user.user,
            checks.len() - wrong.len(),
            checks.len(),
        ),
        2,
    );
    text.push_str(&output::hanging(
        &format!(
            "  {}: allowed {}, {}; refused {} of others",
            user.role.name(),
            counted(commands, "command"),
            counted(own_scripts, "script"),
            counted(refused, "writing script"),
        ),
        4,
    ));
    for c in wrong {
        text.push_str(&output::hanging(
            &format!(
                "  WRONG {}: expected {}, ACL DRYRUN answered: {}",
                c.what,
                expected_word(c.expected),
                c.answer
            ),
            4,
        ));
    }
    text
}

/// Every check of a role (`-v`): one line each, Redis's answer wrapped.
fn matrix(checks: &[Check]) -> String {
    let rows: Vec<Vec<String>> = checks
        .iter()
        .map(|c| {
            vec![
                c.what.clone(),
                expected_word(c.expected).to_string(),
                if c.ok { "ok".into() } else { "WRONG".into() },
                c.answer.clone(),
            ]
        })
        .collect();
    let columns = [
        Column::whole("CHECK"),
        Column::whole("EXPECTED"),
        Column::whole("RESULT"),
        Column::wrap("ACL DRYRUN ANSWERED"),
    ];
    columns::list(&columns, &rows).text
}

fn expected_word(expected: Expect) -> &'static str {
    match expected {
        Expect::Allowed => "allowed",
        Expect::Denied => "denied",
        Expect::Either => "either",
    }
}

fn counted(n: usize, noun: &str) -> String {
    text::counted(i64::try_from(n).unwrap_or(i64::MAX), noun)
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
            verbose: false,
        });
    }
    if ctx.connection.cluster {
        return Err(usage(
            "ACL users live on each node: run `seckill acl --apply` once per node of the \
             cluster (--redis redis://admin@node:port, without --cluster)",
        ));
    }
    // One node, even of a region whose Redis is a cluster: users are per node.
    let campaign = crate::model::campaign::Campaign {
        region_cluster: false,
        ..campaign
    };
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
        verbose: crate::redis_client::trace::enabled(),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn check(what: &str, expected: Expect, answer: &str, ok: bool) -> Check {
        Check {
            what: what.to_string(),
            expected,
            answer: answer.to_string(),
            ok,
            sent_by: None,
            command: None,
            key: None,
        }
    }

    /// A role that cannot run its job: the summary says so, and spells out
    /// each wrong answer whole (without -v).
    #[test]
    fn a_wrong_answer_is_spelled_out_in_the_summary() {
        let refused =
            "XADD seckill:{c:1}:orders: This user has no permissions to run the 'xadd' command";
        let report = AclReport {
            campaign_id: "c".into(),
            users: vec![RoleUser {
                role: Role::Buyer,
                user: "seckill-buyer".into(),
                args: Vec::new(),
                line: String::new(),
                applied: true,
                checks: vec![
                    check("command PING", Expect::Allowed, "allowed", true),
                    check("script buy", Expect::Allowed, refused, false),
                    check("script preheat", Expect::Denied, "HSET: refused", true),
                ],
            }],
            redis: Some("127.0.0.1:6379".into()),
            verbose: false,
        };
        // However wide the terminal running the test is.
        let text = report
            .render()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            text.starts_with("seckill-buyer written on 127.0.0.1:6379: 2 of 3 checks as expected "),
            "{text}"
        );
        assert!(
            text.contains("buyer: allowed 1 command, 1 script; refused 1 writing script of others"),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "WRONG script buy: expected allowed, ACL DRYRUN answered: {refused}"
            )),
            "{text}"
        );
        assert!(
            !text.contains("script preheat"),
            "only what is wrong: {text}"
        );
        assert_eq!(report.exit_code(), exit_codes::ACL_CHECK_FAILED);
    }
}
