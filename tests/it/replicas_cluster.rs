//! `buy --wait-replicas` on a real 3+3 Redis Cluster: WAIT reaches the master
//! that ran the buy, on the connection that ran it. With the replica
//! connected the buy is `ok`; with the replica of that very master frozen
//! (SIGSTOP: it stops acknowledging, the other masters' replicas keep
//! theirs) it is `unreplicated` — for a plain item and a bucketed one. A
//! WAIT sent anywhere else (another master, or a fresh connection that wrote
//! nothing) would answer at once with the replicas that are alive: `ok`.

use crate::support;

use std::time::{Duration, Instant};

use seckill::buckets::Layout;
use seckill::exit_codes;
use seckill::keys::{ItemKeys, LIVE_PREFIX};
use support::cluster::{RedisCluster, node};
use support::{campaign_file, json, seckill};

const CAMPAIGN: &str = "campaign: repc\nper_user_limit: 1\nitems:\n  \
    - { id: \"1\", name: plain, price: \"1.00\", stock: 10 }\n  \
    - { id: hot, name: hot, price: \"1.00\", stock: 30, buckets: 3 }\n";

fn info(port: u16) -> String {
    redis::cmd("INFO")
        .arg("replication")
        .query(&mut node(port).unwrap())
        .unwrap()
}

fn pid_of(port: u16) -> String {
    let server: String = redis::cmd("INFO")
        .arg("server")
        .query(&mut node(port).unwrap())
        .unwrap();
    server
        .lines()
        .find_map(|l| l.strip_prefix("process_id:"))
        .unwrap()
        .trim()
        .to_string()
}

fn signal(pid: &str, sig: &str) {
    assert!(
        std::process::Command::new("kill")
            .args([sig, pid])
            .status()
            .unwrap()
            .success()
    );
}

/// Resumes a frozen server even when an assertion fails meanwhile.
struct Frozen(String);

impl Frozen {
    fn new(port: u16) -> Frozen {
        let pid = pid_of(port);
        signal(&pid, "-STOP");
        Frozen(pid)
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        signal(&self.0, "-CONT");
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
    let file = campaign_file(CAMPAIGN);
    let urls = cluster.urls();
    let buy = |item: &str, user: &str, timeout: &str| {
        seckill(&file.path, &urls)
            .args(["--cluster", "buy", "--item", item, "--user", user])
            .args(["--format", "json", "--wait-replicas", "1"])
            .args(["--wait-timeout", timeout])
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap()
    };
    seckill(&file.path, &urls)
        .args(["--cluster", "preheat"])
        .assert()
        .success();
    let plain = ItemKeys::live("repc", "1").stock;
    let hot = Layout::new(LIVE_PREFIX, "repc", "hot", 3);
    let home_of = |user: &str| hot.home(user).keys.stock;
    for key in [plain.clone(), home_of("h1"), home_of("h2")] {
        synced_replica(&cluster, &key);
    }

    for (item, user) in [("1", "p1"), ("hot", "h1")] {
        let output = buy(item, user, "2s");
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        let shown = json(&output);
        assert_eq!(shown["outcome"], "ok", "{shown}");
        assert_eq!(shown["replicas_acked"], 1, "{shown}");
    }

    // Only the replica of the master that runs the buy stops acknowledging.
    for (item, user, key) in [("1", "p2", plain.clone()), ("hot", "h2", home_of("h2"))] {
        let replica = synced_replica(&cluster, &key);
        let frozen = Frozen::new(replica);
        let output = buy(item, user, "300ms");
        drop(frozen);
        assert_eq!(
            output.status.code(),
            Some(exit_codes::UNREPLICATED),
            "{item}: {output:?}"
        );
        let shown = json(&output);
        assert_eq!(shown["outcome"], "unreplicated", "{shown}");
        assert_eq!(shown["replicas_acked"], 0, "{shown}");
        assert!(shown["order_id"].as_str().is_some_and(|id| !id.is_empty()));
    }
}
