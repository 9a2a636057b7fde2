//! Multiplexed async connections, for `seckill serve`: one connection per
//! standalone Redis shared by every request in flight (their commands are
//! pipelined on it, in the order they were sent), or on a cluster one
//! [`Router`] (one multiplexed connection per master, opened when a request
//! first needs it; MOVED and promotions followed, a master that stopped
//! answering waited out without holding requests: `redis_client::cluster`).
//!
//! The operations are written once, blocking (`domain::operation`); serve
//! runs each on a blocking worker with a `conn::SharedConn`, through which every
//! command still goes over the shared connection, pipelined with those of
//! every other request in flight, while the worker waits for its own reply.
//! An attempt that is one script call (a plain item's buy) is sent from the
//! request's own task through [`SharedAsync`] instead: no hand-off to a
//! blocking worker and back, which cost more than the call itself
//! (docs/perf.md).
//!
//! What a failure means for the one who sent the request is kept apart: a
//! connection that could not be made is [`NotSent`] (nothing reached Redis,
//! a new attempt is safe); a connection that broke under a request may have
//! delivered it (the caller says "outcome unknown"), and is replaced for the
//! requests after it — never reused, since it may still owe replies.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::{Cmd, Pipeline, RedisFuture, RedisResult, Value};

use super::cluster::Router;
use super::conn::{RedisTarget, SharedConn, SharedRoute, not_a_cluster_node};
use super::node::{RunId, filled_in, run_id_on};
use super::trace;

/// A connection could not be made: nothing was sent, a new attempt is safe.
#[derive(Debug)]
pub(crate) struct NotSent;

impl std::fmt::Display for NotSent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("nothing was sent")
    }
}

impl std::error::Error for NotSent {}

/// The shared connection(s) to one Redis target.
pub(crate) struct Multiplexed {
    target: RedisTarget,
    shared: Shared,
}

enum Shared {
    Standalone {
        /// The connection in use and its generation (which connection a
        /// failed request ran on, so only that one is replaced).
        current: Mutex<Option<(u64, MultiplexedConnection, RunId)>>,
        /// One reconnect at a time: the requests waiting for it share it.
        connecting: tokio::sync::Mutex<()>,
        generations: AtomicU64,
    },
    Cluster(Router),
}

/// One request's handle on the shared connection (cheap to clone).
#[derive(Clone)]
pub(crate) struct Handle {
    generation: u64,
    inner: HandleInner,
}

#[derive(Clone)]
enum HandleInner {
    Standalone(MultiplexedConnection, RunId),
    Cluster(Router),
}

impl Multiplexed {
    /// Connect now (a cluster: its slot map, from the first seed that
    /// answers; standalone: one connection, then PING), so a serve that
    /// cannot reach its Redis says so at start.
    pub(crate) async fn connect(target: &RedisTarget) -> Result<Multiplexed> {
        let shared = if let Some(topology) = target.topology() {
            let router = Router::new(topology);
            router.map().await.with_context(|| {
                format!(
                    "cannot connect to the Redis Cluster at {} ({})",
                    target.display, target.source
                )
            })?;
            Shared::Cluster(router)
        } else {
            let (first, run_id) = open(target).await?;
            Shared::Standalone {
                current: Mutex::new(Some((0, first, run_id))),
                connecting: tokio::sync::Mutex::new(()),
                generations: AtomicU64::new(1),
            }
        };
        Ok(Multiplexed {
            target: target.clone(),
            shared,
        })
    }

    /// A handle for one request; `Err` (with [`NotSent`] in its chain) when
    /// no connection can be made.
    pub(crate) async fn handle(&self) -> Result<Handle> {
        let (current, connecting, generations) = match &self.shared {
            Shared::Cluster(connection) => {
                return Ok(Handle {
                    generation: 0,
                    inner: HandleInner::Cluster(connection.clone()),
                });
            }
            Shared::Standalone {
                current,
                connecting,
                generations,
            } => (current, connecting, generations),
        };
        if let Some(handle) = standalone_handle(current) {
            return Ok(handle);
        }
        let _one_at_a_time = connecting.lock().await;
        if let Some(handle) = standalone_handle(current) {
            return Ok(handle);
        }
        let (connection, run_id) = open(&self.target).await.map_err(|e| e.context(NotSent))?;
        let generation = generations.fetch_add(1, Ordering::Relaxed);
        *current.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((generation, connection.clone(), run_id.clone()));
        Ok(Handle {
            generation,
            inner: HandleInner::Standalone(connection, run_id),
        })
    }

    /// A request on the connection of `generation` failed with `error`: when the connection
    /// itself broke (or a reply is overdue, so replies may now be out of
    /// step), the next request gets a new one. The cluster client replaces
    /// its own connections.
    fn failed(&self, generation: u64, error: &redis::RedisError) {
        let Shared::Standalone { current, .. } = &self.shared else {
            return;
        };
        if !(error.is_io_error() || error.is_timeout() || error.is_connection_dropped()) {
            return;
        }
        let mut current = current.lock().unwrap_or_else(|e| e.into_inner());
        if current
            .as_ref()
            .is_some_and(|(current, _, _)| *current == generation)
        {
            *current = None;
        }
    }
}

fn standalone_handle(
    current: &Mutex<Option<(u64, MultiplexedConnection, RunId)>>,
) -> Option<Handle> {
    let current = current.lock().unwrap_or_else(|e| e.into_inner());
    current
        .as_ref()
        .map(|(generation, connection, run_id)| Handle {
            generation: *generation,
            inner: HandleInner::Standalone(connection.clone(), run_id.clone()),
        })
}

/// One multiplexed connection with the target's timeouts, checked by PING,
/// and the run_id of the process behind it (the fence's, `redis_client::node`).
async fn open(target: &RedisTarget) -> Result<(MultiplexedConnection, RunId)> {
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(target.connect_timeout()))
        .set_response_timeout(Some(target.response_timeout()));
    let described = || {
        format!(
            "cannot connect to Redis at {} ({})",
            target.display, target.source
        )
    };
    let mut connection = target
        .standalone_client()
        .with_context(described)?
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .with_context(described)?;
    redis::cmd("PING")
        .query_async::<()>(&mut connection)
        .await
        .with_context(described)?;
    let run_id = run_id_on(&mut connection).await;
    Ok((connection, run_id))
}

impl ConnectionLike for Handle {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match &mut self.inner {
            HandleInner::Standalone(c, _) => c.req_packed_command(cmd),
            HandleInner::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match &mut self.inner {
            HandleInner::Standalone(c, _) => c.req_packed_commands(pipeline, offset, count),
            HandleInner::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match &self.inner {
            HandleInner::Standalone(c, _) => c.get_db(),
            HandleInner::Cluster(c) => c.get_db(),
        }
    }
}

impl Multiplexed {
    /// One request's blocking view of the shared connection through
    /// `handle` (taken with [`Multiplexed::handle`] before the request
    /// starts, so a connection that cannot be made is [`NotSent`]), for a
    /// blocking worker of `runtime`: a command whose connection broke has the
    /// connection replaced for the requests after it.
    pub(crate) fn blocking(
        self: &Arc<Self>,
        handle: Handle,
        runtime: tokio::runtime::Handle,
    ) -> SharedConn {
        let shared = Arc::clone(self);
        let generation = handle.generation;
        let on_error = move |error: &redis::RedisError| {
            shared.failed(generation, error);
        };
        let route = match handle.inner {
            HandleInner::Standalone(c, run_id) => SharedRoute::Standalone(c, run_id),
            HandleInner::Cluster(c) => SharedRoute::Cluster(c),
        };
        SharedConn::new(route, runtime, Box::new(on_error))
    }
}

/// One request's async view of the shared connection, for the request's own
/// task: what [`Multiplexed::blocking`] is to a blocking worker — each
/// command traced (`-v`), a node's MOVED on a standalone URL explained, and a
/// command whose connection broke has the connection replaced for the
/// requests after it.
pub(crate) struct SharedAsync {
    shared: Arc<Multiplexed>,
    handle: Handle,
}

impl Multiplexed {
    /// One request's async view through `handle` (taken with
    /// [`Multiplexed::handle`] before the request starts, so a connection
    /// that cannot be made is [`NotSent`]).
    pub(crate) fn asynchronous(self: &Arc<Self>, handle: Handle) -> SharedAsync {
        SharedAsync {
            shared: Arc::clone(self),
            handle,
        }
    }
}

impl SharedAsync {
    /// A reply in: failures reported to the shared connection, the trace finished.
    fn settled<T>(&self, traced: Option<trace::Traced>, reply: RedisResult<T>) -> RedisResult<T> {
        trace::finish(traced, &reply);
        if let Err(error) = &reply {
            self.shared.failed(self.handle.generation, error);
        }
        reply
    }
}

impl ConnectionLike for SharedAsync {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let traced = trace::command(None, cmd);
            let reply = match &mut self.handle.inner {
                // The inherent call: the trait's would box a second future.
                HandleInner::Standalone(c, run_id) => {
                    let filled = filled_in(cmd, run_id);
                    c.send_packed_command(filled.as_ref().unwrap_or(cmd))
                        .await
                        .and_then(not_a_cluster_node)
                }
                HandleInner::Cluster(c) => c.run(cmd).await,
            };
            self.settled(traced, reply)
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let reply = self
                .handle
                .req_packed_commands(pipeline, offset, count)
                .await;
            self.settled(None, reply)
        })
    }

    fn get_db(&self) -> i64 {
        self.handle.get_db()
    }
}
