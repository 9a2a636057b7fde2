//! A seat item's orders in the database and the nightly proof, seat by seat
//! (docs/seats.md, "Orders and reconcile, seat by seat"): a concert sale with
//! holds — seats bought named and best-available, some paid, some cancelled,
//! some left to expire, released seats sold again — consumed into SQLite (and
//! MariaDB), one row per seat, idempotent under redelivery; `reconcile`
//! exit 0; then a seat's row deleted from the database, a seat set sold in
//! Redis with no order, a seat stored sold that Redis shows free, a seat in
//! two live orders: each exit 3 naming the seat.

use std::collections::BTreeMap;
use std::time::Duration;

use redis::Commands;
use seckill::domain::item::SaleItem;
use seckill::domain::orders::{Order, OrderState, StateChange, StoreLocation};
use seckill::model::campaign::Campaign;
use seckill::model::exit_codes::{DRIFT_FOUND, SUCCESS};

use crate::support::mariadb::MariaDb;
use crate::support::orders::sqlite_path;
use crate::support::spec::{Run, seckill};
use crate::support::{CampaignFile, RedisServer, campaign_file, preheat};

/// A concert: section A (4 rows of 6, vip), section B (2 rows of 5, one
/// seat blocked); holds of 2 s.
const CONCERT: &str = "campaign: gig
per_user_limit: 6
payment_timeout: 2s
items:
  - id: hall
    name: Hall
    seats:
      sections:
        - { id: A, rows: 4, seats_per_row: 6, tier: vip, price: \"100\" }
        - { id: B, rows: 2, seats_per_row: 5, tier: standard, price: \"50\", blocked: [\"B-1-1\"] }
";

fn on(file: &CampaignFile, server: &RedisServer, args: &[&str]) -> Run {
    seckill(args).campaign(file).redis(server)
}

/// `seckill buy` of `user` on the hall with `how` (`--seats …`, `--section
/// A --qty 3`): its order id and seats.
fn buy(file: &CampaignFile, server: &RedisServer, user: &str, how: &[&str]) -> (String, String) {
    let answer = on(file, server, &["buy", "--item", "hall", "--user", user])
        .args(how)
        .json()
        .succeeds()
        .json();
    let seats: Vec<String> = answer["seats"]
        .as_array()
        .unwrap_or_else(|| panic!("an ok names its seats: {answer}"))
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect();
    (
        answer["order_id"].as_str().unwrap().to_string(),
        seats.join(","),
    )
}

fn settle(file: &CampaignFile, server: &RedisServer, command: &str, order: &str) {
    on(file, server, &[command, "--order", order])
        .json()
        .succeeds();
}

/// `reconcile --format json` with `db` must exit `code`; its one item.
fn reconcile(
    file: &CampaignFile,
    server: &RedisServer,
    db: &[&str],
    code: i32,
) -> serde_json::Value {
    let report = on(file, server, &["reconcile"])
        .args(db)
        .json()
        .fails_with(code)
        .json();
    report["items"][0].clone()
}

/// The table of `reconcile` (exit `code`).
fn reconcile_table(file: &CampaignFile, server: &RedisServer, db: &[&str], code: i32) -> String {
    on(file, server, &["reconcile"])
        .args(db)
        .columns(200)
        .fails_with(code)
        .stdout()
}

/// The drift findings' seats and sentences.
fn drift(item: &serde_json::Value) -> Vec<(String, String)> {
    item["seats"]["drift"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["seat"].as_str().unwrap().to_string(),
                f["problem"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The keys of section `section` of the hall.
fn section_keys(file: &CampaignFile, section: u32) -> seckill::model::keys::ItemKeys {
    let campaign = Campaign::load(&file.path).unwrap();
    let item = campaign.item("hall").unwrap();
    SaleItem::live(&campaign, item)
        .layout()
        .bucket(section)
        .keys
}

/// The key of section `section`'s state string.
fn seats_key(file: &CampaignFile, section: u32) -> String {
    section_keys(file, section).seats
}

/// The key of section `section`'s order stream.
fn orders_key(file: &CampaignFile, section: u32) -> String {
    section_keys(file, section).orders
}

/// The order database under test: SQL run on it, and the flag that names it.
trait Database {
    fn flag(&self) -> Vec<String>;
    fn exec(&self, sql: &str);
    /// seat → (order id, sold) of every stored seat row.
    fn seat_rows(&self) -> BTreeMap<String, Vec<(String, Option<i64>)>>;
}

struct Sqlite(std::path::PathBuf);

impl Database for Sqlite {
    fn flag(&self) -> Vec<String> {
        vec![
            "--orders-db".into(),
            format!("sqlite://{}", self.0.display()),
        ]
    }
    fn exec(&self, sql: &str) {
        rusqlite::Connection::open(&self.0)
            .unwrap()
            .execute_batch(sql)
            .unwrap();
    }
    fn seat_rows(&self) -> BTreeMap<String, Vec<(String, Option<i64>)>> {
        let db = rusqlite::Connection::open(&self.0).unwrap();
        let mut statement = db
            .prepare("SELECT seat, order_id, sold FROM order_seats ORDER BY seat, order_id")
            .unwrap();
        let rows: Vec<(String, String, Option<i64>)> = statement
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        group(rows)
    }
}

struct Maria(MariaDb);

impl Database for Maria {
    fn flag(&self) -> Vec<String> {
        vec!["--orders-db".into(), self.0.url()]
    }
    fn exec(&self, sql: &str) {
        use mysql::prelude::Queryable;
        self.0.conn().query_drop(sql).unwrap();
    }
    fn seat_rows(&self) -> BTreeMap<String, Vec<(String, Option<i64>)>> {
        use mysql::prelude::Queryable;
        let rows: Vec<(String, String, Option<i64>)> = self
            .0
            .conn()
            .query("SELECT seat, order_id, sold FROM order_seats ORDER BY seat, order_id")
            .unwrap();
        group(rows)
    }
}

fn group(rows: Vec<(String, String, Option<i64>)>) -> BTreeMap<String, Vec<(String, Option<i64>)>> {
    let mut seats: BTreeMap<String, Vec<(String, Option<i64>)>> = BTreeMap::new();
    for (seat, order, sold) in rows {
        seats.entry(seat).or_default().push((order, sold));
    }
    seats
}

/// The whole sale day against `db`; see the module doc.
fn sale_day_seat_by_seat(server: &RedisServer, file: &CampaignFile, db: &dyn Database) {
    let flag = db.flag();
    let db_flag: Vec<&str> = flag.iter().map(String::as_str).collect();
    preheat(file, server);
    // Round 1: named and best-available; pay one, cancel one, let three expire.
    let (alice, alice_seats) = buy(file, server, "alice", &["--seats", "A-1-1,A-1-2"]);
    assert_eq!(alice_seats, "A-1-1,A-1-2");
    let (bob, bob_seats) = buy(file, server, "bob", &["--section", "A", "--qty", "3"]);
    assert_eq!(
        bob_seats, "A-1-3,A-1-4,A-1-5",
        "front row first, side by side"
    );
    let (carol, _) = buy(file, server, "carol", &["--seats", "A-2-1"]);
    let (dave, dave_seats) = buy(file, server, "dave", &["--tier", "standard", "--qty", "2"]);
    assert_eq!(dave_seats, "B-1-2,B-1-3", "the blocked B-1-1 is skipped");
    let (_eve, _) = buy(file, server, "eve", &["--seats", "A-3-3"]);
    settle(file, server, "pay", &alice);
    settle(file, server, "cancel", &bob);
    // Part of the day goes into the database before the holds run out.
    on(file, server, &["consume", "--drain"])
        .args(&db_flag)
        .succeeds();
    std::thread::sleep(Duration::from_millis(2_100));
    on(file, server, &["expire"]).succeeds();
    // Round 2: released seats sold again; one paid, one left held.
    let (frank, _) = buy(file, server, "frank", &["--seats", "A-1-3,A-2-1"]);
    let (gina, _) = buy(file, server, "gina", &["--seats", "B-1-2"]);
    settle(file, server, "pay", &frank);
    on(file, server, &["consume", "--drain"])
        .args(&db_flag)
        .succeeds();

    // One row per seat, released orders' kept unsold; sold = paid orders'.
    let rows = db.seat_rows();
    assert_eq!(rows["A-1-1"], [(alice.clone(), Some(1))]);
    assert_eq!(rows["A-1-2"], [(alice.clone(), Some(1))]);
    let mut a13 = vec![(bob.clone(), None), (frank.clone(), Some(1))];
    a13.sort();
    assert_eq!(
        rows["A-1-3"], a13,
        "bob's cancelled hold, then frank's sale"
    );
    let mut a21 = vec![(carol.clone(), None), (frank.clone(), Some(1))];
    a21.sort();
    assert_eq!(
        rows["A-2-1"], a21,
        "carol's expired hold, then frank's sale"
    );
    let mut b12 = vec![(dave.clone(), None), (gina.clone(), None)];
    b12.sort();
    assert_eq!(rows["B-1-2"], b12, "dave's expired hold, gina's open one");
    assert_eq!(
        rows.values().map(Vec::len).sum::<usize>(),
        2 + 3 + 1 + 2 + 1 + 2 + 1
    );

    // Redelivered (the group rewound on both sections), the rows are the same.
    for section in 0..2 {
        let _: () = server
            .conn()
            .xgroup_setid(orders_key(file, section), "orders-db", "0")
            .unwrap();
    }
    on(file, server, &["consume", "--drain"])
        .args(&db_flag)
        .succeeds();
    assert_eq!(db.seat_rows(), rows, "a redelivery changes no seat row");

    let item = reconcile(file, server, &db_flag, SUCCESS);
    assert_eq!(item["balanced"], true, "{item:#}");
    let seats = &item["seats"];
    assert_eq!(seats["drift_count"], 0, "{seats:#}");
    let a = &seats["sections"][0];
    assert_eq!(
        (
            &a["sold"],
            &a["sold_in_database"],
            &a["held"],
            &a["held_by_open_reservations"]
        ),
        (&4.into(), &4.into(), &0.into(), &0.into()),
        "{a:#}"
    );
    let b = &seats["sections"][1];
    assert_eq!(
        (
            &b["sold"],
            &b["held"],
            &b["held_by_open_reservations"],
            &b["blocked"]
        ),
        (&0.into(), &1.into(), &1.into(), &1.into()),
        "{b:#}"
    );

    // A seat's row deleted from the database: drift naming the seat.
    db.exec("DELETE FROM order_seats WHERE seat = 'A-1-2'");
    let item = reconcile(file, server, &db_flag, DRIFT_FOUND);
    let found = drift(&item);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "A-1-2");
    assert!(
        found[0].1.contains(&format!(
            "sold in Redis (order {alice}), in no stored order"
        )),
        "{found:?}"
    );
    let table = reconcile_table(file, server, &db_flag, DRIFT_FOUND);
    assert!(
        table.contains("seat A-1-2: sold in Redis"),
        "the table names the seat:\n{table}"
    );
    db.exec(&format!(
        "INSERT INTO order_seats (order_id, campaign, item_id, seat, sold) \
         VALUES ('{alice}', 'gig', 'hall', 'A-1-2', 1)"
    ));
    reconcile(file, server, &db_flag, SUCCESS);

    // The whole order deleted: the order check and the seat check both say so.
    db.exec(&format!("DELETE FROM orders WHERE order_id = '{frank}'"));
    let item = reconcile(file, server, &db_flag, DRIFT_FOUND);
    let seats: Vec<String> = drift(&item).into_iter().map(|(seat, _)| seat).collect();
    assert_eq!(seats, ["A-1-3", "A-2-1"], "{item:#}");
    assert_eq!(item["not_in_redis"]["count"], 0);
    assert_eq!(item["missing_from_database"]["ids"][0], frank.as_str());
    on(file, server, &["reconcile", "--repair"])
        .args(&db_flag)
        .json()
        .succeeds();

    // A seat set sold in Redis with no order: drift naming it.
    let key_a = seats_key(file, 0);
    let mut redis = server.conn();
    let a45 = (4 - 1) * 6 + (5 - 1);
    let _: i64 = redis.setrange(&key_a, a45, "s").unwrap();
    let item = reconcile(file, server, &db_flag, DRIFT_FOUND);
    let found = drift(&item);
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(found[0].0, "section A");
    assert!(
        found[0]
            .1
            .contains("its stock in Redis is 20, its seat map has 19 free seats"),
        "the stock is the free seats: {found:?}"
    );
    assert_eq!(found[1].0, "A-4-5");
    assert!(
        found[1].1.contains("sold in Redis, in no stored order"),
        "{found:?}"
    );
    let _: i64 = redis.setrange(&key_a, a45, ".").unwrap();
    reconcile(file, server, &db_flag, SUCCESS);

    // A seat the database sold that Redis shows free: no seat both free and sold.
    db.exec(&format!(
        "INSERT INTO order_seats (order_id, campaign, item_id, seat, sold) \
         VALUES ('{alice}', 'gig', 'hall', 'A-4-6', 1)"
    ));
    let found = drift(&reconcile(file, server, &db_flag, DRIFT_FOUND));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "A-4-6");
    assert!(
        found[0].1.contains(&format!(
            "sold in the database ({alice} (paid)), free in Redis"
        )),
        "{found:?}"
    );
    db.exec("DELETE FROM order_seats WHERE seat = 'A-4-6'");

    // A seat in two live orders in the database (gina's held seat given to
    // alice as well, unsold so the unique key lets it in).
    db.exec(&format!(
        "INSERT INTO order_seats (order_id, campaign, item_id, seat, sold) \
         VALUES ('{alice}', 'gig', 'hall', 'B-1-2', NULL)"
    ));
    let found = drift(&reconcile(file, server, &db_flag, DRIFT_FOUND));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "B-1-2");
    assert!(
        found[0].1.contains("in 2 live orders in the database"),
        "{found:?}"
    );
    db.exec(&format!(
        "DELETE FROM order_seats WHERE seat = 'B-1-2' AND order_id = '{alice}'"
    ));

    // A held seat in no open reservation (Redis against itself).
    let key_b = seats_key(file, 1);
    let b25 = 5 + (5 - 1);
    let _: i64 = redis.setrange(&key_b, b25, "h").unwrap();
    let found = drift(&reconcile(file, server, &db_flag, DRIFT_FOUND));
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(found[0].0, "section B");
    assert_eq!(found[1].0, "B-2-5");
    assert!(
        found[1].1.contains("held in Redis, in no open reservation"),
        "{found:?}"
    );
    let _: i64 = redis.setrange(&key_b, b25, ".").unwrap();

    // Gina's hold runs out: its seat is free again, and the books still balance.
    std::thread::sleep(Duration::from_millis(2_100));
    on(file, server, &["expire"]).succeeds();
    on(file, server, &["consume", "--drain"])
        .args(&db_flag)
        .succeeds();
    let item = reconcile(file, server, &db_flag, SUCCESS);
    assert_eq!(item["seats"]["sections"][1]["held"], 0);
}

#[test]
fn sqlite_stores_seat_rows_and_reconcile_proves_them_seat_by_seat() {
    let server = RedisServer::start();
    let file = campaign_file(CONCERT);
    let db = Sqlite(sqlite_path(&file));
    sale_day_seat_by_seat(&server, &file, &db);
}

#[test]
fn mariadb_stores_seat_rows_and_reconcile_proves_them_seat_by_seat() {
    let server = RedisServer::start();
    let file = campaign_file(CONCERT);
    let db = Maria(MariaDb::start());
    sale_day_seat_by_seat(&server, &file, &db);
}

/// The store on its own: seats stored with their order, sold with its
/// payment (also when the payment arrived first), never twice, idempotent.
fn store_keeps_each_seat_once(
    url: &str,
    sold_rows: &dyn Fn() -> Vec<(String, String, Option<i64>)>,
) {
    let location = StoreLocation::parse(url, std::path::Path::new(".")).unwrap();
    let mut store = location.open().unwrap();
    let order = |id: &str, seats: &[&str], deadline: Option<i64>| Order {
        order_id: id.into(),
        campaign: "gig".into(),
        item_id: "hall".into(),
        user_id: format!("user {id}"),
        qty: seats.len() as i64,
        price_cents: 100,
        bought_at_ms: 1_000,
        stream_id: "5-0".into(),
        deadline_ms: deadline,
        seats: seats.iter().map(|s| s.to_string()).collect(),
    };
    let paid = |o: &Order| StateChange {
        order: Order {
            seats: Vec::new(),
            stream_id: "9-0".into(),
            ..o.clone()
        },
        state: OrderState::Paid,
        at_ms: 1_500,
        reason: String::new(),
    };
    let held = order("H-1", &["A-1-1", "A-1-2"], Some(9_000));
    let confirmed = order("C-1", &["A-2-1"], None);
    store
        .insert_orders(&[held.clone(), confirmed.clone()], 1)
        .unwrap();
    store
        .insert_orders(&[held.clone(), confirmed.clone()], 2)
        .unwrap();
    // The payment of P-1 arrives before its order entry.
    let early = order("P-1", &["A-3-1"], Some(9_000));
    store.apply_changes(&[paid(&early)], 3).unwrap();
    store
        .insert_orders(std::slice::from_ref(&early), 4)
        .unwrap();
    store.apply_changes(&[paid(&held)], 5).unwrap();
    store.apply_changes(&[paid(&held)], 6).unwrap();
    let rows = sold_rows();
    assert_eq!(
        rows,
        [
            ("A-1-1".to_string(), "H-1".to_string(), Some(1)),
            ("A-1-2".into(), "H-1".into(), Some(1)),
            ("A-2-1".into(), "C-1".into(), Some(1)),
            ("A-3-1".into(), "P-1".into(), Some(1)),
        ]
    );
    // A second order sold the same seat: the database refuses it, as it
    // refuses any order it cannot take (consume isolates it, pending-claim
    // dead-letters it).
    let twice = order("C-2", &["A-2-1"], None);
    let refused = store.insert_orders(std::slice::from_ref(&twice), 7);
    assert!(refused.is_err(), "a seat sold twice is refused");
    assert_eq!(sold_rows(), rows, "nothing of the refused batch stays");
    assert_eq!(store.item_seats("gig", "hall").unwrap().len(), 4);
}

#[test]
fn sqlite_store_keeps_each_seat_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("orders.db");
    let url = format!("sqlite://{}", path.display());
    store_keeps_each_seat_once(&url, &|| {
        let db = rusqlite::Connection::open(&path).unwrap();
        let mut statement = db
            .prepare("SELECT seat, order_id, sold FROM order_seats ORDER BY seat")
            .unwrap();
        statement
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    });
}

#[test]
fn mariadb_store_keeps_each_seat_once() {
    use mysql::prelude::Queryable;
    let db = MariaDb::start();
    store_keeps_each_seat_once(&db.url(), &|| {
        db.conn()
            .query("SELECT seat, order_id, sold FROM order_seats ORDER BY seat")
            .unwrap()
    });
}

/// While `consume` has not stored the latest orders, their seats are
/// catching up, not drift: reconcile exits 0 and lists them apart; once
/// they are stored, nothing is left catching up.
#[test]
fn seats_of_orders_in_flight_are_catching_up_not_drift() {
    let server = RedisServer::start();
    let file = campaign_file(CONCERT);
    let db = Sqlite(sqlite_path(&file));
    let flag = db.flag();
    let db_flag: Vec<&str> = flag.iter().map(String::as_str).collect();
    preheat(&file, &server);
    let (first, _) = buy(&file, &server, "alice", &["--seats", "A-1-1"]);
    settle(&file, &server, "pay", &first);
    on(&file, &server, &["consume", "--drain"])
        .args(&db_flag)
        .succeeds();
    // Bought and paid after the last consume: in the stream, not stored.
    let (later, _) = buy(&file, &server, "bob", &["--seats", "A-2-1,A-2-2"]);
    settle(&file, &server, "pay", &later);
    let item = reconcile(&file, &server, &db_flag, SUCCESS);
    let seats = &item["seats"];
    assert_eq!(seats["drift_count"], 0, "{seats:#}");
    assert_eq!(seats["catching_up_count"], 2, "{seats:#}");
    let named: Vec<&str> = seats["catching_up"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["seat"].as_str().unwrap())
        .collect();
    assert_eq!(named, ["A-2-1", "A-2-2"]);
    // Stored while held, then paid: the payment is on its way.
    let (held, _) = buy(&file, &server, "carol", &["--seats", "A-3-1"]);
    on(&file, &server, &["consume", "--drain"])
        .args(&db_flag)
        .succeeds();
    settle(&file, &server, "pay", &held);
    let item = reconcile(&file, &server, &db_flag, SUCCESS);
    let seats = &item["seats"];
    assert_eq!(seats["drift_count"], 0, "{seats:#}");
    assert_eq!(seats["catching_up_count"], 1, "{seats:#}");
    assert_eq!(seats["catching_up"][0]["seat"], "A-3-1");
    on(&file, &server, &["consume", "--drain"])
        .args(&db_flag)
        .succeeds();
    let item = reconcile(&file, &server, &db_flag, SUCCESS);
    assert_eq!(item["seats"]["catching_up_count"], 0);
    assert_eq!(item["seats"]["sections"][0]["sold_in_database"], 4);
}

/// A database of schema 3 (before seats) gains `order_seats` in place the
/// first time it is opened — by `reconcile` too, which creates no schema
/// but upgrades one — and its orders stay as they were.
#[test]
fn a_schema_3_database_gains_order_seats_in_place() {
    let server = RedisServer::start();
    let file = campaign_file(CONCERT);
    let path = sqlite_path(&file);
    let db = Sqlite(path.clone());
    let flag = db.flag();
    let db_flag: Vec<&str> = flag.iter().map(String::as_str).collect();
    preheat(&file, &server);
    let (order, _) = buy(&file, &server, "alice", &["--seats", "A-1-1"]);
    settle(&file, &server, "pay", &order);
    on(&file, &server, &["consume", "--drain"])
        .args(&db_flag)
        .succeeds();
    // Back to schema 3: no seat table, version 3.
    db.exec("DROP TABLE order_seats; DELETE FROM seckill_schema; INSERT INTO seckill_schema VALUES (3);");
    let tables = || -> i64 {
        rusqlite::Connection::open(&path)
            .unwrap()
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE name = 'order_seats'",
                [],
                |r| r.get(0),
            )
            .unwrap()
    };
    assert_eq!(tables(), 0);
    // The order stored before seats were stored has none: reconcile says so.
    let item = reconcile(&file, &server, &db_flag, DRIFT_FOUND);
    assert_eq!(tables(), 1, "reconcile upgraded the schema in place");
    let version: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("SELECT MAX(version) FROM seckill_schema", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, seckill::domain::orders::SCHEMA_VERSION);
    assert_eq!(drift(&item)[0].0, "A-1-1", "{item:#}");
    assert_eq!(item["not_in_redis"]["count"], 0);
}

/// Without `payment_timeout` an ok sells its seats at once: no reservation
/// record in Redis, the rows stored sold, reconcile 0 — and a sold seat
/// deleted from the database is drift naming it.
#[test]
fn seats_final_on_ok_are_stored_sold_and_proved() {
    let server = RedisServer::start();
    let file = campaign_file(&CONCERT.replace("payment_timeout: 2s\n", ""));
    let db = Sqlite(sqlite_path(&file));
    let flag = db.flag();
    let db_flag: Vec<&str> = flag.iter().map(String::as_str).collect();
    preheat(&file, &server);
    let (alice, _) = buy(&file, &server, "alice", &["--section", "B", "--qty", "4"]);
    let (bob, _) = buy(&file, &server, "bob", &["--seats", "A-4-6"]);
    on(&file, &server, &["consume", "--drain"])
        .args(&db_flag)
        .succeeds();
    let rows = db.seat_rows();
    assert_eq!(rows["B-1-2"], [(alice.clone(), Some(1))]);
    assert_eq!(rows["A-4-6"], [(bob.clone(), Some(1))]);
    let item = reconcile(&file, &server, &db_flag, SUCCESS);
    let seats = &item["seats"];
    assert_eq!(seats["drift_count"], 0, "{seats:#}");
    assert_eq!(seats["sections"][1]["sold"], 4);
    assert_eq!(seats["sections"][1]["sold_in_database"], 4);
    db.exec("DELETE FROM order_seats WHERE seat = 'A-4-6'");
    let found = drift(&reconcile(&file, &server, &db_flag, DRIFT_FOUND));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "A-4-6");
    assert!(
        found[0]
            .1
            .contains(&format!("sold in Redis (order {bob}), in no stored order")),
        "{found:?}"
    );
}
