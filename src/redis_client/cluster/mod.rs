//! Redis Cluster (`--cluster`): connected only where a command needs it,
//! so one hung node stops nothing but the commands for its own slots, and
//! those only until the cluster promotes its replica.
//!
//! - **Connect**: the slot map (`CLUSTER SLOTS`) is read from the first seed
//!   that answers; a seed that takes the TCP connection and never answers
//!   (SIGSTOP, a partition, a long fork) delays it by 200 ms, as the next
//!   seed is asked meanwhile. Nothing else is connected then.
//! - **Only masters, only when needed**: a command goes to the master of its
//!   key's slot (or to any master, or to every master, [`command`]), whose
//!   connection is opened on first use with both timeouts and a PING.
//!   Replicas are never connected: a frozen replica is never waited on.
//! - **A master that does not answer** (a reply overdue, a connection that
//!   cannot be made or broke) is named in the error and marked silent: the
//!   map is then read again (from a master that answers, at most every
//!   250 ms) before each command for its slots, so once the cluster has
//!   promoted its replica the next command goes there; until then it is
//!   asked a PING at most once a second (500 ms to answer; if it does, it is
//!   trusted again) and its commands are refused at once, unsent
//!   ([`crate::redis_client::failure::NotSentTo`]), instead of each waiting
//!   out `--response-timeout`.
//! - **MOVED/ASK** are followed; TRYAGAIN, CLUSTERDOWN and READONLY (a
//!   failover settling) are sent again after 50..800 ms waits — each of them
//!   proves the command did not run. A reply lost after sending is never
//!   sent again here: whether it ran is the caller's to say.
//!
//! Why not redis-rs's own cluster clients (1.8.1, read in its source and
//! measured on a 3+3 cluster with SIGSTOP): the blocking `ClusterConnection`
//! connects to every node of the map, replicas included (`refresh_slots`
//! walks `slots.values().flatten()`), one after another, each within the
//! connection timeout, at connect and after every MOVED; a timed-out
//! command is sent again at once to the same node on the same connection
//! (up to 16 times) and never refreshes the map. The async
//! `cluster_async::ClusterConnection` connects to every node too (all
//! seeds, then every node of the map, replicas included, holding the lock
//! every request needs), and a timeout is retried at the same node without
//! refreshing the map, so after a promotion it keeps sending to the frozen
//! master until it wakes and answers MOVED. No setting changes either
//! (`read_routing_strategy` only adds replicas; there is no lazy
//! connection, no refresh on timeout), and its routing table is private, so
//! [`command`] holds the part of it seckill's commands need. The per-node
//! connections are redis-rs's own (`MultiplexedConnection`).

mod blocking;
pub(crate) mod command;
mod router;
mod slots;

pub use blocking::ClusterConn;
pub(crate) use router::{Router, Topology};
pub(crate) use slots::{Node, SlotMap};
