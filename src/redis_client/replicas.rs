//! `--wait-replicas`: after a buy, WAIT until N replicas confirmed it.
//!
//! WAIT counts only the writes made earlier *on the connection it is sent
//! on*, and only on the server that receives it; it does not block inside a
//! script. So it must follow the buy on the very connection the buy used, to
//! the node that ran it. On a standalone Redis that is the one connection.
//! On a cluster redis-rs routes a keyless WAIT to every master (aggregating
//! the minimum), so here it is routed explicitly to the master of the slot
//! of a key the buy wrote: the cluster connection keeps one connection per
//! node, the same one the buy script went through.
//!
//! A bucketed item's buy may write on several nodes: the home bucket (the
//! order, the stock, the buyer) and, when it swept, the buckets it debited
//! by transfer or settled. A transfer's debit lost in a failover would put
//! its units back on sale in the source bucket while the home bucket keeps
//! them too, so every node the attempt may have written to is waited on and
//! the smallest count decides. A node this connection wrote nothing to
//! answers at once (nothing of ours to wait for).
//!
//! Limits. The masters are waited on one after the other, so a bucketed buy
//! that swept may wait up to `--wait-timeout` per master. redis-rs's cluster
//! client retries a command whose connection dropped on a fresh connection
//! to the same address; a WAIT retried that way counts that connection's
//! writes (none) and answers with the replicas connected there. That needs
//! the master's connection to break between the buy and its WAIT and the
//! same address to answer again within the client's retries; `reconcile`
//! remains the proof. A WAIT that outlasts the reply timeout is refused up
//! front ([`check_timeout`]), so a slow WAIT is never retried that way.

use std::time::Duration;

use crate::redis_client::conn::Conn;
use anyhow::{Context, Result};

/// The WAIT command: `replicas` confirmations, at most `timeout`.
fn wait_command(replicas: u32, timeout: Duration) -> redis::Cmd {
    let mut cmd = redis::cmd("WAIT");
    cmd.arg(replicas).arg(timeout.as_millis().max(1) as u64);
    cmd
}

/// WAIT after a buy that wrote to the slots of `written_keys` (one key per
/// slot is enough); returns the fewest replicas any of those nodes confirmed.
pub(crate) fn wait_after_buy(
    conn: &mut Conn,
    written_keys: &[&str],
    replicas: u32,
    timeout: Duration,
) -> Result<i64> {
    let cmd = wait_command(replicas, timeout);
    if !conn.is_cluster() {
        return cmd.query(conn).context("WAIT for replicas failed");
    }
    let mut slots: Vec<u16> = written_keys
        .iter()
        .map(|key| crate::model::layout::key_slot(key))
        .collect();
    slots.sort_unstable();
    slots.dedup();
    let mut fewest = i64::MAX;
    for slot in slots {
        let reply = conn
            .on_slot_master(&cmd, slot)
            .with_context(|| format!("WAIT for replicas failed on the master of slot {slot}"))?;
        let acked: i64 = redis::from_redis_value(reply)
            .with_context(|| format!("WAIT on the master of slot {slot} answered oddly"))?;
        fewest = fewest.min(acked);
    }
    Ok(if fewest == i64::MAX { 0 } else { fewest })
}

/// Refuse a WAIT that would outlast the reply timeout: the client would give
/// up on WAIT's answer: the outcome of the buy before it would read as unknown.
pub(crate) fn check_timeout(wait_timeout: Duration, response_timeout: Duration) -> Result<()> {
    if wait_timeout >= response_timeout {
        return Err(crate::model::error::usage(format!(
            "--wait-timeout {} must be shorter than --response-timeout {}: \
             the reply to WAIT arrives only after the wait",
            humantime::format_duration(wait_timeout),
            humantime::format_duration(response_timeout)
        )));
    }
    Ok(())
}

/// The replicas attached to the master of `key`'s slot (`INFO replication`,
/// `connected_slaves`), then WAIT for all of them on the connection that
/// wrote: `(confirmed, attached)`. A transfer between regions credits the
/// peer only when every replica confirmed its debit (docs/regions.md), so
/// no promotion can forget a debit whose units were already credited.
pub(crate) fn wait_for_every_replica(
    conn: &mut Conn,
    key: &str,
    timeout: Duration,
) -> Result<(i64, i64)> {
    let slot = crate::model::layout::key_slot(key);
    let mut info = redis::cmd("INFO");
    info.arg("replication");
    let reply = conn
        .on_slot_master(&info, slot)
        .with_context(|| format!("INFO replication failed on the master of {key}"))?;
    let text: String = redis::from_redis_value(reply)
        .with_context(|| format!("INFO replication of the master of {key} answered oddly"))?;
    let attached = attached_replicas(&text);
    if attached == 0 {
        return Ok((0, 0));
    }
    let reply = conn
        .on_slot_master(&wait_command(attached as u32, timeout), slot)
        .with_context(|| format!("WAIT for replicas failed on the master of {key}"))?;
    let acked: i64 = redis::from_redis_value(reply)
        .with_context(|| format!("WAIT on the master of {key} answered oddly"))?;
    Ok((acked, attached))
}

/// `connected_slaves:N` of an `INFO replication` reply (0 when absent).
fn attached_replicas(info: &str) -> i64 {
    info.lines()
        .find_map(|line| line.strip_prefix("connected_slaves:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}
