//! The order pipeline end to end through the real binary, real Redis, real
//! SQLite and a real MariaDB: every `ok` reaches the database exactly once,
//! poison entries are dead-lettered without blocking the rest, and
//! reconcile names the orders that break the equation.

use crate::support;

use mysql::prelude::Queryable;
use redis::Commands;
use seckill::domain::item::SaleItem;
use seckill::domain::slot::BuyRequest;
use seckill::model::exit_codes::{DRIFT_FOUND, RUNTIME_ERROR, USAGE_ERROR};
use support::mariadb::MariaDb;
use support::orders::{
    buy_many, dead_key, group_state, orders_key, reconciling, seckill_on, sorted, sqlite_order_ids,
    sqlite_path, two_item_campaign,
};
use support::{RedisServer, preheat};

#[test]
fn buys_drain_into_sqlite_exactly_once_and_reconcile_balances() {
    let server = RedisServer::start();
    let file = two_item_campaign(300, 40);
    preheat(&file, &server);
    let mut ok = buy_many(&server, &file, "1001", "a", 250);
    let ok_b = buy_many(&server, &file, "1002", "b", 60);
    assert_eq!(ok_b.len(), 40, "item 1002 sells out at its stock");
    ok.extend(ok_b);

    let summary = seckill_on(&file, &server, &["consume", "--drain"])
        .json()
        .succeeds()
        .json();
    assert_eq!(summary["acked"], 290);
    assert_eq!(summary["inserted"], 290);
    // The file says `sqlite://orders.db`: relative to the campaign file's directory.
    assert_eq!(
        sorted(sqlite_order_ids(&sqlite_path(&file))),
        sorted(ok.clone())
    );

    // A second drain finds nothing and writes nothing.
    let again = seckill_on(&file, &server, &["consume", "--drain"])
        .json()
        .succeeds()
        .json();
    assert_eq!(again["acked"], 0);
    assert_eq!(sqlite_order_ids(&sqlite_path(&file)).len(), ok.len());

    let report = reconciling(&file, &server, &[]).succeeds().json();
    let a = &report["items"][0];
    assert_eq!(a["initial_stock"], 300);
    assert_eq!(a["database"]["units"], 250);
    assert_eq!(a["remaining"], 50);
    assert_eq!(a["sold_per_redis"], 250);
    assert_eq!(report["items"][1]["database"]["rows"], 40);
    assert_eq!(report["items"][1]["remaining"], 0);
}

#[test]
fn buys_drain_into_mariadb_exactly_once_and_reconcile_balances() {
    let server = RedisServer::start();
    let db = MariaDb::start();
    let file = two_item_campaign(200, 200);
    preheat(&file, &server);
    let mut ok = buy_many(&server, &file, "1001", "a", 150);
    ok.extend(buy_many(&server, &file, "1002", "b", 30));

    let url = db.url();
    let drained =
        seckill_on(&file, &server, &["consume", "--drain", "--orders-db", &url]).succeeds();
    let printed = format!("{}{}", drained.stdout(), drained.stderr());
    assert!(
        !printed.contains(db.password()),
        "the password was printed:\n{printed}"
    );
    assert!(printed.contains(":***@127.0.0.1"), "{printed}");

    let mut conn = db.conn();
    let rows: Vec<String> = conn
        .query("SELECT order_id FROM orders ORDER BY order_id")
        .unwrap();
    assert_eq!(sorted(rows), sorted(ok));
    let version: Option<i64> = conn
        .query_first("SELECT MAX(version) FROM seckill_schema")
        .unwrap();
    assert_eq!(version, Some(seckill::domain::orders::SCHEMA_VERSION));

    let report = reconciling(&file, &server, &["--orders-db", &url])
        .succeeds()
        .json();
    assert_eq!(report["items"][0]["database"]["units"], 150);
    assert_eq!(report["items"][1]["database"]["units"], 30);
    assert!(!report.to_string().contains(db.password()));
}

#[test]
fn a_poison_entry_is_dead_lettered_and_the_rest_flow() {
    let server = RedisServer::start();
    let file = two_item_campaign(100, 100);
    preheat(&file, &server);
    let mut ok = buy_many(&server, &file, "1001", "a", 10);
    let mut conn = server.conn();
    let poison: String = conn
        .xadd(
            orders_key("1001"),
            "*",
            &[("order_id", "not a valid id!"), ("qty", "lots")],
        )
        .unwrap();
    ok.extend(buy_many(&server, &file, "1001", "b", 10));

    let drained = seckill_on(&file, &server, &["consume", "--drain"])
        .json()
        .succeeds();
    let stderr = drained.stderr();
    assert!(
        stderr.contains(&poison) && stderr.contains("left pending"),
        "{stderr}"
    );
    assert_eq!(drained.json()["items"][0]["left_pending"], 1);
    assert_eq!(
        sorted(sqlite_order_ids(&sqlite_path(&file))),
        sorted(ok.clone())
    );
    assert_eq!(
        group_state(&server, &orders_key("1001")).0,
        1,
        "only the poison entry is pending"
    );

    // Pending poison carries no units: the books still balance.
    let report = reconciling(&file, &server, &[]).succeeds().json();
    assert_eq!(report["items"][0]["in_flight"]["unparseable"], 1);

    // Not idle for the default 30 s yet: a live consumer may still be on it.
    let claims = seckill_on(&file, &server, &["pending-claim"])
        .json()
        .succeeds()
        .json();
    assert_eq!(claims["items"][0]["claimed"], 0);
    assert_eq!(group_state(&server, &orders_key("1001")).0, 1);

    let claims = seckill_on(&file, &server, &["pending-claim", "--min-idle", "0s"])
        .json()
        .succeeds()
        .json();
    assert_eq!(claims["items"][0]["claimed"], 1);
    assert_eq!(claims["items"][0]["dead_lettered"], 1);
    assert_eq!(claims["items"][0]["stored"], 0);
    assert_eq!(group_state(&server, &orders_key("1001")).0, 0);

    let dead: redis::streams::StreamRangeReply = conn.xrange_all(dead_key("1001")).unwrap();
    assert_eq!(dead.ids.len(), 1);
    let kept = &dead.ids[0];
    assert_eq!(
        kept.get::<String>("dead_original_id").as_deref(),
        Some(poison.as_str())
    );
    assert_eq!(
        kept.get::<String>("qty").as_deref(),
        Some("lots"),
        "original fields are kept"
    );
    assert!(
        kept.get::<String>("dead_reason")
            .unwrap()
            .contains("not an order")
    );

    let report = reconciling(&file, &server, &[]).succeeds().json();
    assert_eq!(report["items"][0]["dead_letter_stream_len"], 1);
    assert_eq!(report["items"][0]["database"]["units"], 20);
}

#[test]
fn an_order_delivered_too_often_is_dead_lettered_only_when_the_database_refuses_it() {
    let server = RedisServer::start();
    let file = two_item_campaign(10, 10);
    preheat(&file, &server);
    let ok = buy_many(&server, &file, "1001", "a", 2);
    let mut conn = server.conn();
    let stream = orders_key("1001");
    // A consumer that keeps crashing: it reads both, then re-reads its own
    // pending history twice, never acking (each read is a delivery).
    let read = |conn: &mut redis::Connection, id: &str, count: usize| {
        let _: redis::Value = redis::cmd("XREADGROUP")
            .arg(&["GROUP", "orders-db", "flaky", "COUNT"])
            .arg(count)
            .arg("STREAMS")
            .arg(&stream)
            .arg(id)
            .query(conn)
            .unwrap();
    };
    seckill_on(&file, &server, &["consume", "--drain", "--batch", "1"]).succeeds();
    assert_eq!(sqlite_order_ids(&sqlite_path(&file)).len(), 2);
    let more = buy_many(&server, &file, "1001", "b", 2);
    read(&mut conn, ">", 2);
    read(&mut conn, "0", 1);
    read(&mut conn, "0", 1);
    // The database refuses exactly that one order (and accepts everything else).
    rusqlite::Connection::open(sqlite_path(&file))
        .unwrap()
        .execute_batch(&format!(
            "CREATE TRIGGER refuse BEFORE INSERT ON orders WHEN NEW.order_id = '{}' \
             BEGIN SELECT RAISE(ABORT, 'refused by a test trigger'); END;",
            more[0]
        ))
        .unwrap();

    let claims = seckill_on(
        &file,
        &server,
        &["pending-claim", "--min-idle", "0s", "--max-deliveries", "3"],
    )
    .json()
    .fails_with(seckill::model::exit_codes::ORDERS_REFUSED)
    .json();
    assert_eq!(claims["items"][0]["claimed"], 2);
    assert_eq!(claims["items"][0]["refused"], 1, "the database refused it");
    assert_eq!(
        claims["items"][0]["dead_lettered"], 1,
        "delivered 4 times ≥ 3, and refused"
    );
    assert_eq!(claims["items"][0]["stored"], 1, "delivered twice < 3");
    let stored = sqlite_order_ids(&sqlite_path(&file));
    assert!(stored.contains(&more[1]) && !stored.contains(&more[0]));
    assert!(ok.iter().all(|id| stored.contains(id)));

    let report = reconciling(&file, &server, &[]).succeeds().json();
    assert_eq!(report["items"][0]["dead_lettered"]["units"], 1);
    assert_eq!(report["items"][0]["database"]["units"], 3);
}

#[test]
fn a_valid_order_delivered_too_often_is_still_stored_when_the_database_takes_it() {
    let server = RedisServer::start();
    let file = two_item_campaign(10, 10);
    preheat(&file, &server);
    let ok = buy_many(&server, &file, "1001", "a", 1);
    let mut conn = server.conn();
    for id in [">", "0", "0", "0"] {
        let _: redis::Value = redis::cmd("XREADGROUP")
            .arg(&["GROUP", "orders-db", "flaky", "COUNT", "1", "STREAMS"])
            .arg(orders_key("1001"))
            .arg(id)
            .query(&mut conn)
            .unwrap();
    }
    let claims = seckill_on(
        &file,
        &server,
        &["pending-claim", "--min-idle", "0s", "--max-deliveries", "2"],
    )
    .json()
    .succeeds()
    .json();
    assert_eq!(
        (
            claims["items"][0]["stored"].as_u64(),
            claims["items"][0]["dead_lettered"].as_u64()
        ),
        (Some(1), Some(0))
    );
    assert_eq!(sqlite_order_ids(&sqlite_path(&file)), ok);
    reconciling(&file, &server, &[]).succeeds();
}

#[test]
fn a_deleted_row_is_named_as_drift_and_repaired() {
    let server = RedisServer::start();
    let file = two_item_campaign(50, 50);
    preheat(&file, &server);
    let ok = buy_many(&server, &file, "1002", "u", 20);
    seckill_on(&file, &server, &["consume", "--drain"]).succeeds();

    let db = rusqlite::Connection::open(sqlite_path(&file)).unwrap();
    let victim = &ok[7];
    assert_eq!(
        db.execute("DELETE FROM orders WHERE order_id = ?1", [victim])
            .unwrap(),
        1
    );
    db.execute(
        "INSERT INTO orders (order_id, campaign, item_id, user_id, qty, price_cents, bought_at, stream_id, consumed_at) VALUES ('GHOST-ORDER', 'flash', '1002', 'ghost', 1, 499900, 1, '1-1', 1)",
        [],
    )
    .unwrap();

    let text = seckill_on(&file, &server, &["reconcile"])
        .fails_with(DRIFT_FOUND)
        .stdout();
    assert!(
        text.contains(&format!("in Redis but not in the database: {victim}")),
        "{text}"
    );
    assert!(
        text.contains("in the database but not in Redis: GHOST-ORDER"),
        "{text}"
    );

    db.execute("DELETE FROM orders WHERE order_id = 'GHOST-ORDER'", [])
        .unwrap();
    let report = reconciling(&file, &server, &[])
        .fails_with(DRIFT_FOUND)
        .json();
    assert_eq!(
        report["items"][1]["missing_from_database"]["ids"][0],
        victim.as_str()
    );

    let report = reconciling(&file, &server, &["--repair"]).succeeds().json();
    assert_eq!(report["items"][1]["repaired"], 1);
    assert_eq!(sorted(sqlite_order_ids(&sqlite_path(&file))), sorted(ok));
    reconciling(&file, &server, &[]).succeeds();
}

#[test]
fn reconcile_cannot_check_an_item_that_was_never_preheated() {
    let server = RedisServer::start();
    let file = two_item_campaign(5, 5);
    // The database exists (only consume creates it); the items were never preheated.
    seckill_on(&file, &server, &["consume", "--drain"]).succeeds();
    let refused = seckill_on(&file, &server, &["reconcile"]).fails_with(RUNTIME_ERROR);
    assert!(refused.stderr().contains("not preheated"));
}

#[test]
fn a_bad_order_database_url_is_a_usage_error_without_the_password() {
    let server = RedisServer::start();
    let file = two_item_campaign(5, 5);
    let stderr = seckill_on(
        &file,
        &server,
        &[
            "reconcile",
            "--orders-db",
            "postgres://app:hunter2@db/orders",
        ],
    )
    .fails_with(USAGE_ERROR)
    .stderr();
    assert!(
        stderr.contains("sqlite:// or mysql://") && !stderr.contains("hunter2"),
        "{stderr}"
    );
}

#[test]
fn the_dead_letter_script_moves_an_entry_once_and_only_while_pending() {
    let server = RedisServer::start();
    let file = two_item_campaign(10, 10);
    preheat(&file, &server);
    let ok = buy_many(&server, &file, "1001", "a", 1);
    let mut conn = server.conn();
    let keys = seckill::model::keys::ItemKeys::live("flash", "1001");
    let entries = seckill::domain::orders::stream::read_group(
        &mut conn,
        "c1",
        &[(&keys.orders, ">")],
        10,
        None,
    )
    .unwrap();
    let id = entries[0].1[0].id.clone();
    assert!(
        seckill::domain::orders::stream::dead_letter(&mut conn, &keys, &id, "test", 1, "c1")
            .unwrap()
    );
    assert!(
        !seckill::domain::orders::stream::dead_letter(&mut conn, &keys, &id, "again", 1, "c1")
            .unwrap()
    );
    let dead: redis::streams::StreamRangeReply = conn.xrange_all(&keys.dead).unwrap();
    assert_eq!(dead.ids.len(), 1, "dead-lettered exactly once");
    assert_eq!(
        dead.ids[0].get::<String>("order_id").as_deref(),
        Some(ok[0].as_str())
    );
    assert_eq!(
        group_state(&server, &keys.orders).0,
        0,
        "and acked in the same step"
    );
    // An entry that was never delivered is not pending: nothing happens.
    let more = buy_many(&server, &file, "1001", "b", 1);
    let fresh: redis::streams::StreamRangeReply = conn.xrange_all(&keys.orders).unwrap();
    let undelivered = &fresh.ids.last().unwrap().id;
    assert_eq!(more.len(), 1);
    assert!(
        !seckill::domain::orders::stream::dead_letter(&mut conn, &keys, undelivered, "x", 0, "c1")
            .unwrap()
    );
    // An empty order database, as `consume` would have created (reconcile never creates one).
    seckill::domain::orders::StoreLocation::Sqlite(sqlite_path(&file))
        .open()
        .unwrap();
    let report = reconciling(&file, &server, &[]).succeeds().json();
    assert_eq!(report["items"][0]["dead_lettered"]["units"], 1);
    assert_eq!(report["items"][0]["in_flight"]["units"], 1);
}

#[test]
fn reconcile_balances_while_the_sale_is_still_selling() {
    let server = RedisServer::start();
    let file = two_item_campaign(100_000, 10);
    preheat(&file, &server);
    buy_many(&server, &file, "1001", "early", 50);
    seckill_on(&file, &server, &["consume", "--drain"]).succeeds();
    let selling = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let shopper = {
        let (selling, server_url) = (selling.clone(), server.url());
        let path = file.path.clone();
        std::thread::spawn(move || {
            let campaign = seckill::model::campaign::Campaign::load(&path).unwrap();
            let sale = SaleItem::live(&campaign, campaign.item("1001").unwrap());
            let client = redis::Client::open(server_url).unwrap();
            let mut conn = client.get_connection().unwrap();
            let mut sold = 0;
            while selling.load(std::sync::atomic::Ordering::Relaxed) {
                let user = format!("live{sold}");
                let request = BuyRequest {
                    campaign: &campaign.id,
                    item: "1001",
                    user: &user,
                    qty: 1,
                    request_id: None,
                    ticket: None,
                    seats: None,
                };
                sale.buy(&mut conn, &request).unwrap();
                sold += 1;
            }
            sold
        })
    };
    for _ in 0..5 {
        // Drift during a live sale fails here, naming the report.
        reconciling(&file, &server, &["--item", "1001"]).succeeds();
    }
    selling.store(false, std::sync::atomic::Ordering::Relaxed);
    let sold = shopper.join().unwrap();
    assert!(sold > 0, "the sale went on during the checks");
    let report = reconciling(&file, &server, &[]).succeeds().json();
    assert_eq!(report["items"][0]["sale_in_progress"], false);
}

/// Everything delivered again (the group rewound, as after a consumer died
/// between commit and ack), mixed with new orders: each order is stored once,
/// the redelivered ones count as already stored, nothing stays pending.
fn redelivery_stores_each_order_once(extra: &[&str], rows: &dyn Fn() -> Vec<String>) {
    let server = RedisServer::start();
    let file = two_item_campaign(100, 10);
    preheat(&file, &server);
    let mut ok = buy_many(&server, &file, "1001", "a", 30);
    seckill_on(&file, &server, &["consume", "--drain"])
        .args(extra)
        .succeeds();
    ok.extend(buy_many(&server, &file, "1001", "b", 20));
    let () = redis::cmd("XGROUP")
        .arg(&["SETID", &orders_key("1001"), "orders-db", "0"])
        .query(&mut server.conn())
        .unwrap();
    let summary = seckill_on(&file, &server, &["consume", "--drain"])
        .args(extra)
        .json()
        .succeeds()
        .json();
    assert_eq!(summary["acked"], 50, "{summary:#}");
    assert_eq!(summary["inserted"], 20, "{summary:#}");
    assert_eq!(summary["already_stored"], 30, "{summary:#}");
    assert_eq!(group_state(&server, &orders_key("1001")), (0, 50, 0));
    assert_eq!(sorted(rows()), sorted(ok));
    reconciling(&file, &server, extra).succeeds();
}

#[test]
fn a_redelivered_batch_stores_each_order_once_in_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("orders.db");
    let url = format!("sqlite://{}", path.display());
    redelivery_stores_each_order_once(&["--orders-db", &url], &|| sqlite_order_ids(&path));
}

#[test]
fn a_redelivered_batch_stores_each_order_once_in_mariadb() {
    let db = MariaDb::start();
    let url = db.url();
    redelivery_stores_each_order_once(&["--orders-db", &url], &|| {
        db.conn().query("SELECT order_id FROM orders").unwrap()
    });
}

/// Pending ids of entries deleted from the stream stay in the pending list:
/// a page's range can then hold more pending ids than one XPENDING reply
/// (the page's size) brings. Every entry still there must count as in flight
/// — none as missing — while the deleted ones' units are drift.
#[test]
fn reconcile_counts_every_pending_entry_when_deleted_ids_crowd_a_page() {
    let server = RedisServer::start();
    let file = two_item_campaign(3000, 10);
    preheat(&file, &server);
    // The database exists, and holds nothing: consume ran before the sale.
    seckill_on(&file, &server, &["consume", "--drain"]).succeeds();
    assert_eq!(buy_many(&server, &file, "1001", "a", 2300).len(), 2300);
    let key = orders_key("1001");
    let mut conn = server.conn();
    // A consumer that reads everything and dies before storing any of it.
    let _ =
        seckill::domain::orders::stream::read_group(&mut conn, "ghost", &[(&key, ">")], 5000, None)
            .unwrap();
    let ids = support::orders::stream_ids(&server, &key);
    let deleted: Vec<&String> = ids.iter().skip(100).take(400).collect();
    let removed: i64 = redis::cmd("XDEL")
        .arg(&key)
        .arg(&deleted)
        .query(&mut conn)
        .unwrap();
    assert_eq!(removed, 400);
    assert_eq!(support::orders::pending_ids(&server, &key).len(), 2300);

    let report = reconciling(&file, &server, &["--item", "1001"])
        .fails_with(DRIFT_FOUND)
        .json();
    let item = &report["items"][0];
    assert_eq!(item["in_flight"]["entries"], 1900, "{item:#}");
    assert_eq!(item["missing_from_database"]["count"], 0, "{item:#}");
    assert_eq!(item["stored"]["entries"], 0, "{item:#}");
    assert!(
        item["equation"].as_str().unwrap().contains("3000 ≠ 2600"),
        "the deleted entries' 400 units are unaccounted: {item:#}"
    );
}
