//! Connection settings an operator gets wrong, and what seckill says then
//! (issue 25, items 17 and 28): every boolean environment variable takes
//! 1/0, yes/no, true/false, on/off in any case (systemd env files write
//! `=1`); `--cluster` on a standalone Redis, and a cluster node without
//! `--cluster`, each say what to change instead of `ClusterConnectionNotFound`
//! or a bare `Moved`.

use seckill::model::exit_codes::{RUNTIME_ERROR, USAGE_ERROR};
use seckill::model::keys::ItemKeys;

use crate::support::cluster::RedisCluster;
use crate::support::spec::{campaign, seckill};
use crate::support::{RedisServer, preheat};

#[test]
fn boolean_environment_variables_take_1_0_yes_no_true_false() {
    let server = RedisServer::start();
    let file = campaign("envb").item("1", 5).write();
    preheat(&file, &server);
    let status = || seckill(&["status"]).campaign(&file).redis(&server);
    for on in ["1", "yes", "TRUE", "True", "on"] {
        let quiet = status().env("SECKILL_QUIET", on).succeeds();
        assert_eq!(quiet.stdout(), "", "SECKILL_QUIET={on}");
        let traced = status().env("SECKILL_DEBUG", on).succeeds();
        assert!(
            traced.stderr().contains("seckill: trace:"),
            "SECKILL_DEBUG={on}"
        );
    }
    for off in ["0", "no", "FALSE", "off"] {
        let loud = status().env("SECKILL_QUIET", off).succeeds();
        assert!(!loud.stdout().is_empty(), "SECKILL_QUIET={off}");
        let quiet = status().env("SECKILL_DEBUG", off).succeeds();
        assert!(!quiet.stderr().contains("trace"), "SECKILL_DEBUG={off}");
        status().env("SECKILL_REDIS_CLUSTER", off).succeeds();
    }
    for name in ["SECKILL_QUIET", "SECKILL_DEBUG", "SECKILL_REDIS_CLUSTER"] {
        let refused = status().env(name, "maybe").fails_with(USAGE_ERROR);
        assert!(refused.stderr().contains("maybe"), "{}", refused.describe());
    }
}

#[test]
fn cluster_mode_and_its_absence_each_say_what_to_change() {
    // SECKILL_REDIS_CLUSTER on with a standalone Redis.
    let server = RedisServer::start();
    let file = campaign("hint").item("1", 5).write();
    let said = seckill(&["status"])
        .campaign(&file)
        .redis(&server)
        .env("SECKILL_REDIS_CLUSTER", "1")
        .fails_with(RUNTIME_ERROR)
        .stderr();
    assert!(
        said.contains("not a node of a Redis Cluster") && said.contains("SECKILL_REDIS_CLUSTER"),
        "{said}"
    );
    assert!(!said.contains("ClusterConnectionNotFound"), "{said}");

    // A cluster node reached without --cluster, for a key another node serves.
    let cluster = RedisCluster::start();
    seckill(&["preheat"])
        .campaign(&file)
        .cluster(&cluster)
        .succeeds();
    let (owner, _) = cluster.master_and_replicas_of(&ItemKeys::live("hint", "1").stock);
    let other = cluster.ports.iter().find(|p| **p != owner).unwrap();
    let said = seckill(&["buy", "--item", "1", "--user", "u"])
        .campaign(&file)
        .redis_url(&format!("redis://127.0.0.1:{other}"))
        .runs()
        .stderr();
    assert!(
        said.contains("MOVED") && said.contains("--cluster"),
        "{said}"
    );
}
