//! The one connection layer every subcommand uses.
//!
//! URL precedence: `--redis` > `SECKILL_REDIS_URL` > the campaign file's
//! `redis:` > `redis://127.0.0.1:6379/0`. `rediss://` is TLS (rustls).
//! Connect and response timeouts are always set, so nothing hangs on a dead
//! server. Errors name the host and port, never the password.
//!
//! `--cluster` treats the URL (or a comma-separated list of URLs) as seed
//! nodes of a Redis Cluster; all commands then route by the item's hash tag
//! (`redis_client::cluster`: only masters, each connected when a command
//! first needs it).
//!
//! A password can stay out of the command line (`ps` shows every argument):
//! a URL without one gets it from `--redis-password-file FILE`
//! (`SECKILL_REDIS_PASSWORD_FILE`), else from `REDISCLI_AUTH` (as
//! `redis-cli` reads it). A password in the URL itself wins over both.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result};
use redis::aio::{ConnectionLike as _, MultiplexedConnection};
use redis::cluster_routing::RoutingInfo;
use redis::{
    Cmd, ConnectionInfo, ConnectionLike, IntoConnectionInfo, RedisError, RedisResult, Value,
};

use crate::model::campaign::Campaign;
use crate::model::error::usage;
use crate::redis_client::cluster::{self, ClusterConn, Router, Topology};
use crate::redis_client::{node, trace};

/// Where Redis is when nothing says otherwise.
pub(crate) const DEFAULT_REDIS_URL: &str = "redis://127.0.0.1:6379/0";

/// Connection flags shared by every subcommand.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Redis connection")]
pub struct ConnectionArgs {
    /// Redis URL: redis://[user:pass@]host:port/db, rediss:// for TLS.
    /// Overrides the campaign file's `redis:`. [default: redis://127.0.0.1:6379/0]
    #[arg(
        long = "redis",
        global = true,
        env = "SECKILL_REDIS_URL",
        hide_env_values = true,
        value_name = "URL"
    )]
    pub redis_url: Option<String>,

    /// In a campaign with `regions:` (docs/regions.md): the region this command
    /// works in — its Redis, its order database, its share of each item.
    #[arg(long, global = true, env = "SECKILL_REGION", value_name = "NAME")]
    pub region: Option<String>,

    /// Treat the URL (comma-separated URLs allowed) as seed nodes of a Redis Cluster.
    #[arg(
        long,
        global = true,
        env = "SECKILL_REDIS_CLUSTER",
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub cluster: bool,

    /// A file holding the password for every Redis URL that has none (the
    /// URL's user, or the default user): no password in `ps`. A final newline
    /// is not part of it. [default: $REDISCLI_AUTH, as redis-cli reads it]
    #[arg(
        long,
        global = true,
        env = "SECKILL_REDIS_PASSWORD_FILE",
        value_name = "FILE"
    )]
    pub redis_password_file: Option<std::path::PathBuf>,

    /// PEM file of the CA that signed the server's certificate (rediss:// only;
    /// default: the system trust store).
    #[arg(long, global = true, env = "SECKILL_REDIS_TLS_CA", value_name = "FILE")]
    pub tls_ca_cert: Option<std::path::PathBuf>,

    /// Give up connecting to Redis after this long (e.g. 500ms, 2s).
    #[arg(long, global = true, default_value = "2s", value_parser = parse_duration_arg, value_name = "DURATION")]
    pub connect_timeout: Duration,

    /// Give up waiting for one Redis reply after this long.
    #[arg(long, global = true, default_value = "5s", value_parser = parse_duration_arg, value_name = "DURATION")]
    pub response_timeout: Duration,
}

impl Default for ConnectionArgs {
    fn default() -> Self {
        ConnectionArgs {
            redis_url: None,
            region: None,
            cluster: false,
            redis_password_file: None,
            tls_ca_cert: None,
            connect_timeout: Duration::from_secs(2),
            response_timeout: Duration::from_secs(5),
        }
    }
}

/// clap value parser for durations such as `30s`, `500ms`, `1h`.
pub(crate) fn parse_duration_arg(text: &str) -> std::result::Result<Duration, String> {
    humantime::parse_duration(text).map_err(|e| format!("{e} (examples: 500ms, 2s, 1m)"))
}

/// A standalone or cluster connection; both speak [`ConnectionLike`].
/// The cluster connection is boxed: it is much larger, and rare.
pub enum Conn {
    Single(Standalone),
    Cluster(Box<ClusterConn>),
    /// `seckill serve`'s shared connection (standalone or cluster), seen by
    /// one request on a blocking worker.
    Shared(SharedConn),
}

// Each request is traced (`-v`): off, that is one atomic load.
impl ConnectionLike for Conn {
    fn req_packed_command(&mut self, cmd: &[u8]) -> RedisResult<Value> {
        let traced = trace::packed(self.cluster(), cmd);
        let reply = match self {
            Conn::Single(c) => c.req_packed_command(cmd).and_then(not_a_cluster_node),
            Conn::Cluster(c) => c.req_packed_command(cmd),
            Conn::Shared(c) => c.req_packed_command(cmd),
        };
        trace::finish(traced, &reply);
        reply
    }

    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        let traced = trace::packed(self.cluster(), cmd);
        let replies = match self {
            Conn::Single(c) => c.req_packed_commands(cmd, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(cmd, offset, count),
            Conn::Shared(c) => c.req_packed_commands(cmd, offset, count),
        };
        trace::finish(traced, &replies);
        replies
    }

    fn req_command(&mut self, cmd: &Cmd) -> RedisResult<Value> {
        let traced = trace::command(self.cluster(), cmd);
        let reply = match self {
            Conn::Single(c) => c.req_command(cmd).and_then(not_a_cluster_node),
            Conn::Cluster(c) => c.req_command(cmd),
            Conn::Shared(c) => c.req_command(cmd),
        };
        trace::finish(traced, &reply);
        reply
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
            Conn::Shared(c) => c.get_db(),
        }
    }

    fn supports_pipelining(&self) -> bool {
        match self {
            Conn::Single(c) => c.supports_pipelining(),
            Conn::Cluster(c) => c.supports_pipelining(),
            Conn::Shared(c) => c.supports_pipelining(),
        }
    }

    fn check_connection(&mut self) -> bool {
        match self {
            Conn::Single(c) => c.check_connection(),
            Conn::Cluster(c) => c.check_connection(),
            Conn::Shared(c) => c.check_connection(),
        }
    }

    fn is_open(&self) -> bool {
        match self {
            Conn::Single(c) => c.is_open(),
            Conn::Cluster(c) => c.is_open(),
            Conn::Shared(c) => c.is_open(),
        }
    }
}

impl Conn {
    /// True on a Redis Cluster connection (multi-key commands must stay in one slot).
    pub(crate) fn is_cluster(&self) -> bool {
        match self {
            Conn::Single(_) => false,
            Conn::Cluster(_) => true,
            Conn::Shared(c) => c.cluster(),
        }
    }

    /// `cmd` sent where `routing` says on a cluster (every master, a node by
    /// address, any one); on a standalone Redis, to it.
    pub(crate) fn route(&mut self, cmd: &Cmd, routing: RoutingInfo) -> RedisResult<Value> {
        match self {
            Conn::Single(c) => c.req_command(cmd),
            Conn::Cluster(c) => c.route_command(cmd, routing),
            Conn::Shared(c) => c.route(cmd, routing),
        }
    }

    /// `cmd` sent to the master of `slot` on a cluster; on a standalone
    /// Redis, to it.
    pub(crate) fn on_slot_master(&mut self, cmd: &Cmd, slot: u16) -> RedisResult<Value> {
        match self {
            Conn::Single(c) => c.req_command(cmd),
            Conn::Cluster(c) => c.on_slot(cmd, slot),
            Conn::Shared(c) => c.on_slot(cmd, slot),
        }
    }

    /// The blocking cluster connection itself, for the trace's slot map.
    fn cluster(&self) -> Option<&ClusterConn> {
        match self {
            Conn::Cluster(c) => Some(c),
            Conn::Single(_) | Conn::Shared(_) => None,
        }
    }
}

/// One connection to a standalone Redis, which fills in the run_id of the
/// process behind it in the script calls that wait for it
/// (`redis_client::node`), read once, on this connection, when first needed.
pub struct Standalone {
    connection: redis::Connection,
    /// `None`: not asked yet; `Some(None)`: INFO refused (the call is sent
    /// with the placeholder, and the script reads INFO itself).
    run_id: Option<Option<String>>,
}

impl Standalone {
    fn run_id(&mut self) -> Option<&str> {
        if self.run_id.is_none() {
            let info: RedisResult<String> = node::info_server().query(&mut self.connection);
            self.run_id = Some(info.ok().as_deref().and_then(node::run_id_of));
        }
        self.run_id.as_ref().and_then(|id| id.as_deref())
    }
}

impl ConnectionLike for Standalone {
    fn req_packed_command(&mut self, cmd: &[u8]) -> RedisResult<Value> {
        if node::packed_wants_run_id(cmd)
            && let Some(run_id) = self.run_id().map(str::to_string)
        {
            return self
                .connection
                .req_packed_command(&node::packed_with_run_id(cmd, &run_id));
        }
        self.connection.req_packed_command(cmd)
    }

    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        self.connection.req_packed_commands(cmd, offset, count)
    }

    fn get_db(&self) -> i64 {
        self.connection.get_db()
    }

    fn supports_pipelining(&self) -> bool {
        self.connection.supports_pipelining()
    }

    fn check_connection(&mut self) -> bool {
        self.connection.check_connection()
    }

    fn is_open(&self) -> bool {
        self.connection.is_open()
    }
}

/// A standalone connection's MOVED/ASK reply: the URL names a node of a
/// Redis Cluster, which serves only its own slots: the same refusal (its
/// code, slot and node), saying what to do.
pub(crate) fn not_a_cluster_node(reply: Value) -> RedisResult<Value> {
    let Value::ServerError(error) = &reply else {
        return Ok(reply);
    };
    if !matches!(
        error.kind(),
        Some(redis::ServerErrorKind::Moved | redis::ServerErrorKind::Ask)
    ) {
        return Ok(reply);
    }
    let said = format!(
        "-{} {} (this Redis is one node of a Redis Cluster, and the key is served by \
         another: pass --cluster, or SECKILL_REDIS_CLUSTER=true, with the cluster's node URLs \
         as seeds)\r\n",
        error.code(),
        error.details().unwrap_or_default()
    );
    match redis::parse_redis_value(said.as_bytes()) {
        Ok(explained) => explained.extract_error(),
        Err(_) => Ok(reply),
    }
}

/// Where a [`SharedConn`]'s commands go.
pub(crate) enum SharedRoute {
    Standalone(MultiplexedConnection, crate::redis_client::node::RunId),
    Cluster(Router),
}

/// One request's blocking view of `seckill serve`'s shared async connection
/// (`multiplexed::Multiplexed::blocking`), for a blocking worker of the
/// runtime that drives it: each command is sent on the shared connection,
/// pipelined with those of every other request in flight, and this thread
/// waits for its reply.
pub struct SharedConn {
    route: SharedRoute,
    runtime: tokio::runtime::Handle,
    /// Told of every failed command (a broken connection is replaced).
    on_error: Box<dyn Fn(&RedisError) + Send>,
}

impl SharedConn {
    pub(crate) fn new(
        route: SharedRoute,
        runtime: tokio::runtime::Handle,
        on_error: Box<dyn Fn(&RedisError) + Send>,
    ) -> SharedConn {
        SharedConn {
            route,
            runtime,
            on_error,
        }
    }

    fn cluster(&self) -> bool {
        matches!(self.route, SharedRoute::Cluster(_))
    }

    fn route(&mut self, cmd: &Cmd, routing: RoutingInfo) -> RedisResult<Value> {
        let reply = match &mut self.route {
            SharedRoute::Standalone(c, run_id) => {
                let filled = crate::redis_client::node::filled_in(cmd, run_id);
                self.runtime
                    .block_on(c.req_packed_command(filled.as_ref().unwrap_or(cmd)))
            }
            SharedRoute::Cluster(c) => {
                let destination =
                    cluster::command::destination_of(&routing, &cluster::command::words(cmd));
                self.runtime.block_on(c.run_to(cmd, destination))
            }
        };
        if let Err(error) = &reply {
            (self.on_error)(error);
        }
        reply
    }

    fn on_slot(&mut self, cmd: &Cmd, slot: u16) -> RedisResult<Value> {
        let reply = match &mut self.route {
            SharedRoute::Standalone(c, run_id) => {
                let filled = crate::redis_client::node::filled_in(cmd, run_id);
                self.runtime
                    .block_on(c.req_packed_command(filled.as_ref().unwrap_or(cmd)))
            }
            SharedRoute::Cluster(c) => self
                .runtime
                .block_on(c.run_to(cmd, cluster::command::Destination::Slot(slot))),
        };
        if let Err(error) = &reply {
            (self.on_error)(error);
        }
        reply
    }
}

impl std::fmt::Debug for SharedConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.cluster() {
            "SharedConn(cluster)"
        } else {
            "SharedConn(standalone)"
        })
    }
}

impl ConnectionLike for SharedConn {
    fn req_command(&mut self, cmd: &Cmd) -> RedisResult<Value> {
        let reply = match &mut self.route {
            SharedRoute::Standalone(c, run_id) => {
                let filled = crate::redis_client::node::filled_in(cmd, run_id);
                self.runtime
                    .block_on(c.req_packed_command(filled.as_ref().unwrap_or(cmd)))
                    .and_then(not_a_cluster_node)
            }
            SharedRoute::Cluster(c) => self.runtime.block_on(c.run(cmd)),
        };
        if let Err(error) = &reply {
            (self.on_error)(error);
        }
        reply
    }

    /// Commands reach the shared connection whole (a cluster routes each by
    /// its keys); raw bytes cannot be routed, so they are refused unsent.
    fn req_packed_command(&mut self, _: &[u8]) -> RedisResult<Value> {
        Err(unsent_bytes())
    }

    fn req_packed_commands(&mut self, _: &[u8], _: usize, _: usize) -> RedisResult<Vec<Value>> {
        Err(unsent_bytes())
    }

    fn get_db(&self) -> i64 {
        match &self.route {
            SharedRoute::Standalone(c, _) => c.get_db(),
            SharedRoute::Cluster(_) => 0,
        }
    }

    fn check_connection(&mut self) -> bool {
        true
    }

    fn is_open(&self) -> bool {
        true
    }
}

fn unsent_bytes() -> RedisError {
    RedisError::from((
        redis::ErrorKind::Client,
        "a pipeline is never sent on the shared connection (nothing was sent)",
    ))
}

/// The server took the connection but did not answer `PING` within
/// `--response-timeout` (paused clients, a busy script, a stopped process).
#[derive(Debug)]
struct NoReplyToPing(Duration);

impl std::fmt::Display for NoReplyToPing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "connected, but no reply to PING within --response-timeout {} (a paused or busy \
             server? CLIENT PAUSE, a long script; raise the flag or wait)",
            humantime::format_duration(self.0)
        )
    }
}

impl std::error::Error for NoReplyToPing {}

/// A standalone Redis over plain TCP: what the load test's raw connection needs.
#[derive(Debug, Clone)]
pub(crate) struct PlainTcp {
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) username: Option<String>,
    pub(crate) password: Option<String>,
    pub(crate) db: i64,
}

/// A resolved Redis target that can hand out connections (one per thread).
#[derive(Debug, Clone)]
pub struct RedisTarget {
    /// One per URL (several: cluster seeds), passwords from outside the
    /// command line applied.
    infos: Vec<ConnectionInfo>,
    /// A cluster's slot map and health, shared by every connection to it.
    cluster: Option<Arc<Topology>>,
    /// PEM of a private CA to trust for rediss://.
    tls_ca: Option<Vec<u8>>,
    connect_timeout: Duration,
    response_timeout: Duration,
    /// `host:port[/db]` without credentials, for messages.
    pub(crate) display: String,
    /// Where the URL came from, for connection errors.
    pub(crate) source: UrlSource,
}

/// Where the Redis URL came from, so an error says what to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum UrlSource {
    Flag,
    Env,
    CampaignFile(std::path::PathBuf),
    Default,
    /// `serve --operator-redis` (or `SECKILL_OPERATOR_REDIS_URL`).
    OperatorFlag,
}

impl std::fmt::Display for UrlSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UrlSource::Flag => f.write_str("URL from --redis"),
            UrlSource::Env => f.write_str("URL from SECKILL_REDIS_URL"),
            UrlSource::CampaignFile(path) => write!(f, "URL from `redis:` in {}", path.display()),
            UrlSource::Default => write!(
                f,
                "the default URL {DEFAULT_REDIS_URL}: pass --redis URL or set `redis:` in the campaign file"
            ),
            UrlSource::OperatorFlag => f.write_str("URL from --operator-redis"),
        }
    }
}

impl UrlSource {
    /// `flag`, `env`, `file` or `default` (the JSON envelope's `redis_source`).
    pub(crate) fn short(&self) -> &'static str {
        match self {
            UrlSource::Flag | UrlSource::OperatorFlag => "flag",
            UrlSource::Env => "env",
            UrlSource::CampaignFile(_) => "file",
            UrlSource::Default => "default",
        }
    }

    /// Which of flag, environment, file or default gave the URL. clap folds
    /// `--redis` and `SECKILL_REDIS_URL` into one value: it is the flag's when
    /// the command line has `--redis`.
    pub(crate) fn of(args: &ConnectionArgs, campaign: Option<&Campaign>) -> UrlSource {
        if args.redis_url.is_some() {
            let on_command_line = std::env::args_os()
                .filter_map(|a| a.into_string().ok())
                .any(|a| a == "--redis" || a.starts_with("--redis="));
            if on_command_line || std::env::var_os("SECKILL_REDIS_URL").is_none() {
                UrlSource::Flag
            } else {
                UrlSource::Env
            }
        } else if let Some(c) = campaign.filter(|c| c.redis_url.is_some()) {
            UrlSource::CampaignFile(c.path.clone())
        } else {
            UrlSource::Default
        }
    }
}

/// `host:port` typed without a scheme: the URL it most likely means.
fn bare_host_port(text: &str) -> Option<String> {
    let (host, port) = text.rsplit_once(':')?;
    let host_ok = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '[' | ']' | ':'));
    (host_ok && !port.is_empty() && port.chars().all(|c| c.is_ascii_digit()))
        .then(|| format!("redis://{text}"))
}

impl RedisTarget {
    /// Resolve the URL by precedence (flag/env, campaign file, default).
    pub fn resolve(args: &ConnectionArgs, campaign: Option<&Campaign>) -> Result<RedisTarget> {
        if let Some(campaign) = campaign
            && !campaign.regions.is_empty()
            && campaign.region.is_none()
        {
            return Err(crate::model::error::usage(format!(
                "campaign {} runs in regions {}: say which one this command works in with \
                 --region NAME (or SECKILL_REGION); `seckill regions status` shows them all",
                campaign.id,
                campaign.region_names().join(", ")
            )));
        }
        let region_cluster;
        let args = if campaign.is_some_and(|c| c.region_cluster) && !args.cluster {
            region_cluster = ConnectionArgs {
                cluster: true,
                ..args.clone()
            };
            &region_cluster
        } else {
            args
        };
        let url = args
            .redis_url
            .clone()
            .or_else(|| campaign.and_then(|c| c.redis_url.clone()))
            .unwrap_or_else(|| DEFAULT_REDIS_URL.to_string());
        let password = match &args.redis_password_file {
            Some(path) => Some(read_password_file(path, "--redis-password-file")?),
            None => std::env::var("REDISCLI_AUTH")
                .ok()
                .filter(|p| !p.is_empty()),
        };
        Self::of_url(
            &url,
            password.as_deref(),
            args,
            UrlSource::of(args, campaign),
        )
    }

    /// The target of `url` (a list with `--cluster`), with the other
    /// settings of `args`; `password` for every URL that has none.
    pub(crate) fn of_url(
        url: &str,
        password: Option<&str>,
        args: &ConnectionArgs,
        source: UrlSource,
    ) -> Result<RedisTarget> {
        let urls = split_urls(url);
        if urls.len() > 1 && !args.cluster {
            return Err(usage(
                "several Redis URLs given: pass --cluster to use them as cluster seed nodes",
            ));
        }
        let mut infos = Vec::new();
        let mut shown = Vec::new();
        for url in &urls {
            if !url.contains("://")
                && let Some(meant) = bare_host_port(url)
            {
                return Err(usage(format!(
                    "Redis URL {url} has no scheme ({source}): did you mean {meant}?"
                )));
            }
            let info = url
                .as_str()
                .into_connection_info()
                .map_err(|e| usage(format!("invalid Redis URL {}: {e}", redact(url))))?;
            shown.push(describe(&info));
            infos.push(with_password(info, password));
        }
        if urls.is_empty() {
            return Err(usage("empty Redis URL"));
        }
        if urls.iter().any(|u| u.starts_with("rediss://")) {
            // rustls needs one process-wide crypto provider; a second install is harmless.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let tls_ca = match &args.tls_ca_cert {
            Some(path) => Some(std::fs::read(path).map_err(|e| {
                usage(format!("cannot read --tls-ca-cert {}: {e}", path.display()))
            })?),
            None => None,
        };
        let cluster = match args.cluster {
            true => Some(Arc::new(
                Topology::new(
                    &infos,
                    tls_ca.clone(),
                    args.connect_timeout,
                    args.response_timeout,
                )
                .map_err(usage)?,
            )),
            false => None,
        };
        crate::util::error_text::remember_response_timeout(args.response_timeout);
        Ok(RedisTarget {
            infos,
            cluster,
            tls_ca,
            connect_timeout: args.connect_timeout,
            response_timeout: args.response_timeout,
            display: shown.join(","),
            source,
        })
    }

    /// Open one connection with both timeouts set, within `--connect-timeout`
    /// in all: redis-rs applies the timeout to each step of its handshake
    /// (TCP connect, then one read per setup command: AUTH, SELECT), so a
    /// server that accepts and never answers used to cost twice the timeout. The attempt runs on a helper thread and is
    /// abandoned at the deadline (it ends by its own timeouts soon after).
    /// On a cluster this reads the slot map from the first seed that
    /// answers, and connects nothing else.
    pub fn connect(&self) -> Result<Conn> {
        let attempt = self.clone();
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("redis-connect".into())
            .spawn(move || {
                let _ = sender.send(attempt.try_connect());
            })
            .context("cannot start a connection thread")?;
        let result = match receiver.recv_timeout(self.connect_timeout) {
            Ok(result) => result.map_err(|e| self.explain_connect_error(e)),
            Err(_) => Err(self.no_answer()),
        };
        trace::connected(&self.display, &self.source, self.cluster());
        result.map_err(|error| {
            // Name Redis's own code (NOAUTH, LOADING, MASTERDOWN, ...): the
            // client library renders it in its own words.
            let code = crate::redis_client::failure::find(&error)
                .and_then(|e| e.code())
                .map(|code| format!(": {code}"))
                .unwrap_or_default();
            error.context(format!(
                "cannot connect to Redis at {} ({}){code}",
                self.display, self.source
            ))
        })
    }

    fn no_answer(&self) -> anyhow::Error {
        anyhow::anyhow!(
            "no answer within --connect-timeout {}: is a Redis server listening there?",
            humantime::format_duration(self.connect_timeout)
        )
    }

    /// Say what a failed connect means: a timeout names the flag, a reply
    /// that is not RESP means the port is not a Redis server, a cluster
    /// command refused by a server without cluster support means `--cluster`
    /// is wrong here.
    fn explain_connect_error(&self, error: anyhow::Error) -> anyhow::Error {
        if error.downcast_ref::<NoReplyToPing>().is_some() {
            return error;
        }
        let redis_error = error
            .chain()
            .find_map(|c| c.downcast_ref::<redis::RedisError>());
        match redis_error {
            Some(e) if e.is_timeout() => self.no_answer(),
            Some(e) if e.kind() == redis::ErrorKind::Parse && !self.cluster() => anyhow::anyhow!(
                "{} did not answer like a Redis server (is it the Redis port?)",
                self.display
            ),
            Some(e) if self.cluster() && e.to_string().contains("cluster support disabled") => {
                anyhow::anyhow!(
                    "{} is a standalone Redis, not a node of a Redis Cluster (it has cluster \
                     support disabled): drop {} for it",
                    self.display,
                    cluster_flag_source()
                )
            }
            _ => error,
        }
    }

    /// Whether the target is a Redis Cluster.
    pub(crate) fn cluster(&self) -> bool {
        self.cluster.is_some()
    }

    /// The shared slot map and health of a cluster target.
    pub(crate) fn topology(&self) -> Option<Arc<Topology>> {
        self.cluster.clone()
    }

    /// The client of a standalone target (its first URL), with its CA.
    pub(crate) fn standalone_client(&self) -> Result<redis::Client> {
        let info = self.infos[0].clone();
        Ok(match &self.tls_ca {
            Some(ca) => redis::Client::build_with_tls(info, self.certificates(ca))?,
            None => redis::Client::open(info)?,
        })
    }

    /// A client speaking RESP3 to the first URL's Redis, or to `node`
    /// (`host`, `port`) of the cluster with the first URL's credentials and
    /// TLS: a shard-channel subscriber's (`shard_channels`), whose messages
    /// come as pushes, told apart from replies.
    pub(crate) fn resp3_client(&self, node: Option<(&str, u16)>) -> Result<redis::Client> {
        let mut info = self.infos[0].clone();
        if let Some((host, port)) = node {
            let addr = match info.addr() {
                redis::ConnectionAddr::TcpTls { insecure, .. } => redis::ConnectionAddr::TcpTls {
                    host: host.to_string(),
                    port,
                    insecure: *insecure,
                    tls_params: None,
                },
                _ => redis::ConnectionAddr::Tcp(host.to_string(), port),
            };
            info = info.set_addr(addr);
        }
        let settings = info
            .redis_settings()
            .clone()
            .set_protocol(redis::ProtocolVersion::RESP3);
        let info = info.set_redis_settings(settings);
        Ok(match &self.tls_ca {
            Some(ca) => redis::Client::build_with_tls(info, self.certificates(ca))?,
            None => redis::Client::open(info)?,
        })
    }

    fn try_connect(&self) -> Result<Conn> {
        if let Some(topology) = &self.cluster {
            let connection = ClusterConn::open(Arc::clone(topology))?;
            return Ok(Conn::Cluster(Box::new(connection)));
        }
        let client = self.standalone_client()?;
        let mut connection = client.get_connection_with_timeout(self.connect_timeout)?;
        connection.set_read_timeout(Some(self.response_timeout))?;
        connection.set_write_timeout(Some(self.response_timeout))?;
        // Verified now: a missing password (NOAUTH) or a server that is not
        // ready (LOADING) fails here, plainly, not as the first real request.
        // Its reply is waited for within --response-timeout: a server that
        // took the connection but does not answer (CLIENT PAUSE, a long
        // script) is named by that limit, not by --connect-timeout.
        redis::cmd("PING")
            .query::<()>(&mut connection)
            .map_err(|e| match e.is_timeout() {
                true => anyhow::Error::new(NoReplyToPing(self.response_timeout)),
                false => anyhow::Error::from(e),
            })?;
        Ok(Conn::Single(Standalone {
            connection,
            run_id: None,
        }))
    }

    fn certificates(&self, ca: &[u8]) -> redis::TlsCertificates {
        redis::TlsCertificates {
            client_tls: None,
            root_cert: Some(ca.to_vec()),
        }
    }

    /// Address and credentials when the target is one standalone Redis over
    /// plain TCP (not TLS, not a Unix socket, not a cluster).
    pub(crate) fn plain_tcp(&self) -> Option<PlainTcp> {
        if self.cluster() {
            return None;
        }
        let info = &self.infos[0];
        let redis::ConnectionAddr::Tcp(host, port) = info.addr() else {
            return None;
        };
        let settings = info.redis_settings();
        Some(PlainTcp {
            host: host.clone(),
            port: *port,
            username: settings.username().map(String::from),
            password: settings.password().map(String::from),
            db: settings.db(),
        })
    }

    /// The user this target's connections log in as (`default` without one).
    pub(crate) fn user(&self) -> String {
        self.infos[0]
            .redis_settings()
            .username()
            .unwrap_or("default")
            .to_string()
    }

    /// The connect timeout.
    pub(crate) fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// The response timeout (callers keep XREADGROUP BLOCK well below it).
    pub(crate) fn response_timeout(&self) -> Duration {
        self.response_timeout
    }
}

/// `info` with `password` when its URL carries none, and without redis-rs's
/// `CLIENT SETINFO` at connect: Redis 7.0 has no such command and 7.2+
/// refuses it to the roles `seckill acl` writes (an `ACL LOG` entry per
/// connection); each connection is checked with `PING` instead.
fn with_password(info: ConnectionInfo, password: Option<&str>) -> ConnectionInfo {
    let mut settings = info.redis_settings().clone().set_skip_set_lib_name();
    if let Some(password) = password
        && settings.password().is_none()
    {
        settings = settings.set_password(password);
    }
    info.set_redis_settings(settings)
}

/// The password in `path` (named by `flag` in errors): its contents without
/// one final newline; never empty.
pub(crate) fn read_password_file(path: &std::path::Path, flag: &str) -> Result<String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| usage(format!("cannot read {flag} {}: {e}", path.display())))?;
    let password = text
        .strip_suffix("\r\n")
        .or_else(|| text.strip_suffix('\n'))
        .unwrap_or(&text);
    if password.is_empty() {
        return Err(usage(format!("{flag} {} is empty", path.display())));
    }
    Ok(password.to_string())
}

/// How `--cluster` was turned on, for the message that says to drop it.
fn cluster_flag_source() -> &'static str {
    let on_command_line = std::env::args_os().any(|a| a == "--cluster");
    match on_command_line || std::env::var_os("SECKILL_REDIS_CLUSTER").is_none() {
        true => "--cluster",
        false => "SECKILL_REDIS_CLUSTER (unset it)",
    }
}

fn describe(info: &redis::ConnectionInfo) -> String {
    let db = info.redis_settings().db();
    let addr = match info.addr() {
        redis::ConnectionAddr::Tcp(host, port) => format!("{host}:{port}"),
        redis::ConnectionAddr::TcpTls { host, port, .. } => format!("{host}:{port} (TLS)"),
        other => other.to_string(),
    };
    if db == 0 {
        addr
    } else {
        format!("{addr}/{db}")
    }
}

/// Split a comma-separated URL list. A comma starts a new URL only when a
/// scheme (`redis://`, `rediss://`, `unix://`, ...) follows it, so a password
/// with a comma in it stays in its URL.
pub(crate) fn split_urls(list: &str) -> Vec<String> {
    let mut urls: Vec<String> = Vec::new();
    for piece in list.split(',') {
        match urls.last_mut() {
            Some(last) if !starts_with_scheme(piece.trim_start()) => {
                last.push(',');
                last.push_str(piece);
            }
            _ => urls.push(piece.to_string()),
        }
    }
    urls.iter()
        // A URL never ends inside its password, so trailing commas are separators.
        .map(|u| u.trim().trim_end_matches(',').trim().to_string())
        .filter(|u| !u.is_empty())
        .collect()
}

fn starts_with_scheme(text: &str) -> bool {
    text.split_once("://").is_some_and(|(scheme, _)| {
        !scheme.is_empty()
            && scheme
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'-' || b == b'.')
    })
}

/// A URL as messages may show it: the user name stays, the password, the
/// query (`?password=...`) and fragment go. Text that is not `scheme://...`
/// at all is not shown: it may be a password pasted in the wrong place.
pub(crate) fn redact(url: &str) -> String {
    let base = url.split(['?', '#']).next().unwrap_or_default();
    let dropped_query = if base.len() < url.len() { "?***" } else { "" };
    let Some(scheme_end) = base.find("://").map(|i| i + 3) else {
        return "(not a scheme://host URL, not shown)".to_string();
    };
    let (scheme, rest) = base.split_at(scheme_end);
    let rest = match rest.rfind('@') {
        Some(at) => match rest[..at].split_once(':') {
            Some((user, _)) => format!("{user}:***{}", &rest[at..]),
            None => format!("***{}", &rest[at..]),
        },
        None => rest.to_string(),
    };
    format!("{scheme}{rest}{dropped_query}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_show() {
        assert_eq!(redact("redis://u:secret@h:1/0"), "redis://u:***@h:1/0");
        assert_eq!(redact("redis://h:1"), "redis://h:1");
        assert_eq!(redact("redis://u:a@b:c@h:1/0"), "redis://u:***@h:1/0");
        assert_eq!(redact("redis://token@h:1/0"), "redis://***@h:1/0");
        assert_eq!(redact("redis://h:1/0?password=x"), "redis://h:1/0?***");
        assert_eq!(
            redact("redis//u:x@h:1/0"),
            "(not a scheme://host URL, not shown)"
        );
        assert_eq!(
            split_urls("redis://u:a,b@h:1, rediss://h:2,,redis://:x,y@h:3"),
            ["redis://u:a,b@h:1", "rediss://h:2", "redis://:x,y@h:3"]
        );
        let args = ConnectionArgs {
            redis_url: Some("redis://u:secret@example:6390/3".into()),
            ..ConnectionArgs::default()
        };
        let target = RedisTarget::resolve(&args, None).unwrap();
        assert_eq!(target.display, "example:6390/3");
    }
}
