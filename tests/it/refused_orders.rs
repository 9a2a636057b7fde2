//! One order the database refuses (a trigger, a unique index a DBA added, a
//! column charset) never stalls the pipeline: `consume` stores and acks the
//! rest of its batch and leaves only the refused entry pending; the first
//! `pending-claim` run terminates; after `--max-deliveries` the entry is
//! dead-lettered and `reconcile` counts it there.

use crate::support;

use std::time::Duration;

use redis::Commands;
use seckill::model::exit_codes::{ORDERS_REFUSED, RUNTIME_ERROR, SUCCESS};
use support::mariadb::MariaDb;
use support::orders::{
    buy_many, dead_key, orders_key, reconciling, seckill_on, sqlite_order_ids, sqlite_path,
    two_item_campaign,
};
use support::{RedisServer, preheat};

#[test]
fn a_refused_order_is_isolated_then_dead_lettered_and_nothing_waits_behind_it() {
    let server = RedisServer::start();
    let file = two_item_campaign(100, 100);
    let db = std::cell::OnceCell::new();
    let sqlite = || rusqlite::Connection::open(sqlite_path(&file)).unwrap();
    let rule = |on: bool| {
        let db = db.get_or_init(sqlite);
        db.execute_batch(if on {
            "CREATE TRIGGER no_banned BEFORE INSERT ON orders WHEN NEW.user_id = 'banned0'
             BEGIN SELECT RAISE(ABORT, 'user banned by the fraud team'); END;"
        } else {
            "DROP TRIGGER no_banned"
        })
        .unwrap();
    };
    let rows = || sqlite_order_ids(&sqlite_path(&file)).len();
    refused_order_never_stalls(&server, &file, &[], rule, rows);
}

/// The same on MariaDB: a trigger a DBA added refuses one user's order with SIGNAL.
#[test]
fn a_refused_order_is_isolated_and_dead_lettered_on_mariadb() {
    use mysql::prelude::Queryable;
    let server = RedisServer::start();
    let db = MariaDb::start();
    let url = db.url();
    let file = two_item_campaign(100, 100);
    let conn = std::cell::RefCell::new(db.conn());
    let rule = |on: bool| {
        conn.borrow_mut()
            .query_drop(if on {
                "CREATE TRIGGER no_banned BEFORE INSERT ON orders FOR EACH ROW
                 IF NEW.user_id = 'banned0' THEN
                   SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'user banned by the fraud team';
                 END IF"
            } else {
                "DROP TRIGGER no_banned"
            })
            .unwrap();
    };
    let rows = || {
        let count: Option<i64> = conn
            .borrow_mut()
            .query_first("SELECT COUNT(*) FROM orders")
            .unwrap();
        count.unwrap_or(0) as usize
    };
    refused_order_never_stalls(&server, &file, &["--orders-db", &url], rule, rows);
}

/// One refused order (`rule(true)` adds the refusal, `rule(false)` lifts it):
/// the rest is stored, only it stays pending, `pending-claim` terminates and
/// dead-letters it, `reconcile` counts it, and it is re-driven once lifted.
fn refused_order_never_stalls(
    server: &RedisServer,
    file: &support::CampaignFile,
    extra: &[&str],
    rule: impl Fn(bool),
    rows: impl Fn() -> usize,
) {
    preheat(file, server);
    // Create the schema, then a rule the pipeline does not know about.
    buy_many(server, file, "1001", "first", 1);
    seckill_on(file, server, &["consume", "--drain"])
        .args(extra)
        .succeeds();
    rule(true);
    buy_many(server, file, "1001", "a", 5);
    buy_many(server, file, "1001", "banned", 1);
    buy_many(server, file, "1001", "b", 5);
    buy_many(server, file, "1002", "c", 3);

    let stderr = seckill_on(file, server, &["consume", "--drain", "--batch", "100"])
        .args(extra)
        .within(Duration::from_secs(60))
        .fails_with(ORDERS_REFUSED)
        .stderr();
    assert!(stderr.contains("user banned by the fraud team"), "{stderr}");
    assert_eq!(rows(), 1 + 5 + 5 + 3, "the rest of the batch is stored");
    let pending: redis::streams::StreamPendingReply = server
        .conn()
        .xpending(orders_key("1001"), "orders-db")
        .unwrap();
    assert_eq!(pending.count(), 1, "only the refused entry is left pending");

    // pending-claim terminates on every run; the entry goes to the dead letters.
    let mut dead_lettered = false;
    for _ in 0..6 {
        // Every run the database refuses the order again: it says so (exit 6,
        // the refused column) until the order is dead-lettered.
        let ran = seckill_on(
            file,
            server,
            &["pending-claim", "--min-idle", "0s", "--max-deliveries", "3"],
        )
        .args(extra)
        .json()
        .within(Duration::from_secs(60))
        .fails_with(ORDERS_REFUSED);
        assert_eq!(ran.json()["items"][0]["refused"], 1, "{}", ran.describe());
        let dead: i64 = server.conn().xlen(dead_key("1001")).unwrap();
        if dead == 1 {
            dead_lettered = true;
            break;
        }
    }
    assert!(dead_lettered, "the refused order was never dead-lettered");
    let report = reconciling(file, server, extra).succeeds().json();
    assert_eq!(report["items"][0]["dead_lettered"]["units"], 1);

    // The way back: list with the reason; re-drive is refused while the cause stays.
    let listed = dead_letter(file, server, &["list"], extra)
        .succeeds()
        .json();
    let letters = listed["letters"].as_array().unwrap().clone();
    assert_eq!(letters.len(), 1, "{letters:?}");
    let reason = letters[0]["reason"].as_str().unwrap();
    assert!(reason.contains("user banned"), "{letters:?}");
    // In words: no `MySqlError { … }` of the driver's Rust names.
    assert!(!reason.contains("Error {"), "{letters:?}");
    let order_id = letters[0]["order_id"].as_str().unwrap().to_string();
    let results = dead_letter(file, server, &["redrive"], extra)
        .fails_with(RUNTIME_ERROR)
        .json();
    assert_eq!(results["redriven"][0]["stored"], false);
    let dead: i64 = server.conn().xlen(dead_key("1001")).unwrap();
    assert_eq!(dead, 1, "a refused re-drive must keep the dead letter");

    // The fraud team lifts the ban: re-drive by order id stores it, once.
    rule(false);
    for _ in 0..2 {
        dead_letter(file, server, &["redrive", "--id", &order_id], extra).succeeds();
    }
    let dead: i64 = server.conn().xlen(dead_key("1001")).unwrap();
    assert_eq!(dead, 0);
    assert_eq!(rows(), 1 + 5 + 1 + 5 + 3);
    let report = reconciling(file, server, extra).succeeds().json();
    assert_eq!(report["items"][0]["dead_lettered"]["units"], 0);
    assert_eq!(report["items"][0]["stored"]["units"], 12);
}

/// `dead-letter --format json ARGS EXTRA`, not run yet.
fn dead_letter(
    file: &support::CampaignFile,
    server: &RedisServer,
    args: &[&str],
    extra: &[&str],
) -> support::spec::Run {
    seckill_on(file, server, &["dead-letter"])
        .json()
        .args(args)
        .args(extra)
}

/// A unique index a DBA added (one order per user) refuses a valid order of a
/// user who bought another item: the order must stay pending, never be acked
/// as stored (the store's idempotent insert ignores only a repeated order id).
fn a_unique_index_refusal_stays_pending(
    server: &RedisServer,
    file: &support::CampaignFile,
    extra: &[&str],
    add_index: impl Fn(),
    rows: impl Fn() -> usize,
) {
    preheat(file, server);
    buy_many(server, file, "1001", "dup", 1);
    let consume = |code: i32| {
        seckill_on(file, server, &["consume", "--drain", "--batch", "100"])
            .args(extra)
            .within(Duration::from_secs(60))
            .fails_with(code)
    };
    consume(SUCCESS);
    add_index();
    buy_many(server, file, "1001", "a", 5);
    buy_many(server, file, "1002", "dup", 1);
    buy_many(server, file, "1001", "b", 5);
    consume(ORDERS_REFUSED);
    assert_eq!(rows(), 1 + 5 + 5, "the rest of the batch is stored");
    let pending: redis::streams::StreamPendingReply = server
        .conn()
        .xpending(orders_key("1002"), "orders-db")
        .unwrap();
    assert_eq!(
        pending.count(),
        1,
        "the refused order was acked without being stored"
    );
}

#[test]
fn a_unique_index_refusal_is_not_acked_on_sqlite() {
    let server = RedisServer::start();
    let file = two_item_campaign(100, 100);
    let path = sqlite_path(&file);
    let add_index = || {
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute_batch("CREATE UNIQUE INDEX one_order_per_user ON orders (user_id)")
            .unwrap();
    };
    let rows = || sqlite_order_ids(&path).len();
    a_unique_index_refusal_stays_pending(&server, &file, &[], add_index, rows);
}

#[test]
fn a_unique_index_refusal_is_not_acked_on_mariadb() {
    use mysql::prelude::Queryable;
    let server = RedisServer::start();
    let db = MariaDb::start();
    let url = db.url();
    let file = two_item_campaign(100, 100);
    let add_index = || {
        db.conn()
            .query_drop("CREATE UNIQUE INDEX one_order_per_user ON orders (user_id)")
            .unwrap();
    };
    let rows = || {
        let count: Option<i64> = db
            .conn()
            .query_first("SELECT COUNT(*) FROM orders")
            .unwrap();
        count.unwrap_or(0) as usize
    };
    a_unique_index_refusal_stays_pending(&server, &file, &["--orders-db", &url], add_index, rows);
}

/// A bucketed item (docs/buckets.md) has a stream per bucket: the refused
/// order stays pending in its own bucket's stream, never acked unstored.
#[test]
fn a_refused_order_of_a_bucketed_item_stays_pending_in_its_buckets_stream() {
    use crate::support::spec::{campaign, seckill};
    use seckill::model::layout::Layout;
    let server = RedisServer::start();
    let file = campaign("rb").item("1", 20).buckets(2).write();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let buy = |user: &str| {
        seckill(&["buy", "--item", "1", "--user", user])
            .campaign(&file)
            .redis(&server)
            .succeeds();
    };
    buy("first");
    let drain = |code: i32| {
        seckill(&["consume", "--drain"])
            .campaign(&file)
            .redis(&server)
            .within(Duration::from_secs(60))
            .fails_with(code)
            .stderr()
    };
    drain(SUCCESS);
    rusqlite::Connection::open(sqlite_path(&file))
        .unwrap()
        .execute_batch(
            "CREATE TRIGGER no_banned BEFORE INSERT ON orders WHEN NEW.user_id = 'banned0'
             BEGIN SELECT RAISE(ABORT, 'user banned by the fraud team'); END;",
        )
        .unwrap();
    for user in ["a0", "banned0", "b0", "c0"] {
        buy(user);
    }
    let stderr = drain(ORDERS_REFUSED);
    assert!(stderr.contains("user banned by the fraud team"), "{stderr}");
    assert_eq!(
        sqlite_order_ids(&sqlite_path(&file)).len(),
        4,
        "the rest is stored"
    );
    let layout = Layout::new("seckill", "rb", "1", 2);
    let mut conn = server.conn();
    let mut pending = |key: &str| -> usize {
        let reply: redis::streams::StreamPendingReply = conn.xpending(key, "orders-db").unwrap();
        reply.count()
    };
    let home = layout.home("banned0").keys.orders;
    assert_eq!(
        pending(&home),
        1,
        "the refused entry stays pending in {home}"
    );
    let other = layout.bucket(1 - layout.home("banned0").bucket).keys.orders;
    assert_eq!(pending(&other), 0, "{other}");
}

/// A bucketed item's dead letters sit in its buckets' dead-letter streams:
/// `dead-letter list` shows them, `redrive` stores them once the cause is
/// gone, and an id that is no dead letter is refused, not ignored.
#[test]
fn a_bucketed_items_dead_letters_are_listed_and_redriven() {
    let server = RedisServer::start();
    let file = crate::support::spec::campaign("c")
        .item("1", 40)
        .buckets(4)
        .write();
    preheat(&file, &server);
    let run = |args: &[&str]| seckill_on(&file, &server, args);
    for user in ["a", "b", "banned"] {
        run(&["buy", "--item", "1", "--user", user]).succeeds();
    }
    run(&["consume", "--drain"]).succeeds();
    let db = rusqlite::Connection::open(file.dir.path().join("orders.db")).unwrap();
    db.execute("DELETE FROM orders WHERE user_id = 'banned'", [])
        .unwrap();
    db.execute_batch(
        "CREATE TRIGGER no_banned BEFORE INSERT ON orders WHEN NEW.user_id = 'banned'
         BEGIN SELECT RAISE(ABORT, 'banned'); END;",
    )
    .unwrap();
    // The banned user's order again, pending in its bucket's stream.
    run(&["buy", "--item", "1", "--user", "banned2"]).succeeds();
    db.execute_batch(
        "DROP TRIGGER no_banned;
         CREATE TRIGGER no_banned BEFORE INSERT ON orders WHEN NEW.user_id = 'banned2'
         BEGIN SELECT RAISE(ABORT, 'banned'); END;",
    )
    .unwrap();
    run(&["consume", "--drain"]).fails_with(ORDERS_REFUSED);
    run(&["pending-claim", "--min-idle", "0s", "--max-deliveries", "1"]).fails_with(ORDERS_REFUSED);
    let listed = dead_letter(&file, &server, &["list"], &[])
        .succeeds()
        .json();
    let letters = listed["letters"].as_array().expect("letters");
    assert_eq!(letters.len(), 1, "{listed}");
    let letter = &letters[0];
    assert!(
        letter["stream"].as_str().unwrap().contains(":1:b"),
        "a bucket's dead-letter stream: {letter}"
    );
    assert!(letter["deliveries"].is_u64(), "{letter}");
    let order = letter["order_id"].as_str().unwrap().to_string();
    dead_letter(&file, &server, &["redrive", "--id", "no-such-letter"], &[])
        .fails_with(seckill::model::exit_codes::USAGE_ERROR);
    db.execute_batch("DROP TRIGGER no_banned").unwrap();
    let redriven = dead_letter(&file, &server, &["redrive", "--item", "1"], &[])
        .succeeds()
        .json();
    assert_eq!(redriven["redriven"][0]["stored"], true, "{redriven}");
    assert_eq!(redriven["redriven"][0]["order_id"], order.as_str());
    let left = dead_letter(&file, &server, &["list"], &[])
        .succeeds()
        .json();
    assert_eq!(left["letters"].as_array().unwrap().len(), 0, "{left}");
}
