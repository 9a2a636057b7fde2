//! Never oversell after Redis loses data. `preheat` consults the order
//! database: an item whose orders are stored there is not loaded with its
//! whole stock again (that sold 30 units of a 20-unit item); `--recover`
//! loads what is left and restores the buyers. `preheat` warns when Redis
//! persists nothing (`--require-durable` refuses), and a SIGKILLed Redis
//! with AOF and `appendfsync always` keeps every acknowledged buy.
//!
//! Reconcile after the loss: drift naming the stored orders whose stream
//! entries are gone, with `preheat --recover` as the next step (it used to
//! exit 1, "not preheated"); after the recovery, balanced against the
//! recorded baseline every night, while a new loss still pages.

use crate::support;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use redis::Commands;
use seckill::domain::item::SaleItem;
use seckill::domain::slot::{BuyRequest, Outcome};
use seckill::model::campaign::Campaign;
use seckill::model::exit_codes::{DRIFT_FOUND, DUPLICATE, NOT_PREHEATED, PREHEAT_REFUSED, SUCCESS};
use seckill::model::keys::ItemKeys;
use support::RedisServer;
use support::orders::{buy_many, seckill_on, sorted, sqlite_order_ids, sqlite_path};
use support::spec::{CampaignSpec, campaign, seckill};

/// Campaign `loss`: one item of `stock` units, orders in `orders.db`.
fn loss(stock: i64) -> CampaignSpec {
    campaign("loss")
        .per_user_limit(1)
        .item("1", stock)
        .named("x")
}

fn keys() -> ItemKeys {
    ItemKeys::live("loss", "1")
}

#[test]
fn preheat_refuses_to_resell_stored_orders_and_recover_loads_only_what_is_left() {
    let server = RedisServer::start();
    let file = loss(20).write();
    let run = |args: &[&str]| seckill_on(&file, &server, args);
    run(&["preheat"]).succeeds();
    // buy_many's campaign id comes from the file: 12 users buy one unit each.
    let sold = buy_many(&server, &file, "1", "early", 12);
    assert_eq!(sold.len(), 12);
    run(&["consume", "--drain"])
        .current_dir(file.dir.path())
        .succeeds();

    // Redis restarts empty (no persistence, FLUSHALL, failover to an empty replica).
    let mut conn = server.conn();
    let () = redis::cmd("FLUSHALL").query(&mut conn).unwrap();
    run(&["buy", "--item", "1", "--user", "early0"]).fails_with(NOT_PREHEATED);

    // The natural next step must not put the whole stock back.
    let stderr = run(&["preheat"]).fails_with(PREHEAT_REFUSED).stderr();
    assert!(stderr.contains("12 unit(s) in 12 order(s)"), "{stderr}");
    assert!(stderr.contains("--recover"), "{stderr}");
    let stock: Option<i64> = conn.get(&keys().stock).unwrap();
    assert_eq!(stock, None, "a refused preheat wrote stock");

    let stdout = run(&["preheat", "--recover"]).succeeds().stdout();
    assert!(stdout.contains("cannot be known"), "{stdout}");
    let stock: i64 = conn.get(&keys().stock).unwrap();
    assert_eq!(stock, 8, "initial 20 - 12 stored");
    let buyers: i64 = conn.hlen(&keys().buyers).unwrap();
    assert_eq!(buyers, 12, "the buyers were restored");
    let closed: Option<String> = conn.hget(&keys().meta, "closed").unwrap();
    assert_eq!(closed.as_deref(), Some("0"), "the item is open again");

    // An early buyer is still a duplicate; 20 newcomers get only the 8 left.
    run(&["buy", "--item", "1", "--user", "early0"]).fails_with(DUPLICATE);
    let late = buy_many(&server, &file, "1", "late", 20);
    assert_eq!(late.len(), 8);
    run(&["consume", "--drain"])
        .current_dir(file.dir.path())
        .succeeds();
    assert_eq!(
        sqlite_order_ids(&sqlite_path(&file)).len(),
        20,
        "exactly the stock was sold, never more"
    );
    // A second --recover changes nothing: the stock is there again.
    run(&["preheat", "--recover"]).succeeds();
    let stock: i64 = conn.get(&keys().stock).unwrap();
    assert_eq!(stock, 0);
}

#[test]
fn preheat_warns_when_redis_persists_nothing_and_require_durable_refuses() {
    let volatile = RedisServer::start();
    let file = loss(20).write();
    let stderr = seckill_on(&file, &volatile, &["preheat", "--require-durable"])
        .fails_with(PREHEAT_REFUSED)
        .stderr();
    assert!(stderr.contains("persists nothing"), "{stderr}");
    let stock: Option<i64> = volatile.conn().get(&keys().stock).unwrap();
    assert_eq!(stock, None, "--require-durable wrote to a volatile Redis");
    let stderr = seckill_on(&file, &volatile, &["preheat"])
        .succeeds()
        .stderr();
    assert!(
        stderr.contains("warning") && stderr.contains("persists nothing"),
        "{stderr}"
    );

    let durable = RedisServer::start_with(&["--appendonly", "yes", "--appendfsync", "always"]);
    let stderr = seckill_on(&file, &durable, &["preheat", "--require-durable"])
        .succeeds()
        .stderr();
    assert!(!stderr.contains("warning"), "{stderr}");
}

/// A redis-server with AOF (`appendfsync always`) in `dir`, on `port`.
fn aof_server(dir: &Path, port: u16) -> RedisServer {
    RedisServer::options()
        .port(port)
        .dir(dir)
        .args(&["--appendonly", "yes", "--appendfsync", "always"])
        .start()
}

#[test]
fn a_sigkilled_redis_with_aof_always_keeps_every_acknowledged_buy() {
    let dir = tempfile::tempdir().unwrap();
    let port = support::free_port();
    let url = format!("redis://127.0.0.1:{port}/0");
    let file = loss(100_000).write();
    let mut server = aof_server(dir.path(), port);
    seckill(&["preheat"])
        .campaign(&file)
        .redis_url(&url)
        .succeeds();

    // Four shoppers' threads buy until Redis dies under them.
    let killed = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (url, killed, path) = (url.clone(), Arc::clone(&killed), file.path.clone());
            std::thread::spawn(move || {
                let campaign = Campaign::load(&path).unwrap();
                let sale = SaleItem::live(&campaign, campaign.item("1").unwrap());
                let client = redis::Client::open(url).unwrap();
                let mut conn = client.get_connection().unwrap();
                conn.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
                let mut acknowledged = Vec::new();
                for n in 0.. {
                    let user = format!("t{t}-{n}");
                    let request = BuyRequest {
                        campaign: "loss",
                        item: "1",
                        user: &user,
                        qty: 1,
                        request_id: None,
                        ticket: None,
                        seats: None,
                    };
                    match sale.buy(&mut conn, &request).map(|attempt| attempt.reply) {
                        Ok(reply) if reply.outcome == Outcome::Ok => {
                            acknowledged.push((user, reply.order_id.unwrap()));
                        }
                        Ok(reply) => panic!("{reply:?}"),
                        Err(_) => break,
                    }
                    if killed.load(Ordering::SeqCst) && n > 100_000 {
                        break;
                    }
                }
                acknowledged
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(700));
    server.kill(); // SIGKILL: no shutdown, no final fsync
    killed.store(true, Ordering::SeqCst);
    let acknowledged: Vec<(String, String)> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    assert!(
        acknowledged.len() > 50,
        "only {} buys before the kill",
        acknowledged.len()
    );

    let _restarted = aof_server(dir.path(), port);
    let mut conn = redis::Client::open(url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let stream: redis::streams::StreamRangeReply = redis::cmd("XRANGE")
        .arg(&keys().orders)
        .arg("-")
        .arg("+")
        .query(&mut conn)
        .unwrap();
    let in_stream: std::collections::HashSet<String> = stream
        .ids
        .iter()
        .filter_map(|entry| entry.get::<String>("order_id"))
        .collect();
    for (user, order_id) in &acknowledged {
        let units: Option<i64> = conn.hget(&keys().buyers, user).unwrap();
        assert_eq!(units, Some(1), "acknowledged buy of {user} lost");
        assert!(in_stream.contains(order_id), "order {order_id} lost");
    }
    let stock: i64 = conn.get(&keys().stock).unwrap();
    let sold = 100_000 - stock;
    assert_eq!(
        sold as usize,
        stream.ids.len(),
        "stock and stream disagree after the restart"
    );
    assert!(stream.ids.len() >= acknowledged.len());
}

/// `reconcile --format json` of campaign `loss`, run where the campaign file is.
fn reconcile_loss(
    file: &support::CampaignFile,
    server: &RedisServer,
    code: i32,
) -> serde_json::Value {
    seckill_on(file, server, &["reconcile"])
        .json()
        .current_dir(file.dir.path())
        .fails_with(code)
        .json()
}

fn names(list: &serde_json::Value) -> Vec<String> {
    let mut ids: Vec<String> = list["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

/// `users` orders of campaign `loss` stored, then Redis loses everything (a
/// restart without persistence: every key is gone, the stream with them).
/// Returns the stored order ids, sorted.
fn stored_then_lost(
    file: &support::CampaignFile,
    server: &RedisServer,
    users: usize,
) -> Vec<String> {
    let run = |args: &[&str]| seckill_on(file, server, args).current_dir(file.dir.path());
    run(&["preheat"]).succeeds();
    let sold = sorted(buy_many(server, file, "1", "early", users));
    run(&["consume", "--drain"]).succeeds();
    let () = redis::cmd("FLUSHALL").query(&mut server.conn()).unwrap();
    sold
}

#[test]
fn after_redis_lost_its_data_reconcile_names_the_stored_orders_as_drift_and_the_next_step() {
    let server = RedisServer::start();
    let file = loss(20).write();
    let run = |args: &[&str]| seckill_on(&file, &server, args).current_dir(file.dir.path());
    let sold = stored_then_lost(&file, &server, 10);
    let report = reconcile_loss(&file, &server, DRIFT_FOUND);
    let item = &report["items"][0];
    assert_eq!(item["checked"], true, "{item:#}");
    assert_eq!(item["redis_lost_data"], true, "{item:#}");
    assert_eq!(item["not_in_redis"]["count"], 10, "{item:#}");
    assert_eq!(
        names(&item["not_in_redis"]),
        sold,
        "the stored orders are named"
    );
    assert!(
        item["next_step"]
            .as_str()
            .is_some_and(|s| s.contains("preheat --recover")),
        "{item:#}"
    );
    let text = run(&["reconcile"]).fails_with(DRIFT_FOUND).stdout();
    assert!(text.contains("Redis lost its data"), "{text}");
    assert!(text.contains("next: seckill -c"), "{text}");
    assert!(text.contains(&sold[0]), "{text}");
    // Reconcile wrote nothing: preheat still refuses to sell them again.
    run(&["preheat"]).fails_with(PREHEAT_REFUSED);
}

#[test]
fn after_preheat_recover_reconcile_balances_against_the_known_loss_and_a_new_loss_still_pages() {
    let server = RedisServer::start();
    let file = loss(20).write();
    let run = |args: &[&str]| seckill_on(&file, &server, args).current_dir(file.dir.path());
    stored_then_lost(&file, &server, 12);
    run(&["preheat", "--recover"]).succeeds();

    // Every night from now on: balanced, the loss shown, not paged on.
    for _night in 0..2 {
        let report = reconcile_loss(&file, &server, SUCCESS);
        let item = &report["items"][0];
        assert_eq!(item["balanced"], true, "{item:#}");
        let known = &item["known_loss"];
        assert_eq!(known["rows_carried"], 12, "{item:#}");
        assert_eq!(known["units_carried"], 12, "{item:#}");
        assert_eq!(known["intact"], true, "{item:#}");
        assert_eq!(known["recoveries"][0]["stock_loaded"], 8, "{item:#}");
        assert_eq!(item["initial_stock"], 20, "{item:#}");
        assert_eq!(item["not_in_redis"]["count"], 0, "{item:#}");
    }
    let text = run(&["reconcile"]).succeeds().stdout();
    assert!(text.contains("known loss"), "{text}");
    assert!(text.contains("12 carried over"), "{text}");

    // New sales after the recovery are checked as ever.
    let late = buy_many(&server, &file, "1", "late", 3);
    assert_eq!(late.len(), 3);
    run(&["consume", "--drain"]).succeeds();
    let report = reconcile_loss(&file, &server, SUCCESS);
    assert_eq!(report["items"][0]["stored"]["units"], 3);
    assert_eq!(report["items"][0]["remaining"], 5);

    // A carried-over order changed behind the baseline's back is drift again.
    let db = rusqlite::Connection::open(sqlite_path(&file)).unwrap();
    let carried: String = db
        .query_row(
            "SELECT order_id FROM orders WHERE recovered_at IS NOT NULL LIMIT 1",
            [],
            |row| row.get(0),
        )
        .unwrap();
    db.execute("UPDATE orders SET qty = 2 WHERE order_id = ?1", [&carried])
        .unwrap();
    let report = reconcile_loss(&file, &server, DRIFT_FOUND);
    assert_eq!(report["items"][0]["known_loss"]["intact"], false);
    db.execute("UPDATE orders SET qty = 1 WHERE order_id = ?1", [&carried])
        .unwrap();
    reconcile_loss(&file, &server, SUCCESS);

    // Redis loses its data again: only the 3 orders since the recovery are news.
    let () = redis::cmd("FLUSHALL").query(&mut server.conn()).unwrap();
    let report = reconcile_loss(&file, &server, DRIFT_FOUND);
    let item = &report["items"][0];
    assert_eq!(item["redis_lost_data"], true, "{item:#}");
    assert_eq!(names(&item["not_in_redis"]), sorted(late), "{item:#}");
    // And the second recovery adds them to the baseline.
    run(&["preheat", "--recover"]).succeeds();
    let report = reconcile_loss(&file, &server, SUCCESS);
    let known = &report["items"][0]["known_loss"];
    assert_eq!(known["rows_carried"], 15, "{known:#}");
    assert_eq!(
        known["recoveries"].as_array().unwrap().len(),
        2,
        "{known:#}"
    );
    assert_eq!(report["items"][0]["remaining"], 5);
}
