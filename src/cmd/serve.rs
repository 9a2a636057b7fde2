//! `seckill serve`: the shop's front door, an HTTP buy API through the same
//! operations as `seckill buy` (`http`; `docs/serve.md`). Runs until
//! SIGTERM or SIGINT, then reports what it answered.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context as _, Result};
use serde::Serialize;

use crate::http::service::parse_listen;
use crate::http::{self, Served, Settings};
use crate::invocation::context::{Context, Opened};
use crate::invocation::report::Report;
use crate::model::error::usage;
use crate::redis_client::conn::{RedisTarget, UrlSource, parse_duration_arg, read_password_file};
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

    /// How often each item's state is re-read: the bound on a cached
    /// refusal (sold out, outside the window) outliving units that came back.
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

    /// Threads answering HTTP [default: the cores].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub(crate) workers: Option<u64>,
}

/// Shortest --recheck: each costs one Redis read per item.
const MIN_RECHECK: Duration = Duration::from_millis(10);

/// `seckill serve`'s report, when it stopped.
#[derive(Debug, Serialize)]
pub(crate) struct ServeReport {
    #[serde(flatten)]
    pub(crate) served: Served,
}

impl Report for ServeReport {
    fn render(&self) -> String {
        let s = &self.served;
        output::fields(&[
            ("listened on", s.listened_on.clone()),
            ("requests answered", s.answered.to_string()),
            ("cut at shutdown", s.cut_at_shutdown.to_string()),
        ])
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
    Ok(ServeReport { served })
}
