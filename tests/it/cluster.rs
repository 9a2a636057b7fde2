//! Scale-out is Redis Cluster: every key of one item shares a hash tag, so the
//! buy script runs in one slot while different items spread over the masters.

use crate::support;

use seckill::model::exit_codes::{CLOSED, DUPLICATE, SOLD_OUT, SUCCESS, USAGE_ERROR};
use support::cluster::RedisCluster;
use support::spec::{Run, campaign, seckill};

#[test]
fn the_toolkit_runs_unchanged_on_a_three_master_cluster() {
    let cluster = RedisCluster::start();
    let file = (0..12)
        .fold(campaign("clustered").rate_limit("1h", 100), |spec, i| {
            spec.item(&format!("sku-{i}"), 2)
                .named(&format!("sku {i}"))
                .price("9.99")
        })
        .write();
    let cli = |args: &[&str]| -> Run { seckill(args).campaign(&file).cluster(&cluster) };
    cli(&["preheat"]).succeeds();
    for i in 0..12 {
        let item = format!("sku-{i}");
        for (user, expected) in [
            ("a", SUCCESS),
            ("a", DUPLICATE),
            ("b", SUCCESS),
            ("c", SOLD_OUT),
        ] {
            cli(&["buy", "--item", &item, "--user", user]).fails_with(expected);
        }
    }
    // Twelve items land on more than one master.
    let busy_nodes = cluster
        .ports
        .iter()
        .filter(|p| cluster.keys_on(**p) > 0)
        .count();
    assert!(busy_nodes >= 2, "keys all on one node");

    cli(&["shutdown-switch", "on"]).succeeds();
    // Every item is sold out: a newcomer hears sold_out before the switch
    // (docs/lua.md, "Which answer wins"); a buyer who holds units meets it.
    cli(&["buy", "--item", "sku-3", "--user", "z"]).fails_with(SOLD_OUT);
    cli(&["buy", "--item", "sku-3", "--user", "a"]).fails_with(CLOSED);
    let status = cli(&["shutdown-switch", "status"]).json().runs().json();
    let items = status["items"].as_array().unwrap();
    assert_eq!(items.len(), 12);
    assert!(
        items
            .iter()
            .all(|i| i["closed"] == true && i["stock_left"] == 0)
    );
    // status reads each item on its own node (one script per item, one slot each).
    let status = cli(&["status"]).json().runs().json();
    let items = status["items"].as_array().unwrap();
    assert_eq!(items.len(), 12);
    assert!(
        items
            .iter()
            .all(|i| i["sold"] == 2 && i["stream"]["length"] == 2)
    );
    // Its orders are not stored: the campaign id is typed to delete them
    // (`--yes` alone refuses, closed or not: issue 25 item 39).
    cli(&["init", "--yes"]).fails_with(USAGE_ERROR);
    cli(&["init", "--yes", "--purge-orders", "clustered"]).succeeds();
    cli(&["buy", "--item", "sku-3", "--user", "a"]).succeeds();
}
