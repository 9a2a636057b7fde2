//! What every request of `seckill serve` shares ([`App`]: the campaign, the
//! Redis connections, the cache, the metrics, the in-flight limit) and the
//! one way a handler runs an operation on Redis ([`App::on_redis`]; a buy
//! that is one script call runs on its own task through
//! [`App::shared_async`]).

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::cache::Cache;
use super::metrics::Metrics;
use super::ticket_room::Tickets;
use crate::domain::operation::{Failure, FailureKind, Retry};
use crate::domain::waiting_room::ticket::RoomSecret;
use crate::model::campaign::Campaign;
use crate::redis_client::conn::{Conn, RedisTarget};
use crate::redis_client::multiplexed::{Multiplexed, NotSent, SharedAsync};

/// How `serve` runs.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) listen: SocketAddr,
    /// Requests answered at once; beyond: 503 with `Retry-After`.
    pub(crate) max_in_flight: usize,
    /// A client must send its request headers within this.
    pub(crate) header_timeout: Duration,
    /// ... and its body within this.
    pub(crate) body_timeout: Duration,
    /// After SIGTERM, requests in flight get this long to finish.
    pub(crate) shutdown_grace: Duration,
    /// How often the cache re-reads each item's state (the bound on a
    /// cached refusal outliving units that came back).
    pub(crate) recheck: Duration,
    /// `--wait-replicas N` and its timeout, as in `seckill buy`.
    pub(crate) wait_replicas: Option<(u32, Duration)>,
    /// The operator endpoints' bearer token; `None`: they are off.
    pub(crate) operator_token: Option<Vec<u8>>,
    /// The operator endpoints' own Redis credential (`--operator-redis`);
    /// `None`: they use the door's.
    pub(crate) operator_redis: Option<RedisTarget>,
    /// Threads answering HTTP.
    pub(crate) workers: usize,
    /// The ticket rooms' secret (`--room-key-file`).
    pub(crate) room_secret: Option<RoomSecret>,
}

/// Shared by every request.
pub(crate) struct App {
    pub(crate) campaign: Campaign,
    pub(crate) target: RedisTarget,
    pub(crate) settings: Settings,
    pub(crate) cache: Cache,
    /// The seat items' sections as the seat page shows them (`seats`).
    pub(crate) seat_pages: super::seat_pages::SeatPages,
    /// The campaign's ticket rooms, answered from memory (`None`: none).
    pub(crate) tickets: Option<Tickets>,
    /// The shared async connection(s) the operations' commands go through.
    pub(crate) redis: Arc<Multiplexed>,
    /// The operator endpoints' shared connection, with their own credential
    /// (`--operator-redis`); `None`: they use `redis`.
    pub(crate) operator: Option<(RedisTarget, Arc<Multiplexed>)>,
    /// Connections of their own: WAIT after a buy, the cache's refresh, probes.
    pub(crate) pool: Pool,
    pub(crate) permits: Arc<tokio::sync::Semaphore>,
    pub(crate) draining: AtomicBool,
    /// Whether the cache's last refresh reached Redis (`seckill_redis_up`:
    /// a scrape reads it, never waits on Redis itself).
    pub(crate) redis_up: AtomicBool,
    pub(crate) metrics: Metrics,
    pub(crate) answered: AtomicU64,
    /// Attempts this instance is running: (item, user, request id).
    pub(crate) running: Mutex<HashSet<(String, String, String)>>,
}

/// Blocking Redis connections, one per worker thread at a time.
pub(crate) struct Pool {
    pub(crate) target: RedisTarget,
    pub(crate) idle: Mutex<Vec<Conn>>,
}

impl Pool {
    /// Run `call` on an idle connection (or a new one: when none can be
    /// made, the error says [`NotSent`]); a connection whose call failed is
    /// dropped, never reused (it may still owe a reply).
    pub(crate) fn with<T, E>(
        &self,
        unreachable: impl FnOnce(anyhow::Error) -> E,
        call: impl FnOnce(&mut Conn) -> Result<T, E>,
    ) -> Result<T, E> {
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut conn = match idle {
            Some(conn) => conn,
            None => self
                .target
                .connect()
                .map_err(|e| unreachable(e.context(NotSent)))?,
        };
        let result = call(&mut conn);
        if result.is_ok() {
            self.idle
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(conn);
        }
        result
    }
}

impl App {
    /// Run `operation` on a blocking worker with a connection: the shared
    /// one, its commands pipelined with those of every request in flight;
    /// or, with `own`, one nobody else writes on (WAIT counts the writes of
    /// its own connection). `retry` says how the client may try again when
    /// the connection fails.
    pub(crate) async fn on_redis<T: Send + 'static>(
        self: &Arc<Self>,
        own: bool,
        retry: Retry,
        operation: impl FnOnce(&App, &mut Conn) -> Result<T, Failure> + Send + 'static,
    ) -> Result<T, Failure> {
        let shared = (!own).then(|| Arc::clone(&self.redis));
        self.run_on(shared, self.target.display.clone(), retry, operation)
            .await
    }

    /// The shared connection for an operation run on the request's own task,
    /// with no blocking worker (a buy that is one script call): a handle
    /// taken now, so no connection means `NotSent`.
    pub(crate) async fn shared_async(&self, retry: Retry) -> Result<SharedAsync, Failure> {
        let handle = self
            .redis
            .handle()
            .await
            .map_err(|error| Failure::of(error, &self.target.display, retry))?;
        Ok(self.redis.asynchronous(handle))
    }

    /// [`App::on_redis`] for the operator endpoints: on their own
    /// credential's shared connection (`--operator-redis`), else the door's.
    pub(crate) async fn on_operator_redis<T: Send + 'static>(
        self: &Arc<Self>,
        retry: Retry,
        operation: impl FnOnce(&App, &mut Conn) -> Result<T, Failure> + Send + 'static,
    ) -> Result<T, Failure> {
        let (at, shared) = match &self.operator {
            Some((target, redis)) => (target.display.clone(), Arc::clone(redis)),
            None => (self.target.display.clone(), Arc::clone(&self.redis)),
        };
        self.run_on(Some(shared), at, retry, operation).await
    }

    /// Where the operator endpoints' Redis is, for their messages.
    pub(crate) fn operator_display(&self) -> &str {
        match &self.operator {
            Some((target, _)) => &target.display,
            None => &self.target.display,
        }
    }

    /// Run `operation` on a blocking worker: on `shared` (a handle taken
    /// first, so no connection means `NotSent`), or on a pooled connection
    /// of its own when `None`; Redis at `at` for messages.
    async fn run_on<T: Send + 'static>(
        self: &Arc<Self>,
        shared: Option<Arc<Multiplexed>>,
        at: String,
        retry: Retry,
        operation: impl FnOnce(&App, &mut Conn) -> Result<T, Failure> + Send + 'static,
    ) -> Result<T, Failure> {
        let failed = {
            let (at, retry) = (at.clone(), retry.clone());
            move |error: anyhow::Error| Failure::of(error, &at, retry)
        };
        let shared = match shared {
            Some(redis) => {
                let handle = redis.handle().await.map_err(failed.clone())?;
                Some((redis, handle))
            }
            None => None,
        };
        let app = Arc::clone(self);
        let worker = tokio::task::spawn_blocking(move || match shared {
            Some((redis, handle)) => {
                let runtime = tokio::runtime::Handle::current();
                let mut conn = Conn::Shared(redis.blocking(handle, runtime));
                operation(&app, &mut conn)
            }
            None => app.pool.with(failed, |conn| operation(&app, conn)),
        });
        worker.await.unwrap_or_else(|_| {
            Err(Failure {
                kind: FailureKind::Unknown,
                at,
                cause: anyhow::anyhow!("the request's worker stopped"),
                retry,
            })
        })
    }
}
