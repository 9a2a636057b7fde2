//! The order pipeline under failure: consumers killed with SIGKILL at random
//! points, a database that is locked or down for a while, SIGTERM during a
//! run. Nothing acked that is not committed; nothing lost; nothing doubled.

use crate::support;

use std::time::Duration;

use mysql::prelude::Queryable;
use rand::Rng;
use support::mariadb::MariaDb;
use support::orders::{
    buy_many, failed_stores, group_state, log_of, orders_key, pending_ids, reconciling, seckill_on,
    sorted, spawn_seckill, sqlite_order_ids, sqlite_path, stop_when_caught_up, stream_ids,
    terminate, two_item_campaign, wait_exit, wait_until,
};
use support::{RedisServer, preheat};

#[test]
fn consumers_killed_at_random_points_lose_and_double_nothing() {
    let server = RedisServer::start();
    let file = two_item_campaign(4000, 4000);
    preheat(&file, &server);
    let mut ok = Vec::new();
    let mut rng = rand::rng();
    for round in 0..4 {
        ok.extend(buy_many(&server, &file, "1001", &format!("a{round}-"), 600));
        ok.extend(buy_many(&server, &file, "1002", &format!("b{round}-"), 300));
        let mut consumer = spawn_seckill(
            &file,
            &server.url(),
            &[],
            &["consume", "--batch", "25"],
            &format!("c{round}"),
        );
        std::thread::sleep(Duration::from_millis(rng.random_range(20..400)));
        consumer.kill().expect("SIGKILL the consumer");
        consumer.wait().expect("reap");
    }
    // The killed consumers' pending entries belong to names that never come
    // back: a fresh consumer drains what is new, pending-claim the rest.
    seckill_on(&file, &server, &["consume", "--drain"]).succeeds();
    seckill_on(&file, &server, &["pending-claim", "--min-idle", "0s"]).succeeds();
    for item in ["1001", "1002"] {
        assert_eq!(
            group_state(&server, &orders_key(item)).0,
            0,
            "nothing left pending on {item}"
        );
    }
    let stored = sqlite_order_ids(&sqlite_path(&file));
    assert_eq!(stored.len(), ok.len(), "one row per ok, no more, no less");
    assert_eq!(stored, sorted(ok));
    reconciling(&file, &server, &[]).succeeds();
}

#[test]
fn a_locked_sqlite_database_gets_nothing_acked_until_it_lets_go() {
    let server = RedisServer::start();
    let file = two_item_campaign(500, 500);
    preheat(&file, &server);
    let path = sqlite_path(&file);
    drop(seckill::domain::orders::sqlite::SqliteStore::open(&path).expect("create the schema"));
    let ok = buy_many(&server, &file, "1001", "a", 200);

    let other_writer = rusqlite::Connection::open(&path).unwrap();
    other_writer.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let mut consumer = spawn_seckill(&file, &server.url(), &[], &["consume"], "locked");
    wait_until("the consumer holds a batch and failed to store it", || {
        group_state(&server, &orders_key("1001")).0 > 0
            && failed_stores(&log_of(&file, "locked")) > 0
    });
    let rows: i64 = other_writer
        .query_row("SELECT COUNT(*) FROM orders", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 0);
    let (pending, delivered, _) = group_state(&server, &orders_key("1001"));
    assert_eq!(
        delivered - pending,
        0,
        "nothing acked while nothing is committed"
    );
    other_writer.execute_batch("ROLLBACK").unwrap();

    stop_when_caught_up(&server, &orders_key("1001"), &mut consumer, &file, "locked");
    assert_eq!(sqlite_order_ids(&path), sorted(ok));
    reconciling(&file, &server, &[]).succeeds();
}

#[test]
fn mariadb_down_for_a_while_then_full_catch_up() {
    let server = RedisServer::start();
    let mut db = MariaDb::start();
    let file = two_item_campaign(500, 500);
    preheat(&file, &server);
    let url = db.url();
    let env = [("SECKILL_ORDERS_DB", url.as_str())];
    let mut consumer = spawn_seckill(
        &file,
        &server.url(),
        &env,
        &["consume", "--batch", "50"],
        "outage",
    );
    let mut ok = buy_many(&server, &file, "1001", "before", 100);
    let count_rows = |db: &MariaDb| -> i64 {
        // The consumer creates the table; until then there is nothing stored.
        db.conn()
            .query_first("SELECT COUNT(*) FROM orders")
            .ok()
            .flatten()
            .unwrap_or(-1)
    };
    // Rows appear when the commit lands, the ack follows once the consumer
    // has the commit's reply. Wait for the acks: stopping the database in
    // between may lose that reply, and the consumer rightly keeps those
    // entries pending and stores them again later (a no-op). Waiting here
    // makes what the consumer holds during the outage exactly what it read
    // during the outage.
    wait_until("the first 100 orders are committed and acked", || {
        group_state(&server, &orders_key("1001")) == (0, 100, 0)
    });
    assert_eq!(count_rows(&db), 100, "every acked order is committed");
    let before = stream_ids(&server, &orders_key("1001"));

    let failed_before_outage = failed_stores(&log_of(&file, "outage"));
    db.stop();
    ok.extend(buy_many(&server, &file, "1001", "during", 100));
    // Two failed attempts on the batch in hand: had a failure led to an
    // ack, the first one would have.
    wait_until("the consumer failed twice to store a batch", || {
        failed_stores(&log_of(&file, "outage")) >= failed_before_outage + 2
    });
    let (pending, delivered, _) = group_state(&server, &orders_key("1001"));
    let held = pending_ids(&server, &orders_key("1001"));
    assert!(pending > 0, "the consumer holds a batch");
    assert_eq!(held.len() as i64, pending);
    let read = &stream_ids(&server, &orders_key("1001"))[..delivered as usize];
    let acked: Vec<&String> = read.iter().filter(|id| !held.contains(id)).collect();
    assert_eq!(
        acked,
        before.iter().collect::<Vec<_>>(),
        "nothing acked while the database is down: acked are exactly the orders committed before"
    );

    db.restart();
    stop_when_caught_up(&server, &orders_key("1001"), &mut consumer, &file, "outage");
    let rows: Vec<String> = db
        .conn()
        .query("SELECT order_id FROM orders ORDER BY order_id")
        .unwrap();
    assert_eq!(rows, sorted(ok));
    assert!(!log_of(&file, "outage").contains(db.password()));
    reconciling(&file, &server, &["--orders-db", &url]).succeeds();
}

#[test]
fn sigterm_finishes_the_batch_in_hand_acks_it_and_exits_0() {
    let server = RedisServer::start();
    let file = two_item_campaign(3000, 3000);
    preheat(&file, &server);
    let ok = buy_many(&server, &file, "1001", "a", 3000);
    let mut consumer = spawn_seckill(
        &file,
        &server.url(),
        &[],
        &["consume", "--batch", "20"],
        "term",
    );
    wait_until("the consumer stored something", || {
        group_state(&server, &orders_key("1001")).1 > 0
    });
    terminate(&consumer);
    let status = wait_exit(&mut consumer);
    assert!(
        status.success(),
        "exit {status:?}: {}",
        log_of(&file, "term")
    );
    let (pending, delivered, _) = group_state(&server, &orders_key("1001"));
    assert_eq!(pending, 0, "everything read was acked before exit");
    let stored = sqlite_order_ids(&sqlite_path(&file));
    assert_eq!(
        stored.len() as i64,
        delivered,
        "everything read was committed"
    );
    assert!(stored.iter().all(|id| ok.contains(id)));
    // The rest is in flight: the books balance.
    reconciling(&file, &server, &[]).succeeds();
}

#[test]
fn reconcile_balances_while_a_consumer_is_storing() {
    let server = RedisServer::start();
    let file = two_item_campaign(3000, 10);
    preheat(&file, &server);
    let ok = buy_many(&server, &file, "1001", "a", 3000);
    let mut consumer = spawn_seckill(
        &file,
        &server.url(),
        &[],
        &["consume", "--batch", "10"],
        "busy",
    );
    // Reconcile checks against the consumer's database: wait until the
    // consumer created it (on a loaded machine it may start after the loop).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !has_schema(&sqlite_path(&file)) {
        assert!(
            std::time::Instant::now() < deadline,
            "the consumer created no database"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Each entry is classified once, the database looked at last: a commit
    // landing mid-check never counts an order twice or not at all.
    let mut checks_during_consume = 0;
    while group_state(&server, &orders_key("1001")).2 > 0 || checks_during_consume == 0 {
        reconciling(&file, &server, &["--item", "1001"]).succeeds();
        checks_during_consume += 1;
    }
    stop_when_caught_up(&server, &orders_key("1001"), &mut consumer, &file, "busy");
    assert_eq!(sqlite_order_ids(&sqlite_path(&file)), sorted(ok));
    reconciling(&file, &server, &[]).succeeds();
}

/// Whether the SQLite file at `path` holds seckill's schema yet.
fn has_schema(path: &std::path::Path) -> bool {
    path.exists()
        && rusqlite::Connection::open(path).is_ok_and(|conn| {
            conn.query_row(
                "SELECT count(*) FROM sqlite_master WHERE name = 'seckill_schema'",
                [],
                |row| row.get::<_, i64>(0),
            )
            .is_ok_and(|n| n > 0)
        })
}

#[test]
fn two_consumers_share_the_group_without_doubling() {
    let server = RedisServer::start();
    let file = two_item_campaign(2000, 2000);
    preheat(&file, &server);
    let mut consumers: Vec<_> = ["one", "two"]
        .iter()
        .map(|name| {
            spawn_seckill(
                &file,
                &server.url(),
                &[],
                &["consume", "--batch", "20"],
                name,
            )
        })
        .collect();
    let mut ok = buy_many(&server, &file, "1001", "a", 1500);
    ok.extend(buy_many(&server, &file, "1002", "b", 500));
    wait_until("both streams delivered and acked", || {
        group_state(&server, &orders_key("1001")) == (0, 1500, 0)
            && group_state(&server, &orders_key("1002")) == (0, 500, 0)
    });
    for (consumer, name) in consumers.iter_mut().zip(["one", "two"]) {
        stop_when_caught_up(&server, &orders_key("1001"), consumer, &file, name);
    }
    assert_eq!(sqlite_order_ids(&sqlite_path(&file)), sorted(ok));
    reconciling(&file, &server, &[]).succeeds();
}
