//! Opening the order database: permanent errors (wrong password, unknown
//! database, a SQLite path that is a directory) fail at once, without the
//! retries that wait out a database that is still starting. A reader
//! (`reconcile`) never creates the schema: a database without it is "not
//! checked" (exit 1), where it used to get the tables and report every order
//! missing (exit 3).

use seckill::model::exit_codes::RUNTIME_ERROR;

use crate::support::mariadb::MariaDb;
use crate::support::orders::{buy_many, seckill_on, two_item_campaign};
use crate::support::{RedisServer, preheat};

/// Run `consume --drain` against `orders_db`: it fails (exit 1); returns its stderr.
fn consume_into(orders_db: &str) -> String {
    let server = RedisServer::start();
    let file = two_item_campaign(5, 5);
    preheat(&file, &server);
    seckill_on(
        &file,
        &server,
        &["consume", "--drain", "--orders-db", orders_db],
    )
    .fails_with(RUNTIME_ERROR)
    .stderr()
}

/// Failed at once: an error naming `cause`, no retry log line.
fn assert_failed_at_once(stderr: String, cause: &str) {
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
    let stderr = consume_into(&wrong_password);
    assert!(!stderr.contains("not-the-password"), "{stderr}");
    assert_failed_at_once(stderr, "Access denied");

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

/// Reconcile against a database without the seckill schema, while Redis
/// holds orders: exit 1 saying so, and the database is left as it was.
fn reconcile_without_schema(orders_db: &str) -> String {
    let server = RedisServer::start();
    let file = two_item_campaign(5, 5);
    preheat(&file, &server);
    assert_eq!(buy_many(&server, &file, "1001", "a", 3).len(), 3);
    let ran = seckill_on(&file, &server, &["reconcile", "--orders-db", orders_db])
        .json()
        .fails_with(RUNTIME_ERROR);
    let report = ran.json();
    assert_eq!(
        report["error"]["kind"],
        "runtime_error",
        "{}",
        ran.describe()
    );
    let error = report["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(error.contains("no seckill schema"), "{}", ran.describe());
    assert!(error.contains("seckill consume"), "{}", ran.describe());
    assert!(
        report.get("items").is_none(),
        "no order was called missing: {}",
        ran.describe()
    );
    error
}

#[test]
fn reconcile_on_an_empty_mariadb_is_not_checked_and_creates_no_tables() {
    use mysql::prelude::Queryable;
    let db = MariaDb::start();
    let error = reconcile_without_schema(&db.url());
    assert!(!error.contains(db.password()), "{error}");
    let tables: Vec<String> = db.conn().query("SHOW TABLES").unwrap();
    assert!(tables.is_empty(), "reconcile created {tables:?}");
}

#[test]
fn reconcile_on_an_empty_sqlite_file_is_not_checked_and_leaves_it_empty() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("orders.db");
    std::fs::write(&path, b"").unwrap();
    reconcile_without_schema(&format!("sqlite://{}", path.display()));
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        0,
        "reconcile wrote to the file"
    );
}
