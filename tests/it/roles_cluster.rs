//! Each role `seckill acl` generates runs every subcommand of its job on a
//! real 3+3 Redis Cluster, and Redis refuses it nothing (issue 25, item 1):
//! not the commands themselves, not what the client sends to set up its
//! connections (`CLUSTER SLOTS`, `CLIENT SETINFO`, `PING`), not the reads of
//! `serve`'s cache (`HSCAN` of a sold-out item's buyers) nor those of
//! `consume --metrics-listen`. Every node's `ACL LOG` must stay empty: a
//! refusal a client shrugs off shows there too. The buyer's password comes
//! from `--redis-password-file`, the consumer's from `REDISCLI_AUTH`: each
//! reaches every seed and every node.

use std::process::Child;
use std::time::{Duration, Instant};

use seckill::model::keys::ItemKeys;

use crate::support::cluster::{ClusterRoles, RedisCluster};
use crate::support::http;
use crate::support::serve::Serve;
use crate::support::spec::{Run, campaign, seckill};
use crate::support::{CampaignFile, free_port};

/// `seckill ARGS` as `role` on the cluster, from the campaign's directory:
/// the buyer's password from a file, the consumer's from `REDISCLI_AUTH`,
/// the operator's in its URLs.
fn as_role(file: &CampaignFile, roles: &ClusterRoles, role: &str, args: &[&str]) -> Run {
    let run = seckill(args)
        .campaign(file)
        .env("SECKILL_REDIS_CLUSTER", "1")
        .current_dir(file.dir.path());
    let user = roles.get(role);
    match role {
        "buyer" => run.redis_url(&roles.seeds_without_password(role)).env(
            "SECKILL_REDIS_PASSWORD_FILE",
            &user.password_file.display().to_string(),
        ),
        "consumer" => run
            .redis_url(&roles.seeds_without_password(role))
            .env("REDISCLI_AUTH", &user.password),
        _ => run.redis_url(&roles.seeds(role)),
    }
}

/// Nothing refused so far on any node (then the log is reset).
fn nothing_refused(cluster: &RedisCluster, after: &str) {
    let denials = cluster.take_acl_denials();
    assert!(
        denials.is_empty(),
        "after {after}, Redis refused:\n{}",
        denials.join("\n")
    );
}

/// The order id of a buy's JSON answer.
fn order_of(file: &CampaignFile, roles: &ClusterRoles, item: &str, user: &str) -> String {
    as_role(
        file,
        roles,
        "buyer",
        &["buy", "--item", item, "--user", user],
    )
    .json()
    .succeeds()
    .json()["order_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no order id for {user}"))
        .to_string()
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn every_role_runs_its_commands_on_a_cluster_and_redis_refuses_nothing() {
    let cluster = RedisCluster::start_with_replicas(1);
    let file = campaign("rc")
        .payment_timeout("2s")
        .item("1", 20)
        .item("2", 4)
        .buckets(2)
        .item("3", 1)
        .write();
    let roles = cluster.create_roles(&file);
    // Items on more than one master: the commands cross nodes.
    let masters: std::collections::HashSet<u16> = ["1", "3"]
        .iter()
        .map(|item| {
            cluster
                .master_and_replicas_of(&ItemKeys::live("rc", item).stock)
                .0
        })
        .collect();
    eprintln!("items 1 and 3 on masters {masters:?}");
    cluster.take_acl_denials();

    as_role(&file, &roles, "operator", &["preheat"]).succeeds();
    nothing_refused(&cluster, "preheat as the operator");

    let paid = order_of(&file, &roles, "1", "p1");
    let cancelled = order_of(&file, &roles, "1", "c1");
    let _expiring = order_of(&file, &roles, "1", "e1");
    let bought_at = Instant::now();
    for user in ["b1", "b2", "b3"] {
        order_of(&file, &roles, "2", user);
    }
    nothing_refused(&cluster, "buy as the buyer");

    // serve as the buyer: it starts, sells, sells out, its cache reads the
    // buyers of the sold-out item, lookups and /healthz answer.
    let password_file = roles.get("buyer").password_file.display().to_string();
    let serve = Serve::start(
        &file,
        &roles.seeds_without_password("buyer"),
        true,
        &["--redis-password-file", &password_file],
    );
    let sold = http::buy(serve.addr, "3", "s1", "s1-1");
    assert_eq!(sold.status, 200, "{}", sold.body);
    let gone = http::buy(serve.addr, "3", "s2", "s2-1");
    assert_eq!(gone.status, 410, "{}", gone.body);
    std::thread::sleep(Duration::from_millis(500));
    let cached = http::buy(serve.addr, "3", "s3", "s3-1");
    assert_eq!(cached.json()["from_cache"], true, "{}", cached.body);
    let lookup = http::get(serve.addr, "/v1/items/1/orders/p1");
    assert_eq!(lookup.status, 200, "{}", lookup.body);
    let health = http::get(serve.addr, "/healthz");
    assert_eq!(health.status, 200, "{}", health.body);
    let log = serve.log.lock().unwrap().clone();
    assert!(!log.contains("cannot"), "{log}");
    drop(serve);
    nothing_refused(&cluster, "serve as the buyer");

    as_role(&file, &roles, "operator", &["pay", "--order", &paid]).succeeds();
    as_role(
        &file,
        &roles,
        "operator",
        &["cancel", "--order", &cancelled],
    )
    .succeeds();
    std::thread::sleep(Duration::from_millis(2300).saturating_sub(bought_at.elapsed()));
    as_role(&file, &roles, "operator", &["expire"]).succeeds();
    for args in [
        &["status"][..],
        &["campaigns"],
        &["shutdown-switch", "status", "--buckets"],
        &["shutdown-switch", "on", "--reason", "drill"],
        &["shutdown-switch", "off"],
        &["dead-letter", "list"],
        &["rebalance", "--low-water", "1"],
    ] {
        as_role(&file, &roles, "operator", args).succeeds();
    }
    nothing_refused(&cluster, "the operator's commands");

    as_role(&file, &roles, "consumer", &["consume", "--drain"]).succeeds();
    as_role(
        &file,
        &roles,
        "consumer",
        &["pending-claim", "--min-idle", "0s"],
    )
    .succeeds();
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let _consumer = Killed(
        as_role(
            &file,
            &roles,
            "consumer",
            &["consume", "--metrics-listen", &listen],
        )
        .spawn(),
    );
    let addr = listen.parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let metrics = loop {
        if let Ok(answer) = http::send(addr, "GET", "/metrics", &[], b"")
            && answer.body.contains("seckill_redis_up")
        {
            break answer.body;
        }
        assert!(Instant::now() < deadline, "consume never served /metrics");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        metrics.contains("seckill_redis_up{campaign=\"rc\"} 1"),
        "{metrics}"
    );
    nothing_refused(&cluster, "the consumer's commands");

    as_role(&file, &roles, "operator", &["reconcile"]).succeeds();
    nothing_refused(&cluster, "reconcile as the operator");
}
