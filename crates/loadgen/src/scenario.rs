//! What a scenario gives the engine: how replies are framed on the wire
//! ([`Protocol`]), one state machine per connection that writes requests as
//! bytes and is handed each reply ([`Conversation`]), and what a worker
//! counts ([`Counts`], merged at the end). The engine paces, sends, reads,
//! times and merges; the scenario decides what a request says and what a
//! reply means.
//!
//! Every request is packed before the clock starts (a [`crate::Template`]);
//! a request then costs a copy of its bytes, the few digits that differ
//! overwritten in place, and the parsing of its replies.
//!
//! May import: nothing of the crate.

use std::time::Duration;

use anyhow::Result;

/// How replies are framed on the wire.
pub trait Protocol {
    /// One whole reply, parsed.
    type Reply;

    /// The first whole reply at the front of `input` and the bytes it took;
    /// `None` while it is still arriving.
    fn parse(input: &[u8]) -> Result<Option<(Self::Reply, usize)>>;

    /// Whether the server closes the connection after `reply` (HTTP's
    /// `Connection: close`): the engine opens another before its next use.
    fn closes(_reply: &Self::Reply) -> bool {
        false
    }
}

/// What a connection does after a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Wait for the next reply of the current write (a transaction's `QUEUED`s).
    Pending,
    /// This reply finished the oldest request of the batch.
    Finished,
    /// The request goes on: send what is now in the output buffer, expecting `replies` replies.
    Send { replies: usize },
    /// As `Send`, after a pause (a lock was busy).
    SendAfter { pause: Duration, replies: usize },
}

/// One connection's state machine: it writes a request, is handed each
/// reply, and says what happens next.
pub trait Conversation {
    type Reply;
    type Counts;

    /// Start the requests numbered `requests` (several only when the scenario
    /// pipelines): write them into `out` (empty) and return how many replies
    /// they bring.
    fn begin(&mut self, requests: &[u64], out: &mut Vec<u8>) -> usize;

    /// Take one reply and count what it says into `counts`; a follow-up
    /// command goes into `out` (empty), sent on [`Next::Send`] or
    /// [`Next::SendAfter`]. An error ends the run.
    fn reply(
        &mut self,
        reply: Self::Reply,
        out: &mut Vec<u8>,
        counts: &mut Self::Counts,
    ) -> Result<Next>;

    /// Which of the transport's peers the write in hand goes to (several
    /// servers behind one scenario, e.g. `serve` instances a shopper moves
    /// between); asked before every send. Always 0 with one peer.
    fn peer(&self) -> usize {
        0
    }
}

/// What a worker counts besides latencies; each worker has its own, and
/// the engine merges them when the run ends.
pub trait Counts: Default + Send {
    /// Add another worker's counts to these.
    fn absorb(&mut self, other: Self);
}

/// Nothing counted but latencies.
impl Counts for () {
    fn absorb(&mut self, _other: ()) {}
}

/// A load-test scenario as the engine runs it.
pub trait Scenario: Sync {
    type Protocol: Protocol;
    type Counts: Counts;
    type Conversation: Conversation<Reply = <Self::Protocol as Protocol>::Reply, Counts = Self::Counts>;

    /// A fresh conversation, one per connection.
    fn conversation(&self) -> Self::Conversation;

    /// Requests written at once on one connection (a pipeline); 1 for
    /// conversations of several steps.
    fn batch_limit(&self) -> usize {
        1
    }

    /// Peers the conversations spread over ([`Conversation::peer`]): each
    /// connection opens one socket to each before the clock starts.
    fn peers(&self) -> usize {
        1
    }

    /// Whether a failed connection costs only the requests it carried
    /// (counted in [`crate::Tally::failed`], the connection opened again
    /// before its next use) instead of ending the run.
    fn survives_failures(&self) -> bool {
        false
    }
}

/// The reply type of scenario `S`.
pub type Reply<S> = <<S as Scenario>::Protocol as Protocol>::Reply;
