//! Which failures of the order database are worth waiting out.
//!
//! Opening the database retries a server that is starting, restarting or
//! briefly unreachable (refused, reset, timed out, too many connections, a
//! locked SQLite file) and gives up at once on what waiting cannot fix: a
//! wrong password, an unknown database, a SQLite path that is a directory.
//! An error nobody recognises counts as permanent: an operator reading it
//! now beats a command that retries it for the whole patience window.

use std::io::ErrorKind;

/// True when the first cause we recognise in `error`'s chain is a passing one.
pub(crate) fn is_transient(error: &anyhow::Error) -> bool {
    error
        .chain()
        .find_map(|cause| {
            if let Some(io) = cause.downcast_ref::<std::io::Error>() {
                Some(io_kind_is_transient(io.kind()))
            } else if let Some(mysql) = cause.downcast_ref::<mysql::Error>() {
                Some(mysql_is_transient(mysql))
            } else {
                cause
                    .downcast_ref::<rusqlite::Error>()
                    .map(sqlite_is_transient)
            }
        })
        .unwrap_or(false)
}

fn io_kind_is_transient(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::ConnectionRefused
            | ErrorKind::ConnectionReset
            | ErrorKind::ConnectionAborted
            | ErrorKind::NotConnected
            | ErrorKind::BrokenPipe
            | ErrorKind::TimedOut
            | ErrorKind::Interrupted
            | ErrorKind::WouldBlock
            | ErrorKind::UnexpectedEof
            | ErrorKind::HostUnreachable
            | ErrorKind::NetworkUnreachable
            | ErrorKind::NetworkDown
    )
}

/// Server error codes that say "not now" rather than "never".
const MYSQL_TRANSIENT_CODES: &[u16] = &[
    1040, // ER_CON_COUNT_ERROR: too many connections
    1053, // ER_SERVER_SHUTDOWN: server shutdown in progress
    1205, // ER_LOCK_WAIT_TIMEOUT
    1213, // ER_LOCK_DEADLOCK
    1927, // ER_CONNECTION_KILLED
    2002, // CR_CONNECTION_ERROR
    2003, // CR_CONN_HOST_ERROR
    2006, // CR_SERVER_GONE_ERROR
    2013, // CR_SERVER_LOST
];

fn mysql_is_transient(error: &mysql::Error) -> bool {
    use mysql::DriverError;
    match error {
        mysql::Error::IoError(io) => io_kind_is_transient(io.kind()),
        mysql::Error::CodecError(_) => true,
        mysql::Error::MySqlError(server) => MYSQL_TRANSIENT_CODES.contains(&server.code),
        mysql::Error::DriverError(driver) => match driver {
            DriverError::ConnectTimeout | DriverError::Timeout => true,
            DriverError::CouldNotConnect(Some((_, _, kind))) => io_kind_is_transient(*kind),
            DriverError::CouldNotConnect(None) => true,
            _ => false,
        },
        _ => false,
    }
}

fn sqlite_is_transient(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// How long opening the order database waits out transient errors.
pub(crate) const OPEN_PATIENCE: std::time::Duration = std::time::Duration::from_secs(20);

/// Run a database call until it succeeds ([`crate::util::retry::retry_while`]),
/// retrying transient errors only ([`is_transient`]): any other error is
/// returned at once, since waiting would not fix it.
pub(crate) fn retry_until<T>(
    command: &str,
    what: &str,
    stop: &std::sync::atomic::AtomicBool,
    deadline: Option<std::time::Instant>,
    attempt: impl FnMut() -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    crate::util::retry::retry_while(command, what, stop, deadline, is_transient, attempt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_is_transient_and_a_directory_is_not() {
        let refused = anyhow::Error::new(std::io::Error::from(ErrorKind::ConnectionRefused))
            .context("cannot connect");
        assert!(is_transient(&refused));
        let dir = std::env::temp_dir();
        let opened = rusqlite::Connection::open(&dir)
            .and_then(|c| c.execute_batch("PRAGMA journal_mode=WAL"));
        let error = anyhow::Error::new(opened.expect_err("a directory is no database"));
        assert!(!is_transient(&error.context("cannot open")));
        assert!(!is_transient(&anyhow::anyhow!("something nobody knows")));
    }
}
