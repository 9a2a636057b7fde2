//! Failover drill on a local 3+3 Redis Cluster: a graceful `CLUSTER FAILOVER`
//! of the item's master while shoppers keep buying. Nothing acknowledged is
//! lost, nothing is oversold, and the sale's equation holds on the new
//! master: units sold = order stream entries = buyers. (A graceful failover
//! can hold writes ~10 s: the shoppers' response timeout is 15 s.)

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use redis::Commands;
use seckill::buy::{self, BuyRequest, Outcome};
use seckill::keys::ItemKeys;
use support::cluster::{RedisCluster, node};
use support::{campaign_file, seckill};

const STOCK: i64 = 100_000;

#[test]
fn a_graceful_failover_mid_sale_loses_no_acknowledged_buy_and_oversells_nothing() {
    let cluster = RedisCluster::start_with_replicas(1);
    let file = campaign_file(&format!(
        "campaign: drill\nper_user_limit: 1\nitems:\n  - {{ id: \"1\", name: x, price: \"1.00\", stock: {STOCK} }}\n"
    ));
    seckill(&file.path, &cluster.urls())
        .args(["--cluster", "preheat"])
        .assert()
        .success();
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
    let shoppers: Vec<_> = (0..4)
        .map(|t| {
            let (urls, stop, keys) = (cluster.urls(), Arc::clone(&stop), keys.clone());
            std::thread::spawn(move || {
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
                    };
                    match buy::buy(&mut conn, &keys, &request) {
                        Ok(reply) if reply.outcome == Outcome::Ok => {
                            acknowledged.push(reply.order_id.unwrap());
                        }
                        Ok(reply) if reply.outcome == Outcome::SoldOut => break,
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
}
