//! `-q/--quiet` for cron: success prints nothing, drift and refusals still do,
//! and the exit code never changes.

use crate::support::RedisServer;
use crate::support::spec::{campaign, seckill};

use seckill::model::exit_codes::{DRIFT_FOUND, DUPLICATE};

#[test]
fn quiet_success_is_silent_and_drift_still_speaks() {
    let server = RedisServer::start();
    let file = campaign("q").item("1", 3).named("Bottle").write();
    let run = |args: &[&str]| seckill(args).campaign(&file).redis(&server);
    assert_eq!(run(&["-q", "preheat"]).succeeds().stdout(), "");
    run(&["buy", "--item", "1", "--user", "a", "--quiet"]).succeeds();
    assert_eq!(run(&["consume", "--drain", "-q"]).succeeds().stdout(), "");
    assert_eq!(run(&["reconcile", "-q"]).succeeds().stdout(), "");
    // A refused outcome is not a success: it prints, quiet or not.
    let text = run(&["buy", "--item", "1", "--user", "a", "-q"])
        .fails_with(DUPLICATE)
        .stdout();
    assert!(text.contains("duplicate"), "{text}");
    // Drift prints the order ids, quiet or not.
    let () = redis::cmd("SET")
        .arg(seckill::model::keys::ItemKeys::live("q", "1").stock)
        .arg(1)
        .query(&mut server.conn())
        .unwrap();
    let text = run(&["reconcile", "-q"]).fails_with(DRIFT_FOUND).stdout();
    assert!(!text.is_empty());
}

/// Orders the database refused are an outcome, like drift: `consume` and
/// `pending-claim` show them in a column of their own, exit 6
/// (`orders_refused`), and `-q` does not hide them.
#[test]
fn refused_orders_are_a_column_and_an_exit_code_even_when_quiet() {
    use seckill::model::exit_codes::ORDERS_REFUSED;
    let server = RedisServer::start();
    let file = campaign("q").item("1", 10).named("Bottle").write();
    let run = |args: &[&str]| seckill(args).campaign(&file).redis(&server);
    run(&["preheat"]).succeeds();
    run(&["buy", "--item", "1", "--user", "first"]).succeeds();
    run(&["consume", "--drain", "-q"]).succeeds();
    rusqlite::Connection::open(file.dir.path().join("orders.db"))
        .unwrap()
        .execute_batch(
            "CREATE TRIGGER no_banned BEFORE INSERT ON orders WHEN NEW.user_id = 'banned'
             BEGIN SELECT RAISE(ABORT, 'user banned by the fraud team'); END;",
        )
        .unwrap();
    for user in ["a", "banned", "b"] {
        run(&["buy", "--item", "1", "--user", user]).succeeds();
    }
    let ran = run(&["consume", "--drain", "-q"])
        .columns(80)
        .fails_with(ORDERS_REFUSED);
    let table = ran.stdout();
    assert!(table.contains("refused by the database"), "{table}");
    let row = table.lines().find(|l| l.starts_with("│ 1 ")).unwrap();
    let cells: Vec<&str> = row.split(['│', '┆']).map(str::trim).collect();
    assert_eq!(cells[1..4], ["1", "2", "1"], "item, stored, refused: {row}");
    // -q silences the log lines; the table and the exit code say it.
    assert_eq!(ran.stderr(), "", "{}", ran.describe());
    let ran = run(&["consume", "--drain"])
        .json()
        .fails_with(ORDERS_REFUSED);
    assert!(
        ran.stderr().contains("1 refused by the database"),
        "{}",
        ran.describe()
    );
    let json = ran.json();
    assert_eq!(json["refused"], 1);
    assert_eq!(json["items"][0]["refused"], 1);

    let ran = run(&["pending-claim", "--min-idle", "0s", "-q"]).fails_with(ORDERS_REFUSED);
    let table = ran.stdout();
    assert!(table.contains("refused by"), "{table}");
    let row = table.lines().find(|l| l.starts_with("│ 1 ")).unwrap();
    let cells: Vec<&str> = row.split(['│', '┆']).map(str::trim).collect();
    assert_eq!(
        cells[1..6],
        ["1", "1", "0", "1", "0"],
        "item, claimed, stored, refused, dead-lettered: {row}"
    );
}
