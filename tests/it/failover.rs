//! Failover drill on a local 3+3 Redis Cluster: a graceful `CLUSTER FAILOVER`
//! of the item's master while shoppers keep buying. Nothing acknowledged is
//! lost, nothing is oversold, and the sale's equation holds on the new
//! master: units sold = order stream entries = buyers. (A graceful failover
//! can hold writes ~10 s: the shoppers' response timeout is 15 s.) The new
//! master is another Redis process, so its sale is fenced (`fenced`) until
//! `reconcile --fence`; after a forced failover that lost acknowledged buys,
//! reconcile --fence re-applies them and the sale reopens.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use redis::Commands;
use seckill::domain::item::SaleItem;
use seckill::domain::slot::{BuyRequest, Outcome};
use seckill::model::campaign::Campaign;
use seckill::model::exit_codes::{DRIFT_FOUND, DUPLICATE, FENCED};
use seckill::model::keys::ItemKeys;
use support::Frozen;
use support::cluster::{RedisCluster, node};
use support::spec::{campaign, seckill};

const STOCK: i64 = 100_000;

#[test]
fn a_graceful_failover_mid_sale_loses_no_acknowledged_buy_and_oversells_nothing() {
    let cluster = RedisCluster::start_with_replicas(1);
    let file = campaign("drill")
        .per_user_limit(1)
        .item("1", STOCK)
        .named("x")
        .orders_store(None)
        .write();
    seckill(&["--cluster", "preheat"])
        .campaign(&file)
        .redis_url(&cluster.urls())
        .succeeds();
    let keys = ItemKeys::live("drill", "1");
    // Replicas show in CLUSTER NODES once gossip spread them.
    let deadline = Instant::now() + Duration::from_secs(30);
    let (master, replica) = loop {
        let (master, replicas) = cluster.master_and_replicas_of(&keys.stock);
        if let Some(&replica) = replicas.first() {
            break (master, replica);
        }
        assert!(
            Instant::now() < deadline,
            "the item's master has no replica"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    // A replica that has not finished its first sync cannot take over.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let info: String = redis::cmd("INFO")
            .arg("replication")
            .query(&mut node(replica).unwrap())
            .unwrap();
        if info.contains("master_link_status:up") && info.contains("master_sync_in_progress:0") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the replica never synced: {info}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    let stop = Arc::new(AtomicBool::new(false));
    let fenced = Arc::new(AtomicBool::new(false));
    let shoppers: Vec<_> = (0..4)
        .map(|t| {
            let (urls, stop, path) = (cluster.urls(), Arc::clone(&stop), file.path.clone());
            let fenced = Arc::clone(&fenced);
            std::thread::spawn(move || {
                let campaign = Campaign::load(&path).unwrap();
                let sale = SaleItem::live(&campaign, campaign.item("1").unwrap());
                let seeds: Vec<String> = urls.split(',').map(String::from).collect();
                let mut conn = redis::cluster::ClusterClientBuilder::new(seeds)
                    .connection_timeout(Duration::from_secs(2))
                    .response_timeout(Duration::from_secs(15))
                    .build()
                    .unwrap()
                    .get_connection()
                    .unwrap();
                let (mut acknowledged, mut unknown) = (Vec::new(), 0u64);
                for n in 0.. {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let user = format!("t{t}-{n}");
                    let request = BuyRequest {
                        campaign: "drill",
                        item: "1",
                        user: &user,
                        qty: 1,
                        request_id: None,
                        ticket: None,
                        seats: None,
                    };
                    match sale.buy(&mut conn, &request).map(|attempt| attempt.reply) {
                        Ok(reply) if reply.outcome == Outcome::Ok => {
                            acknowledged.push(reply.order_id.unwrap());
                        }
                        Ok(reply) if reply.outcome == Outcome::SoldOut => break,
                        // The new master is another Redis process: the
                        // sale is fenced until reconcile --fence, a graceful
                        // failover too (docs/failover.md, "The fence").
                        Ok(reply) if reply.outcome == Outcome::Fenced => {
                            fenced.store(true, Ordering::SeqCst);
                            break;
                        }
                        Ok(reply) => panic!("unexpected {reply:?}"),
                        Err(_) => unknown += 1,
                    }
                }
                (acknowledged, unknown)
            })
        })
        .collect();

    std::thread::sleep(Duration::from_millis(500));
    let () = redis::cmd("CLUSTER")
        .arg("FAILOVER")
        .query(&mut node(replica).unwrap())
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let info: String = redis::cmd("INFO")
            .arg("replication")
            .query(&mut node(replica).unwrap())
            .unwrap();
        if info.contains("role:master") {
            break;
        }
        assert!(Instant::now() < deadline, "the replica never took over");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(700));
    stop.store(true, Ordering::SeqCst);
    let (mut acknowledged, mut unknown) = (Vec::new(), 0);
    for shopper in shoppers {
        let (acked, lost) = shopper.join().unwrap();
        acknowledged.extend(acked);
        unknown += lost;
    }

    // Read the item on its new master (the old one is its replica now).
    let mut conn = node(replica).unwrap();
    let stock: i64 = conn.get(&keys.stock).unwrap();
    let stream: redis::streams::StreamRangeReply = redis::cmd("XRANGE")
        .arg(&keys.orders)
        .arg("-")
        .arg("+")
        .query(&mut conn)
        .unwrap();
    let buyers: std::collections::HashMap<String, i64> = conn.hgetall(&keys.buyers).unwrap();
    let sold = STOCK - stock;
    assert!(stock >= 0, "oversold");
    assert_eq!(
        sold as usize,
        stream.ids.len(),
        "units sold = stream entries"
    );
    assert_eq!(
        sold,
        buyers.values().sum::<i64>(),
        "units sold = buyers' units"
    );
    assert_eq!(sold as usize, buyers.len());
    let in_stream: std::collections::HashSet<String> = stream
        .ids
        .iter()
        .filter_map(|entry| entry.get::<String>("order_id"))
        .collect();
    for order in &acknowledged {
        assert!(in_stream.contains(order), "acknowledged order {order} lost");
    }
    assert!(acknowledged.len() as u64 <= sold as u64);
    assert!(sold as u64 <= acknowledged.len() as u64 + unknown);
    assert!(
        acknowledged.len() > 100,
        "only {} buys acknowledged",
        acknowledged.len()
    );
    let role: String = redis::cmd("INFO")
        .arg("replication")
        .query(&mut node(master).unwrap())
        .unwrap();
    assert!(
        role.contains("role:slave"),
        "the old master did not step down"
    );
    assert!(
        fenced.load(Ordering::SeqCst),
        "no buy on the new master answered fenced"
    );
}

/// Wait until `check` holds, or fail naming `what`.
fn wait_until(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn info(port: u16, section: &str) -> String {
    redis::cmd("INFO")
        .arg(section)
        .query(&mut node(port).unwrap())
        .unwrap()
}

#[test]
fn a_forced_failover_loses_unreplicated_buys_and_reconcile_names_them() {
    let cluster = RedisCluster::start_with_replicas(1);
    let file = campaign("force")
        .per_user_limit(1)
        .item("1", 100)
        .named("x")
        .write();
    let keys = ItemKeys::live("force", "1");
    let mut pair = None;
    wait_until("the item's master to show its replica", || {
        let (master, replicas) = cluster.master_and_replicas_of(&keys.stock);
        pair = replicas.first().map(|r| (master, *r));
        pair.is_some()
    });
    let (master, replica) = pair.unwrap();
    wait_until("the replica's first sync", || {
        let i = info(replica, "replication");
        i.contains("master_link_status:up") && i.contains("master_sync_in_progress:0")
    });
    let run = |seeds: &str, args: &[&str]| {
        seckill(&["--cluster"])
            .args(args)
            .campaign(&file)
            .redis_url(seeds)
            .current_dir(file.dir.path())
    };
    let all = cluster.urls();
    let minute = Duration::from_secs(60);
    run(&all, &["preheat"]).within(minute).succeeds();
    let buy_as = |user: &str| {
        run(&all, &["buy", "--item", "1", "--user", user])
            .json()
            .within(minute)
            .succeeds()
            .json()["order_id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    for n in 0..5 {
        buy_as(&format!("replicated{n}"));
    }
    let offset = |port: u16, field: &str| -> Option<String> {
        info(port, "replication")
            .lines()
            .find_map(|l| l.strip_prefix(field).map(|v| v.trim().to_string()))
    };
    wait_until("the replica to catch up", || {
        offset(master, "master_repl_offset:") == offset(replica, "master_repl_offset:")
    });

    // Cut replication: the replica may no longer sync, and its link is dropped.
    let mut m = node(master).unwrap();
    let () = redis::cmd("ACL")
        .arg(&["SETUSER", "default", "-psync", "-sync", "-replconf"])
        .query(&mut m)
        .unwrap();
    let _: i64 = redis::cmd("CLIENT")
        .arg(&["KILL", "TYPE", "replica"])
        .query(&mut m)
        .unwrap();
    wait_until("the replica to lose its master", || {
        info(replica, "replication").contains("master_link_status:down")
    });
    // Acknowledged by the master, never replicated, and stored by consume.
    let lost: Vec<String> = (0..5)
        .map(|n| buy_as(&format!("unreplicated{n}")))
        .collect();
    run(&all, &["consume", "--drain"]).within(minute).succeeds();

    // The master freezes (until `frozen` is dropped, even when an assertion
    // fails); its replica is forced to take over without it.
    let frozen = Frozen::new(&mut node(master).unwrap());
    let () = redis::cmd("CLUSTER")
        .arg(&["FAILOVER", "FORCE"])
        .query(&mut node(replica).unwrap())
        .unwrap();
    wait_until("the forced takeover", || {
        info(replica, "replication").contains("role:master")
    });
    let alive_ports: Vec<u16> = cluster
        .ports
        .iter()
        .copied()
        .filter(|p| *p != master)
        .collect();
    // Every live node must know the new master before a client asks them
    // for the slot map (else it is sent to the frozen node and waits).
    wait_until("every node to learn the new master", || {
        alive_ports.iter().all(|p| {
            let nodes: String = redis::cmd("CLUSTER")
                .arg("NODES")
                .query(&mut node(*p).unwrap())
                .unwrap();
            nodes.lines().any(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                f[1].starts_with(&format!("127.0.0.1:{replica}@"))
                    && f[2].contains("master")
                    && f.len() > 8
            })
        })
    });
    let alive: Vec<String> = alive_ports
        .iter()
        .map(|p| format!("redis://127.0.0.1:{p}"))
        .collect();
    let report = run(&alive.join(","), &["reconcile"])
        .json()
        .within(minute)
        .fails_with(DRIFT_FOUND)
        .json();
    drop(frozen);
    let item = &report["items"][0];
    let mut named: Vec<String> = item["not_in_redis"]["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    named.sort();
    let mut expected = lost.clone();
    expected.sort();
    assert_eq!(
        named, expected,
        "reconcile names exactly the lost buys: {item:#}"
    );
    assert_eq!(
        item["remaining"], 95,
        "the new master never saw the lost buys"
    );

    // The new master sells nothing (a lost buyer would buy a second unit)
    // until reconcile --fence re-applied the lost buys; then the books
    // balance and the sale reopens (docs/failover.md, "The fence").
    let seeds = alive.join(",");
    run(&seeds, &["buy", "--item", "1", "--user", "unreplicated0"])
        .within(minute)
        .fails_with(FENCED);
    let report = run(&seeds, &["reconcile", "--fence"])
        .json()
        .within(minute)
        .succeeds()
        .json();
    let fence = &report["items"][0]["fence"];
    assert_eq!(fence["units_reapplied"], 5, "{report:#}");
    assert_eq!(fence["reopened"], true, "{report:#}");
    assert_eq!(report["items"][0]["remaining"], 90, "{report:#}");
    run(&seeds, &["buy", "--item", "1", "--user", "unreplicated0"])
        .within(minute)
        .fails_with(DUPLICATE);
    run(&seeds, &["buy", "--item", "1", "--user", "newcomer"])
        .within(minute)
        .succeeds();
}
