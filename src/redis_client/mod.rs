//! How seckill talks to Redis: [`conn`] (standalone, cluster, TLS,
//! timeouts, credentials), [`cluster`] (a Redis Cluster, connected only
//! where a command needs it: one hung node stops nothing), [`raw`] (a bare RESP2 connection for the hot paths: the load
//! test, and reading order streams), [`scripts`] (each Lua script's one
//! typed call), [`failure`] (what a failed request means for the one who
//! sent it), [`replicas`] (WAIT after a buy), [`multiplexed`] (the shared
//! async connections of `seckill serve`), [`node`] (the Redis process behind a connection, for
//! the failover fence), [`shard_channels`] (listening to
//! `serve`'s sell-out broadcast) and [`trace`] (`-v`: every command, its
//! node, its time).
//!
//! May import: model, util.

pub(crate) mod cluster;
pub mod conn;
pub(crate) mod failure;
pub(crate) mod multiplexed;
pub mod node;
pub(crate) mod raw;
pub(crate) mod replicas;
pub mod scripts;
pub(crate) mod server;
pub(crate) mod shard_channels;
pub(crate) mod trace;
