//! Go / no-go: what would wreck a sale is refused or reported before it
//! does (issue "Go / no-go"): eviction, the wrong sale (a typo'd id, the
//! wrong file for the switch, a leftover environment variable), edits that
//! would vanish, a reset of a selling sale, a server that takes the
//! connection but does not answer, arguments that are not UTF-8, and
//! `seckill doctor` itself.

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
        table.contains("price differs, NOT applied") && table.contains("file 12.00 · Redis 10.00"),
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
        applied.contains("price changed: file 12.00 · Redis 10.00"),
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
        let ran = seckill(&["doctor"])
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

#[test]
fn doctor_says_go_on_a_well_configured_local_cluster() {
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
        let mut node = crate::support::cluster::node(port).unwrap();
        loop {
            let info: String = redis::cmd("INFO")
                .arg("replication")
                .query(&mut node)
                .unwrap();
            let settled = !info.contains("role:master")
                || (info.contains("state=online") && !info.contains("wait_bgsave"));
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
    let masters = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "masters")
        .unwrap()["detail"]
        .to_string();
    assert!(masters.contains("bucket 2 →"), "{report}");
    assert_eq!(ran.code(), SUCCESS);
}
