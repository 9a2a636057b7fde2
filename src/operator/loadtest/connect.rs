//! How the load test reaches Redis, connected by `redis_client`: a
//! standalone plain-TCP Redis gets sockets (`RawConnection`: AUTH and
//! SELECT done, socket timeouts cleared — the engine's event loop gives up
//! by itself when Redis stops answering); TLS, Unix-socket and Cluster
//! targets get one blocking redis-rs connection per worker, which routes
//! each call to the master of its slot and carries the response timeout.
//! And, on a cluster, how many commands each master processed.
//!
//! Within loadtest it uses: nothing.

use std::collections::VecDeque;

use anyhow::{Context, Result, anyhow};
use redis::{ConnectionLike, Value};
use seckill_loadgen::{BlockingLink, Transport};

use crate::redis_client::conn::{Conn, RedisTarget};
use crate::redis_client::raw::RawConnection;

/// A redis-rs connection, one request (or pipelined batch) at a time.
struct RedisLink {
    conn: Conn,
    display: String,
}

impl BlockingLink<Value> for RedisLink {
    fn round_trip(
        &mut self,
        packed: &[u8],
        replies: usize,
        into: &mut VecDeque<Value>,
    ) -> Result<()> {
        let failed = || format!("Redis at {} failed", self.display);
        if replies == 1 {
            into.push_back(self.conn.req_packed_command(packed).with_context(failed)?);
        } else {
            let values = self
                .conn
                .req_packed_commands(packed, 0, replies)
                .with_context(failed)?;
            into.extend(values);
        }
        Ok(())
    }
}

/// Call `run` with the transport that reaches `target`.
pub(crate) fn with_transport<T>(
    target: &RedisTarget,
    run: impl FnOnce(Transport<'_, Value>) -> T,
) -> T {
    match target.plain_tcp() {
        Some(plain) => {
            let socket = |_peer: usize| {
                // Setup (AUTH, SELECT) gives up after the response timeout too.
                let connection = RawConnection::connect(
                    &plain,
                    target.connect_timeout(),
                    target.response_timeout(),
                )?;
                Ok(connection.into_stream())
            };
            run(Transport::Sockets(&socket))
        }
        None => {
            let link = || -> Result<Box<dyn BlockingLink<Value>>> {
                Ok(Box::new(RedisLink {
                    conn: target.connect()?,
                    display: target.display.clone(),
                }))
            };
            run(Transport::Blocking(&link))
        }
    }
}

/// Commands processed so far by each master, `(address, count)`.
pub(crate) type CommandCounts = Vec<(String, u64)>;

/// Commands processed so far by each master (`INFO stats`), on a cluster only.
pub(crate) fn master_commands(conn: &mut Conn) -> Result<Option<CommandCounts>> {
    let Conn::Cluster(cluster) = conn else {
        return Ok(None);
    };
    let routing = redis::cluster_routing::RoutingInfo::MultiNode((
        redis::cluster_routing::MultipleNodeRoutingInfo::AllMasters,
        None,
    ));
    let reply = cluster
        .route_command(redis::cmd("INFO").arg("stats"), routing)
        .context("cannot read INFO stats from the cluster's masters")?;
    let Value::Map(nodes) = reply else {
        return Err(anyhow!("INFO stats on every master answered {reply:?}"));
    };
    let mut counts = Vec::new();
    for (node, info) in nodes {
        let node: String = redis::from_redis_value(node).context("a node address")?;
        let info: String = redis::from_redis_value(info).context("INFO stats text")?;
        let processed = info
            .lines()
            .find_map(|line| line.strip_prefix("total_commands_processed:"))
            .and_then(|n| n.trim().parse().ok())
            .with_context(|| format!("no total_commands_processed in INFO stats of {node}"))?;
        counts.push((node, processed));
    }
    counts.sort();
    Ok(Some(counts))
}
