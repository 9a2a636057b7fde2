//! A database that hiccups is not a database that refuses: when a batch
//! insert fails with a passing error (here a real InnoDB lock wait timeout,
//! MySQL error 1205) while the database still commits an empty transaction,
//! `consume` retries the whole batch instead of bisecting it, so no valid
//! order is set aside as "refused" and left for `pending-claim` to
//! dead-letter.

use crate::support;

use mysql::prelude::Queryable;
use support::mariadb::MariaDb;
use support::orders::{
    buy_many, group_state, log_of, orders_key, reconciling, seckill_on, sorted, spawn_seckill,
    two_item_campaign, wait_exit, wait_until,
};
use support::{RedisServer, preheat};

#[test]
fn a_lock_wait_timeout_retries_the_whole_batch_and_sets_no_order_aside() {
    let server = RedisServer::start();
    let db = MariaDb::start();
    // Every new session (the consumer's included) gives up a row lock wait
    // after 1 s instead of 50 s.
    db.root_conn()
        .query_drop("SET GLOBAL innodb_lock_wait_timeout = 1")
        .expect("SET GLOBAL innodb_lock_wait_timeout");
    let file = two_item_campaign(100, 100);
    preheat(&file, &server);
    let url = db.url();
    let env = [("SECKILL_ORDERS_DB", url.as_str())];
    // consume creates the table (nothing to store yet).
    seckill_on(&file, &server, &["consume", "--drain"])
        .env("SECKILL_ORDERS_DB", &url)
        .succeeds();

    let mut ok = buy_many(&server, &file, "1001", "a", 8);
    ok.extend(buy_many(&server, &file, "1002", "b", 4));
    assert_eq!(ok.len(), 12);
    // Another writer's uncommitted insert of the same primary key: the
    // consumer's INSERT IGNORE must wait for its row lock, and times out.
    let mut holder = db.conn();
    holder.query_drop("START TRANSACTION").unwrap();
    holder
        .exec_drop(
            "INSERT INTO orders (order_id, campaign, item_id, user_id, qty, price_cents,
             bought_at, stream_id, consumed_at) VALUES (?, 'flash', '1001', 'holder', 1, 0, 0, '0-0', 0)",
            (ok[3].as_str(),),
        )
        .unwrap();

    let mut consumer = spawn_seckill(
        &file,
        &server.url(),
        &env,
        &["consume", "--drain", "--batch", "100"],
        "lockwait",
    );
    wait_until("the consumer hit a lock wait timeout (1205)", || {
        log_of(&file, "lockwait").contains("1205")
    });
    holder.query_drop("ROLLBACK").unwrap();
    let status = wait_exit(&mut consumer);
    let log = log_of(&file, "lockwait");
    assert!(status.success(), "exit {status:?}: {log}");

    assert!(
        !log.contains("refused by"),
        "a lock wait is no refusal: no order may be set aside\n{log}"
    );
    for item in ["1001", "1002"] {
        assert_eq!(
            group_state(&server, &orders_key(item)),
            (0, if item == "1001" { 8 } else { 4 }, 0),
            "every entry of {item} acked, nothing left pending\n{log}"
        );
    }
    let rows: Vec<String> = db
        .conn()
        .query("SELECT order_id FROM orders ORDER BY order_id")
        .unwrap();
    assert_eq!(rows, sorted(ok), "every order stored exactly once");
    assert!(
        log.lines().any(|line| line.contains("storing 12 orders")
            && line.contains("retrying")
            && line.contains("1205")),
        "the whole batch was retried after the lock wait timeout\n{log}"
    );
    reconciling(&file, &server, &["--orders-db", &url]).succeeds();
}
