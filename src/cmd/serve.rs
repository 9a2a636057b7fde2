//! `seckill serve`: the shop's front door, an HTTP buy API through the same
//! operations as `seckill buy` (`http`; `docs/serve.md`). Runs until
//! SIGTERM or SIGINT, then reports what it answered.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context as _, Result};
use serde::Serialize;

use crate::domain::waiting_room::ticket::RoomSecret;
use crate::http::service::parse_listen;
use crate::http::{self, Served, Settings};
use crate::invocation::context::{Context, Opened};
use crate::invocation::report::Report;
use crate::model::error::usage;
use crate::model::exit_codes;
use crate::model::role::Role;
use crate::operator::acl::dryrun::Check;
use crate::operator::credential::{self, Credential, Job, NodeProof};
use crate::redis_client::conn::{RedisTarget, UrlSource, parse_duration_arg, read_password_file};
use crate::redis_client::scripts::{pay, release};
use crate::util::{log, output};

/// Flags of `seckill serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Address to listen on: HOST:PORT, or :PORT for every interface (port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:8080", value_parser = parse_listen, value_name = "ADDR")]
    pub(crate) listen: SocketAddr,

    /// Requests answered at once; beyond them 503 with Retry-After, never a queue.
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u64).range(1..=1_000_000), value_name = "N")]
    pub(crate) max_in_flight: u64,

    /// A client must send its request headers within this (a slow client is disconnected).
    #[arg(long, default_value = "5s", value_parser = parse_duration_arg, value_name = "DURATION")]
    pub(crate) header_timeout: Duration,

    /// ... and its body within this (else 408).
    #[arg(long, default_value = "5s", value_parser = parse_duration_arg, value_name = "DURATION")]
    pub(crate) body_timeout: Duration,

    /// After SIGTERM, requests in flight get this long to finish.
    #[arg(long, default_value = "10s", value_parser = parse_duration_arg, value_name = "DURATION")]
    pub(crate) shutdown_grace: Duration,

    /// How often each item's state is re-read anyway: the backstop behind
    /// the sell-out broadcast, and the bound on a cached refusal (sold out,
    /// outside the window) outliving units that came back when it is not heard.
    #[arg(long, default_value = "100ms", value_parser = parse_duration_arg, value_name = "DURATION")]
    pub(crate) recheck: Duration,

    /// After an `ok`, WAIT until this many replicas confirmed it, as `buy --wait-replicas`.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=16))]
    pub(crate) wait_replicas: Option<u32>,

    /// Longest WAIT for --wait-replicas (shorter than --response-timeout).
    #[arg(long, default_value = "1s", value_parser = parse_duration_arg, value_name = "DURATION")]
    pub(crate) wait_timeout: Duration,

    /// A file holding the bearer token of the operator endpoints (pay,
    /// cancel); without it they are off (404). serve then refuses to start
    /// (exit 2) unless their Redis credential may run the pay and release
    /// scripts (asked of Redis's ACL, nothing written).
    #[arg(long, value_name = "FILE")]
    pub(crate) operator_token_file: Option<std::path::PathBuf>,

    /// Redis URL (comma-separated seeds with --cluster) the operator
    /// endpoints use, as the operator's user: the shop's buyer credential
    /// may not pay or cancel [default: --redis]. Needs --operator-token-file.
    #[arg(
        long,
        value_name = "URL",
        env = "SECKILL_OPERATOR_REDIS_URL",
        hide_env_values = true
    )]
    pub(crate) operator_redis: Option<String>,

    /// A file holding the password of --operator-redis when its URLs have
    /// none (no password in `ps`).
    #[arg(
        long,
        value_name = "FILE",
        env = "SECKILL_OPERATOR_REDIS_PASSWORD_FILE"
    )]
    pub(crate) operator_redis_password_file: Option<std::path::PathBuf>,

    /// Start nothing: prove that the credential of --redis (the buyer) may
    /// send serve's whole path on every node — connecting, the cache's
    /// reads, every buyer script and each command inside it — and, with
    /// --operator-token-file, that the operator endpoints' credential may
    /// pay and cancel there; print one row per credential and node, exit 0
    /// when proven everywhere, 7 when a node refused a check (each named),
    /// 1 when a node could not be asked. Asked of Redis's own ACL by the
    /// credential itself: nothing written.
    #[arg(long)]
    pub(crate) check_credential: bool,

    /// A file holding the campaign's ticket-room secret (at least 32 bytes):
    /// required when an item has `waiting_room: { mode: ticket }`, whose
    /// tickets this instance signs and every instance verifies. Never
    /// stored in Redis (docs/waiting-room.md, "Ticket mode").
    #[arg(long, value_name = "FILE", env = "SECKILL_ROOM_KEY_FILE")]
    pub(crate) room_key_file: Option<std::path::PathBuf>,

    /// Threads answering HTTP [default: the cores].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub(crate) workers: Option<u64>,
}

/// Shortest --recheck: each costs one Redis read per item.
const MIN_RECHECK: Duration = Duration::from_millis(10);

/// `seckill serve`'s report: what it answered once it stopped, or, with
/// `--check-credential`, the proof of its credentials.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum ServeReport {
    Served {
        #[serde(flatten)]
        served: Served,
    },
    Checked {
        /// One row per credential and node.
        credentials: Vec<NodeProof>,
    },
}

impl Report for ServeReport {
    fn render(&self) -> String {
        match self {
            ServeReport::Served { served: s } => output::fields(&[
                ("listened on", s.listened_on.clone()),
                ("requests answered", s.answered.to_string()),
                ("cut at shutdown", s.cut_at_shutdown.to_string()),
            ]),
            ServeReport::Checked { credentials } => credential::render_table(credentials),
        }
    }

    fn exit_code(&self) -> i32 {
        match self {
            ServeReport::Served { .. } => exit_codes::SUCCESS,
            ServeReport::Checked { credentials } => credential::exit_code(credentials),
        }
    }

    fn failure(&self) -> Option<String> {
        match self {
            ServeReport::Served { .. } => None,
            ServeReport::Checked { credentials } => credential::failure(credentials),
        }
    }
}

/// Serve until SIGTERM/SIGINT.
pub(crate) fn run(ctx: &Context, args: &Args) -> Result<ServeReport> {
    if args.recheck < MIN_RECHECK {
        return Err(usage(format!(
            "--recheck {} is too short: at least {}",
            humantime::format_duration(args.recheck),
            humantime::format_duration(MIN_RECHECK)
        )));
    }
    if args.wait_replicas.is_some() {
        crate::redis_client::replicas::check_timeout(
            args.wait_timeout,
            ctx.connection.response_timeout,
        )?;
    }
    let operator_token = match &args.operator_token_file {
        None => None,
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read --operator-token-file {}", path.display()))?;
            let token = text.trim().as_bytes().to_vec();
            if token.len() < 16 {
                return Err(usage(format!(
                    "--operator-token-file {}: the token must be at least 16 characters",
                    path.display()
                )));
            }
            Some(token)
        }
    };
    if operator_token.is_none()
        && (args.operator_redis.is_some() || args.operator_redis_password_file.is_some())
    {
        return Err(usage(
            "--operator-redis is the credential of the operator endpoints: give \
             --operator-token-file too (without it they are off)",
        ));
    }
    let operator_redis = match &args.operator_redis {
        None => None,
        Some(url) => {
            let password = match &args.operator_redis_password_file {
                Some(path) => Some(read_password_file(path, "--operator-redis-password-file")?),
                None => None,
            };
            Some(RedisTarget::of_url(
                url,
                password.as_deref(),
                &ctx.connection,
                UrlSource::OperatorFlag,
            )?)
        }
    };
    if args.check_credential {
        return check_credentials(ctx, args, operator_token.is_some());
    }
    let Opened {
        campaign, target, ..
    } = ctx.open()?;
    let settings = Settings {
        listen: args.listen,
        max_in_flight: args.max_in_flight as usize,
        header_timeout: args.header_timeout,
        body_timeout: args.body_timeout,
        shutdown_grace: args.shutdown_grace,
        recheck: args.recheck,
        wait_replicas: args.wait_replicas.map(|n| (n, args.wait_timeout)),
        operator_token,
        operator_redis,
        room_secret: match &args.room_key_file {
            Some(path) => Some(RoomSecret::read(path).map_err(|e| usage(format!("{e:#}")))?),
            None => None,
        },
        workers: args.workers.map_or_else(
            || std::thread::available_parallelism().map_or(2, |n| n.get()),
            |n| n as usize,
        ),
    };
    let (campaign_id, redis) = (campaign.id.clone(), target.display.clone());
    let served = http::run(campaign, target, settings, |bound| {
        log::line(
            "serve",
            format!("listening on http://{bound} (campaign {campaign_id}, Redis {redis})"),
        );
    })?;
    Ok(ServeReport::Served { served })
}

/// `--check-credential`: the buyer's credential on serve's whole path (the
/// buyer role's, WAIT only with --wait-replicas), and with the operator
/// endpoints on, their credential on what pay and cancel send (connecting,
/// the order's lookup, the pay and release scripts), on every node.
fn check_credentials(ctx: &Context, args: &Args, operator_endpoints: bool) -> Result<ServeReport> {
    let campaign = ctx.campaign()?;
    let items: Vec<String> = campaign.items.iter().map(|i| i.id.clone()).collect();
    // Resolved as serve resolves it (the envelope names it; a stray
    // SECKILL_REDIS_URL is said).
    ctx.redis(&campaign)?;
    let buyer = Credential::of_args("buyer", Role::Buyer, &ctx.connection, &campaign)?;
    let wait = args.wait_replicas.is_some();
    let door = move |check: &Check| wait || check.command.as_deref() != Some("WAIT");
    let mut proofs = credential::prove(
        &buyer,
        &Job {
            items: items.clone(),
            part: &door,
            slots: None,
        },
        &campaign.id,
    )?;
    if operator_endpoints {
        let operator = match &args.operator_redis {
            Some(url) => Credential {
                name: "operator",
                role: Role::Operator,
                url: url.clone(),
                password: match &args.operator_redis_password_file {
                    Some(path) => Some(read_password_file(path, "--operator-redis-password-file")?),
                    None => None,
                },
                args: ctx.connection.clone(),
                source: UrlSource::OperatorFlag,
            },
            None => Credential {
                name: "operator",
                ..buyer.clone()
            },
        };
        let operator = Credential {
            role: Role::Operator,
            ..operator
        };
        proofs.extend(credential::prove(
            &operator,
            &Job {
                items,
                part: &pays_and_cancels,
                slots: None,
            },
            &campaign.id,
        )?);
    }
    Ok(ServeReport::Checked {
        credentials: proofs,
    })
}

/// The part of the operator's path that serve's pay and cancel send:
/// connecting, the commands the table says pay and cancel send, the
/// bucket count every command on an item reads, and the two scripts.
fn pays_and_cancels(check: &Check) -> bool {
    credential::is_connection_setup(check)
        || credential::is_script(check, pay::SPEC.name())
        || credential::is_script(check, release::SPEC.name())
        || check.sent_by.is_some_and(|by| {
            by.starts_with("pay, cancel") || by.starts_with("every command on an item")
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operator::acl::dryrun::{Expect, path};

    /// The operator's rows outside scripts as checks, as the dry run makes them.
    fn operator_rows() -> Vec<Check> {
        path::sent_by(Role::Operator)
            .map(|row| Check {
                what: format!("command {}", row.shown()),
                expected: Expect::Allowed,
                answer: "allowed".into(),
                ok: true,
                sent_by: Some(row.by),
                command: Some(row.command()),
                key: Some(row.key.kind()),
            })
            .collect()
    }

    #[test]
    fn pay_and_cancel_need_connecting_the_order_lookup_and_their_two_scripts() {
        let kept: Vec<String> = operator_rows()
            .into_iter()
            .filter(pays_and_cancels)
            .map(|c| c.what)
            .collect();
        for needed in [
            "command PING",
            "command CLUSTER SLOTS",
            "command SCRIPT LOAD",
            "command HEXISTS :reservations",
            "command GET :bucket_count",
        ] {
            assert!(kept.iter().any(|k| k == needed), "{needed} not in {kept:?}");
        }
        assert!(
            !kept
                .iter()
                .any(|k| k.contains("load test") || k.contains("registry")),
            "{kept:?}"
        );
        let script = |name: &str| Check {
            what: format!("script {name}"),
            expected: Expect::Allowed,
            answer: "allowed".into(),
            ok: true,
            sent_by: None,
            command: None,
            key: None,
        };
        assert!(pays_and_cancels(&script("pay")) && pays_and_cancels(&script("release")));
        assert!(!pays_and_cancels(&script("preheat")));
    }
}
