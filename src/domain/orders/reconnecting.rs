//! A Redis connection that owns one rule: after an error, open a fresh
//! connection before the next call.
//!
//! A call that failed (a timeout, a reset, a signal interrupting the read)
//! may leave its reply still on the way: the next command on the same
//! connection would read that stale reply as its own. So every call here
//! goes through [`ReconnectingConn::attempt`], which replaces the connection
//! after a failure, and re-creates the consumer groups it is told about (a
//! stream deleted meanwhile, by `init --yes`, lost its group with it).

use std::sync::atomic::AtomicBool;

use anyhow::Result;

use super::stream;
use super::wire::ReadsStreams;
use crate::model::keys::ItemKeys;
use crate::redis_client::conn::{Conn, RedisTarget};
use crate::redis_client::failure;

/// A connection to `target` that is replaced after any failed call: the
/// ordinary one, or a stream reader (`wire::ReadConn`).
pub(crate) struct ReconnectingConn<'t, C: ReadsStreams = Conn> {
    target: &'t RedisTarget,
    conn: C,
    /// The last call failed (or a fresh start was asked for): reconnect first.
    stale: bool,
    /// Items whose consumer group is re-created after reconnecting.
    groups: Vec<ItemKeys>,
}

impl<'t, C: ReadsStreams> ReconnectingConn<'t, C> {
    /// Wrap `conn`, a working connection to `target`.
    pub(crate) fn new(target: &'t RedisTarget, conn: C) -> ReconnectingConn<'t, C> {
        ReconnectingConn {
            target,
            conn,
            stale: false,
            groups: Vec::new(),
        }
    }

    /// Create the consumer group of each of `items` now and after every reconnect.
    pub(crate) fn with_groups(mut self, items: &[ItemKeys]) -> Result<ReconnectingConn<'t, C>> {
        self.groups = items.to_vec();
        for keys in &self.groups {
            stream::ensure_group(&mut self.conn, keys)?;
        }
        Ok(self)
    }

    /// Run one call; a failure marks the connection stale, so the next
    /// attempt starts on a fresh one.
    pub(crate) fn attempt<T>(&mut self, call: impl FnOnce(&mut C) -> Result<T>) -> Result<T> {
        if self.stale {
            let mut fresh = C::open(self.target)?;
            for keys in &self.groups {
                stream::ensure_group(&mut fresh, keys)?;
            }
            self.conn = fresh;
            self.stale = false;
        }
        let result = call(&mut self.conn);
        self.stale = result.is_err();
        result
    }

    /// [`attempt`](Self::attempt) until it succeeds, with the pipeline's
    /// backoff and stop rules ([`retry`]).
    pub(crate) fn retry<T>(
        &mut self,
        command: &str,
        what: &str,
        stop: &AtomicBool,
        mut call: impl FnMut(&mut C) -> Result<T>,
    ) -> Result<T> {
        failure::retry(command, what, stop, None, || self.attempt(&mut call))
    }

    /// Open a fresh connection before the next call even though nothing
    /// failed (a signal may have cut a read short without an error).
    pub(crate) fn start_afresh(&mut self) {
        self.stale = true;
    }

    /// The connection as it is, for calls that are not retried (their error
    /// ends the command).
    pub(crate) fn conn(&mut self) -> &mut C {
        &mut self.conn
    }
}
