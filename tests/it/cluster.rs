//! Scale-out is Redis Cluster: every key of one item shares a hash tag, so the
//! buy script runs in one slot while different items spread over the masters.

use crate::support;

use seckill::model::exit_codes;
use support::cluster::RedisCluster;
use support::{campaign_file, json, seckill};

#[test]
fn the_toolkit_runs_unchanged_on_a_three_master_cluster() {
    let cluster = RedisCluster::start();
    let items: String = (0..12)
        .map(|i| format!("  - {{ id: sku-{i}, name: sku {i}, price: \"9.99\", stock: 2 }}\n"))
        .collect();
    let file = campaign_file(&format!(
        "campaign: clustered\nrate_limit: {{ window: 1h, max_requests: 100 }}\nitems:\n{items}"
    ));
    let cli = || {
        let mut cmd = seckill(&file.path, &cluster.urls());
        cmd.arg("--cluster");
        cmd
    };
    cli().arg("preheat").assert().success();
    for i in 0..12 {
        let item = format!("sku-{i}");
        for (user, expected) in [
            ("a", 0),
            ("a", exit_codes::DUPLICATE),
            ("b", 0),
            ("c", exit_codes::SOLD_OUT),
        ] {
            cli()
                .args(["buy", "--item", &item, "--user", user])
                .assert()
                .code(expected);
        }
    }
    // Twelve items land on more than one master.
    let busy_nodes = cluster
        .ports
        .iter()
        .filter(|p| cluster.keys_on(**p) > 0)
        .count();
    assert!(busy_nodes >= 2, "keys all on one node");

    cli().args(["shutdown-switch", "on"]).assert().success();
    cli()
        .args(["buy", "--item", "sku-3", "--user", "z"])
        .assert()
        .code(exit_codes::CLOSED);
    let output = cli()
        .args(["shutdown-switch", "status", "--format", "json"])
        .output()
        .unwrap();
    let status = json(&output);
    let items = status["items"].as_array().unwrap();
    assert_eq!(items.len(), 12);
    assert!(
        items
            .iter()
            .all(|i| i["closed"] == true && i["stock_left"] == 0)
    );
    // status reads each item on its own node (one script per item, one slot each).
    let output = cli().args(["status", "--format", "json"]).output().unwrap();
    let status = json(&output);
    let items = status["items"].as_array().unwrap();
    assert_eq!(items.len(), 12);
    assert!(
        items
            .iter()
            .all(|i| i["sold"] == 2 && i["stream"]["length"] == 2)
    );
    cli().args(["init", "--yes"]).assert().success();
    cli()
        .args(["buy", "--item", "sku-3", "--user", "a"])
        .assert()
        .code(0);
}
