//! A sale over two regions the way it runs (docs/regions.md): Beijing a
//! Redis Cluster with replicas, Shanghai a master with a replica, every job
//! as the user `seckill acl` generates for it — the buyer buys, the operator
//! moves stock — and a replica that hangs (SIGSTOP): a debit it did not
//! confirm is never credited, and is once it has.

use std::time::Duration;

use crate::support::cluster::RedisCluster;
use crate::support::spec::seckill;
use crate::support::{CampaignFile, RedisServer, campaign_file, start_replica_of};

/// `seckill acl --role ROLE --apply` of region `region` on the node at `url`
/// (as the admin); the role's password is `ROLE-pw`.
fn apply_role(file: &CampaignFile, region: &str, url: &str, role: &str) {
    let password_file = file.dir.path().join(format!("{role}.pw"));
    std::fs::write(&password_file, format!("{role}-pw\n")).unwrap();
    let path = password_file.display().to_string();
    seckill(&[
        "--region",
        region,
        "acl",
        "--role",
        role,
        "--password-file",
        &path,
        "--apply",
    ])
    .campaign(file)
    .redis_url(url)
    .succeeds();
}

fn as_role(role: &str, port: u16) -> String {
    format!("redis://seckill-{role}:{role}-pw@127.0.0.1:{port}")
}

#[test]
fn a_cluster_region_and_a_replicated_region_move_stock_as_the_generated_roles() {
    let cluster = RedisCluster::start_with_replicas(1);
    let sh = RedisServer::start();
    let sh_replica = start_replica_of(&sh);
    let file = campaign_file(&format!(
        "campaign: rc\nper_user_limit: 1\nregions:\n  bj: {{ redis: \"{}\", cluster: true, share: 60 }}\n  sh: {{ redis: \"{}\", share: 40 }}\nitems:\n  - {{ id: \"5\", name: R, price: \"1\", stock: 100 }}\n",
        cluster.urls(),
        sh.url()
    ));
    seckill(&["preheat", "-q"]).campaign(&file).succeeds();
    let ports = cluster.slot_owners();
    let mut nodes: Vec<u16> = ports.values().copied().collect();
    nodes.sort_unstable();
    nodes.dedup();
    let (master, replica) = cluster.master_and_synced_replica("seckill:{rc:5}:stock");
    let mut all_nodes = nodes.clone();
    all_nodes.push(replica);
    all_nodes.extend(cluster.master_and_replicas_of("seckill:{rc:5}:stock").1);
    all_nodes.sort_unstable();
    all_nodes.dedup();
    for role in ["buyer", "operator"] {
        for port in &all_nodes {
            apply_role(&file, "bj", &format!("redis://127.0.0.1:{port}"), role);
        }
        apply_role(&file, "sh", &sh.url(), role);
        apply_role(&file, "sh", &sh_replica.url(), role);
    }
    let operator = |args: &[&str]| {
        seckill(args)
            .campaign(&file)
            .env("SECKILL_REDIS_URL_BJ", &as_role("operator", master))
            .env("SECKILL_REDIS_URL_SH", &as_role("operator", sh.port))
    };

    // The operator moves stock both ways; WAIT hears each master's replica.
    let moved = operator(&[
        "regions", "move", "--item", "5", "--from", "bj", "--to", "sh", "--units", "10",
        "--format", "json",
    ])
    .succeeds()
    .json();
    assert_eq!(moved["ending"], "credited", "{moved}");
    assert_eq!(moved["replicas"], serde_json::json!([1, 1]), "{moved}");
    let back = operator(&[
        "regions", "move", "--item", "5", "--from", "sh", "--to", "bj", "--units", "4", "--format",
        "json",
    ])
    .succeeds()
    .json();
    assert_eq!(back["replicas"], serde_json::json!([1, 1]), "{back}");

    // The buyer buys at home in each region, on its own URL.
    let homes = seckill(&[
        "regions", "home", "p0", "p1", "p2", "p3", "p4", "p5", "--format", "json",
    ])
    .campaign(&file)
    .succeeds()
    .json();
    for home in homes["homes"].as_array().unwrap() {
        let (user, region) = (
            home["user"].as_str().unwrap(),
            home["home"].as_str().unwrap(),
        );
        let url = match region {
            "bj" => cluster
                .ports
                .iter()
                .map(|p| as_role("buyer", *p))
                .collect::<Vec<_>>()
                .join(","),
            _ => as_role("buyer", sh.port),
        };
        let mut buy = seckill(&[
            "--region", region, "buy", "--item", "5", "--user", user, "-q",
        ])
        .campaign(&file)
        .redis_url(&url);
        if region == "bj" {
            buy = buy.env("SECKILL_REDIS_CLUSTER", "true");
        }
        buy.succeeds();
    }

    // A hung replica of bj's item master: the debit is not credited.
    let before = redis::cmd("HGET")
        .arg("seckill:{rc:5}:meta")
        .arg("in:bj")
        .query::<Option<i64>>(&mut sh.conn())
        .unwrap();
    {
        let _hung = cluster.freeze(replica);
        let stuck = operator(&[
            "regions",
            "move",
            "--item",
            "5",
            "--from",
            "bj",
            "--to",
            "sh",
            "--units",
            "7",
            "--wait-timeout",
            "300ms",
            "--format",
            "json",
        ])
        .fails_with(23)
        .json();
        assert_eq!(stuck["ending"], "in_transit", "{stuck}");
        let after = redis::cmd("HGET")
            .arg("seckill:{rc:5}:meta")
            .arg("in:bj")
            .query::<Option<i64>>(&mut sh.conn())
            .unwrap();
        assert_eq!(after, before, "a debit no replica confirmed was credited");
        let books = operator(&["regions", "status", "--format", "json"])
            .succeeds()
            .json();
        assert_eq!(books["items"][0]["in_transit"][0]["units"], 7, "{books}");
    }
    // The replica answers again: one round settles it.
    let mut settled = false;
    for _ in 0..50 {
        operator(&["regions", "rebalance", "--wait-timeout", "1s"]).succeeds();
        let books = operator(&["regions", "status", "--format", "json"])
            .succeeds()
            .json();
        if books["items"][0]["in_transit"]
            .as_array()
            .unwrap()
            .is_empty()
        {
            settled = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        settled,
        "the units stayed in transit after the replica came back"
    );
    operator(&["reconcile", "--regions"]).succeeds();
    assert!(
        cluster.take_acl_denials().is_empty(),
        "a generated role was refused a command on the cluster"
    );
}
