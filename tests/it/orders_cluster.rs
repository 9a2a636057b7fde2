//! The order pipeline on a Redis Cluster: each item's stream lives in its
//! own slot, so consume reads per item and the dead-letter script runs in
//! the item's slot; reconcile balances across masters.

use crate::support;

use std::process::Command;

use support::cluster::RedisCluster;
use support::orders::dead_key;
use support::spec::{Run, campaign, seckill};

#[test]
fn consume_pending_claim_and_reconcile_run_on_a_cluster() {
    let cluster = RedisCluster::start();
    let file = (0..6)
        .fold(campaign("flash"), |sale, i| {
            sale.item(&format!("sku-{i}"), 3)
                .named(&format!("sku {i}"))
                .price("9.99")
        })
        .write();
    let cli = |args: &[&str]| -> Run {
        seckill(&["--cluster"])
            .args(args)
            .campaign(&file)
            .redis_url(&cluster.urls())
    };
    cli(&["preheat"]).succeeds();
    for i in 0..6 {
        for user in ["a", "b"] {
            cli(&["buy", "--item", &format!("sku-{i}"), "--user", user]).succeeds();
        }
    }
    let poisoned = "seckill:{flash:sku-4}:orders";
    let status = Command::new("redis-cli")
        .args([
            "-c",
            "-p",
            &cluster.ports[0].to_string(),
            "XADD",
            poisoned,
            "*",
            "junk",
            "1",
        ])
        .stdout(std::process::Stdio::null())
        .status()
        .expect("redis-cli");
    assert!(status.success());

    let drained = cli(&["consume", "--drain"]).json().succeeds().json();
    assert_eq!(drained["acked"], 12);

    let claims = cli(&["pending-claim", "--min-idle", "0s"])
        .json()
        .succeeds()
        .json();
    assert_eq!(claims["items"][4]["dead_lettered"], 1);
    let dead_len = Command::new("redis-cli")
        .args([
            "-c",
            "-p",
            &cluster.ports[0].to_string(),
            "XLEN",
            &dead_key("sku-4"),
        ])
        .output()
        .expect("redis-cli");
    assert_eq!(String::from_utf8_lossy(&dead_len.stdout).trim(), "1");

    let report = cli(&["reconcile"]).json().succeeds().json();
    for item in report["items"].as_array().unwrap() {
        assert_eq!(item["database"]["units"], 2);
        assert_eq!(item["remaining"], 1);
    }
}
