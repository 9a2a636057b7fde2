//! Go / no-go: what would wreck a sale is refused or reported before it
//! does (issue "Go / no-go"): eviction, the wrong sale (a typo'd id, the
//! wrong file for the switch, a leftover environment variable), edits that
//! would vanish, a reset of a selling sale, a server that takes the
//! connection but does not answer, arguments that are not UTF-8, and
//! `seckill doctor` itself.

use crate::support::check_of;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, Instant};

use redis::Commands;
use seckill::model::exit_codes::{NO_GO, PREHEAT_REFUSED, RUNTIME_ERROR, SUCCESS, USAGE_ERROR};

use crate::support::spec::{CampaignSpec, campaign, seckill};
use crate::support::{Frozen, RedisServer, start_replica_of};

fn sale(id: &str) -> CampaignSpec {
    campaign(id).item("1", 10).named("Bottle").price("10.00")
}

/// Every key under `seckill:` and its DUMP: what a refusal must leave as it was.
fn keys(server: &RedisServer) -> Vec<(String, Vec<u8>)> {
    let mut conn = server.conn();
    let mut names: Vec<String> = conn.keys("seckill*").unwrap();
    names.sort();
    names
        .into_iter()
        .map(|k| {
            let dump: Vec<u8> = redis::cmd("DUMP").arg(&k).query(&mut conn).unwrap();
            (k, dump)
        })
        .collect()
}

#[test]
fn arguments_that_are_not_utf8_are_a_usage_error_never_a_panic() {
    let ran = seckill(&[]).raw_args(&[OsStr::from_bytes(b"\xff")]).runs();
    assert_eq!(ran.code(), USAGE_ERROR, "{}", ran.describe());
    let buy = [
        OsStr::new("buy"),
        OsStr::new("--item"),
        OsStr::new("1"),
        OsStr::new("--user"),
        OsStr::from_bytes(b"a\xffb"),
    ];
    let ran = seckill(&[]).raw_args(&buy).json().fails_with(USAGE_ERROR);
    assert_eq!(ran.json()["error"]["kind"], "usage_error");
    assert!(!ran.stderr().contains("panicked"), "{}", ran.describe());
}

#[test]
fn preheat_refuses_a_redis_that_evicts_and_writes_nothing() {
    for policy in ["allkeys-lru", "volatile-lru"] {
        let server = RedisServer::start_with(&["--maxmemory-policy", policy]);
        let file = sale("ev").write();
        let stderr = seckill(&["preheat"])
            .campaign(&file)
            .redis(&server)
            .fails_with(PREHEAT_REFUSED)
            .stderr();
        assert!(
            stderr.contains(&format!("maxmemory-policy {policy}"))
                && stderr.contains("maxmemory-policy noeviction"),
            "{policy}: {stderr}"
        );
        assert!(
            keys(&server).is_empty(),
            "{policy}: a refused preheat wrote"
        );
    }
}

#[test]
fn a_typod_campaign_id_is_refused_naming_the_live_sale_it_would_copy() {
    let server = RedisServer::start();
    let real = sale("dec-flash").write();
    seckill(&["preheat"])
        .campaign(&real)
        .redis(&server)
        .succeeds();
    let before = keys(&server);
    let typo = sale("dec-flsah").write();
    let stderr = seckill(&["preheat"])
        .campaign(&typo)
        .redis(&server)
        .fails_with(PREHEAT_REFUSED)
        .stderr();
    assert!(
        stderr.contains("campaign dec-flash") && stderr.contains("item(s) 1"),
        "{stderr}"
    );
    assert_eq!(keys(&server), before, "the refused preheat wrote");
    let listed = seckill(&["campaigns"])
        .redis(&server)
        .json()
        .succeeds()
        .json();
    assert_eq!(listed["live"][0]["campaign"], "dec-flash", "{listed}");
    assert_eq!(listed["live"].as_array().unwrap().len(), 1, "{listed}");
    // Two campaigns may sell the same item ids on purpose.
    seckill(&["preheat", "--allow-shared-items"])
        .campaign(&typo)
        .redis(&server)
        .succeeds();
}

#[test]
fn the_kill_switch_refuses_a_campaign_that_is_not_live_on_that_redis() {
    let server = RedisServer::start();
    let real = sale("real").write();
    seckill(&["preheat"])
        .campaign(&real)
        .redis(&server)
        .succeeds();
    let before = keys(&server);
    let wrong = sale("wrong").write();
    let stderr = seckill(&["shutdown-switch", "on", "--reason", "fraud"])
        .campaign(&wrong)
        .redis(&server)
        .fails_with(USAGE_ERROR)
        .stderr();
    assert!(
        stderr.contains("campaign wrong is not live") && stderr.contains("Live there: real"),
        "{stderr}"
    );
    assert_eq!(keys(&server), before, "the refused switch left keys behind");
    seckill(&["buy", "--item", "1", "--user", "u"])
        .campaign(&real)
        .redis(&server)
        .succeeds();
}

#[test]
fn an_edited_field_is_shown_and_applied_only_with_update_meta() {
    let server = RedisServer::start();
    let file = sale("price").write();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let edited = sale("price").price("12.00");
    std::fs::write(&file.path, edited.yaml()).unwrap();
    let table = seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds()
        .stdout();
    assert!(!table.contains("nothing written"), "{table}");
    assert!(
        table.contains("10.00 → 12.00") && table.contains("not applied"),
        "{table}"
    );
    let json = seckill(&["preheat", "--dry-run"])
        .campaign(&file)
        .redis(&server)
        .json()
        .succeeds()
        .json();
    let differences = &json["items"][0]["differences"];
    assert_eq!(differences[0]["field"], "price", "{json}");
    assert_eq!(differences.as_array().unwrap().len(), 1, "{json}");
    let price: String = server
        .conn()
        .hget("seckill:{price:1}:meta", "price_cents")
        .unwrap();
    assert_eq!(price, "1000", "a kept preheat changed the price");
    let applied = seckill(&["preheat", "--update-meta"])
        .campaign(&file)
        .redis(&server)
        .succeeds()
        .stdout();
    assert!(
        applied.contains("10.00 → 12.00") && applied.contains("was → now"),
        "{applied}"
    );
    let price: String = server
        .conn()
        .hget("seckill:{price:1}:meta", "price_cents")
        .unwrap();
    assert_eq!(price, "1200");
    let again = seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds()
        .stdout();
    assert!(again.contains("nothing written"), "{again}");
}

#[test]
fn every_report_names_the_redis_and_a_leftover_environment_variable_is_said() {
    let in_file = RedisServer::start();
    let in_env = RedisServer::start();
    let file = sale("env").redis(&in_file.url()).write();
    let ran = seckill(&["preheat"])
        .campaign(&file)
        .redis(&in_env)
        .succeeds();
    assert!(
        ran.stderr()
            .contains("SECKILL_REDIS_URL sends this command to")
            && ran.stderr().contains(&in_file.url()),
        "{}",
        ran.describe()
    );
    assert!(
        ran.stdout().starts_with(&format!(
            "Redis 127.0.0.1:{} (URL from SECKILL_REDIS_URL)\n",
            in_env.port
        )),
        "{}",
        ran.describe()
    );
    let json = seckill(&["shutdown-switch", "status"])
        .campaign(&file)
        .redis(&in_env)
        .json()
        .succeeds()
        .json();
    assert_eq!(json["redis_source"], "env");
    // Without the variable, the file's Redis, and the file named as the source.
    let json = seckill(&["campaigns"])
        .campaign(&file)
        .json()
        .succeeds()
        .json();
    assert_eq!(json["redis_source"], "file");
    assert_eq!(json["live"].as_array().unwrap().len(), 0, "{json}");
}

#[test]
fn init_refuses_a_selling_sale_and_names_the_orders_it_would_lose() {
    let server = RedisServer::start();
    let file = sale("live").write();
    let run = |args: &[&str]| seckill(args).campaign(&file).redis(&server);
    run(&["preheat"]).succeeds();
    let mut bought = Vec::new();
    for user in ["a", "b"] {
        let order = run(&["buy", "--item", "1", "--user", user])
            .json()
            .succeeds()
            .json();
        bought.push(order["order_id"].as_str().unwrap().to_string());
    }
    let before = keys(&server);
    let stderr = run(&["init", "--yes"]).fails_with(USAGE_ERROR).stderr();
    assert!(stderr.contains("is selling"), "{stderr}");
    for order in &bought {
        assert!(
            stderr.contains(order.as_str()),
            "{order} not named: {stderr}"
        );
    }
    assert_eq!(keys(&server), before, "the refused init changed Redis");
    // Closed, the sale stores nothing more: its acknowledged orders are
    // still not in the order database, and a reset would delete them (issue
    // 25 item 39). Refused the same, naming them and the ways on.
    run(&["shutdown-switch", "on"]).succeeds();
    let closed = keys(&server);
    let stderr = run(&["init", "--yes"]).fails_with(USAGE_ERROR).stderr();
    for order in &bought {
        assert!(
            stderr.contains(order.as_str()),
            "{order} not named: {stderr}"
        );
    }
    assert!(
        stderr.contains("consume --drain") && stderr.contains("--purge-orders live"),
        "{stderr}"
    );
    assert!(!stderr.contains("shutdown-switch on"), "{stderr}");
    assert_eq!(keys(&server), closed, "the refused init changed Redis");
    // Typing the campaign id resets it and names what it deleted.
    let report = run(&["init", "--yes", "--purge-orders", "live"])
        .json()
        .succeeds()
        .json();
    assert_eq!(report["unstored_orders_deleted"]["count"], 2, "{report}");
    let named = report["unstored_orders_deleted"]["ids"].to_string();
    assert!(
        bought.iter().all(|o| named.contains(o.as_str())),
        "{report}"
    );
}

/// Issue 25 item 39, the other way on: once `consume --drain` has stored
/// every order, a closed sale resets with `--yes` alone, losing nothing.
#[test]
fn a_closed_sale_resets_once_its_orders_are_stored() {
    let server = RedisServer::start();
    let file = sale("drained").write();
    let run = |args: &[&str]| seckill(args).campaign(&file).redis(&server);
    run(&["preheat"]).succeeds();
    run(&["buy", "--item", "1", "--user", "a"]).succeeds();
    run(&["shutdown-switch", "on"]).succeeds();
    run(&["init", "--yes"]).fails_with(USAGE_ERROR);
    run(&["consume", "--drain"]).succeeds();
    let report = run(&["init", "--yes"]).json().succeeds().json();
    assert_eq!(report["unstored_orders_deleted"]["count"], 0, "{report}");
    assert_eq!(report["order_rows_in_database"], 1, "{report}");
}

/// Issue 25 item 32: `init --yes` of a typo'd campaign id loaded a second
/// stock of a live sale's item (`preheat` refused the same file). It applies
/// the registry's collision check as preheat does, and its escape.
#[test]
fn init_refuses_a_typod_campaign_id_as_preheat_does() {
    let server = RedisServer::start();
    let real = sale("shop-1111").write();
    seckill(&["preheat"])
        .campaign(&real)
        .redis(&server)
        .succeeds();
    let before = keys(&server);
    let typo = sale("shop-111").write();
    for args in [&["init"][..], &["init", "--yes"]] {
        let stderr = seckill(args)
            .campaign(&typo)
            .redis(&server)
            .fails_with(PREHEAT_REFUSED)
            .stderr();
        assert!(
            stderr.contains("campaign shop-1111") && stderr.contains("item(s) 1"),
            "{args:?}: {stderr}"
        );
        assert_eq!(keys(&server), before, "{args:?}: the refused init wrote");
    }
    let listed = seckill(&["campaigns"])
        .redis(&server)
        .json()
        .succeeds()
        .json();
    assert_eq!(listed["live"].as_array().unwrap().len(), 1, "{listed}");
    // The live sale itself resets as before; two campaigns may sell the
    // same item ids on purpose.
    seckill(&["init", "--yes"])
        .campaign(&real)
        .redis(&server)
        .succeeds();
    seckill(&["init", "--yes", "--allow-shared-items"])
        .campaign(&typo)
        .redis(&server)
        .succeeds();
}

/// Issue 25 item 40: a preheat that wrote nothing (an item refused, the
/// others kept) rewrote the campaign's registry entry all the same — the
/// window and expiry of a file Redis does not hold — and said the refused
/// item's fields "changed". Nothing written means no key changed.
#[test]
fn a_preheat_that_writes_nothing_leaves_the_registry_as_it_was() {
    let server = RedisServer::start();
    let spec = sale("reg")
        .field("ends_at", "2099-01-01T00:00:00Z")
        .item("2", 10);
    let file = spec.write();
    let run = |file: &crate::support::CampaignFile, args: &[&str]| {
        seckill(args).campaign(file).redis(&server)
    };
    run(&file, &["preheat"]).succeeds();
    run(&file, &["buy", "--item", "1", "--user", "a"]).succeeds();
    let () = server.conn().del("seckill:{reg:1}:stock").unwrap();
    let edited = spec.field("ends_at", "2098-06-01T00:00:00Z").write();
    let before = keys(&server);
    let refused = run(&edited, &["preheat"]).fails_with(PREHEAT_REFUSED);
    assert_eq!(keys(&server), before, "the refused preheat wrote");
    let stdout = refused.stdout();
    assert!(!stdout.contains("ends_at changed"), "{stdout}");
    // Every item kept, the file different: nothing written either.
    let () = server.conn().set("seckill:{reg:1}:stock", 9).unwrap();
    let before = keys(&server);
    run(&edited, &["preheat"]).succeeds();
    assert_eq!(
        keys(&server),
        before,
        "a preheat that kept everything wrote"
    );
    // Applied, the entry follows the file.
    run(&edited, &["preheat", "--update-meta"]).succeeds();
    let listed = seckill(&["campaigns"])
        .redis(&server)
        .json()
        .succeeds()
        .json();
    let ends = listed["live"][0]["ends_at_ms"].as_i64();
    assert_eq!(ends, Some(4_052_419_200_000), "{listed}");
}

#[test]
fn a_server_that_takes_the_connection_but_does_not_answer_names_the_response_timeout() {
    let server = RedisServer::start();
    let file = sale("paused").write();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let () = redis::cmd("CLIENT")
        .arg(&["PAUSE", "3000", "ALL"])
        .query(&mut server.conn())
        .unwrap();
    let stderr = seckill(&[
        "status",
        "--response-timeout",
        "1s",
        "--connect-timeout",
        "2s",
    ])
    .campaign(&file)
    .redis(&server)
    .fails_with(RUNTIME_ERROR)
    .stderr();
    assert!(stderr.contains("within --response-timeout 1s"), "{stderr}");
    assert!(!stderr.contains("--connect-timeout"), "{stderr}");
}

/// The three reasons of the "Done when": eviction, no AOF, a
/// stopped replica — each a FAIL, the whole a no-go (exit 8, `no_go`).
#[test]
fn doctor_says_no_go_for_eviction_no_aof_and_a_stopped_replica() {
    let master = RedisServer::start_with(&["--maxmemory-policy", "allkeys-lru"]);
    let replica = start_replica_of(&master);
    let file = sale("doc").write();
    let _stopped = Frozen::new(&mut replica.conn());
    let deadline = Instant::now() + Duration::from_secs(30);
    let report = loop {
        let ran = seckill(&["doctor", "--connect-timeout", "1s"])
            .campaign(&file)
            .redis(&master)
            .json()
            .runs();
        let report = ran.json();
        let failed = |check: &str| {
            report["checks"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["check"] == check && c["verdict"] == "fail")
        };
        if failed("replicas") || Instant::now() > deadline {
            assert_eq!(ran.code(), NO_GO, "{}", ran.describe());
            assert!(failed("eviction") && failed("persistence"), "{report}");
            break report;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    let fixes: Vec<&str> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["verdict"] == "fail")
        .map(|c| c["fix"].as_str().unwrap_or(""))
        .collect();
    assert!(fixes.iter().all(|f| !f.is_empty()), "{report}");
    assert_eq!(report["go"], false);
}

/// A local cluster, three masters with a replica each, every node with AOF
/// (`appendfsync always`) and its replicas back online after the rewrite.
fn durable_cluster() -> crate::support::cluster::RedisCluster {
    let cluster = crate::support::cluster::RedisCluster::start_with_replicas(1);
    for &port in &cluster.ports {
        let mut node = crate::support::cluster::node(port).unwrap();
        for (name, value) in [("appendonly", "yes"), ("appendfsync", "always")] {
            let () = redis::cmd("CONFIG")
                .arg("SET")
                .arg(name)
                .arg(value)
                .query(&mut node)
                .unwrap();
        }
    }
    // Turning AOF on rewrites it: replicas are back online once that is done.
    let deadline = Instant::now() + Duration::from_secs(30);
    for &port in &cluster.ports {
        loop {
            // A node busy rewriting its AOF on a loaded machine may answer
            // late: asked again on a fresh connection.
            let info: String = crate::support::cluster::node(port)
                .and_then(|mut node| redis::cmd("INFO").arg("replication").query(&mut node))
                .unwrap_or_default();
            let settled = !info.is_empty()
                && (!info.contains("role:master")
                    || (info.contains("state=online") && !info.contains("wait_bgsave")));
            if settled {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "replicas never came online: {info}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    cluster
}

/// Go on a cluster whose every node is right; then, with one replica dead
/// and marked failed by the cluster, no-go naming it (issue 25, item 9:
/// before, a failed replica was only a "no replica" line: its master no
/// longer lists it).
#[test]
fn doctor_says_go_on_a_well_configured_local_cluster() {
    let mut cluster = durable_cluster();
    let file = sale("docgo")
        .item("hot", 30)
        .buckets(3)
        .starts_in(3600)
        .ends_in(7200)
        .keep_after_end("26h")
        .write();
    let ran = seckill(&["doctor"])
        .campaign(&file)
        .cluster(&cluster)
        .json()
        .within(Duration::from_secs(60))
        .succeeds();
    let report = ran.json();
    assert_eq!(report["go"], true, "{report}");
    let (_, masters) = check_of(&report, "masters");
    assert!(masters.contains("bucket 2 →"), "{report}");
    assert_eq!(ran.code(), SUCCESS);
    for name in [
        "eviction",
        "persistence",
        "redis_version",
        "cluster_state",
        "acl_users",
    ] {
        let (_, detail) = check_of(&report, name);
        assert!(detail.contains("3 masters, 3 replicas"), "{name}: {detail}");
    }

    let (master, replicas) = cluster.master_and_replicas_of("seckill:{docgo:1}:stock");
    let dead = replicas[0];
    cluster.kill_node(dead);
    let mut view = crate::support::cluster::node(master).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let nodes: String = redis::cmd("CLUSTER").arg("NODES").query(&mut view).unwrap();
        let failed = nodes.lines().any(|l| {
            l.contains(&format!(":{dead}@"))
                && l.split(' ')
                    .nth(2)
                    .is_some_and(|f| f.contains("fail") && !f.contains("fail?"))
        });
        if failed {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the cluster never marked {dead} failed: {nodes}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let urls: Vec<String> = cluster
        .ports
        .iter()
        .filter(|p| **p != dead)
        .map(|p| format!("redis://127.0.0.1:{p}"))
        .collect();
    let ran = seckill(&["doctor", "--cluster", "--connect-timeout", "1s"])
        .campaign(&file)
        .redis_url(&urls.join(","))
        .json()
        .within(Duration::from_secs(60))
        .runs();
    let report = ran.json();
    assert_eq!(ran.code(), NO_GO, "{}", ran.describe());
    let (verdict, detail) = check_of(&report, "replicas");
    assert_eq!(verdict, "fail", "{report}");
    assert!(
        detail.contains(&format!(
            "replica 127.0.0.1:{dead} of master 127.0.0.1:{master}"
        )),
        "{detail}"
    );
    assert!(!detail.contains("no replica"), "{detail}");
}

/// Issue 25, items 3 and 11, on a cluster with replicas. A role that
/// cannot read the cluster (its line without the cluster client's
/// commands) gets no "ok" from a check that reached no node: doctor as that
/// buyer is a no-go naming `CLUSTER SLOTS` (before: exit 0, "cluster_state
/// ok on 0 master(s)"). And `preheat --require-durable` as the generated
/// operator checks each master's AOF (before: "not checked on a cluster",
/// refused).
#[test]
fn doctor_and_preheat_as_the_roles_on_a_cluster() {
    let cluster = durable_cluster();
    let file = sale("roles")
        .starts_in(3600)
        .ends_in(7200)
        .keep_after_end("26h")
        .write();
    let password = file.dir.path().join("role.pw");
    std::fs::write(&password, "role-pw\n").unwrap();
    let args = |role: &str| -> Vec<String> {
        seckill(&[
            "acl",
            "--role",
            role,
            "--password-file",
            password.to_str().unwrap(),
        ])
        .campaign(&file)
        .json()
        .succeeds()
        .json()["users"][0]["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect()
    };
    let mut buyer = args("buyer");
    buyer.retain(|rule| !rule.contains("cluster"));
    let operator = args("operator");
    for &port in &cluster.ports {
        let mut node = crate::support::cluster::node(port).unwrap();
        for line in [&buyer, &operator] {
            let () = redis::cmd("ACL")
                .arg("SETUSER")
                .arg(line)
                .query(&mut node)
                .unwrap();
        }
    }
    let as_role = |role: &str| {
        cluster
            .ports
            .iter()
            .take(3)
            .map(|p| format!("redis://seckill-{role}:role-pw@127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(",")
    };

    let ran = seckill(&["doctor", "--cluster", "--role", "buyer"])
        .campaign(&file)
        .redis_url(&as_role("buyer"))
        .json()
        .within(Duration::from_secs(60))
        .runs();
    let report = ran.json();
    assert_eq!(ran.code(), NO_GO, "{}", ran.describe());
    for name in [
        "connect",
        "redis_version",
        "eviction",
        "memory",
        "persistence",
        "cluster_state",
        "masters",
    ] {
        assert_eq!(check_of(&report, name).0, "fail", "{name}: {report}");
    }
    let (verdict, detail) = check_of(&report, "permissions");
    assert_eq!(verdict, "fail", "{report}");
    assert!(detail.contains("CLUSTER SLOTS"), "{detail}");

    // The operator: every master keeps an AOF, read from INFO.
    seckill(&["preheat", "--cluster", "--require-durable"])
        .campaign(&file)
        .redis_url(&as_role("operator"))
        .within(Duration::from_secs(60))
        .succeeds();
    let (master, _) = cluster.master_and_replicas_of("seckill:{roles:1}:stock");
    let () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("appendonly")
        .arg("no")
        .query(&mut crate::support::cluster::node(master).unwrap())
        .unwrap();
    let stderr = seckill(&["preheat", "--cluster", "--require-durable"])
        .campaign(&file)
        .redis_url(&as_role("operator"))
        .within(Duration::from_secs(60))
        .fails_with(PREHEAT_REFUSED)
        .stderr();
    assert!(stderr.contains(&format!("127.0.0.1:{master}")), "{stderr}");
}

/// A Redis that would pass every server check: AOF with fsync always.
fn durable() -> RedisServer {
    RedisServer::start_with(&["--appendonly", "yes", "--appendfsync", "always"])
}

/// Issue 25, item 9: a failover promotes a replica, so its eviction policy,
/// persistence and users count as much as its master's. A replica with
/// `allkeys-lru`, no AOF and none of the roles' users, behind a perfect
/// master, is a no-go naming the replica (before: only masters were read,
/// and this was GO).
#[test]
fn doctor_reads_every_replica_too() {
    let master = durable();
    let replica = RedisServer::start_with(&[
        "--replicaof",
        "127.0.0.1",
        &master.port.to_string(),
        "--maxmemory-policy",
        "allkeys-lru",
    ]);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let info: String = redis::cmd("INFO")
            .arg("replication")
            .query(&mut master.conn())
            .unwrap();
        if info.contains("state=online") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the replica never synced: {info}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let file = sale("replica").write();
    // The operator's user, on the master only (ACL users are per node).
    let password = file.dir.path().join("operator.pw");
    std::fs::write(&password, "operator-pw\n").unwrap();
    seckill(&[
        "acl",
        "--role",
        "operator",
        "--password-file",
        password.to_str().unwrap(),
        "--apply",
    ])
    .campaign(&file)
    .redis(&master)
    .succeeds();
    let ran = seckill(&["doctor"])
        .campaign(&file)
        .redis(&master)
        .json()
        .runs();
    let report = ran.json();
    assert_eq!(ran.code(), NO_GO, "{}", ran.describe());
    let at = format!("replica 127.0.0.1:{}", replica.port);
    for (name, said) in [
        ("eviction", format!("{at} has maxmemory-policy allkeys-lru")),
        ("persistence", format!("no AOF on {at}")),
        ("acl_users", format!("{at} lacks user(s) seckill-operator")),
    ] {
        let (verdict, detail) = check_of(&report, name);
        assert_eq!(verdict, "fail", "{name}: {report}");
        assert!(detail.contains(&said), "{name}: {detail}");
    }
    // The master alone passes each of them.
    let (_, eviction) = check_of(&report, "eviction");
    assert!(
        !eviction.contains(&format!("master 127.0.0.1:{}", master.port)),
        "{eviction}"
    );
}

/// Issue 25, item 33: one item of 1,000,000 units on a Redis of `maxmemory
/// 4mb` is a no-go before the sale (before: GO, "43% used", and the buys
/// failed OOM after 6,535 orders): the units still to sell are estimated
/// against each master's headroom.
#[test]
fn doctor_says_no_go_when_the_sale_cannot_fit_in_maxmemory() {
    let server = RedisServer::start_with(&[
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--maxmemory",
        "4mb",
    ]);
    let file = campaign("big").item("1", 1_000_000).write();
    let ran = seckill(&["doctor"])
        .campaign(&file)
        .redis(&server)
        .json()
        .runs();
    let report = ran.json();
    assert_eq!(ran.code(), NO_GO, "{}", ran.describe());
    let (verdict, detail) = check_of(&report, "memory");
    assert_eq!(verdict, "fail", "{report}");
    assert!(detail.contains("1000000 units to sell"), "{detail}");
    let estimate = report["sale_memory"][0]["estimate_bytes"].as_u64().unwrap();
    assert!(estimate >= 500_000_000, "{report}");
    // The same sale of 1,000 units fits.
    let small = campaign("small").item("1", 1_000).write();
    let report = seckill(&["doctor"])
        .campaign(&small)
        .redis(&server)
        .json()
        .runs()
        .json();
    assert_eq!(check_of(&report, "memory").0, "ok", "{report}");
}

/// Issue 25, item 33: a user that may do everything but `XADD` cannot buy
/// (the buy script's first write is an `XADD`): `doctor --role buyer` as
/// that user asks about each command the scripts send, not only `EVALSHA`.
#[test]
fn doctor_fails_a_role_one_command_inside_a_script_short() {
    let server = durable();
    let file = sale("noxadd").write();
    let () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg(&["noxadd", "on", ">pw", "+@all", "-xadd", "~*", "&*"])
        .query(&mut server.conn())
        .unwrap();
    let url = format!("redis://noxadd:pw@127.0.0.1:{}/0", server.port);
    let ran = seckill(&["doctor", "--role", "buyer"])
        .campaign(&file)
        .redis_url(&url)
        .json()
        .runs();
    let report = ran.json();
    assert_eq!(ran.code(), NO_GO, "{}", ran.describe());
    let (verdict, detail) = check_of(&report, "permissions");
    assert_eq!(verdict, "fail", "{report}");
    assert!(
        detail.contains("script buy") && detail.contains("XADD"),
        "{detail}"
    );
}

/// Issue 25, item 33: a permission check doctor cannot make is a no-go
/// (before: a warning, and GO), unless the operator accepts the gap with
/// `--allow-unchecked`. A user without `EVALSHA` cannot run the self-check
/// (the probe), and without `@admin` cannot ask `ACL DRYRUN`.
#[test]
fn doctor_fails_what_it_cannot_check_unless_told_to_accept_it() {
    let server = durable();
    let file = sale("unchecked").write();
    let () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg(&[
            "blind", "on", ">pw", "+@all", "-@admin", "-evalsha", "-eval", "~*", "&*",
        ])
        .query(&mut server.conn())
        .unwrap();
    let url = format!("redis://blind:pw@127.0.0.1:{}/0", server.port);
    let report = seckill(&["doctor", "--role", "buyer"])
        .campaign(&file)
        .redis_url(&url)
        .json()
        .runs()
        .json();
    let (verdict, detail) = check_of(&report, "permissions");
    assert_eq!(verdict, "fail", "{report}");
    assert!(detail.contains("cannot check user blind"), "{detail}");
    let report = seckill(&["doctor", "--role", "buyer", "--allow-unchecked"])
        .campaign(&file)
        .redis_url(&url)
        .json()
        .runs()
        .json();
    assert_eq!(check_of(&report, "permissions").0, "warn", "{report}");
}

/// Issue 25, item 10: a reachable order database without the schema yet is
/// a warning (consume creates the tables on its first start), not a no-go
/// telling the operator to "make the order database reachable".
#[test]
fn doctor_warns_on_an_order_database_without_schema_yet() {
    let server = durable();
    let file = sale("fresh").write();
    std::fs::write(file.dir.path().join("orders.db"), b"").unwrap();
    let ran = seckill(&["doctor"])
        .campaign(&file)
        .redis(&server)
        .current_dir(file.dir.path())
        .json()
        .runs();
    let report = ran.json();
    let (verdict, detail) = check_of(&report, "order_database");
    assert_eq!(verdict, "warn", "{report}");
    assert!(
        detail.contains("no schema yet: consume creates it"),
        "{detail}"
    );
}

/// Issue 25, item 16: `--reconcile-at 03:00` is this machine's local time,
/// as cron reads it (and as `status --check` reads it). In Shanghai
/// (UTC+8), a sale ending 02:00 local whose keys expire 04:00 local outlives
/// the 03:00 reconcile of the same night; read as UTC it would not.
#[test]
fn doctor_reads_the_reconcile_time_as_local_time() {
    let server = durable();
    let file = sale("tz")
        .field("ends_at", "2030-01-01T18:00:00Z")
        .keep_after_end("2h")
        .write();
    let report = seckill(&["doctor", "--reconcile-at", "03:00"])
        .campaign(&file)
        .redis(&server)
        .env("TZ", "Asia/Shanghai")
        .json()
        .runs()
        .json();
    let (verdict, detail) = check_of(&report, "keys_outlive_reconcile");
    assert_eq!(verdict, "ok", "{report}");
    assert!(
        detail.contains("2030-01-01 19:00") || detail.contains("2030-01-01T19:00"),
        "{detail}"
    );
    // In New York (UTC-5) 03:00 local is 08:00 UTC on the 2nd: after the keys went.
    let report = seckill(&["doctor", "--reconcile-at", "03:00"])
        .campaign(&file)
        .redis(&server)
        .env("TZ", "America/New_York")
        .json()
        .runs()
        .json();
    assert_eq!(
        check_of(&report, "keys_outlive_reconcile").0,
        "fail",
        "{report}"
    );
}

/// Issue 25, item 11: `preheat --require-durable` as the generated operator
/// (no `CONFIG`: `@admin`) reads the AOF from `INFO persistence` and
/// preheats a Redis that keeps one (before: "cannot tell", refused always).
#[test]
fn preheat_require_durable_works_as_the_generated_operator() {
    let server = durable();
    let file = sale("durable").write();
    let password = file.dir.path().join("operator.pw");
    std::fs::write(&password, "operator-pw\n").unwrap();
    seckill(&[
        "acl",
        "--role",
        "operator",
        "--password-file",
        password.to_str().unwrap(),
        "--apply",
    ])
    .campaign(&file)
    .redis(&server)
    .succeeds();
    let operator = format!(
        "redis://seckill-operator:operator-pw@127.0.0.1:{}/0",
        server.port
    );
    let () = redis::cmd("ACL")
        .arg("LOG")
        .arg("RESET")
        .query(&mut server.conn())
        .unwrap();
    let ran = seckill(&["preheat", "--require-durable"])
        .campaign(&file)
        .redis_url(&operator)
        .succeeds();
    assert!(!ran.stderr().contains("warning"), "{}", ran.describe());
    // Nothing it sent was refused: the finer points were asked about first.
    let log: Vec<redis::Value> = redis::cmd("ACL")
        .arg("LOG")
        .query(&mut server.conn())
        .unwrap();
    assert!(log.is_empty(), "refused to the operator: {log:?}");
    // A Redis without AOF is still refused, as the operator too.
    let volatile = RedisServer::start();
    seckill(&[
        "acl",
        "--role",
        "operator",
        "--password-file",
        password.to_str().unwrap(),
        "--apply",
    ])
    .campaign(&file)
    .redis(&volatile)
    .succeeds();
    let operator = format!(
        "redis://seckill-operator:operator-pw@127.0.0.1:{}/0",
        volatile.port
    );
    let stderr = seckill(&["preheat", "--require-durable"])
        .campaign(&file)
        .redis_url(&operator)
        .fails_with(PREHEAT_REFUSED)
        .stderr();
    assert!(stderr.contains("keeps no AOF"), "{stderr}");
}

/// `doctor` run from a role's own URL asks before it sends what the role
/// may not (the probe: `redis.acl_check_cmd`), so an operator alerting on
/// `ACL LOG` is not paged by a pre-sale check; what it could not read is
/// listed as unchecked.
#[test]
fn doctor_as_a_role_leaves_acl_log_empty() {
    let server = durable();
    let file = sale("quiet").write();
    let password = file.dir.path().join("buyer.pw");
    std::fs::write(&password, "buyer-pw\n").unwrap();
    let _ = seckill(&[
        "acl",
        "--role",
        "buyer",
        "--password-file",
        password.to_str().unwrap(),
        "--apply",
    ])
    .campaign(&file)
    .redis(&server)
    .runs();
    let () = redis::cmd("ACL")
        .arg("LOG")
        .arg("RESET")
        .query(&mut server.conn())
        .unwrap();
    let buyer = format!("redis://seckill-buyer:buyer-pw@127.0.0.1:{}/0", server.port);
    let report = seckill(&["doctor", "--role", "buyer", "--allow-unchecked"])
        .campaign(&file)
        .redis_url(&buyer)
        .json()
        .runs()
        .json();
    let (verdict, detail) = check_of(&report, "eviction");
    assert_eq!(verdict, "warn", "{report}");
    assert!(detail.contains("refused to user seckill-buyer"), "{detail}");
    let log: Vec<redis::Value> = redis::cmd("ACL")
        .arg("LOG")
        .query(&mut server.conn())
        .unwrap();
    assert!(log.is_empty(), "doctor as the buyer was refused: {log:?}");
}
