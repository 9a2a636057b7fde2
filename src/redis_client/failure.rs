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
    }
}
