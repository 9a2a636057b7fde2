//! The proof and the practice agree on a real Redis Cluster with replicas
//! (issue 25, item 1): `seckill acl --apply` on every node proves each
//! role's whole path there — the cluster client's own commands, the reads
//! outside scripts, each script and every command inside it — and then each
//! role runs its jobs on the cluster with exactly that line: the buyer buys
//! (a plain and a bucketed item) and serves, the consumer drains and claims,
//! the operator preheats, reports and reconciles, and `doctor` run from each
//! role's own URL finds its whole path allowed on every node.

use crate::support::check_of;
use std::time::Duration;

use crate::support::cluster::RedisCluster;
use crate::support::serve::Serve;
use crate::support::spec::{Run, campaign, seckill};
use crate::support::{CampaignFile, http};

fn role_urls(cluster: &RedisCluster, role: &str) -> String {
    cluster
        .ports
        .iter()
        .take(3)
        .map(|p| format!("redis://seckill-{role}:{role}-pw@127.0.0.1:{p}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn as_role(file: &CampaignFile, cluster: &RedisCluster, role: &str, args: &[&str]) -> Run {
    seckill(args)
        .campaign(file)
        .redis_url(&role_urls(cluster, role))
        .args(&["--cluster"])
        .current_dir(file.dir.path())
}

#[test]
fn each_role_proven_on_every_node_runs_its_jobs_on_the_cluster() {
    let cluster = RedisCluster::start_with_replicas(1);
    let file = campaign("proof")
        .item("1", 10)
        .item("2", 6)
        .buckets(2)
        .write();
    for role in ["buyer", "consumer", "operator"] {
        let password = file.dir.path().join(format!("{role}.pw"));
        std::fs::write(&password, format!("{role}-pw\n")).unwrap();
        for &port in &cluster.ports {
            let ran = seckill(&[
                "acl",
                "--role",
                role,
                "--password-file",
                password.to_str().unwrap(),
                "--apply",
            ])
            .campaign(&file)
            .redis_url(&format!("redis://127.0.0.1:{port}"))
            .json()
            .runs();
            let report = ran.json();
            let checks = report["users"][0]["checks"].as_array().unwrap();
            assert!(
                checks.iter().any(|c| c["what"] == "command CLUSTER SLOTS"),
                "a cluster node's proof has the cluster client's commands: {report}"
            );
            let wrong: Vec<String> = checks
                .iter()
                .filter(|c| c["ok"] != true)
                .map(|c| format!("{}: {}", c["what"], c["answer"]))
                .collect();
            assert!(
                wrong.is_empty(),
                "{role} on node {port}: the generated line cannot run its job:\n{}",
                wrong.join("\n")
            );
        }
    }
    let within = Duration::from_secs(60);
    as_role(&file, &cluster, "operator", &["preheat"])
        .within(within)
        .succeeds();
    for (item, user) in [("1", "alice"), ("2", "bob"), ("2", "carol")] {
        as_role(
            &file,
            &cluster,
            "buyer",
            &["buy", "--item", item, "--user", user],
        )
        .within(within)
        .succeeds();
    }
    let serve = Serve::start(
        &file,
        &role_urls(&cluster, "buyer"),
        true,
        &["--recheck", "100ms"],
    );
    assert_eq!(http::buy(serve.addr, "1", "dave", "rd").status, 200);
    assert_eq!(http::get(serve.addr, "/v1/items/1/orders/dave").status, 200);
    serve.stop("-TERM");
    as_role(&file, &cluster, "consumer", &["consume", "--drain"])
        .within(within)
        .succeeds();
    as_role(
        &file,
        &cluster,
        "consumer",
        &["pending-claim", "--min-idle", "0s"],
    )
    .within(within)
    .succeeds();
    as_role(&file, &cluster, "operator", &["status"])
        .within(within)
        .succeeds();
    as_role(&file, &cluster, "operator", &["reconcile"])
        .within(within)
        .succeeds();
    for role in ["buyer", "consumer", "operator"] {
        let report = as_role(
            &file,
            &cluster,
            role,
            &["doctor", "--role", role, "--allow-unchecked"],
        )
        .json()
        .within(within)
        .runs()
        .json();
        let (verdict, detail) = check_of(&report, "permissions");
        assert_eq!(verdict, "ok", "{role}: {report}");
        assert!(detail.contains("3 masters, 3 replicas"), "{detail}");
    }
}
