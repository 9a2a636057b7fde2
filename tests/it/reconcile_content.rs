//! Reconcile checks what the database rows say, not only that they exist:
//! each row's user, qty and price must match its order entry while the entry
//! exists, and the database's units must equal the stored orders' units. A
//! row changed behind the pipeline's back (7 units in the database for 5
//! sold) is drift, exit 3, and the order is named.

use crate::support;

use seckill::model::exit_codes::DRIFT_FOUND;
use support::mariadb::MariaDb;
use support::orders::{buy_many, reconciling, seckill_on, sqlite_path, two_item_campaign};
use support::{CampaignFile, RedisServer, preheat};

fn drain(file: &CampaignFile, server: &RedisServer, extra: &[&str]) {
    seckill_on(file, server, &["consume", "--drain"])
        .args(extra)
        .succeeds();
}

/// Tamper with one row, reconcile, restore; the tampering must be named drift.
fn assert_each_tampering_is_drift(
    file: &CampaignFile,
    server: &RedisServer,
    extra: &[&str],
    victim: &str,
    mut execute: impl FnMut(&str),
) {
    // Untouched rows must balance.
    reconciling(file, server, extra).succeeds();
    for (change, undo) in [
        ("qty = qty + 2", "qty = qty - 2"),
        ("user_id = 'mallory'", "user_id = 'a0'"),
        ("price_cents = 1", "price_cents = 149900"),
    ] {
        execute(&format!(
            "UPDATE orders SET {change} WHERE order_id = '{victim}'"
        ));
        let report = reconciling(file, server, extra)
            .fails_with(DRIFT_FOUND)
            .json();
        let item = &report["items"][0];
        assert_eq!(item["balanced"], false, "{change}");
        assert_eq!(item["content_mismatch"]["count"], 1, "{change}: {item:#}");
        assert_eq!(item["content_mismatch"]["ids"][0], victim, "{change}");
        execute(&format!(
            "UPDATE orders SET {undo} WHERE order_id = '{victim}'"
        ));
    }
    // Restored rows must balance again.
    reconciling(file, server, extra).succeeds();
}

#[test]
fn a_changed_sqlite_row_is_drift_naming_the_order() {
    let server = RedisServer::start();
    let file = two_item_campaign(20, 20);
    preheat(&file, &server);
    let ok = buy_many(&server, &file, "1001", "a", 5);
    drain(&file, &server, &[]);
    let db = rusqlite::Connection::open(sqlite_path(&file)).unwrap();
    // a0 bought first: its order is ok[0].
    assert_each_tampering_is_drift(&file, &server, &[], &ok[0], |sql| {
        db.execute(sql, []).unwrap();
    });
}

#[test]
fn a_changed_mariadb_row_is_drift_naming_the_order() {
    use mysql::prelude::Queryable;
    let server = RedisServer::start();
    let db = MariaDb::start();
    let url = db.url();
    let file = two_item_campaign(20, 20);
    preheat(&file, &server);
    let ok = buy_many(&server, &file, "1001", "a", 5);
    let extra = ["--orders-db", url.as_str()];
    drain(&file, &server, &extra);
    let mut conn = db.conn();
    assert_each_tampering_is_drift(&file, &server, &extra, &ok[0], |sql| {
        conn.query_drop(sql).unwrap();
    });
}
