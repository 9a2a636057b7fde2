//! What a failed Redis request means for the one who sent it: did it run?
//!
//! A buy must never be retried blindly, nor reported "unknown" when Redis
//! said plainly that it did nothing. Redis refuses a command before running
//! it for a known set of reasons (authentication, permissions, memory, a busy
//! script, a replica, a cluster in transition, loading, a missing script):
//! such a reply proves nothing ran, so a new attempt is safe. Only an I/O
//! error or timeout after the request was sent leaves the outcome unknown.

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use redis::{ErrorKind, RedisError};

/// Error codes with which Redis refuses a command without running any of it.
pub(crate) const NOT_EXECUTED_CODES: &[&str] = &[
    "NOAUTH",
    "WRONGPASS",
    "NOPERM",
    "OOM",
    "BUSY",
    "READONLY",
    "TRYAGAIN",
    "CLUSTERDOWN",
    "MASTERDOWN",
    "LOADING",
    "NOSCRIPT",
    "MOVED",
    "ASK",
    "CROSSSLOT",
];

/// What a failed request tells about its effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Redis refused it before running anything (the code, e.g. `NOPERM`).
    NotExecuted(String),
    /// The request may have run: the connection failed or timed out after sending.
    Unknown,
    /// Redis ran it and reported an error (e.g. a script error).
    Failed,
}

/// Classify one redis-rs error.
pub(crate) fn classify(error: &RedisError) -> Failure {
    if error.is_io_error() || error.is_timeout() || error.is_connection_dropped() {
        return Failure::Unknown;
    }
    if error.kind() == ErrorKind::AuthenticationFailed {
        return Failure::NotExecuted("NOAUTH".into());
    }
    match error.code() {
        Some(code) if NOT_EXECUTED_CODES.contains(&code) => Failure::NotExecuted(code.to_string()),
        _ => Failure::Failed,
    }
}

/// True when Redis refused for who is asking (no or wrong password, an ACL
/// without the command or key): waiting and reconnecting cannot fix that, so
/// loops that wait out a restarting server (consume, expire, pending-claim)
/// must end at once instead of retrying until they are killed. A script that
/// meets an ACL refusal inside raises Redis's own "can't run this command".
pub(crate) fn refused_for_credentials(error: &anyhow::Error) -> bool {
    find(error).is_some_and(|redis| {
        matches!(classify(redis), Failure::NotExecuted(code) if matches!(code.as_str(), "NOAUTH" | "WRONGPASS" | "NOPERM"))
            || redis.to_string().contains("can't run this command")
    })
}

/// True when waiting (on a fresh connection) may fix a failed call: no
/// answer in time, a connection refused, reset or dropped, or Redis refusing
/// for a state that passes (LOADING, BUSY, OOM, a failover's READONLY,
/// MASTERDOWN, CLUSTERDOWN, TRYAGAIN, a redirect). False for a refusal for
/// who is asking ([`refused_for_credentials`]), for a command Redis ran and
/// answered with an error (a script that met a corrupt value: the same call
/// meets the same value again), and for a reply that does not parse.
pub(crate) fn transient(error: &anyhow::Error) -> bool {
    if refused_for_credentials(error) {
        return false;
    }
    match find(error) {
        Some(redis) => classify(redis) != Failure::Failed,
        None => error
            .chain()
            .any(|cause| cause.downcast_ref::<std::io::Error>().is_some()),
    }
}

/// Run a Redis call until it succeeds ([`crate::util::retry::retry_while`]),
/// giving up at once on a refusal no wait can fix ([`refused_for_credentials`])
/// and, with a `deadline`, once it has passed.
pub(crate) fn retry<T>(
    command: &str,
    what: &str,
    stop: &AtomicBool,
    deadline: Option<Instant>,
    attempt: impl FnMut() -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    crate::util::retry::retry_while(
        command,
        what,
        stop,
        deadline,
        |error| !refused_for_credentials(error),
        attempt,
    )
}

/// Why a command never left this process: no connection to its node could
/// be made, or the node had stopped answering and was being waited out (a
/// cluster master before its replica's promotion). Nothing reached Redis.
#[derive(Debug)]
pub(crate) struct NotSentTo {
    /// `host:port` of the node.
    pub(crate) node: String,
    /// What happened, in the operator's words.
    pub(crate) why: String,
}

impl std::fmt::Display for NotSentTo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (nothing was sent to {})", self.why, self.node)
    }
}

impl std::error::Error for NotSentTo {}

/// The redis-rs error of a command not sent to `node`, because `why`: an
/// I/O error (`NotConnected`) that carries [`NotSentTo`], so its callers
/// still see a connection failure and [`was_not_sent`] can tell it apart
/// from a reply lost after sending.
pub(crate) fn not_sent_error(node: impl std::fmt::Display, why: impl Into<String>) -> RedisError {
    RedisError::from(std::io::Error::new(
        std::io::ErrorKind::NotConnected,
        NotSentTo {
            node: node.to_string(),
            why: why.into(),
        },
    ))
}

/// Whether this redis-rs error says the command was never sent ([`not_sent_error`]).
pub(crate) fn is_not_sent(error: &RedisError) -> bool {
    not_sent_to(error).is_some()
}

/// The [`NotSentTo`] of a redis-rs error made by [`not_sent_error`].
pub(crate) fn not_sent_to(error: &RedisError) -> Option<&NotSentTo> {
    // redis-rs keeps the I/O error behind an `Arc<dyn Error>`, which is what
    // `source()` shows.
    type Shared = std::sync::Arc<dyn std::error::Error + Send + Sync>;
    std::error::Error::source(error)
        .and_then(|source| source.downcast_ref::<Shared>())
        .and_then(|shared| shared.downcast_ref::<std::io::Error>())
        .and_then(|io| io.get_ref())
        .and_then(|inner| inner.downcast_ref::<NotSentTo>())
}

/// Whether the first redis-rs error of `error` says nothing was sent.
pub fn was_not_sent(error: &anyhow::Error) -> bool {
    find(error).is_some_and(is_not_sent)
}

/// The first redis-rs error in an error chain, if any.
pub(crate) fn find(error: &anyhow::Error) -> Option<&RedisError> {
    error
        .chain()
        .find_map(|cause| cause.downcast_ref::<RedisError>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_are_unknown() {
        let io = RedisError::from(std::io::Error::new(std::io::ErrorKind::TimedOut, "t"));
        assert_eq!(classify(&io), Failure::Unknown);
        assert!(!is_not_sent(&io));
    }

    #[test]
    fn a_command_never_sent_says_so_and_names_its_node() {
        let error = not_sent_error("10.0.0.7:7001", "the master stopped answering 2s ago");
        assert!(is_not_sent(&error));
        assert!(was_not_sent(
            &anyhow::Error::new(error.clone()).context("cannot buy")
        ));
        let text = error.to_string();
        assert!(text.contains("10.0.0.7:7001"), "{text}");
        assert!(text.contains("nothing was sent"), "{text}");
    }
}
