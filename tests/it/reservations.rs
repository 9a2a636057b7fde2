//! Reservations (`payment_timeout`): each order ends paid or released,
//! exactly once — pay racing expiry at the deadline from several processes,
//! expirers killed at random moments, released units sold again, bad input
//! refused without a change, and the states carried into SQLite and MariaDB.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use rand::Rng;
use redis::Commands;
use seckill::domain::item::SaleItem;
use seckill::domain::orders::{Order, OrderState, StateChange, StoreLocation};
use seckill::domain::reservations::Record;
use seckill::domain::slot::{BuyRequest, Outcome};
use seckill::model::campaign::Campaign;
use seckill::model::exit_codes::{
    ALREADY_PAID, DRIFT_FOUND, DUPLICATE, NOT_PREHEATED, ORDER_CANCELLED, ORDER_EXPIRED,
    RUNTIME_ERROR, SOLD_OUT, SUCCESS, UNKNOWN_ORDER, USAGE_ERROR,
};
use seckill::model::keys::ItemKeys;
use seckill::redis_client::scripts::ScriptCall;
use seckill::redis_client::scripts::pay::Pay;
use seckill::redis_client::scripts::release::Release;

use crate::support::mariadb::MariaDb;
use crate::support::orders::{
    Background, log_of, spawn_seckill, sqlite_path, terminate, wait_exit, wait_until,
};
use crate::support::spec::{CampaignSpec, Run, campaign, seckill};
use crate::support::{CampaignFile, KillOnDrop, RedisServer, preheat};

/// One-item campaign `res` with a payment timeout, orders in `orders.db`.
fn reservation_campaign(stock: i64, timeout: &str) -> CampaignSpec {
    campaign("res")
        .per_user_limit(3)
        .payment_timeout(timeout)
        .item("1001", stock)
        .named("Moutai")
        .price("1499.00")
}

fn keys() -> ItemKeys {
    ItemKeys::live("res", "1001")
}

/// `seckill ARGS` on `file` against `server`.
fn on(file: &CampaignFile, server: &RedisServer, args: &[&str]) -> Run {
    seckill(args).campaign(file).redis(server)
}

/// `n` reservations of users `<prefix>0..` through the real buy script, with
/// `qty(i)` units each; returns (order id, qty) of each `ok`.
fn reserve_many(
    server: &RedisServer,
    file: &CampaignFile,
    prefix: &str,
    n: usize,
    qty: impl Fn(usize) -> u32,
) -> Vec<(String, i64)> {
    let campaign = Campaign::load(&file.path).unwrap();
    let item = SaleItem::live(&campaign, campaign.item("1001").unwrap());
    let mut conn = server.conn();
    let mut ok = Vec::new();
    for i in 0..n {
        let user = format!("{prefix}{i}");
        let units = qty(i);
        let request = BuyRequest {
            campaign: &campaign.id,
            item: "1001",
            user: &user,
            qty: units,
            request_id: None,
            ticket: None,
            seats: None,
        };
        let reply = item
            .reserve(&mut conn, &request, campaign.payment_timeout_ms())
            .unwrap()
            .reply;
        assert_eq!(reply.outcome, Outcome::Ok, "reservation {i}");
        ok.push((reply.order_id.unwrap(), i64::from(units)));
    }
    ok
}

/// SIGTERM every expirer once it is running (its signal handler is
/// installed before it logs its first line); each must exit 0.
fn stop_expirers(file: &CampaignFile, expirers: &mut [(Background, String)]) {
    for (expirer, name) in expirers {
        wait_until("the expirer started", || {
            log_of(file, name).contains("releasing due reservations")
        });
        terminate(expirer);
        let status = wait_exit(expirer);
        assert!(
            status.success(),
            "{name}: {status:?}\n{}",
            log_of(file, name)
        );
    }
}

/// Every reservation record of the item.
fn records(server: &RedisServer) -> HashMap<String, Record> {
    let raw: HashMap<String, String> = server.conn().hgetall(keys().reservations).unwrap();
    raw.into_iter()
        .map(|(id, text)| {
            let record = Record::parse(&text).unwrap_or_else(|| panic!("bad record {text:?}"));
            (id, record)
        })
        .collect()
}

/// The final state events of each order in the item's stream: order id → [event].
fn events(server: &RedisServer) -> HashMap<String, Vec<(String, i64)>> {
    let entries: redis::streams::StreamRangeReply =
        server.conn().xrange_all(keys().orders).unwrap();
    let mut found: HashMap<String, Vec<(String, i64)>> = HashMap::new();
    for entry in entries.ids {
        let field = |name: &str| -> Option<String> {
            entry
                .map
                .get(name)
                .map(|v| redis::from_redis_value_ref(v).unwrap())
        };
        if let Some(event) = field("event") {
            let qty: i64 = field("qty").unwrap().parse().unwrap();
            found
                .entry(field("order_id").unwrap())
                .or_default()
                .push((event, qty));
        }
    }
    found
}

fn stock(server: &RedisServer) -> i64 {
    server.conn().get(keys().stock).unwrap()
}

/// `seckill pay|cancel --order ID --format json` → exit code.
fn order_command(file: &CampaignFile, server: &RedisServer, command: &str, order: &str) -> i32 {
    let ran = on(file, server, &[command, "--order", order]).json().runs();
    if ran.code() != RUNTIME_ERROR && ran.code() != USAGE_ERROR {
        // The envelope's exit_code is the process's.
        ran.json();
    }
    ran.code()
}

/// `seckill pay|cancel --order ID --format json` must exit `code`.
fn settle(file: &CampaignFile, server: &RedisServer, command: &str, order: &str, code: i32) {
    on(file, server, &[command, "--order", order])
        .json()
        .fails_with(code)
        .json();
}

/// `seckill consume --drain` must succeed.
fn drain(file: &CampaignFile, server: &RedisServer, extra: &[&str]) {
    on(file, server, &["consume", "--drain"])
        .args(extra)
        .succeeds();
}

/// `reconcile --format json` must exit `code`; its report.
fn reconcile(
    file: &CampaignFile,
    server: &RedisServer,
    extra: &[&str],
    code: i32,
) -> serde_json::Value {
    on(file, server, &["reconcile"])
        .args(extra)
        .json()
        .fails_with(code)
        .json()
}

/// order id → state in the SQLite order database.
fn sqlite_states(file: &CampaignFile) -> BTreeMap<String, String> {
    let db = rusqlite::Connection::open(sqlite_path(file)).unwrap();
    let mut statement = db.prepare("SELECT order_id, state FROM orders").unwrap();
    statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// Every order has exactly one final event, the one its record names, and
/// the units add up: stock = initial − paid − still reserved.
fn assert_each_order_ends_once(
    server: &RedisServer,
    orders: &[(String, i64)],
    initial: i64,
) -> (i64, i64) {
    let records = records(server);
    let events = events(server);
    let (mut paid, mut released, mut reserved) = (0, 0, 0);
    for (order, qty) in orders {
        let record = &records[order];
        let finals = events.get(order).cloned().unwrap_or_default();
        match record.state.as_str() {
            "reserved" => {
                assert!(finals.is_empty(), "{order} reserved yet {finals:?}");
                reserved += qty;
            }
            state => {
                assert_eq!(finals, vec![(state.to_string(), *qty)], "{order}");
                if state == "paid" {
                    paid += qty;
                } else {
                    released += qty;
                }
            }
        }
    }
    assert_eq!(stock(server), initial - paid - reserved);
    let counts: HashMap<String, String> = server.conn().hgetall(keys().reservation_counts).unwrap();
    let counter = |name: &str| counts.get(name).map_or(0, |v| v.parse::<i64>().unwrap());
    assert_eq!(counter("paid_units"), paid);
    assert_eq!(counter("reserved_units"), reserved);
    assert_eq!(
        counter("expired_units") + counter("cancelled_units"),
        released
    );
    (paid, released)
}

#[test]
fn pay_racing_expire_at_the_deadline_ends_each_order_in_exactly_one_state() {
    let server = RedisServer::start();
    let file = reservation_campaign(1200, "3s").write();
    preheat(&file, &server);
    let orders = reserve_many(&server, &file, "u", 1000, |_| 1);
    let deadlines: HashMap<String, i64> = records(&server)
        .into_iter()
        .map(|(id, record)| (id, record.deadline_ms))
        .collect();
    let first_deadline = *deadlines.values().min().unwrap();

    // 4 expirers polling every 150 ms, and 4 payers paying every other order,
    // each payment sent at a time set by its order's deadline — 400 ms before,
    // within ±20 ms of it, or 80 ms after — so payments land on either side
    // of their deadline, some after it and before an expirer came by (the
    // deadline alone must decide), while the expirers release. (Paced by the
    // clock, not by how fast `seckill pay` starts: paced by the process, 500
    // payments finished before the first deadline on a quiet machine — 500
    // paid, 0 refused — and straddled on a busy one.)
    let mut expirers: Vec<_> = (0..4)
        .map(|n| {
            let name = format!("expirer-{n}");
            let args = ["expire", "--loop", "--interval", "150ms", "--batch", "20"];
            (spawn_seckill(&file, &server.url(), &[], &args, &name), name)
        })
        .collect();
    let now_ms = || chrono::Utc::now().timestamp_millis();
    let start_at = first_deadline - 1500;
    while now_ms() < start_at {
        std::thread::sleep(Duration::from_millis(10));
    }
    let to_pay: Vec<&String> = orders.iter().step_by(2).map(|(id, _)| id).collect();
    let mut rng = rand::rng();
    let aimed: Vec<(&String, i64)> = to_pay
        .iter()
        .enumerate()
        .map(|(n, id)| {
            let offset = match n % 3 {
                0 => -400,
                1 => rng.random_range(-20..=20),
                _ => 80,
            };
            (*id, deadlines[*id] + offset)
        })
        .collect();
    let outcomes: Vec<(String, i32)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..4)
            .map(|w| {
                let mut mine: Vec<(&String, i64)> =
                    aimed.iter().skip(w).step_by(4).copied().collect();
                mine.sort_by_key(|(_, at)| *at);
                let (file, server) = (&file, &server);
                scope.spawn(move || {
                    mine.into_iter()
                        .map(|(id, at)| {
                            let wait = at - now_ms();
                            if wait > 0 {
                                std::thread::sleep(Duration::from_millis(wait as u64));
                            }
                            (id.clone(), order_command(file, server, "pay", id))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    let last_deadline = records(&server)
        .values()
        .map(|r| r.deadline_ms)
        .max()
        .unwrap();
    while now_ms() <= last_deadline + 50 {
        std::thread::sleep(Duration::from_millis(20));
    }
    on(&file, &server, &["expire"]).succeeds();
    stop_expirers(&file, &mut expirers);

    let records = records(&server);
    let paid_by_command: Vec<&String> = outcomes
        .iter()
        .filter(|(_, code)| *code == 0)
        .map(|(id, _)| id)
        .collect();
    let refused: Vec<&String> = outcomes
        .iter()
        .filter(|(_, code)| *code == seckill::model::exit_codes::ORDER_EXPIRED)
        .map(|(id, _)| id)
        .collect();
    assert_eq!(
        paid_by_command.len() + refused.len(),
        to_pay.len(),
        "{outcomes:?}"
    );
    assert!(
        !paid_by_command.is_empty() && !refused.is_empty(),
        "the payments did not straddle the deadlines: {} paid, {} refused",
        paid_by_command.len(),
        refused.len()
    );
    for id in &paid_by_command {
        assert_eq!(records[*id].state, "paid", "{id}");
        assert!(records[*id].changed_at_ms < records[*id].deadline_ms);
    }
    for id in &refused {
        assert_eq!(records[*id].state, "expired", "{id}");
    }
    let (paid, released) = assert_each_order_ends_once(&server, &orders, 1200);
    assert_eq!(paid, paid_by_command.len() as i64);
    assert_eq!(paid + released, 1000);
    assert_eq!(stock(&server), 1200 - paid);

    drain(&file, &server, &[]);
    let states = sqlite_states(&file);
    assert_eq!(states.len(), 1000);
    for (id, record) in &records {
        assert_eq!(states[id], record.state, "{id}");
    }
    let report = reconcile(&file, &server, &[], SUCCESS);
    let item = &report["items"][0];
    assert_eq!(item["reservations"]["paid_units"], paid);
    assert_eq!(item["reservations"]["released_units"], released);
    assert_eq!(item["reservations"]["reserved_units"], 0);
    assert_eq!(item["remaining"], 1200 - paid);
    eprintln!(
        "race: {paid} paid, {released} released ({} payments refused at the deadline)",
        refused.len()
    );
}

#[test]
fn expirers_killed_at_random_moments_release_every_order_exactly_once() {
    let server = RedisServer::start();
    let file = reservation_campaign(20_000, "1s").write();
    preheat(&file, &server);
    let spawn = |n: usize| {
        let name = format!("expirer-{n}");
        let args = ["expire", "--loop", "--interval", "100ms", "--batch", "3"];
        (spawn_seckill(&file, &server.url(), &[], &args, &name), name)
    };
    let mut expirers: Vec<_> = (0..4).map(spawn).collect();
    let mut spawned = 4;
    // Reservations come due while the expirers run and get killed.
    let orders = std::thread::scope(|scope| {
        let maker = scope.spawn(|| reserve_many(&server, &file, "k", 3000, |i| 1 + (i % 3) as u32));
        let mut rng = rand::rng();
        std::thread::sleep(Duration::from_millis(1000));
        for _kill in 0..10 {
            std::thread::sleep(Duration::from_millis(rng.random_range(20..150)));
            let victim = rng.random_range(0..expirers.len());
            expirers[victim].0.kill().unwrap();
            expirers[victim].0.wait().unwrap();
            expirers[victim] = spawn(spawned);
            spawned += 1;
        }
        maker.join().unwrap()
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let due: u64 = server.conn().zcard(keys().deadlines).unwrap();
        if due == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{due} reservations never released"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    stop_expirers(&file, &mut expirers);

    let total: i64 = orders.iter().map(|(_, qty)| qty).sum();
    let (paid, released) = assert_each_order_ends_once(&server, &orders, 20_000);
    assert_eq!(paid, 0);
    assert_eq!(
        released, total,
        "Σ units returned = Σ units of expired orders"
    );
    assert_eq!(stock(&server), 20_000);
    assert!(records(&server).values().all(|r| r.state == "expired"));
    let buyers: u64 = server.conn().hlen(keys().buyers).unwrap();
    assert_eq!(buyers, 0, "every released user's units were given back");

    drain(&file, &server, &[]);
    reconcile(&file, &server, &[], SUCCESS);
}

#[test]
fn a_released_unit_is_sold_again_and_the_released_user_may_buy_again() {
    let server = RedisServer::start();
    let file = reservation_campaign(2, "15m").write();
    preheat(&file, &server);
    let buy = |user: &str| on(&file, &server, &["buy", "--item", "1001", "--user", user]).json();
    let alice = buy("alice").runs().json();
    let carol = buy("carol").runs().json();
    buy("bob").fails_with(SOLD_OUT).json();
    let alice_order = alice["order_id"].as_str().unwrap().to_string();
    let carol_order = carol["order_id"].as_str().unwrap().to_string();

    let cancelled = on(
        &file,
        &server,
        &[
            "cancel",
            "--order",
            &alice_order,
            "--reason",
            "changed her mind",
        ],
    )
    .json()
    .succeeds()
    .json();
    assert_eq!(cancelled["outcome"], "cancelled");
    assert_eq!(stock(&server), 1);
    // The released unit is sold to bob.
    buy("bob").succeeds().json();
    assert_eq!(stock(&server), 0);

    settle(&file, &server, "cancel", &carol_order, SUCCESS);
    // Alice may buy again.
    let again = buy("alice").succeeds().json();
    assert_ne!(again["order_id"], alice["order_id"]);

    drain(&file, &server, &[]);
    let states = sqlite_states(&file);
    assert_eq!(states[&alice_order], "cancelled");
    assert_eq!(states[&carol_order], "cancelled");
    let db = rusqlite::Connection::open(sqlite_path(&file)).unwrap();
    let reason: String = db
        .query_row(
            "SELECT release_reason FROM orders WHERE order_id = ?1",
            [&alice_order],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(reason, "changed her mind");
    reconcile(&file, &server, &[], SUCCESS);
}

#[test]
fn with_rebuy_after_release_off_the_released_user_may_not_buy_again() {
    let server = RedisServer::start();
    let file = reservation_campaign(5, "15m")
        .field("rebuy_after_release", "false")
        .write();
    preheat(&file, &server);
    let orders = reserve_many(&server, &file, "p", 1, |_| 3);
    settle(&file, &server, "cancel", &orders[0].0, SUCCESS);
    assert_eq!(stock(&server), 5);
    on(&file, &server, &["buy", "--item", "1001", "--user", "p0"]).fails_with(DUPLICATE);
    let bought: i64 = server.conn().hget(keys().buyers, "p0").unwrap();
    assert_eq!(
        bought, 3,
        "the buyer keeps the released units against the limit"
    );
    drain(&file, &server, &[]);
    reconcile(&file, &server, &[], SUCCESS);
}

/// Everything of the item that a refused pay/cancel must leave as it was,
/// in a canonical form (DUMP of a hash is in table order, which a mere read
/// may change by rehashing).
fn item_snapshot(server: &RedisServer) -> Vec<String> {
    let mut conn = server.conn();
    let k = keys();
    let mut snapshot = Vec::new();
    for key in [&k.meta, &k.buyers, &k.buyer_orders, &k.reservations] {
        let map: BTreeMap<String, String> = conn.hgetall(key).unwrap();
        snapshot.push(format!("{key} {map:?}"));
    }
    let stock: Option<String> = conn.get(&k.stock).unwrap();
    let deadlines: Vec<(String, i64)> = conn.zrange_withscores(&k.deadlines, 0, -1).unwrap();
    let entries: Vec<String> = conn
        .xrange_all::<_, redis::streams::StreamRangeReply>(&k.orders)
        .unwrap()
        .ids
        .into_iter()
        .map(|e| e.id)
        .collect();
    let ttls: Vec<i64> = [&k.meta, &k.stock, &k.reservations, &k.deadlines]
        .into_iter()
        .map(|key| conn.pttl::<_, i64>(key).unwrap().signum())
        .collect();
    snapshot.push(format!("{stock:?} {deadlines:?} {entries:?} {ttls:?}"));
    snapshot
}

#[test]
fn bad_pay_and_cancel_requests_change_nothing_and_say_why() {
    let server = RedisServer::start();
    let file = reservation_campaign(10, "15m").write();
    let other = campaign("other")
        .payment_timeout("15m")
        .item("1001", 5)
        .named("X")
        .orders_store(None)
        .write();
    preheat(&file, &server);
    // Two campaigns sell item 1001 at once, on purpose: an explicit flag.
    on(&other, &server, &["preheat", "--allow-shared-items"]).succeeds();
    let orders = reserve_many(&server, &file, "b", 3, |_| 1);
    let (paid, cancelled, reserved) = (&orders[0].0, &orders[1].0, &orders[2].0);
    settle(&file, &server, "pay", paid, SUCCESS);
    settle(&file, &server, "cancel", cancelled, SUCCESS);

    let before = item_snapshot(&server);
    let cases: [(&str, &str, i32); 7] = [
        ("pay", paid, ALREADY_PAID),
        ("cancel", paid, ALREADY_PAID),
        ("pay", cancelled, ORDER_CANCELLED),
        ("cancel", cancelled, ORDER_CANCELLED),
        ("pay", "01NOSUCHORDER0000000000000", UNKNOWN_ORDER),
        ("cancel", "01NOSUCHORDER0000000000000", UNKNOWN_ORDER),
        // An order of this campaign is unknown to another campaign.
        ("pay-other", reserved, UNKNOWN_ORDER),
    ];
    for (command, order, expected) in cases {
        let (file, command) = match command {
            "pay-other" => (&other, "pay"),
            c => (&file, c),
        };
        settle(file, &server, command, order, expected);
    }
    let refused = on(&file, &server, &["pay", "--order", "x{y}"]).fails_with(USAGE_ERROR);
    assert!(
        refused
            .stderr()
            .contains("--order \"x{y}\" is not an order id")
    );
    on(
        &file,
        &server,
        &["pay", "--order", reserved, "--item", "nope"],
    )
    .fails_with(USAGE_ERROR);
    on(
        &file,
        &server,
        &["cancel", "--order", reserved, "--reason", "a\nb"],
    )
    .fails_with(USAGE_ERROR);
    assert_eq!(
        item_snapshot(&server),
        before,
        "a refused request changed Redis"
    );

    // The reserved one is still payable; an expired one is not.
    settle(&file, &server, "pay", reserved, SUCCESS);
    let short = reservation_campaign(10, "50ms").write();
    on(&short, &server, &["preheat", "--allow-shared-items"]).succeeds();
    let late = reserve_many(&server, &short, "late", 1, |_| 1);
    std::thread::sleep(Duration::from_millis(80));
    let late_before = item_snapshot(&server);
    settle(&short, &server, "pay", &late[0].0, ORDER_EXPIRED);
    assert_eq!(
        item_snapshot(&server),
        late_before,
        "a late payment changed Redis"
    );

    // The item's meta expired (or was deleted): nothing is written into a
    // key without expiry, by pay, cancel or expire.
    let pending = reserve_many(&server, &file, "gone", 1, |_| 1);
    let () = server.conn().del(keys().meta).unwrap();
    let gone = item_snapshot(&server);
    settle(&file, &server, "pay", &pending[0].0, NOT_PREHEATED);
    settle(&file, &server, "cancel", &pending[0].0, NOT_PREHEATED);
    on(&file, &server, &["expire"]).succeeds();
    assert_eq!(
        item_snapshot(&server),
        gone,
        "a request on a gone item changed Redis"
    );
}

/// A v1 table (before reservations) gains the state columns on open; its
/// rows become `confirmed`; state changes then apply conditionally.
fn migrate_then_apply(
    store_url: &str,
    v1: &mut dyn FnMut(),
    read_state: &mut dyn FnMut(&str) -> Option<String>,
) {
    v1();
    let location = StoreLocation::parse(store_url, std::path::Path::new(".")).unwrap();
    let mut store = location.open().unwrap();
    assert_eq!(read_state("OLD-1").as_deref(), Some("confirmed"));
    let order = |id: &str, deadline: Option<i64>| Order {
        order_id: id.into(),
        campaign: "res".into(),
        item_id: "1001".into(),
        user_id: format!("user {id}"),
        qty: 1,
        price_cents: 149_900,
        bought_at_ms: 1_000,
        stream_id: "5-0".into(),
        deadline_ms: deadline,
    };
    let change = |id: &str, state: OrderState| StateChange {
        order: Order {
            stream_id: "9-0".into(),
            ..order(id, Some(2_000))
        },
        state,
        at_ms: 1_500,
        reason: "why".into(),
    };
    store
        .insert_orders(&[order("R-1", Some(2_000)), order("R-2", Some(2_000))], 1)
        .unwrap();
    assert_eq!(read_state("R-1").as_deref(), Some("reserved"));
    // Paid, then a (bogus) cancel of the same order: a paid row stays paid.
    store
        .apply_changes(&[change("R-1", OrderState::Paid)], 2)
        .unwrap();
    store
        .apply_changes(&[change("R-1", OrderState::Cancelled)], 3)
        .unwrap();
    assert_eq!(read_state("R-1").as_deref(), Some("paid"));
    // A change whose order entry has not arrived yet creates the row; the
    // order entry arriving later leaves it released.
    store
        .apply_changes(&[change("R-3", OrderState::Expired)], 4)
        .unwrap();
    store
        .insert_orders(&[order("R-3", Some(2_000))], 5)
        .unwrap();
    assert_eq!(read_state("R-3").as_deref(), Some("expired"));
    // Applying twice changes nothing.
    store
        .apply_changes(&[change("R-2", OrderState::Cancelled)], 6)
        .unwrap();
    store
        .apply_changes(&[change("R-2", OrderState::Cancelled)], 7)
        .unwrap();
    assert_eq!(read_state("R-2").as_deref(), Some("cancelled"));
    let states = store
        .order_states(&["R-1", "R-2", "R-3", "OLD-1", "NONE"])
        .unwrap();
    assert_eq!(states.len(), 4);
    assert_eq!(states["R-2"], OrderState::Cancelled);
    // Opening again (already version 2) changes nothing.
    drop(store);
    let _again = location.open().unwrap();
    assert_eq!(read_state("R-1").as_deref(), Some("paid"));
}

const V1_SQLITE: &str = "
CREATE TABLE seckill_schema (version INTEGER NOT NULL);
INSERT INTO seckill_schema VALUES (1);
CREATE TABLE orders (
    order_id TEXT NOT NULL PRIMARY KEY, campaign TEXT NOT NULL, item_id TEXT NOT NULL,
    user_id TEXT NOT NULL, qty INTEGER NOT NULL, price_cents INTEGER NOT NULL,
    bought_at INTEGER NOT NULL, stream_id TEXT NOT NULL, consumed_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX orders_by_item ON orders (campaign, item_id, order_id);
INSERT INTO orders VALUES ('OLD-1', 'res', '1001', 'old', 1, 100, 1, '1-0', 1);
";

#[test]
fn sqlite_schema_1_migrates_and_state_changes_apply_conditionally() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("orders.db");
    let url = format!("sqlite://{}", path.display());
    migrate_then_apply(
        &url,
        &mut || {
            rusqlite::Connection::open(&path)
                .unwrap()
                .execute_batch(V1_SQLITE)
                .unwrap()
        },
        &mut |id| {
            rusqlite::Connection::open(&path)
                .unwrap()
                .query_row("SELECT state FROM orders WHERE order_id = ?1", [id], |r| {
                    r.get(0)
                })
                .ok()
        },
    );
    let version: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("SELECT MAX(version) FROM seckill_schema", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, seckill::domain::orders::SCHEMA_VERSION);
}

#[test]
fn mariadb_schema_1_migrates_and_state_changes_apply_conditionally() {
    use mysql::prelude::Queryable;
    let db = MariaDb::start();
    let url = db.url();
    migrate_then_apply(
        &url,
        &mut || {
            let mut conn = db.conn();
            for statement in [
                "CREATE TABLE seckill_schema (version INT NOT NULL) ENGINE=InnoDB",
                "INSERT INTO seckill_schema VALUES (1)",
                "CREATE TABLE orders (order_id VARCHAR(64) NOT NULL PRIMARY KEY, campaign VARCHAR(64) NOT NULL,
                 item_id VARCHAR(64) NOT NULL, user_id VARCHAR(255) NOT NULL, qty INT NOT NULL,
                 price_cents BIGINT NOT NULL, bought_at BIGINT NOT NULL, stream_id VARCHAR(64) NOT NULL,
                 consumed_at BIGINT NOT NULL, KEY orders_by_item (campaign, item_id, order_id))
                 ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
                "INSERT INTO orders VALUES ('OLD-1', 'res', '1001', 'old', 1, 100, 1, '1-0', 1)",
            ] {
                conn.query_drop(statement).unwrap();
            }
        },
        &mut |id| {
            db.conn()
                .exec_first("SELECT state FROM orders WHERE order_id = ?", (id,))
                .unwrap()
        },
    );
    let version: Option<i64> = db
        .conn()
        .query_first("SELECT MAX(version) FROM seckill_schema")
        .unwrap();
    assert_eq!(version, Some(seckill::domain::orders::SCHEMA_VERSION));
}

#[test]
fn reservations_flow_into_mariadb_and_a_tampered_state_is_drift() {
    use mysql::prelude::Queryable;
    let server = RedisServer::start();
    let db = MariaDb::start();
    let url = db.url();
    let file = reservation_campaign(50, "15m").write();
    preheat(&file, &server);
    let orders = reserve_many(&server, &file, "m", 6, |i| 1 + (i % 2) as u32);
    settle(&file, &server, "pay", &orders[0].0, SUCCESS);
    settle(&file, &server, "cancel", &orders[1].0, SUCCESS);
    drain(&file, &server, &["--orders-db", &url]);
    // A payment after the order rows are stored: only its event flows.
    settle(&file, &server, "pay", &orders[2].0, SUCCESS);
    drain(&file, &server, &["--orders-db", &url]);
    let states: Vec<(String, String)> = db
        .conn()
        .query("SELECT order_id, state FROM orders")
        .unwrap();
    let states: HashMap<String, String> = states.into_iter().collect();
    let records = records(&server);
    assert_eq!(states.len(), 6);
    for (id, record) in &records {
        assert_eq!(states[id], record.state, "{id}");
    }
    let report = reconcile(&file, &server, &["--orders-db", &url], SUCCESS);
    let r = &report["items"][0]["reservations"];
    assert_eq!(r["paid_units"], 1 + 1);
    assert_eq!(r["released_units"], 2);
    assert_eq!(r["reserved_units"], 2 + 1 + 2);
    assert_eq!(report["items"][0]["remaining"], 50 - 9 + 2);

    db.conn()
        .exec_drop(
            "UPDATE orders SET state = 'cancelled' WHERE order_id = ?",
            (&orders[0].0,),
        )
        .unwrap();
    let printed = on(&file, &server, &["reconcile", "--orders-db", &url])
        .fails_with(DRIFT_FOUND)
        .stdout();
    assert!(
        printed.contains(&format!("{} (redis paid, database cancelled)", orders[0].0)),
        "{printed}"
    );
}

#[test]
fn repair_brings_lost_rows_and_lagging_states_to_what_redis_has() {
    let server = RedisServer::start();
    let file = reservation_campaign(10, "15m").write();
    preheat(&file, &server);
    let orders = reserve_many(&server, &file, "r", 3, |_| 1);
    settle(&file, &server, "pay", &orders[0].0, SUCCESS);
    settle(&file, &server, "cancel", &orders[1].0, SUCCESS);
    drain(&file, &server, &[]);
    let db = rusqlite::Connection::open(sqlite_path(&file)).unwrap();
    // A lost row (paid in Redis) and a state update that never landed.
    db.execute("DELETE FROM orders WHERE order_id = ?1", [&orders[0].0])
        .unwrap();
    db.execute(
        "UPDATE orders SET state = 'reserved' WHERE order_id = ?1",
        [&orders[1].0],
    )
    .unwrap();
    let report = reconcile(&file, &server, &[], DRIFT_FOUND);
    let named = report["items"][0]["reservations"]["state_mismatch"].to_string();
    assert!(
        named.contains(&format!(
            "{} (redis cancelled, database reserved)",
            orders[1].0
        )),
        "{named}"
    );

    let report = reconcile(&file, &server, &["--repair"], SUCCESS);
    assert_eq!(report["items"][0]["repaired"], 1);
    assert_eq!(report["items"][0]["reservations"]["states_repaired"], 2);
    let states = sqlite_states(&file);
    assert_eq!(states[&orders[0].0], "paid");
    assert_eq!(states[&orders[1].0], "cancelled");
    assert_eq!(states[&orders[2].0], "reserved");
}

#[test]
fn the_reservations_load_test_reports_final_states_and_the_identity() {
    let server = RedisServer::start();
    let file = reservation_campaign(100, "15m").write();
    let report = on(
        &file,
        &server,
        &[
            "loadtest",
            "--reservations",
            "--connections",
            "8",
            "--requests",
            "600",
            "--stock",
            "300",
            "--payment-timeout",
            "700ms",
        ],
    )
    .json()
    .succeeds()
    .json();
    assert_eq!(report["verdict"], "exact", "{report:#}");
    assert_eq!(report["reserved"], 300);
    assert_eq!(report["sold_out"], 300);
    let paid = report["final_paid"].as_i64().unwrap();
    assert_eq!(report["paid"], paid);
    assert_eq!(paid + report["final_expired"].as_i64().unwrap(), 300);
    assert_eq!(report["final_stock"], 300 - paid);
    assert_eq!(
        report["pay_attempts"].as_i64().unwrap(),
        paid + report["pay_refused_expired"].as_i64().unwrap()
    );
    let keys: Vec<String> = server.conn().keys("seckill-loadtest:*").unwrap();
    assert!(keys.is_empty(), "the load test left {keys:?}");
}

#[test]
fn expire_catches_up_on_a_backlog_in_bounded_batches() {
    let server = RedisServer::start();
    let file = reservation_campaign(100, "50ms").write();
    preheat(&file, &server);
    // An expirer that was down while 50 reservations came due.
    let orders = reserve_many(&server, &file, "c", 50, |i| 1 + (i % 2) as u32);
    std::thread::sleep(Duration::from_millis(100));
    let report = on(&file, &server, &["expire", "--batch", "7"])
        .json()
        .succeeds()
        .json();
    let item = &report["items"][0];
    assert_eq!(item["released"], 50, "{report:#}");
    assert_eq!(item["units"], 75);
    assert_eq!(item["calls"], 8, "50 due orders in calls of at most 7");
    let (paid, released) = assert_each_order_ends_once(&server, &orders, 100);
    assert_eq!((paid, released), (0, 75));
}

#[test]
fn reservations_work_unchanged_on_a_three_master_cluster() {
    use crate::support::cluster::RedisCluster;
    let cluster = RedisCluster::start();
    let file = (0..6)
        .fold(
            campaign("clustered")
                .payment_timeout("2s")
                .orders_store(None),
            |spec, i| {
                spec.item(&format!("sku-{i}"), 2)
                    .named(&format!("sku {i}"))
                    .price("9.99")
            },
        )
        .write();
    let cli = |args: &[&str]| {
        seckill(&["--cluster"])
            .args(args)
            .campaign(&file)
            .redis_url(&cluster.urls())
    };
    cli(&["preheat"]).succeeds();
    // Per item: a and b reserve; a's is paid (even items) or cancelled (odd)
    // at once, found without --item on whichever master holds it.
    let mut orders = Vec::new();
    for i in 0..6 {
        for user in ["a", "b"] {
            let bought = cli(&["buy", "--item", &format!("sku-{i}"), "--user", user])
                .json()
                .succeeds()
                .json();
            orders.push(bought["order_id"].as_str().unwrap().to_string());
        }
        let command = if i % 2 == 0 { "pay" } else { "cancel" };
        cli(&[command, "--order", &orders[2 * i]]).succeeds();
    }
    std::thread::sleep(Duration::from_millis(2100));
    let report = cli(&["expire"]).json().succeeds().json();
    let released: i64 = report["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["released"].as_i64().unwrap())
        .sum();
    assert_eq!(released, 6, "{report:#}");
    for order in &orders[1..] {
        let code = cli(&["pay", "--order", order]).runs().code();
        assert!(
            [ALREADY_PAID, ORDER_EXPIRED, ORDER_CANCELLED].contains(&code),
            "{order}: {code:?}"
        );
    }
    // Paid units stay sold; the rest are back on sale.
    for i in 0..6 {
        let expected_left = if i % 2 == 0 { 1 } else { 2 };
        let status = cli(&["shutdown-switch", "status", "--item", &format!("sku-{i}")])
            .json()
            .runs()
            .json();
        assert_eq!(status["items"][0]["stock_left"], expected_left, "sku-{i}");
    }
}

#[test]
fn reservation_tables_fit_80_columns_without_splitting_an_id() {
    let server = RedisServer::start();
    let file = reservation_campaign(20, "15m").write();
    preheat(&file, &server);
    let orders = reserve_many(&server, &file, "w", 2, |_| 1);
    let at_80 = |args: &[&str], code: i32| {
        seckill(args)
            .campaign(&file)
            .redis(&server)
            .columns(80)
            .fails_with(code)
            .stdout()
    };
    let fits = |what: &str, text: &str, tokens: &[&str]| {
        for line in text.lines() {
            assert!(line.chars().count() <= 80, "{what}: {line}\n{text}");
        }
        for token in tokens {
            assert!(
                text.lines().any(|l| l.contains(token)),
                "{what}: {token} split:\n{text}"
            );
        }
    };
    let paid = at_80(&["pay", "--order", &orders[0].0], SUCCESS);
    fits("pay", &paid, &[&orders[0].0, "paid"]);
    let refused = at_80(&["cancel", "--order", &orders[0].0], ALREADY_PAID);
    fits("cancel", &refused, &[&orders[0].0, "already_paid"]);
    let expired = at_80(&["expire"], SUCCESS);
    fits("expire", &expired, &["1001"]);
    let rehearsal = RedisServer::start();
    let raced = seckill(&[
        "loadtest",
        "--reservations",
        "--connections",
        "2",
        "--requests",
        "40",
        "--stock",
        "10",
        "--payment-timeout",
        "200ms",
    ])
    .campaign(&file)
    .redis(&rehearsal)
    .columns(80)
    .succeeds()
    .stdout();
    fits("loadtest --reservations", &raced, &["exact"]);
}

#[test]
fn the_shipped_reservations_campaign_is_valid() {
    let campaign =
        Campaign::load(std::path::Path::new("campaigns/moutai-reservations.yaml")).unwrap();
    assert_eq!(campaign.payment_timeout, Some(Duration::from_secs(30)));
    assert!(campaign.rebuy_after_release);
    assert!(
        Campaign::load(std::path::Path::new("campaigns/moutai.yaml"))
            .unwrap()
            .payment_timeout
            .is_none()
    );
}

/// Stock of every bucket of item 1001 of campaign `bk` under `n` buckets.
fn bucket_stocks(server: &RedisServer, n: u32) -> Vec<i64> {
    let layout =
        seckill::model::layout::Layout::new(seckill::model::keys::LIVE_PREFIX, "bk", "1001", n);
    let mut conn = server.conn();
    layout
        .all()
        .iter()
        .map(|b| {
            conn.get::<_, Option<i64>>(&b.keys.stock)
                .unwrap()
                .unwrap_or(-1)
        })
        .collect()
}

#[test]
fn a_bucketed_item_returns_released_units_to_the_recorded_bucket() {
    let server = RedisServer::start();
    let bk = |buckets: u32, timeout: &str| {
        campaign("bk")
            .payment_timeout(timeout)
            .item("1001", 8)
            .named("hot")
            .price("9.99")
            .buckets(buckets)
    };
    let file = bk(4, "15m").write();
    let rewrite = |buckets: u32, timeout: &str| {
        std::fs::write(&file.path, bk(buckets, timeout).yaml()).unwrap()
    };
    preheat(&file, &server);
    assert_eq!(bucket_stocks(&server, 4), [2, 2, 2, 2]);
    let buy = |user: &str, code: i32| {
        on(&file, &server, &["buy", "--item", "1001", "--user", user])
            .json()
            .fails_with(code)
            .json()
    };
    // Eight shoppers take every unit (transfers included); a ninth is told sold out,
    // which proves the sell-out in every bucket.
    let mut orders = Vec::new();
    for n in 0..8 {
        let user = format!("s{n}");
        let bought = buy(&user, SUCCESS);
        orders.push((user, bought["order_id"].as_str().unwrap().to_string()));
    }
    buy("late", SOLD_OUT);
    assert_eq!(bucket_stocks(&server, 4), [0, 0, 0, 0]);

    // The file now says another bucket count: preheat refuses it, and the
    // order still returns its unit to the bucket it was sold from.
    rewrite(2, "15m");
    let refused = on(&file, &server, &["preheat"]).runs();
    assert_ne!(refused.code(), SUCCESS, "{}", refused.describe());
    let (user, order) = &orders[0];
    let home = seckill::model::layout::home_bucket(user, 4);
    let cancelled = on(&file, &server, &["cancel", "--order", order])
        .json()
        .succeeds()
        .json();
    assert_eq!(cancelled["bucket"], home, "{cancelled:#}");
    let mut expected = [0, 0, 0, 0];
    expected[home as usize] = 1;
    assert_eq!(bucket_stocks(&server, 4), expected);

    // The proof is gone: a shopper whose home is another bucket buys the unit.
    rewrite(4, "15m");
    let other = (0..)
        .map(|n| format!("x{n}"))
        .find(|u| seckill::model::layout::home_bucket(u, 4) != home)
        .unwrap();
    // The released unit is sold again.
    buy(&other, SUCCESS);
    assert_eq!(bucket_stocks(&server, 4), [0, 0, 0, 0]);

    // Expiry returns each unit to its own bucket too.
    rewrite(4, "100ms");
    settle(&file, &server, "cancel", &orders[1].1, SUCCESS);
    buy("short-lived", SUCCESS);
    let short_home = seckill::model::layout::home_bucket("short-lived", 4);
    std::thread::sleep(Duration::from_millis(150));
    on(&file, &server, &["expire"]).succeeds();
    let stocks = bucket_stocks(&server, 4);
    assert_eq!(stocks.iter().sum::<i64>(), 1, "{stocks:?}");
    assert_eq!(stocks[short_home as usize], 1, "{stocks:?}");

    drain(&file, &server, &[]);
    let report = reconcile(&file, &server, &[], SUCCESS);
    let r = &report["items"][0]["reservations"];
    assert_eq!(r["released_units"], 3, "{report:#}");
}

/// Every key of the item, canonical: "nothing written" means this is unchanged.
fn everything(conn: &mut redis::Connection) -> BTreeMap<String, String> {
    let keys: Vec<String> = conn.keys("*").unwrap();
    keys.into_iter()
        .map(|key| {
            let kind: String = redis::cmd("TYPE").arg(&key).query(conn).unwrap();
            let value = match kind.as_str() {
                "string" => format!("{:?}", conn.get::<_, String>(&key).unwrap()),
                "hash" => format!(
                    "{:?}",
                    conn.hgetall::<_, BTreeMap<String, String>>(&key).unwrap()
                ),
                "zset" => format!(
                    "{:?}",
                    conn.zrange_withscores::<_, Vec<(String, f64)>>(&key, 0, -1)
                        .unwrap()
                ),
                "list" => format!("{:?}", conn.lrange::<_, Vec<String>>(&key, 0, -1).unwrap()),
                "stream" => format!("{}", conn.xlen::<_, i64>(&key).unwrap()),
                other => other.to_string(),
            };
            (key, format!("{kind} {value}"))
        })
        .collect()
}

#[test]
fn pay_and_release_fail_whole_naming_the_key_on_wrong_types_and_malformed_values() {
    let server = RedisServer::start();
    // Pay and cancel before the deadline, expire after it.
    let long = reservation_campaign(10, "15m").write();
    let short = reservation_campaign(10, "50ms").write();
    let k = keys();
    // The typed calls the commands make: pay one order; release one
    // (`cancel`) or up to 10 due ones (`expire`).
    let pay = |order: &str| Pay {
        reservations: k.reservations.clone(),
        deadlines: k.deadlines.clone(),
        meta: k.meta.clone(),
        orders: k.orders.clone(),
        reservation_counts: k.reservation_counts.clone(),
        seats: None,
        seat_orders: None,
        order_id: order.to_string(),
        campaign: "res".to_string(),
        item: "1001".to_string(),
    };
    let release = |mode: &str, order: &str| Release {
        reservations: k.reservations.clone(),
        deadlines: k.deadlines.clone(),
        meta: k.meta.clone(),
        stock: k.stock.clone(),
        buyers: k.buyers.clone(),
        buyer_orders: k.buyer_orders.clone(),
        orders: k.orders.clone(),
        reservation_counts: k.reservation_counts.clone(),
        seats: None,
        seat_orders: None,
        mode: mode.to_string(),
        order_id: order.to_string(),
        reason: String::new(),
        limit: if mode == "cancel" { "1" } else { "10" }.to_string(),
        rebuy: "1".to_string(),
        campaign: "res".to_string(),
        item: "1001".to_string(),
    };
    let mut cases = 0;
    for (script, mode) in [("pay", ""), ("release", "cancel"), ("release", "expire")] {
        // Every KEYS[n] of the script, in its order.
        let keys: Vec<String> = if script == "pay" {
            pay("").keys().into_iter().cloned().collect()
        } else {
            release(mode, "").keys().into_iter().cloned().collect()
        };
        for (index, key) in keys.iter().enumerate() {
            let corruptions: Vec<(&str, &str)> = vec![
                ("type", "string"),
                ("type", "list"),
                ("value", "1.5"),
                ("value", "05"),
                ("value", "99999999999999999999"),
                // 2^53 + 1: Lua's tonumber rounds it to 2^53, so a check that
                // compares the number (not the text) lets it through.
                ("value", "9007199254740993"),
            ];
            for (how, what) in corruptions {
                let mut conn = server.conn();
                let () = redis::cmd("FLUSHALL").query(&mut conn).unwrap();
                let file = if mode == "expire" { &short } else { &long };
                preheat(file, &server);
                let order = reserve_many(&server, file, "v", 1, |_| 1).remove(0).0;
                if mode == "expire" {
                    std::thread::sleep(Duration::from_millis(60));
                }
                let kind: String = redis::cmd("TYPE").arg(key).query(&mut conn).unwrap();
                match (how, kind.as_str()) {
                    ("type", _) => {
                        let () = conn.del(key).unwrap();
                        if what == "string" {
                            let () = conn.set(key, "x").unwrap();
                        } else {
                            let _: i64 = conn.rpush(key, "x").unwrap();
                        }
                    }
                    (_, "string") => {
                        let () = conn.set(key, what).unwrap();
                    }
                    // buyer_orders holds order ids, not numbers.
                    (_, "hash") if *key == k.buyer_orders => continue,
                    // meta holds no number these scripts read (the counters are in
                    // reservation_counts): only its presence and type matter.
                    (_, "hash") if *key == k.meta => continue,
                    (_, "hash") => {
                        // A counter, a buyer's units, a record: each where the script reads it.
                        let () = conn.hset(key, "paid_units", what).unwrap();
                        let () = conn.hset(key, "v0", what).unwrap();
                        if *key == k.reservations {
                            let record = format!("reserved 1 1 1 {what} 1 1-0 v0");
                            let () = conn.hset(key, &order, record).unwrap();
                        }
                    }
                    _ => continue,
                }
                let before = everything(&mut conn);
                let result = match mode {
                    "" => pay(&order).invoke(&mut conn),
                    "cancel" => release(mode, &order).invoke(&mut conn),
                    _ => release(mode, "").invoke(&mut conn),
                };
                let after = everything(&mut conn);
                let case = format!("{script} {mode} KEYS[{}] {key} {how} {what}", index + 1);
                cases += 1;
                match result {
                    Err(e) => {
                        assert_eq!(before, after, "{case}: failed half-way: {e}");
                        assert!(e.to_string().contains(key.as_str()), "{case}: {e}");
                    }
                    // Expire takes an unreadable record off the deadline list (named in its reply).
                    Ok(_) if mode == "expire" && *key == k.reservations => {}
                    Ok(reply) => {
                        assert_eq!(before, after, "{case}: wrote with a corrupt key: {reply:?}")
                    }
                }
            }
        }
    }
    assert!(cases >= 60, "{cases} cases");
}

#[test]
fn concurrent_consumers_store_every_state_whichever_gets_the_order_or_its_change() {
    let server = RedisServer::start();
    let file = reservation_campaign(1000, "15m").write();
    preheat(&file, &server);
    let orders = reserve_many(&server, &file, "cc", 300, |_| 1);
    let campaign = Campaign::load(&file.path).unwrap();
    let mut conn = server.conn();
    for (n, (order, _)) in orders.iter().enumerate() {
        match n % 3 {
            0 => {
                seckill::domain::reservations::pay(&mut conn, &campaign, None, order).unwrap();
            }
            1 => {
                seckill::domain::reservations::cancel(&mut conn, &campaign, None, order, "")
                    .unwrap();
            }
            _ => {}
        }
    }
    // Three consumers with small batches share the group: an order and its
    // change often go to different consumers, in either commit order.
    let mut consumers: Vec<_> = (0..3)
        .map(|n| {
            let name = format!("c{n}");
            KillOnDrop(
                on(
                    &file,
                    &server,
                    &["consume", "--drain", "--batch", "7", "--consumer", &name],
                )
                .spawn(),
            )
        })
        .collect();
    for consumer in &mut consumers {
        let status = wait_exit(&mut consumer.0);
        assert!(status.success(), "{status:?}");
    }
    drain(&file, &server, &[]);
    let states = sqlite_states(&file);
    let records = records(&server);
    assert_eq!(states.len(), 300);
    for (id, record) in &records {
        assert_eq!(states[id], record.state, "{id}");
    }
    reconcile(&file, &server, &[], SUCCESS);
}

#[test]
fn status_shows_reserved_paid_and_released_counts() {
    let server = RedisServer::start();
    let file = reservation_campaign(10, "15m").write();
    preheat(&file, &server);
    let orders = reserve_many(&server, &file, "st", 4, |i| 1 + (i % 2) as u32);
    settle(&file, &server, "pay", &orders[0].0, SUCCESS);
    settle(&file, &server, "cancel", &orders[1].0, SUCCESS);
    let status = on(&file, &server, &["status"]).json().succeeds().json();
    let r = &status["items"][0]["reservations"];
    assert_eq!(
        (
            &r["reserved_orders"],
            &r["reserved_units"],
            &r["paid_units"],
            &r["cancelled_units"]
        ),
        (&2.into(), &3.into(), &1.into(), &2.into()),
        "{r:#}"
    );
    let text = on(&file, &server, &["status"]).runs().stdout();
    assert!(
        text.contains("2 reserved (3 units) · 1 paid (1) · 1 released (2): 0 expired, 1 cancelled"),
        "{text}"
    );
    let text = on(&file, &server, &["status", "--format", "prometheus"])
        .runs()
        .stdout();
    assert!(
        text.contains(r#"seckill_reservation_units{campaign="res",item="1001",state="paid"} 1"#),
        "{text}"
    );
}

#[test]
fn expire_without_the_permission_ends_at_once_instead_of_retrying_forever() {
    let server = RedisServer::start();
    let file = reservation_campaign(5, "1s").write();
    preheat(&file, &server);
    let mut conn = server.conn();
    // Reads and PING, but no EVALSHA: the release script is refused before it runs.
    let _: () = redis::cmd("ACL")
        .arg(&[
            "SETUSER",
            "reader",
            "on",
            ">pw",
            "~*",
            "+@read",
            "+@connection",
            "+time",
        ])
        .query(&mut conn)
        .unwrap();
    let url = format!("redis://reader:pw@127.0.0.1:{}", server.port);
    let stderr = seckill(&["expire", "--loop", "--interval", "100ms"])
        .campaign(&file)
        .redis_url(&url)
        .fails_with_within(RUNTIME_ERROR, Duration::from_secs(30))
        .stderr();
    assert!(stderr.to_lowercase().contains("noperm"), "{stderr}");
    assert!(!stderr.contains("retrying"), "{stderr}");
}

/// `consume` counts a reservation's state changes apart from orders: an
/// expiry is no order "already stored".
#[test]
fn consume_counts_state_changes_apart_from_orders() {
    let server = RedisServer::start();
    let file = crate::support::spec::campaign("evt")
        .payment_timeout("1s")
        .item("1", 10)
        .write();
    crate::support::preheat(&file, &server);
    let run = |args: &[&str]| {
        crate::support::spec::seckill(args)
            .campaign(&file)
            .redis(&server)
    };
    for user in ["a", "b", "c"] {
        run(&["buy", "--item", "1", "--user", user]).succeeds();
    }
    std::thread::sleep(std::time::Duration::from_millis(1200));
    run(&["expire"]).succeeds();
    let consumed = run(&["consume", "--drain"]).json().succeeds().json();
    assert_eq!(consumed["inserted"], 3, "{consumed}");
    assert_eq!(consumed["state_changes"], 3, "{consumed}");
    assert_eq!(consumed["already_stored"], 0, "{consumed}");
}

#[test]
fn a_corrupt_value_ends_a_one_shot_expire_with_exit_1_naming_the_key_and_the_rest_is_released() {
    let server = RedisServer::start();
    let file = campaign("res")
        .per_user_limit(3)
        .payment_timeout("50ms")
        .item("1", 10)
        .item("2", 10)
        .write();
    preheat(&file, &server);
    for item in ["1", "2"] {
        on(&file, &server, &["buy", "--item", item, "--user", "e"]).succeeds();
    }
    // Item 1's buyer count of `e` is no integer: its release cannot run,
    // whatever the wait (before, expire retried it every 5 s, for ever).
    let buyers = ItemKeys::live("res", "1").buyers;
    let () = server.conn().hset(&buyers, "e", "1.5").unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let ran = on(&file, &server, &["expire"])
        .json()
        .within(Duration::from_secs(30))
        .fails_with(RUNTIME_ERROR);
    let stderr = ran.stderr();
    assert!(
        stderr.contains(&buyers) && stderr.contains("\"1.5\""),
        "{stderr}"
    );
    assert!(!stderr.contains("retrying"), "{stderr}");
    let report = ran.json();
    assert_eq!(report["items"][1]["released"], 1, "{report}");
    assert_eq!(report["items"][0]["released"], 0, "{report}");
    assert!(
        report["items"][0]["failed"]
            .as_str()
            .is_some_and(|why| why.contains(&buyers)),
        "{report}"
    );
    // The loop says it once, not every pass, goes on with the rest, and
    // says when it is over.
    on(&file, &server, &["buy", "--item", "2", "--user", "f"]).succeeds();
    let mut looping = spawn_seckill(
        &file,
        &server.url(),
        &[],
        &["expire", "--loop", "--interval", "100ms"],
        "expire-loop",
    );
    wait_until("item 2's second order released", || {
        stock_of(&server, "2") == 10
    });
    std::thread::sleep(Duration::from_millis(500));
    let said = |what: &str| log_of(&file, "expire-loop").matches(what).count();
    assert_eq!(
        said("due reservations NOT released"),
        1,
        "{}",
        log_of(&file, "expire-loop")
    );
    let () = server.conn().hset(&buyers, "e", "1").unwrap();
    wait_until("item 1 released once repaired", || {
        stock_of(&server, "1") == 10
    });
    wait_until("the loop says so", || {
        said("item 1: releases go on again") == 1
    });
    terminate(&looping);
    assert!(wait_exit(&mut looping).success());
}

/// Units left of item `item` of campaign `res`.
fn stock_of(server: &RedisServer, item: &str) -> i64 {
    server
        .conn()
        .get(ItemKeys::live("res", item).stock)
        .unwrap()
}
