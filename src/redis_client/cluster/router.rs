//! The cluster client: a [`Topology`] (seeds, the slot map, which masters
//! stopped answering) shared by every connection to one target, and a
//! [`Router`] per connection (its own connection to each master it used,
//! opened on first use) that sends each command where [`super::command`]
//! says and follows the cluster when it moves.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redis::aio::{ConnectionLike as _, MultiplexedConnection};

use crate::redis_client::node::{RunId, filled_in, run_id_on, wants_run_id};
use redis::{
    AsyncConnectionConfig, Cmd, ConnectionAddr, ConnectionInfo, ErrorKind, Pipeline, RedisError,
    RedisResult, ServerErrorKind, Value,
};

use super::command::{self, Combine, Destination};
use super::slots::{Node, SlotMap};
use crate::redis_client::failure::{is_not_sent, not_sent_error, not_sent_to};

/// While a master does not answer, the map is read again at most this often
/// (so a promotion is seen within it of the next command).
pub(crate) const REFRESH_EVERY: Duration = Duration::from_millis(250);
/// While a master does not answer, it is asked a PING at most this often,
/// before a command for it (if it answers, it is trusted again and the
/// command sent); meanwhile its commands are refused unsent at once instead
/// of each waiting out `--response-timeout`.
const PROBE_EVERY: Duration = Duration::from_secs(1);
/// How long that PING may take (at most `--response-timeout`).
const PROBE_TIMEOUT: Duration = Duration::from_millis(500);
/// How long one candidate gets to answer `CLUSTER SLOTS` before the next
/// one is asked too (a frozen seed accepts TCP and never answers).
const STAGGER: Duration = Duration::from_millis(200);
/// Waits before a command the cluster refused unrun while it settles
/// (TRYAGAIN, CLUSTERDOWN, READONLY during a failover) is sent again.
const SETTLE_WAITS: [Duration; 5] = [
    Duration::from_millis(50),
    Duration::from_millis(100),
    Duration::from_millis(200),
    Duration::from_millis(400),
    Duration::from_millis(800),
];
/// MOVED/ASK redirects followed for one command.
const MAX_REDIRECTS: usize = 5;

/// What every connection to one cluster shares.
pub(crate) struct Topology {
    /// The seeds, in the order given.
    seeds: Vec<Node>,
    /// How every node is reached: the first seed's URL (user, password,
    /// TLS), its address replaced by the node's.
    template: ConnectionInfo,
    /// PEM of a private CA for `rediss://`.
    tls_ca: Option<Vec<u8>>,
    pub(crate) connect_timeout: Duration,
    pub(crate) response_timeout: Duration,
    state: Mutex<State>,
    /// One map refresh at a time; the others wait and take its result.
    refreshing: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct State {
    map: Option<Arc<SlotMap>>,
    refreshed_at: Option<Instant>,
    /// Slots a MOVED named a new master for, until the next refresh.
    moved: HashMap<u16, Node>,
    /// Masters that stopped answering, until they answer again.
    silent: HashMap<Node, Silence>,
}

struct Silence {
    since: Instant,
    /// When it was last asked whether it answers again.
    last_probe: Instant,
    /// A probe is waiting for its answer.
    probing: bool,
    why: String,
}

/// Whether a command may go to a node now.
enum Gate {
    /// It answers (as far as anyone knows).
    Open,
    /// It went silent and is due a probe: this caller asks it.
    Probe,
    /// It went silent: refused unsent, with why.
    Closed(String),
}

impl std::fmt::Debug for Topology {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let seeds: Vec<String> = self.seeds.iter().map(Node::to_string).collect();
        write!(f, "Topology(seeds {})", seeds.join(","))
    }
}

impl Topology {
    /// The topology of the cluster these seeds belong to (nothing is
    /// connected yet). Every seed must be `host:port` (TCP or TLS).
    pub(crate) fn new(
        seeds: &[ConnectionInfo],
        tls_ca: Option<Vec<u8>>,
        connect_timeout: Duration,
        response_timeout: Duration,
    ) -> Result<Topology, String> {
        let nodes = seeds
            .iter()
            .map(|info| match info.addr() {
                ConnectionAddr::Tcp(host, port) | ConnectionAddr::TcpTls { host, port, .. } => {
                    Ok(Node::new(host.clone(), *port))
                }
                other => Err(format!(
                    "a cluster seed must be host:port, not {other}: cluster nodes talk TCP"
                )),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let template = seeds.first().cloned().ok_or("no seed node")?;
        Ok(Topology {
            seeds: nodes,
            template,
            tls_ca,
            connect_timeout,
            response_timeout,
            state: Mutex::new(State::default()),
            refreshing: tokio::sync::Mutex::new(()),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The slot map last read, if any.
    pub(crate) fn map(&self) -> Option<Arc<SlotMap>> {
        self.state().map.clone()
    }

    /// The master of `slot`: the last MOVED for it, else the map's.
    pub(crate) fn master_of(&self, slot: u16) -> Option<Node> {
        let state = self.state();
        state
            .moved
            .get(&slot)
            .cloned()
            .or_else(|| state.map.as_ref()?.master_of(slot).cloned())
    }

    /// `cluster master HOST:PORT` (or `cluster node` when it serves no slot), for messages.
    fn role_of(&self, node: &Node) -> String {
        match self.map().is_some_and(|map| map.is_master(node)) {
            true => format!("cluster master {node}"),
            false => format!("cluster node {node}"),
        }
    }

    fn install(&self, map: Arc<SlotMap>) {
        let mut state = self.state();
        // A master that left the map (demoted, forgotten) is no longer waited on.
        state.silent.retain(|node, _| map.is_master(node));
        state.map = Some(map);
        state.moved.clear();
        state.refreshed_at = Some(Instant::now());
    }

    /// A map read after `asked`, or within `fresh_for` of now.
    fn fresh_map(&self, fresh_for: Duration, asked: Instant) -> Option<Arc<SlotMap>> {
        let state = self.state();
        let at = state.refreshed_at?;
        (at >= asked || at.elapsed() < fresh_for)
            .then(|| state.map.clone())
            .flatten()
    }

    fn moved(&self, slot: u16, node: Node) {
        self.state().moved.insert(slot, node);
    }

    fn answered(&self, node: &Node) {
        let mut state = self.state();
        if !state.silent.is_empty() {
            state.silent.remove(node);
        }
    }

    fn went_silent(&self, node: &Node, why: String) {
        let now = Instant::now();
        let mut state = self.state();
        let silence = state.silent.entry(node.clone()).or_insert(Silence {
            since: now,
            last_probe: now,
            probing: false,
            why: why.clone(),
        });
        silence.why = why;
    }

    fn is_silent(&self, node: &Node) -> bool {
        let state = self.state();
        !state.silent.is_empty() && state.silent.contains_key(node)
    }

    /// Whether a command may be sent to `node` now: always, unless it went
    /// silent; then only after a probe (one at a time, one per
    /// [`PROBE_EVERY`], marked started here) found it answering again.
    fn gate(&self, node: &Node) -> Gate {
        let mut state = self.state();
        let Some(silence) = state.silent.get_mut(node) else {
            return Gate::Open;
        };
        if !silence.probing && silence.last_probe.elapsed() >= PROBE_EVERY {
            silence.probing = true;
            silence.last_probe = Instant::now();
            return Gate::Probe;
        }
        Gate::Closed(format!(
            "it has not answered for {} ({}); commands for its slots wait for it or for its \
             replica's promotion (cluster-node-timeout)",
            humantime::format_duration(Duration::from_millis(
                silence.since.elapsed().as_millis() as u64
            )),
            silence.why
        ))
    }

    /// A probe of a silent `node` ended without an answer.
    fn still_silent(&self, node: &Node) {
        if let Some(silence) = self.state().silent.get_mut(node) {
            silence.probing = false;
        }
    }

    /// Nodes to ask for the map, best first: masters that answer (those
    /// this connection holds first), then seeds, then the silent.
    fn candidates(&self, held: &[Node]) -> Vec<Node> {
        let state = self.state();
        let masters = state.map.as_ref().map(|m| m.masters()).unwrap_or_default();
        let mut answering: Vec<Node> = Vec::new();
        let mut silent: Vec<Node> = Vec::new();
        let held_first = masters
            .iter()
            .filter(|n| held.contains(n))
            .chain(masters.iter().filter(|n| !held.contains(n)))
            .chain(self.seeds.iter());
        for node in held_first {
            if answering.contains(node) || silent.contains(node) {
                continue;
            }
            match state.silent.contains_key(node) {
                true => silent.push(node.clone()),
                false => answering.push(node.clone()),
            }
        }
        answering.extend(silent);
        answering
    }

    /// The client of one node: the first seed's settings at its address.
    fn client(&self, node: &Node) -> RedisResult<redis::Client> {
        let addr = match self.template.addr() {
            ConnectionAddr::TcpTls { insecure, .. } => ConnectionAddr::TcpTls {
                host: node.host.clone(),
                port: node.port,
                insecure: *insecure,
                tls_params: None,
            },
            _ => ConnectionAddr::Tcp(node.host.clone(), node.port),
        };
        let info = self.template.clone().set_addr(addr);
        match &self.tls_ca {
            Some(ca) => redis::Client::build_with_tls(
                info,
                redis::TlsCertificates {
                    client_tls: None,
                    root_cert: Some(ca.clone()),
                },
            ),
            None => redis::Client::open(info),
        }
    }

    /// A new connection to `node` with both timeouts, checked by PING: a
    /// node that takes the TCP connection but does not answer (SIGSTOP, a
    /// partition) fails here within the timeouts, not on the first command.
    async fn open(&self, node: &Node) -> RedisResult<MultiplexedConnection> {
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.connect_timeout))
            .set_response_timeout(Some(self.response_timeout));
        let mut connection = self
            .client(node)?
            .get_multiplexed_async_connection_with_config(&config)
            .await?;
        redis::cmd("PING")
            .query_async::<()>(&mut connection)
            .await?;
        Ok(connection)
    }
}

/// One node's connection of a [`Router`].
enum NodeState {
    Unopened,
    /// With the run_id of the process behind it (`redis_client::node`),
    /// read on it when a command first needs it (a role refused `INFO`
    /// that never sends such a command is never refused it).
    Open(MultiplexedConnection, Arc<tokio::sync::OnceCell<RunId>>),
    /// The last attempt to open it failed, at this time, with this error.
    Failed(Instant, RedisError),
}

/// One connection to a cluster: a connection to each master it sent a
/// command to, opened on first use. Cheap to clone (its clones share them).
#[derive(Clone)]
pub(crate) struct Router {
    topology: Arc<Topology>,
    nodes: Arc<Mutex<HashMap<Node, Arc<tokio::sync::Mutex<NodeState>>>>>,
}

impl Router {
    pub(crate) fn new(topology: Arc<Topology>) -> Router {
        Router {
            topology,
            nodes: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    pub(crate) fn topology(&self) -> &Topology {
        &self.topology
    }

    /// The slot map, read now when there is none yet.
    pub(crate) async fn map(&self) -> RedisResult<Arc<SlotMap>> {
        match self.topology.map() {
            Some(map) => Ok(map),
            None => self.refresh(Duration::MAX).await,
        }
    }

    /// Read the slot map again, unless one was read within `fresh_for`
    /// (or while this call waited for another refresh to finish).
    pub(crate) async fn refresh(&self, fresh_for: Duration) -> RedisResult<Arc<SlotMap>> {
        let asked = Instant::now();
        if let Some(map) = self.topology.fresh_map(fresh_for, asked) {
            return Ok(map);
        }
        let _one_at_a_time = self.topology.refreshing.lock().await;
        if let Some(map) = self.topology.fresh_map(fresh_for, asked) {
            return Ok(map);
        }
        let map = Arc::new(self.ask_for_map().await?);
        self.topology.install(Arc::clone(&map));
        Ok(map)
    }

    /// `CLUSTER SLOTS` from the first candidate that answers: one is asked,
    /// and every [`STAGGER`] without an answer (or at once after a failure)
    /// the next one too, so a frozen node delays the map by [`STAGGER`], not
    /// by its timeouts.
    async fn ask_for_map(&self) -> RedisResult<SlotMap> {
        let mut pending = self.topology.candidates(&self.held()).into_iter();
        let mut running = tokio::task::JoinSet::new();
        let mut failures: Vec<String> = Vec::new();
        let mut first_error: Option<RedisError> = None;
        let ask = |running: &mut tokio::task::JoinSet<_>, node: Node| {
            let router = self.clone();
            running.spawn(async move {
                let reply = router.send(&node, &cluster_slots(), false, false).await;
                let map = reply.and_then(|value| {
                    let value = value.extract_error()?;
                    SlotMap::parse(&value, &node).map_err(|why| {
                        RedisError::from((ErrorKind::Parse, "unreadable CLUSTER SLOTS", why))
                    })
                });
                (node, map)
            });
        };
        loop {
            if running.is_empty() {
                match pending.next() {
                    Some(node) => ask(&mut running, node),
                    None => break,
                }
            }
            let more = pending.len() > 0;
            tokio::select! {
                Some(joined) = running.join_next() => match joined {
                    Ok((_, Ok(map))) => return Ok(map),
                    // Refused for who asks (NOPERM, a wrong password) or by a
                    // server without cluster support: every node says the same.
                    Ok((_, Err(error))) if said_by_every_node(&error) => return Err(error),
                    Ok((node, Err(error))) => {
                        failures.push(match not_sent_to(&error) {
                            Some(unsent) => unsent.why.clone(),
                            None => format!("{node}: {error}"),
                        });
                        first_error.get_or_insert(error);
                    }
                    Err(stopped) => failures.push(format!("a map request stopped: {stopped}")),
                },
                () = tokio::time::sleep(STAGGER), if more => {
                    if let Some(node) = pending.next() {
                        ask(&mut running, node);
                    }
                }
                else => {}
            }
        }
        let detail = format!(
            "no cluster node answered CLUSTER SLOTS: {}",
            failures.join("; ")
        );
        Err(match first_error {
            Some(error) if is_not_sent(&error) => not_sent_error(
                self.topology
                    .seeds
                    .iter()
                    .map(Node::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
                detail,
            ),
            _ => RedisError::from((ErrorKind::Io, "no cluster node answered", detail)),
        })
    }

    /// The nodes this connection holds an open connection to.
    fn held(&self) -> Vec<Node> {
        let nodes = self.nodes.lock().unwrap_or_else(|e| e.into_inner());
        nodes
            .iter()
            .filter(|(_, state)| {
                state
                    .try_lock()
                    .is_ok_and(|state| matches!(*state, NodeState::Open(..)))
            })
            .map(|(node, _)| node.clone())
            .collect()
    }

    /// This router's connection to `node`, opened when it has none. While
    /// one is being opened, the others asking wait for it and share its
    /// outcome (a frozen node costs one `--connect-timeout`, not one each).
    async fn connection(&self, node: &Node) -> RedisResult<MultiplexedConnection> {
        self.connection_and_run_id(node)
            .await
            .map(|(connection, _)| connection)
    }

    /// [`Router::connection`] and the run_id of the process behind it.
    async fn connection_and_run_id(
        &self,
        node: &Node,
    ) -> RedisResult<(MultiplexedConnection, Arc<tokio::sync::OnceCell<RunId>>)> {
        let slot = {
            let mut nodes = self.nodes.lock().unwrap_or_else(|e| e.into_inner());
            Arc::clone(
                nodes
                    .entry(node.clone())
                    .or_insert_with(|| Arc::new(tokio::sync::Mutex::new(NodeState::Unopened))),
            )
        };
        let asked = Instant::now();
        let mut state = slot.lock().await;
        match &*state {
            NodeState::Open(connection, run_id) => return Ok((connection.clone(), run_id.clone())),
            NodeState::Failed(at, error) if *at >= asked => return Err(error.clone()),
            _ => {}
        }
        match self.topology.open(node).await {
            Ok(connection) => {
                let run_id = Arc::new(tokio::sync::OnceCell::new());
                *state = NodeState::Open(connection.clone(), Arc::clone(&run_id));
                Ok((connection, run_id))
            }
            Err(error) => {
                let why = match error.is_timeout() {
                    true => format!(
                        "{} took the connection but did not answer within --connect-timeout {}",
                        self.topology.role_of(node),
                        humantime::format_duration(self.topology.connect_timeout)
                    ),
                    false => format!("cannot connect to {}: {error}", self.topology.role_of(node)),
                };
                // Refused for who is asking (a password, an ACL): said as Redis said it.
                let error = match error.code().is_some()
                    || error.kind() == ErrorKind::AuthenticationFailed
                {
                    true => error,
                    false => {
                        self.topology.went_silent(node, why.clone());
                        not_sent_error(node, why)
                    }
                };
                *state = NodeState::Failed(Instant::now(), error.clone());
                Err(error)
            }
        }
    }

    /// Drop the connection to `node` (it broke: the next command opens a new one).
    fn forget(&self, node: &Node) {
        let nodes = self.nodes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(state) = nodes.get(node)
            && let Ok(mut state) = state.try_lock()
        {
            *state = NodeState::Unopened;
        }
    }

    /// `Ok` when a command may go to `node` now: it answers, or it went
    /// silent and a PING (when due, within [`PROBE_TIMEOUT`]) found it
    /// answering again; else the unsent error saying why.
    async fn gate(&self, node: &Node) -> RedisResult<()> {
        let why = match self.topology.gate(node) {
            Gate::Open => return Ok(()),
            Gate::Closed(why) => why,
            Gate::Probe => {
                let probe = async {
                    let mut connection = self.connection(node).await?;
                    redis::cmd("PING").query_async::<()>(&mut connection).await
                };
                let limit = PROBE_TIMEOUT.min(self.topology.response_timeout);
                match tokio::time::timeout(limit, probe).await {
                    Ok(Ok(())) => {
                        self.topology.answered(node);
                        return Ok(());
                    }
                    _ => {
                        self.topology.still_silent(node);
                        match self.topology.gate(node) {
                            Gate::Closed(why) => why,
                            _ => "it did not answer a PING".to_string(),
                        }
                    }
                }
            }
        };
        Err(not_sent_error(
            node,
            format!("{}: {why}", self.topology.role_of(node)),
        ))
    }

    /// `cmd` sent to `node` (after `ASKING` when `asking`), once. `gated`:
    /// refused unsent while the node is silent ([`Router::gate`]). A timeout
    /// or a broken connection makes the node silent and names it.
    async fn send(&self, node: &Node, cmd: &Cmd, asking: bool, gated: bool) -> RedisResult<Value> {
        if gated {
            self.gate(node).await?;
        }
        let (mut connection, run_id) = self.connection_and_run_id(node).await?;
        let filled = match wants_run_id(cmd) {
            true => {
                let mut asking = connection.clone();
                let run_id = run_id.get_or_init(|| run_id_on(&mut asking)).await;
                filled_in(cmd, run_id)
            }
            false => None,
        };
        let cmd = filled.as_ref().unwrap_or(cmd);
        let reply = match asking {
            false => connection.req_packed_command(cmd).await,
            true => {
                let mut pipeline = Pipeline::new();
                pipeline.cmd("ASKING").add_command(cmd.clone());
                connection
                    .req_packed_commands(&pipeline, 1, 1)
                    .await
                    .map(|mut replies| replies.pop().unwrap_or(Value::Nil))
            }
        };
        self.after(node, reply)
    }

    /// What a reply from `node` tells about it.
    fn after<T>(&self, node: &Node, reply: RedisResult<T>) -> RedisResult<T> {
        match reply {
            Ok(value) => {
                self.topology.answered(node);
                Ok(value)
            }
            Err(error) if error.is_timeout() => {
                let why = format!(
                    "{} did not answer within --response-timeout {}",
                    self.topology.role_of(node),
                    humantime::format_duration(self.topology.response_timeout)
                );
                self.topology.went_silent(node, why.clone());
                Err(RedisError::from(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    why,
                )))
            }
            Err(error) if error.is_io_error() || error.is_connection_dropped() => {
                self.forget(node);
                let why = format!(
                    "the connection to {} broke: {error}",
                    self.topology.role_of(node)
                );
                self.topology.went_silent(node, why.clone());
                let kind = std::error::Error::source(&error)
                    .and_then(|source| source.downcast_ref::<std::io::Error>())
                    .map_or(std::io::ErrorKind::ConnectionReset, std::io::Error::kind);
                Err(RedisError::from(std::io::Error::new(kind, why)))
            }
            Err(error) => Err(error),
        }
    }

    /// Run one command where it goes.
    pub(crate) async fn run(&self, cmd: &Cmd) -> RedisResult<Value> {
        let destination = command::destination(&command::words(cmd));
        self.run_to(cmd, destination).await
    }

    /// Run one command at `destination`.
    pub(crate) async fn run_to(&self, cmd: &Cmd, destination: Destination) -> RedisResult<Value> {
        match destination {
            Destination::Slot(slot) => self.on_slot(slot, cmd).await,
            Destination::AnyMaster => self.on_any_master(cmd).await,
            Destination::EveryMaster(combine) => self.on_every_master(cmd, combine).await,
            Destination::Split {
                first,
                step,
                combine,
            } => self.split(cmd, first, step, combine).await,
            Destination::Node(node) => self.send(&node, cmd, false, false).await,
            Destination::Unroutable(why) => Err(RedisError::from((
                ErrorKind::Client,
                "not sent: no one node of a cluster can run this command",
                why.to_string(),
            ))),
        }
    }

    /// The master `slot` is sent to now. When the map's master went silent,
    /// the map is read again first (at most every [`REFRESH_EVERY`]): once
    /// the cluster has promoted a replica, its slots go there.
    async fn master_for(&self, slot: u16) -> RedisResult<Node> {
        self.map().await?;
        let mut master = self.topology.master_of(slot);
        if master.as_ref().is_some_and(|m| self.topology.is_silent(m)) {
            // Unreadable now: the silent master stays the best guess.
            if self.refresh(REFRESH_EVERY).await.is_ok() {
                master = self.topology.master_of(slot);
            }
        }
        master.ok_or_else(|| {
            RedisError::from((
                ErrorKind::Server(ServerErrorKind::ClusterDown),
                "no master serves the slot",
                format!("slot {slot} has no master in the cluster's map (CLUSTER SLOTS)"),
            ))
        })
    }

    /// `cmd` on the master of `slot`, following MOVED and ASK, sent again
    /// when the cluster refused it unrun while settling (TRYAGAIN,
    /// CLUSTERDOWN, READONLY: a failover) or when its master could not be
    /// reached and the map names another one now.
    async fn on_slot(&self, slot: u16, cmd: &Cmd) -> RedisResult<Value> {
        let mut redirect: Option<(Node, bool)> = None;
        let mut redirects = 0;
        let mut waits = SETTLE_WAITS.iter();
        loop {
            if redirects > MAX_REDIRECTS {
                return Err(RedisError::from((
                    ErrorKind::Client,
                    "the cluster kept moving the slot",
                    format!("slot {slot}: {MAX_REDIRECTS} redirects without an answer"),
                )));
            }
            let (node, asking) = match redirect.take() {
                Some(redirect) => redirect,
                None => (self.master_for(slot).await?, false),
            };
            let reply = self.send(&node, cmd, asking, !asking).await;
            let refusal = match &reply {
                Ok(Value::ServerError(error)) => error.kind(),
                _ => None,
            };
            match (refusal, &reply) {
                (
                    Some(ServerErrorKind::Moved | ServerErrorKind::Ask),
                    Ok(Value::ServerError(error)),
                ) => {
                    redirects += 1;
                    let target = error
                        .details()
                        .and_then(|d| d.split_ascii_whitespace().nth(1))
                        .and_then(|addr| Node::parse(addr, &node));
                    let Some(target) = target else {
                        return reply;
                    };
                    if refusal == Some(ServerErrorKind::Moved) {
                        self.topology.moved(slot, target.clone());
                        // The whole map likely moved (a failover, a reshard).
                        let _ = self.refresh(REFRESH_EVERY).await;
                        redirect = Some((target, false));
                    } else {
                        redirect = Some((target, true));
                    }
                }
                (
                    Some(
                        ServerErrorKind::TryAgain
                        | ServerErrorKind::ClusterDown
                        | ServerErrorKind::ReadOnly,
                    ),
                    _,
                ) => match waits.next() {
                    Some(wait) => {
                        tokio::time::sleep(*wait).await;
                        let _ = self.refresh(Duration::ZERO).await;
                    }
                    None => return reply,
                },
                (_, Err(error)) if is_not_sent(error) => {
                    // Nothing was sent: when the map now names another
                    // master for the slot, it goes there.
                    let moved_on = self.refresh(REFRESH_EVERY).await.is_ok()
                        && self.topology.master_of(slot).is_some_and(|m| m != node);
                    if !moved_on {
                        return reply;
                    }
                    redirects += 1;
                }
                _ => return reply,
            }
        }
    }

    /// `cmd` on one master: those that answer first (this connection's own
    /// first), the next one when it could not be sent.
    async fn on_any_master(&self, cmd: &Cmd) -> RedisResult<Value> {
        let map = self.map().await?;
        let held = self.held();
        let mut masters = map.masters();
        masters.sort_by_key(|node| (self.topology.is_silent(node), !held.contains(node)));
        let mut last = None;
        for node in masters {
            match self.send(&node, cmd, false, true).await {
                Err(error) if is_not_sent(&error) => last = Some(error),
                reply => return reply,
            }
        }
        Err(last
            .unwrap_or_else(|| RedisError::from((ErrorKind::Client, "the cluster has no master"))))
    }

    /// `cmd` on every master at once, the replies combined; a master that
    /// went silent is not waited for again within [`PROBE_EVERY`].
    async fn on_every_master(&self, cmd: &Cmd, combine: Combine) -> RedisResult<Value> {
        let masters = self.map().await?.masters();
        let mut running = tokio::task::JoinSet::new();
        for (at, node) in masters.iter().enumerate() {
            let (router, node, cmd) = (self.clone(), node.clone(), cmd.clone());
            running.spawn(async move { (at, router.send(&node, &cmd, false, true).await) });
        }
        let mut replies: Vec<Option<RedisResult<Value>>> = masters.iter().map(|_| None).collect();
        while let Some(joined) = running.join_next().await {
            match joined {
                Ok((at, reply)) => replies[at] = Some(reply),
                Err(stopped) => {
                    return Err(RedisError::from((
                        ErrorKind::Client,
                        "a request to a master stopped",
                        stopped.to_string(),
                    )));
                }
            }
        }
        let replies: Vec<(String, RedisResult<Value>)> = masters
            .iter()
            .map(Node::to_string)
            .zip(replies)
            .map(|(node, reply)| (node, reply.unwrap_or(Ok(Value::Nil))))
            .collect();
        combine_replies(replies, combine)
    }

    /// A multi-key command whose keys may lie in several slots: one per slot.
    async fn split(
        &self,
        cmd: &Cmd,
        first: usize,
        step: usize,
        combine: Combine,
    ) -> RedisResult<Value> {
        let words: Vec<Vec<u8>> = command::words(cmd)
            .into_iter()
            .map(<[u8]>::to_vec)
            .collect();
        let (head, tail) = words.split_at(first.min(words.len()));
        let groups: Vec<&[Vec<u8>]> = tail.chunks(step.max(1)).collect();
        let mut by_slot: Vec<(u16, Vec<usize>)> = Vec::new();
        for (at, group) in groups.iter().enumerate() {
            let slot = command::key_slot_of(&group[0]);
            match by_slot.iter_mut().find(|(s, _)| *s == slot) {
                Some((_, members)) => members.push(at),
                None => by_slot.push((slot, vec![at])),
            }
        }
        if by_slot.len() <= 1 {
            let slot = by_slot.first().map(|(slot, _)| *slot);
            return match slot {
                Some(slot) => self.on_slot(slot, cmd).await,
                None => self.on_any_master(cmd).await,
            };
        }
        let mut replies = Vec::with_capacity(by_slot.len());
        for (slot, members) in &by_slot {
            let mut part: Vec<Vec<u8>> = head.to_vec();
            for at in members {
                part.extend(groups[*at].iter().cloned());
            }
            let reply = self.on_slot(*slot, &command::command_of(&part)).await;
            replies.push(reply.and_then(Value::extract_error));
        }
        if combine == Combine::InKeyOrder {
            let mut values = vec![Value::Nil; groups.len()];
            for ((_, members), reply) in by_slot.iter().zip(replies) {
                let Value::Array(parts) = reply? else {
                    return Err(RedisError::from((
                        ErrorKind::Parse,
                        "a multi-key reply is not an array",
                    )));
                };
                for (at, value) in members.iter().zip(parts) {
                    values[*at] = value;
                }
            }
            return Ok(Value::Array(values));
        }
        let parts = by_slot.iter().map(|(slot, _)| format!("slot {slot}"));
        combine_replies(parts.zip(replies).collect(), combine)
    }

    /// A pipeline (or a MULTI/EXEC transaction) sent whole to the one node
    /// its first command goes to.
    pub(crate) async fn run_pipeline(
        &self,
        pipeline: &Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        if let (1, 0, 1) = (pipeline.len(), offset, count)
            && let Some(cmd) = pipeline.cmd_iter().next()
        {
            // One command, packed: routed as one.
            return Ok(vec![self.run(cmd).await?]);
        }
        let first = pipeline.cmd_iter().map(command::words).find(|words| {
            !words
                .first()
                .is_some_and(|w| w.eq_ignore_ascii_case(b"MULTI"))
        });
        let node = match first.as_deref().map(command::destination) {
            Some(Destination::Slot(slot)) => self.master_for(slot).await?,
            Some(Destination::AnyMaster) | None => {
                let map = self.map().await?;
                let masters = map.masters();
                masters
                    .iter()
                    .find(|m| !self.topology.is_silent(m))
                    .or(masters.first())
                    .cloned()
                    .ok_or_else(|| {
                        RedisError::from((ErrorKind::Client, "the cluster has no master"))
                    })?
            }
            Some(_) => {
                return Err(RedisError::from((
                    ErrorKind::Client,
                    "not sent: a pipeline goes whole to one node, and its first command goes to several",
                )));
            }
        };
        self.gate(&node).await?;
        let mut connection = self.connection(&node).await?;
        let replies = connection
            .req_packed_commands(pipeline, offset, count)
            .await;
        self.after(&node, replies)
    }
}

/// A refusal every node of the cluster would give as well: for the
/// credentials (NOPERM, NOAUTH, WRONGPASS, a failed AUTH), or a server with
/// no cluster support at all. (LOADING, say, is one node's.)
fn said_by_every_node(error: &RedisError) -> bool {
    error.kind() == ErrorKind::AuthenticationFailed
        || matches!(error.code(), Some("NOPERM" | "NOAUTH" | "WRONGPASS"))
        || error.to_string().contains("cluster support disabled")
}

/// `CLUSTER SLOTS`.
fn cluster_slots() -> Cmd {
    let mut cmd = redis::cmd("CLUSTER");
    cmd.arg("SLOTS");
    cmd
}

/// The replies of several nodes as one.
fn combine_replies(
    replies: Vec<(String, RedisResult<Value>)>,
    combine: Combine,
) -> RedisResult<Value> {
    if combine == Combine::AnyOk {
        let mut last = None;
        for (_, reply) in replies {
            match reply.and_then(Value::extract_error) {
                Ok(value) => return Ok(value),
                Err(error) => last = Some(error),
            }
        }
        return Err(
            last.unwrap_or_else(|| RedisError::from((ErrorKind::Client, "no node answered")))
        );
    }
    let mut values = Vec::with_capacity(replies.len());
    for (node, reply) in replies {
        values.push((node, reply.and_then(Value::extract_error)?));
    }
    let integer = |value: &Value| -> RedisResult<i64> { Ok(redis::from_redis_value_ref(value)?) };
    Ok(match combine {
        Combine::ByNode => Value::Map(
            values
                .into_iter()
                .map(|(node, value)| (Value::BulkString(node.into_bytes()), value))
                .collect(),
        ),
        Combine::AllOk | Combine::AnyOk => values.pop().map(|(_, v)| v).unwrap_or(Value::Nil),
        Combine::Sum => Value::Int(
            values
                .iter()
                .map(|(_, v)| integer(v))
                .sum::<RedisResult<i64>>()?,
        ),
        Combine::Min => Value::Int(
            values
                .iter()
                .map(|(_, v)| integer(v))
                .collect::<RedisResult<Vec<i64>>>()?
                .into_iter()
                .min()
                .unwrap_or(0),
        ),
        Combine::And => {
            let mut all: Option<Vec<i64>> = None;
            for (_, value) in &values {
                let flags: Vec<i64> =
                    redis::from_redis_value_ref(value).map_err(RedisError::from)?;
                all = Some(match all {
                    None => flags,
                    Some(so_far) => so_far.iter().zip(&flags).map(|(a, b)| a & b).collect(),
                });
            }
            Value::Array(
                all.unwrap_or_default()
                    .into_iter()
                    .map(Value::Int)
                    .collect(),
            )
        }
        Combine::Concat | Combine::InKeyOrder => {
            let mut all = Vec::new();
            for (_, value) in values {
                match value {
                    Value::Array(items) => all.extend(items),
                    other => all.push(other),
                }
            }
            Value::Array(all)
        }
    })
}

impl redis::aio::ConnectionLike for Router {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> redis::RedisFuture<'a, Value> {
        Box::pin(self.run(cmd))
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> redis::RedisFuture<'a, Vec<Value>> {
        Box::pin(self.run_pipeline(pipeline, offset, count))
    }

    fn get_db(&self) -> i64 {
        0
    }
}
