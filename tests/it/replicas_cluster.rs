//! `buy --wait-replicas` on a real 3+3 Redis Cluster: WAIT reaches the master
//! that ran the buy, on the connection that ran it. With the replica
//! connected the buy is `ok`; with replication cut on that very master (the
//! other masters keep their replicas) it is `unreplicated` — for a plain
//! item and a bucketed one. A WAIT sent anywhere else (another master, or a
//! fresh connection that wrote nothing) would answer at once with the
//! replicas that are connected there: `ok`.

use crate::support;

use std::time::{Duration, Instant};

use seckill::model::exit_codes::UNREPLICATED;
use seckill::model::keys::{ItemKeys, LIVE_PREFIX};
use seckill::model::layout::Layout;
use support::cluster::{RedisCluster, node};
use support::spec::{Run, campaign, seckill};

fn info(port: u16) -> String {
    redis::cmd("INFO")
        .arg("replication")
        .query(&mut node(port).unwrap())
        .unwrap()
}
/// The replica may no longer sync from the master on `port`, and its link is
/// dropped: the master has no replica to acknowledge anything.
fn cut_replication(port: u16) {
    let mut master = node(port).unwrap();
    let () = redis::cmd("ACL")
        .arg(&["SETUSER", "default", "-psync", "-sync", "-replconf"])
        .query(&mut master)
        .unwrap();
    let _: i64 = redis::cmd("CLIENT")
        .arg(&["KILL", "TYPE", "replica"])
        .query(&mut master)
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !info(port).contains("connected_slaves:0") {
        assert!(Instant::now() < deadline, "the replica stayed connected");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The replica of the master serving `key`, once it is in sync.
fn synced_replica(cluster: &RedisCluster, key: &str) -> u16 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, replicas) = cluster.master_and_replicas_of(key);
        if let Some(&replica) = replicas.first() {
            let i = info(replica);
            if i.contains("master_link_status:up") && i.contains("master_sync_in_progress:0") {
                return replica;
            }
        }
        assert!(Instant::now() < deadline, "no synced replica for {key}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn wait_replicas_on_a_cluster_reaches_the_buys_own_master() {
    let cluster = RedisCluster::start_with_replicas(1);
    let file = campaign("repc")
        .per_user_limit(1)
        .item("1", 10)
        .named("plain")
        .item("hot", 30)
        .named("hot")
        .buckets(3)
        .orders_store(None)
        .write();
    let urls = cluster.urls();
    let minute = Duration::from_secs(60);
    let on_cluster = |file, args: &[&str]| -> Run {
        seckill(&["--cluster"])
            .args(args)
            .campaign(file)
            .redis_url(&urls)
    };
    let buy = |item: &str, user: &str, timeout: &str| {
        on_cluster(&file, &["buy", "--item", item, "--user", user])
            .json()
            .args(&["--wait-replicas", "1", "--wait-timeout", timeout])
            .within(minute)
    };
    let plain = ItemKeys::live("repc", "1").stock;
    let hot = Layout::new(LIVE_PREFIX, "repc", "hot", 3);
    let home_of = |user: &str| hot.home(user).keys.stock;
    for key in [plain.clone(), home_of("h1"), home_of("h2")] {
        synced_replica(&cluster, &key);
    }

    // The load test's blocking cluster path sends EVALSHA and WAIT in one
    // write to the item's master. (Its own campaign file: a load test refuses
    // an item that is preheated for real.)
    let rehearsal = campaign("repl")
        .item("lt", 1)
        .named("x")
        .orders_store(None)
        .write();
    // Healthy replicas answer WAIT at once, so the generous timeout costs
    // nothing there (3 s stays below the 5 s response timeout, as buy
    // requires); it only keeps a fresh cluster's replica link (of the load
    // test's own item, which nothing above synced) or a loaded machine from
    // turning a replicated buy into `unreplicated`. Cut replication answers
    // `unreplicated` after the short one.
    let loadtest = |wait_timeout: &str| {
        on_cluster(&rehearsal, &["loadtest", "--variant", "full"])
            .json()
            .args(&["--wait-replicas", "1", "--wait-timeout", wait_timeout])
            .args(&["--connections", "2", "--requests", "30", "--stock", "10"])
            .within(minute)
            .succeeds()
            .json()["variants"][0]
            .clone()
    };
    let before = loadtest("3s");
    on_cluster(&file, &["preheat"]).succeeds();
    assert_eq!(
        (
            before["succeeded"].as_i64(),
            before["unreplicated"].as_i64()
        ),
        (Some(10), Some(0)),
        "{before}"
    );

    for (item, user) in [("1", "p1"), ("hot", "h1")] {
        let shown = buy(item, user, "2s").succeeds().json();
        assert_eq!(shown["outcome"], "ok", "{shown}");
        assert_eq!(shown["replicas_acked"], 1, "{shown}");
    }

    // Only the master that runs the buy loses its replica: replication is cut
    // there (as in failover.rs); the other masters keep theirs.
    for (item, user, key) in [("1", "p2", plain.clone()), ("hot", "h2", home_of("h2"))] {
        let (master, _) = cluster.master_and_replicas_of(&key);
        cut_replication(master);
        let shown = buy(item, user, "300ms").fails_with(UNREPLICATED).json();
        assert_eq!(shown["outcome"], "unreplicated", "{shown}");
        assert_eq!(shown["replicas_acked"], 0, "{shown}");
        assert!(shown["order_id"].as_str().is_some_and(|id| !id.is_empty()));
    }
    cut_replication(
        cluster
            .master_and_replicas_of("seckill-loadtest:{repl:lt}:stock")
            .0,
    );
    // A load test refuses a Redis carrying a live sale: as if repc's keys had
    // expired, its registry entry goes (its keys stay, on other slots).
    let _: i64 = redis::cmd("HDEL")
        .arg("seckill:campaigns")
        .arg("repc")
        .query(&mut cluster.conn())
        .unwrap();
    let after = loadtest("300ms");
    assert_eq!(
        (after["succeeded"].as_i64(), after["unreplicated"].as_i64()),
        (Some(0), Some(10)),
        "{after}"
    );
    assert_eq!(after["books_balance"], true, "{after}");
}
