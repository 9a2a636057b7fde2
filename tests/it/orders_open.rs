//! Opening the order database: permanent errors (wrong password, unknown
//! database, a SQLite path that is a directory) fail at once, without the
//! retries that wait out a database that is still starting.

use crate::support::mariadb::MariaDb;
use crate::support::orders::{preheat, two_item_campaign};
use crate::support::{RedisServer, seckill};

/// Run `consume --drain` against `orders_db`; returns (exit code, stderr).
fn consume_into(orders_db: &str) -> (Option<i32>, String) {
    let server = RedisServer::start();
    let file = two_item_campaign(5, 5);
    preheat(&file, &server);
    let output = seckill(&file.path, &server.url())
        .args(["consume", "--drain", "--orders-db", orders_db])
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Failed at once: an error naming `cause`, no retry log line.
fn assert_failed_at_once((code, stderr): (Option<i32>, String), cause: &str) {
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains(cause), "expected {cause:?} in:\n{stderr}");
    assert!(stderr.contains("not retried"), "{stderr}");
    assert!(
        !stderr.contains("retrying"),
        "a permanent error was retried:\n{stderr}"
    );
    assert_eq!(stderr.matches("seckill: error:").count(), 1, "{stderr}");
}

#[test]
fn a_wrong_password_or_unknown_database_fails_at_once() {
    let db = MariaDb::start();
    let url = db.url();
    let wrong_password = url.replace(db.password(), "not-the-password");
    let outcome = consume_into(&wrong_password);
    assert!(!outcome.1.contains("not-the-password"), "{}", outcome.1);
    assert_failed_at_once(outcome, "Access denied");

    // As root (no password on the test server), so the database's absence,
    // not a missing grant, is what the server reports.
    let (_, host_port) = url.rsplit_once('@').unwrap();
    let (host_port, _) = host_port.split_once('/').unwrap();
    assert_failed_at_once(
        consume_into(&format!("mysql://root@{host_port}/no_such_database")),
        "Unknown database",
    );
}

#[test]
fn a_sqlite_path_that_is_a_directory_fails_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().display());
    assert_failed_at_once(consume_into(&url), "unable to open database file");
}
