//! [`ClusterConn`]: the blocking face of a [`Router`] for the commands of
//! the command line (and `serve`'s pooled connections): each call runs the
//! router's future on a one-thread runtime of the connection's own.

use std::sync::Arc;

use redis::cluster_routing::RoutingInfo;
use redis::{Cmd, ConnectionLike, RedisError, RedisResult, Value};

use super::command::{self, Destination};
use super::router::{Router, Topology};

/// A blocking connection to a Redis Cluster.
pub struct ClusterConn {
    /// `None` only while dropping (shut down in the background: a
    /// connection dropped inside an async context must not block it).
    runtime: Option<tokio::runtime::Runtime>,
    router: Router,
}

impl ClusterConn {
    /// A connection to the cluster of `topology`, its slot map read (from
    /// the first seed or master that answers).
    pub(crate) fn open(topology: Arc<Topology>) -> RedisResult<ClusterConn> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(RedisError::from)?;
        let router = Router::new(topology);
        runtime.block_on(router.map())?;
        Ok(ClusterConn {
            runtime: Some(runtime),
            router,
        })
    }

    fn block_on<T>(&self, future: impl Future<Output = T>) -> T {
        match &self.runtime {
            Some(runtime) => runtime.block_on(future),
            None => unreachable!("the runtime goes only when the connection is dropped"),
        }
    }

    /// `cmd` sent where `routing` says (redis-rs's words: every master, a
    /// node by address, any one); a replica is never asked.
    pub fn route_command(&mut self, cmd: &Cmd, routing: RoutingInfo) -> RedisResult<Value> {
        let destination = command::destination_of(&routing, &command::words(cmd));
        self.block_on(self.router.run_to(cmd, destination))
    }

    /// `cmd` on the master of `slot`.
    pub(crate) fn on_slot(&mut self, cmd: &Cmd, slot: u16) -> RedisResult<Value> {
        self.block_on(self.router.run_to(cmd, Destination::Slot(slot)))
    }

    /// The master of `slot` in the map as last read (for the trace).
    pub(crate) fn master_of(&self, slot: u16) -> Option<String> {
        self.router
            .topology()
            .master_of(slot)
            .map(|node| node.to_string())
    }
}

impl Drop for ClusterConn {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl ConnectionLike for ClusterConn {
    fn req_command(&mut self, cmd: &Cmd) -> RedisResult<Value> {
        self.block_on(self.router.run(cmd))
    }

    fn req_packed_command(&mut self, bytes: &[u8]) -> RedisResult<Value> {
        let commands = command::unpack(bytes);
        let [words] = commands.as_slice() else {
            return Err(RedisError::from((
                redis::ErrorKind::Client,
                "not sent: one packed command expected",
            )));
        };
        self.req_command(&command::command_of(words))
    }

    fn req_packed_commands(
        &mut self,
        bytes: &[u8],
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        let pipeline = command::pipeline_of(&command::unpack(bytes));
        self.block_on(self.router.run_pipeline(&pipeline, offset, count))
    }

    fn get_db(&self) -> i64 {
        0
    }

    fn supports_pipelining(&self) -> bool {
        true
    }

    fn check_connection(&mut self) -> bool {
        let mut ping = Cmd::new();
        ping.arg("PING");
        self.req_command(&ping).is_ok()
    }

    fn is_open(&self) -> bool {
        true
    }
}
