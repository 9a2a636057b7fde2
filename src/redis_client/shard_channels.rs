//! Listening on shard channels (`SSUBSCRIBE`, Redis 7.0+): what `serve`
//! hears the sell-out broadcast with (docs/serve.md, "Cheap refusals").
//!
//! A shard channel lives in a slot, like a key, and is served by that
//! slot's master alone: a channel named like a key of an item's slot is
//! published on inside that slot's scripts (a script may publish only on a
//! channel of its own slot, on a cluster) and heard on a connection to the
//! slot's master. A standalone Redis serves every slot. So [`listen`] opens
//! one connection per master the channels live on, sends one `SSUBSCRIBE`
//! per channel (a cluster refuses channels of two slots in one), and
//! returns once every subscription is confirmed — on a cluster, only on a
//! node that says itself it is the master of those slots.
//!
//! Why not redis-rs's own (1.8.1, read in its source): its blocking
//! `PubSub` has no `SSUBSCRIBE` and reads a RESP2 `smessage` as nothing;
//! only its async cluster client subscribes to shard channels, and seckill
//! routes cluster commands itself (`cluster`). A blocking redis-rs
//! connection speaking RESP3 does: messages and confirmations come as
//! pushes, which its reader never takes for a late reply.
//!
//! A listener must notice a connection that died silently (a partition, a
//! master that froze): each quiet `tick` it asks again for one of its
//! channels (an idempotent `SSUBSCRIBE`, whose confirmation is a push), and
//! a tick with no answer to the previous one ends the listener. So does a
//! `sunsubscribe` push (the slot moved to another master) and a closed
//! connection (`CLIENT KILL`, a restart): the caller listens again. A
//! master that died cannot say whose its slots are now: the shared slot
//! map heals when a command for those slots meets the dead node (`serve`'s
//! recheck reads every item's stock through it), and the next attempt to
//! listen finds the promoted replica.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use redis::{PushKind, Value};

use crate::redis_client::cluster::command::key_slot_of;
use crate::redis_client::cluster::{Node, SlotMap};
use crate::redis_client::conn::{Conn, RedisTarget};

/// One connection subscribed to the channels its master serves.
pub(crate) struct Listener {
    conn: redis::Connection,
    /// `host:port`, for messages.
    node: String,
    /// Asked again each quiet tick: the connection's heartbeat.
    heartbeat: String,
    /// A heartbeat was sent and nothing has come since.
    awaiting: bool,
}

/// Where a group of channels is listened to: a cluster node (`host`,
/// `port`), or the target's Redis (`None`).
type At = Option<(String, u16)>;

/// Most times a group of channels follows a node's own slot map to another
/// node before the attempt fails (and is made again later).
const MAX_HOPS: usize = 5;

/// Listeners for `channels`: one per master they live on (a standalone
/// Redis: one), each subscribed to its channels, `tick` its heartbeat. On a
/// cluster the first guess is the connection layer's slot map, which may
/// lag a failover: a node that is not the master of a group's slots says
/// whose they are (its own `CLUSTER SLOTS`), and the group goes there.
pub(crate) fn listen(
    target: &RedisTarget,
    channels: &[String],
    tick: Duration,
) -> Result<Vec<Listener>> {
    let mut pending: Vec<(At, Vec<String>)> = match target.cluster() {
        true => {
            let conn = target.connect()?;
            let Conn::Cluster(cluster) = &conn else {
                bail!("a cluster target gave a standalone connection");
            };
            let mut by_node: BTreeMap<At, Vec<String>> = BTreeMap::new();
            for channel in channels {
                let slot = key_slot_of(channel.as_bytes());
                let master = cluster
                    .master_of(slot)
                    .ok_or_else(|| anyhow!("no master serves slot {slot} (channel {channel})"))?;
                let (host, port) = master
                    .rsplit_once(':')
                    .and_then(|(host, port)| Some((host, port.parse::<u16>().ok()?)))
                    .ok_or_else(|| anyhow!("cannot read the node address {master}"))?;
                let host = host.trim_start_matches('[').trim_end_matches(']');
                by_node
                    .entry(Some((host.to_string(), port)))
                    .or_default()
                    .push(channel.clone());
            }
            by_node.into_iter().collect()
        }
        false => vec![(None, channels.to_vec())],
    };
    let mut listeners = Vec::new();
    let mut hops = 0;
    while let Some((at, channels)) = pending.pop() {
        let shown = match &at {
            Some((host, port)) => Node::new(host.clone(), *port).to_string(),
            None => target.display.clone(),
        };
        let subscribed = subscribe(target, &at, shown.clone(), &channels, tick)
            .with_context(|| format!("cannot subscribe to the sell-out broadcast at {shown}"))?;
        match subscribed {
            Ok(listener) => listeners.push(listener),
            Err(its_map) if hops < MAX_HOPS => {
                hops += 1;
                let mut by_node: BTreeMap<At, Vec<String>> = BTreeMap::new();
                for channel in channels {
                    let slot = key_slot_of(channel.as_bytes());
                    let master = its_map.master_of(slot).ok_or_else(|| {
                        anyhow!("no master serves slot {slot} (channel {channel})")
                    })?;
                    by_node
                        .entry(Some((master.host.clone(), master.port)))
                        .or_default()
                        .push(channel);
                }
                pending.extend(by_node);
            }
            Err(_) => bail!("the slots of the sell-out broadcast's channels kept moving"),
        }
    }
    Ok(listeners)
}

/// One connection to `at`, subscribed to `channels`; on a cluster node that
/// is not the master of every channel's slot, nothing is subscribed and
/// its own slot map is returned instead. A replica takes `SSUBSCRIBE` for
/// its master's slots (Redis 7), but a master demoted by a failover passed
/// none of the new master's messages on (measured on 7.0.15).
fn subscribe(
    target: &RedisTarget,
    at: &At,
    shown: String,
    channels: &[String],
    tick: Duration,
) -> Result<Result<Listener, SlotMap>> {
    let node = at.as_ref().map(|(host, port)| (host.as_str(), *port));
    let client = target.resp3_client(node)?;
    let mut conn = client.get_connection_with_timeout(target.connect_timeout())?;
    conn.set_write_timeout(Some(target.response_timeout()))?;
    conn.set_read_timeout(Some(target.response_timeout()))?;
    if let Some((host, port)) = at {
        let me = Node::new(host.clone(), *port);
        let reply: Value = redis::cmd("CLUSTER").arg("SLOTS").query(&mut conn)?;
        let its_map = SlotMap::parse(&reply, &me).map_err(|e| anyhow!(e))?;
        let mine = channels
            .iter()
            .all(|channel| its_map.master_of(key_slot_of(channel.as_bytes())) == Some(&me));
        if !mine {
            return Ok(Err(its_map));
        }
    }
    let mut pipe = Vec::new();
    for channel in channels {
        pipe.extend(redis::cmd("SSUBSCRIBE").arg(channel).get_packed_command());
    }
    conn.send_packed_command(&pipe)?;
    let mut confirmed = 0;
    while confirmed < channels.len() {
        match conn.recv_response()? {
            Value::Push {
                kind: PushKind::SSubscribe,
                ..
            } => confirmed += 1,
            Value::ServerError(error) => bail!("SSUBSCRIBE refused: {error}"),
            _ => {}
        }
    }
    conn.set_read_timeout(Some(tick))?;
    Ok(Ok(Listener {
        conn,
        node: shown,
        heartbeat: channels.first().cloned().unwrap_or_default(),
        awaiting: false,
    }))
}

impl Listener {
    /// The channel of the next message, `None` after a quiet tick (a
    /// heartbeat then asked); `Err` when the subscription is lost.
    pub(crate) fn next(&mut self) -> Result<Option<String>> {
        loop {
            let value = match self.conn.recv_response() {
                Ok(value) => value,
                Err(error) if error.is_timeout() => {
                    if self.awaiting {
                        bail!("{} did not answer the subscription's heartbeat", self.node);
                    }
                    let heartbeat = redis::cmd("SSUBSCRIBE")
                        .arg(&self.heartbeat)
                        .get_packed_command();
                    self.conn.send_packed_command(&heartbeat)?;
                    self.awaiting = true;
                    return Ok(None);
                }
                Err(error) => {
                    return Err(anyhow::Error::new(error)
                        .context(format!("the subscription at {} broke", self.node)));
                }
            };
            self.awaiting = false;
            match value {
                Value::Push {
                    kind: PushKind::SMessage,
                    data,
                } => {
                    let channel = data
                        .first()
                        .and_then(|c| redis::from_redis_value_ref::<String>(c).ok())
                        .unwrap_or_default();
                    return Ok(Some(channel));
                }
                Value::Push {
                    kind: PushKind::SUnsubscribe,
                    ..
                } => bail!("{} ended the subscription (its slots moved)", self.node),
                Value::ServerError(error) => {
                    bail!("{} refused the subscription: {error}", self.node)
                }
                _ => {}
            }
        }
    }
}
