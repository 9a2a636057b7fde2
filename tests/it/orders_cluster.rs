//! The order pipeline on a Redis Cluster: each item's stream lives in its
//! own slot, so consume reads per item and the dead-letter script runs in
//! the item's slot; reconcile balances across masters.

use crate::support;

use std::process::Command;

use support::cluster::RedisCluster;
use support::orders::dead_key;
use support::{campaign_file, json, seckill};

#[test]
fn consume_pending_claim_and_reconcile_run_on_a_cluster() {
    let cluster = RedisCluster::start();
    let items: String = (0..6)
        .map(|i| format!("  - {{ id: sku-{i}, name: sku {i}, price: \"9.99\", stock: 3 }}\n"))
        .collect();
    let file = campaign_file(&format!(
        "campaign: flash\nitems:\n{items}orders:\n  store: sqlite://orders.db\n"
    ));
    let cli = || {
        let mut cmd = seckill(&file.path, &cluster.urls());
        cmd.arg("--cluster");
        cmd
    };
    cli().arg("preheat").assert().success();
    for i in 0..6 {
        for user in ["a", "b"] {
            cli()
                .args(["buy", "--item", &format!("sku-{i}"), "--user", user])
                .assert()
                .success();
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

    let output = cli()
        .args(["consume", "--drain", "--format", "json"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(json(&output)["acked"], 12);

    let output = cli()
        .args(["pending-claim", "--min-idle", "0s", "--format", "json"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(json(&output)["items"][4]["dead_lettered"], 1);
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

    let output = cli()
        .args(["reconcile", "--format", "json"])
        .output()
        .unwrap();
    let report = json(&output);
    assert_eq!(output.status.code(), Some(0), "{report:#}");
    for item in report["items"].as_array().unwrap() {
        assert_eq!(item["database"]["units"], 2);
        assert_eq!(item["remaining"], 1);
    }
}
