//! One order the database refuses (a trigger, a unique index a DBA added, a
//! column charset) never stalls the pipeline: `consume` stores and acks the
//! rest of its batch and leaves only the refused entry pending; the first
//! `pending-claim` run terminates; after `--max-deliveries` the entry is
//! dead-lettered and `reconcile` counts it there.

use crate::support;

use std::time::Duration;

use redis::Commands;
use support::orders::{
    buy_many, orders_key, preheat, reconcile, sqlite_order_ids, sqlite_path, two_item_campaign,
};
use support::{RedisServer, seckill};

#[test]
fn a_refused_order_is_isolated_then_dead_lettered_and_nothing_waits_behind_it() {
    let server = RedisServer::start();
    let file = two_item_campaign(100, 100);
    preheat(&file, &server);
    // Create the schema, then a rule the pipeline does not know about.
    buy_many(&server, &file, "1001", "first", 1);
    seckill(&file.path, &server.url())
        .args(["consume", "--drain"])
        .assert()
        .success();
    let db = rusqlite::Connection::open(sqlite_path(&file)).unwrap();
    db.execute_batch(
        "CREATE TRIGGER no_banned BEFORE INSERT ON orders WHEN NEW.user_id = 'banned0'
         BEGIN SELECT RAISE(ABORT, 'user banned by the fraud team'); END;",
    )
    .unwrap();
    buy_many(&server, &file, "1001", "a", 5);
    buy_many(&server, &file, "1001", "banned", 1);
    buy_many(&server, &file, "1001", "b", 5);
    buy_many(&server, &file, "1002", "c", 3);

    let output = seckill(&file.path, &server.url())
        .args(["consume", "--drain", "--batch", "100"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("user banned by the fraud team"), "{stderr}");
    assert_eq!(
        sqlite_order_ids(&sqlite_path(&file)).len(),
        1 + 5 + 5 + 3,
        "the rest of the batch is stored"
    );
    let pending: redis::streams::StreamPendingReply = server
        .conn()
        .xpending(orders_key("1001"), "orders-db")
        .unwrap();
    assert_eq!(pending.count(), 1, "only the refused entry is left pending");

    // pending-claim terminates on every run; the entry goes to the dead letters.
    let mut dead_lettered = false;
    for _ in 0..6 {
        let output = seckill(&file.path, &server.url())
            .args(["pending-claim", "--min-idle", "0s", "--max-deliveries", "3"])
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let dead: i64 = server
            .conn()
            .xlen(support::orders::dead_key("1001"))
            .unwrap();
        if dead == 1 {
            dead_lettered = true;
            break;
        }
    }
    assert!(dead_lettered, "the refused order was never dead-lettered");
    let (code, report) = reconcile(&file, &server, &[]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["items"][0]["dead_lettered"]["units"], 1);

    // The way back: list with the reason; re-drive is refused while the cause stays.
    let listed = dead_letter(&file, &server, &["list"]);
    assert_eq!(listed.0, 0);
    let letters = listed.1["letters"].as_array().unwrap().clone();
    assert_eq!(letters.len(), 1, "{letters:?}");
    assert!(
        letters[0]["reason"]
            .as_str()
            .unwrap()
            .contains("user banned"),
        "{letters:?}"
    );
    let order_id = letters[0]["order_id"].as_str().unwrap().to_string();
    let (code, results) = dead_letter(&file, &server, &["redrive"]);
    assert_eq!(code, 1, "{results:#}");
    assert_eq!(results["redriven"][0]["stored"], false);
    let dead: i64 = server
        .conn()
        .xlen(support::orders::dead_key("1001"))
        .unwrap();
    assert_eq!(dead, 1, "a refused re-drive must keep the dead letter");

    // The fraud team lifts the ban: re-drive by order id stores it, once.
    db.execute_batch("DROP TRIGGER no_banned").unwrap();
    for _ in 0..2 {
        let (code, results) = dead_letter(&file, &server, &["redrive", "--id", &order_id]);
        assert_eq!(code, 0, "{results:#}");
    }
    let dead: i64 = server
        .conn()
        .xlen(support::orders::dead_key("1001"))
        .unwrap();
    assert_eq!(dead, 0);
    assert_eq!(
        sqlite_order_ids(&sqlite_path(&file)).len(),
        1 + 5 + 1 + 5 + 3
    );
    let (code, report) = reconcile(&file, &server, &[]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["items"][0]["dead_lettered"]["units"], 0);
    assert_eq!(report["items"][0]["stored"]["units"], 12);
}

fn dead_letter(
    file: &support::CampaignFile,
    server: &RedisServer,
    args: &[&str],
) -> (i32, serde_json::Value) {
    let output = seckill(&file.path, &server.url())
        .args(["dead-letter", "--format", "json"])
        .args(args)
        .output()
        .unwrap();
    (output.status.code().unwrap(), support::json(&output))
}
