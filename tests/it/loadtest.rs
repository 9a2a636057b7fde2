//! `seckill loadtest` against a real redis-server started by each test.

use crate::support;

use std::time::{Duration, Instant};

use redis::Commands;
use seckill::model::exit_codes::{RUNTIME_ERROR, SUCCESS, USAGE_ERROR};
use serde_json::Value;
use support::RedisServer;
use support::spec::{CampaignSpec, Ran, campaign, seckill};

/// Campaign `id`: two bottles, `per_user_limit` each, two attempts an hour.
fn bottles(id: &str, per_user_limit: u32) -> CampaignSpec {
    campaign(id)
        .per_user_limit(per_user_limit)
        .rate_limit("1h", 2)
        .item("sku1", 7)
        .named("test bottle")
        .price("10.00")
        .item("sku2", 3)
        .named("other bottle")
        .price("5.00")
}

fn lt_test() -> CampaignSpec {
    bottles("lt-test", 1)
}

const FIELDS: [&str; 27] = [
    "variant",
    "mode",
    "requests",
    "completed",
    "elapsed_s",
    "qps",
    "achieved_rate",
    "succeeded",
    "sold_out",
    "rejected",
    "oversold",
    "undersold",
    "final_stock",
    "books_balance",
    "stream_len",
    "p50_ms",
    "p90_ms",
    "p95_ms",
    "p99_ms",
    "p99_9_ms",
    "max_ms",
    "service",
    "late_sends",
    "dropped",
    "retries",
    "connections",
    "thresholds_failed",
];

const STOCK_KEY: &str = "seckill-loadtest:{lt-test:sku1}:stock";
const META_KEY: &str = "seckill-loadtest:{lt-test:sku1}:meta";

/// `seckill loadtest ARGS` (split on whitespace) on a campaign file of
/// `spec`; it must exit `code`.
fn loadtest(server: &RedisServer, spec: &CampaignSpec, args: &str, code: i32) -> Ran {
    let words: Vec<&str> = args.split_whitespace().collect();
    seckill(&["loadtest"])
        .args(&words)
        .campaign(&spec.write())
        .redis(server)
        .fails_with(code)
}

/// Run with `--format json`; it must succeed; the per-variant objects.
fn loadtest_json(server: &RedisServer, args: &str) -> Vec<Value> {
    let args = format!("--format json {args}");
    loadtest(server, &lt_test(), &args, SUCCESS).json()["variants"]
        .as_array()
        .expect("a JSON array of variants")
        .clone()
}

fn int(report: &Value, field: &str) -> i64 {
    report[field]
        .as_i64()
        .unwrap_or_else(|| panic!("{field} is not an integer in {report}"))
}

/// Every variant's books: sold + left = initial; the exact ones never undersell.
fn assert_books(report: &Value) {
    assert_eq!(report["books_balance"], true, "{report}");
    assert_eq!(
        int(report, "succeeded") + int(report, "final_stock"),
        int(report, "stock"),
        "{report}"
    );
    if report["variant"] != "v1" {
        assert_eq!(int(report, "undersold"), 0, "{report}");
    }
}

fn loadtest_keys(server: &RedisServer) -> Vec<String> {
    server.conn().keys("seckill-loadtest:*").expect("KEYS")
}

#[test]
fn v1_oversells_under_contention() {
    let server = RedisServer::start();
    let mut oversold_seen = Vec::new();
    for _run in 0..20 {
        let report = &loadtest_json(
            &server,
            "--variant v1 --connections 32 --requests 3000 --stock 5",
        )[0];
        assert_eq!(report["variant"], "v1");
        assert_eq!(int(report, "succeeded") + int(report, "sold_out"), 3000);
        // Every unit sold past the stock shows up as negative stock in Redis.
        assert_eq!(int(report, "final_stock"), 5 - int(report, "succeeded"));
        assert_books(report);
        oversold_seen.push(int(report, "oversold"));
        if int(report, "oversold") > 0 {
            assert!(report["verdict"].as_str().unwrap().starts_with("OVERSOLD"));
            return;
        }
    }
    panic!("v1 never oversold in 20 runs: {oversold_seen:?}");
}

#[test]
fn safe_variants_sell_exactly_the_stock() {
    let server = RedisServer::start();
    let reports = loadtest_json(
        &server,
        "--variant all --connections 16 --requests 600 --stock 25",
    );
    let names: Vec<&str> = reports
        .iter()
        .map(|r| r["variant"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["v1", "v2", "v3", "v4", "full", "lock"]);
    for report in &reports {
        assert_books(report);
    }
    for report in reports.iter().filter(|r| r["variant"] != "v1") {
        assert_eq!(int(report, "oversold"), 0, "{report}");
        assert_eq!(int(report, "succeeded"), 25, "{report}");
        assert_eq!(int(report, "final_stock"), 0, "{report}");
        assert_eq!(
            int(report, "succeeded") + int(report, "sold_out") + int(report, "rejected"),
            600,
            "{report}"
        );
        assert_eq!(report["verdict"], "exact", "{report}");
    }
    let full = reports.iter().find(|r| r["variant"] == "full").unwrap();
    assert_eq!(int(full, "stream_len"), int(full, "succeeded"));
    let v4 = reports.iter().find(|r| r["variant"] == "v4").unwrap();
    // 575 requests found no stock: each of them saw it below zero before giving it back.
    assert_eq!(int(v4, "retries"), 575);
    assert!(int(v4, "lowest_stock_seen") < 0);
}

#[test]
fn pipelined_scripts_stay_exact() {
    let server = RedisServer::start();
    for variant in ["v3", "full"] {
        let report = &loadtest_json(
            &server,
            &format!(
                "--variant {variant} --connections 8 --requests 1001 --stock 40 --pipeline 16"
            ),
        )[0];
        assert_eq!(int(report, "succeeded"), 40, "{report}");
        assert_eq!(int(report, "sold_out"), 961, "{report}");
        assert_eq!(int(report, "final_stock"), 0, "{report}");
        assert_eq!(int(report, "oversold"), 0, "{report}");
        assert_eq!(int(report, "pipeline"), 16, "{report}");
        assert_books(report);
    }
}

#[test]
fn full_rejects_duplicates_and_applies_the_rate_limit_only_on_request() {
    let server = RedisServer::start();
    let dedupe = &loadtest_json(
        &server,
        "--variant full --connections 4 --requests 200 --users 10 --stock 100",
    )[0];
    assert_eq!(int(dedupe, "succeeded"), 10);
    assert_eq!(int(dedupe, "rejected"), 190);
    assert_eq!(int(dedupe, "final_stock"), 90);
    assert_eq!(int(dedupe, "stream_len"), 10);
    // 90 units left, but nobody was told "sold out": rejected duplicates are not undersold.
    assert_books(dedupe);

    let generous = bottles("lt-test", 100);
    let run = |extra: &str| {
        let args =
            "--format json --variant full --connections 4 --requests 100 --users 5 --stock 1000";
        loadtest(&server, &generous, &format!("{args} {extra}"), SUCCESS).json()["variants"][0]
            .clone()
    };
    let unthrottled = run("");
    assert_eq!(int(&unthrottled, "succeeded"), 100);
    let throttled = run("--rate-limit");
    // max_requests 2 per hour per user: 5 users × 2 attempts get through.
    assert_eq!(int(&throttled, "succeeded"), 10);
    assert_eq!(int(&throttled, "rejected"), 90);
}

#[test]
fn json_carries_every_field() {
    let server = RedisServer::start();
    let reports = loadtest_json(
        &server,
        "--variant v3 --connections 2 --requests 50 --stock 10",
    );
    assert_eq!(reports.len(), 1);
    for field in FIELDS {
        assert!(
            !reports[0][field].is_null(),
            "missing {field} in {}",
            reports[0]
        );
    }
    assert_eq!(int(&reports[0], "requests"), 50);
    assert!(reports[0]["qps"].as_f64().unwrap() > 0.0);
    assert!(reports[0]["max_ms"].as_f64().unwrap() >= reports[0]["p50_ms"].as_f64().unwrap());
}

#[test]
fn table_shows_a_verdict_per_variant() {
    let server = RedisServer::start();
    let stdout = loadtest(
        &server,
        &lt_test(),
        "--variant v3 --connections 2 --requests 50 --stock 10",
        SUCCESS,
    )
    .stdout();
    assert!(
        stdout.contains("verdict") && stdout.contains("exact"),
        "{stdout}"
    );
}

#[test]
fn bad_flags_are_usage_errors() {
    let server = RedisServer::start();
    let cases: [(&str, &str); 11] = [
        ("--connections 0", "--connections"),
        ("--threads 0", "--threads"),
        ("--rate 0", "--rate"),
        ("--duration 3s", "--rate"),
        ("--rate 100 --duration 3s --requests 10", "--duration"),
        ("--stock 0", "--stock"),
        ("--requests 0", "--requests"),
        ("--users 0", "--users"),
        ("--variant v9", "v9"),
        ("--item nope", "no item \"nope\""),
        (
            "--variant v1 --pipeline 4",
            "--pipeline applies to the script variants",
        ),
    ];
    for (args, says) in cases {
        let stderr = loadtest(&server, &lt_test(), args, USAGE_ERROR).stderr();
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    assert!(loadtest_keys(&server).is_empty());
}

#[test]
fn refuses_a_namespace_it_did_not_create() {
    let server = RedisServer::start();
    let mut conn = server.conn();
    let () = conn.set(STOCK_KEY, 5).unwrap();
    let stderr = loadtest(
        &server,
        &lt_test(),
        "--variant v3 --requests 10 --connections 1",
        USAGE_ERROR,
    )
    .stderr();
    assert!(stderr.contains("not written by a load test"), "{stderr}");
    let stock: i64 = conn.get(STOCK_KEY).unwrap();
    assert_eq!(stock, 5);
}

#[test]
fn refuses_a_redis_carrying_the_live_sale() {
    let server = RedisServer::start();
    seckill(&["preheat"])
        .campaign(&lt_test().write())
        .redis(&server)
        .succeeds();
    let stderr = loadtest(
        &server,
        &lt_test(),
        "--variant v3 --requests 10 --connections 1",
        USAGE_ERROR,
    )
    .stderr();
    assert!(stderr.contains("carries live sale(s): lt-test"), "{stderr}");
    let live_stock: i64 = server.conn().get("seckill:{lt-test:sku1}:stock").unwrap();
    assert_eq!(live_stock, 7);
    assert!(loadtest_keys(&server).is_empty());
}

#[test]
fn namespace_is_removed_unless_kept() {
    let server = RedisServer::start();
    loadtest_json(
        &server,
        "--variant full --connections 2 --requests 30 --stock 5 --rate-limit",
    );
    assert!(loadtest_keys(&server).is_empty());

    let report = &loadtest_json(
        &server,
        "--variant full --connections 2 --requests 30 --stock 5 --keep",
    )[0];
    assert!(!loadtest_keys(&server).is_empty());
    let mut conn = server.conn();
    let stock: i64 = conn.get(STOCK_KEY).unwrap();
    assert_eq!(stock, int(report, "final_stock"));
    let marker: Option<String> = conn.hget(META_KEY, "loadtest_run").unwrap();
    assert!(marker.is_some());

    // A kept namespace carries the marker, so the next run may reset and remove it.
    loadtest_json(
        &server,
        "--variant lock --connections 2 --requests 30 --stock 5",
    );
    assert!(loadtest_keys(&server).is_empty());
}

/// Not only the file's campaign: any sale live on the Redis (another
/// campaign's) is refused, and its keys stay byte for byte as they were.
#[test]
fn a_redis_carrying_another_campaigns_live_sale_is_refused_and_untouched() {
    let server = RedisServer::start();
    let other = bottles("real-sale", 1).write();
    seckill(&["preheat"])
        .campaign(&other)
        .redis(&server)
        .succeeds();
    seckill(&["buy", "--item", "sku1", "--user", "alice"])
        .campaign(&other)
        .redis(&server)
        .succeeds();
    let mut conn = server.conn();
    let snapshot = |conn: &mut redis::Connection| -> Vec<(String, Vec<u8>)> {
        let mut keys: Vec<String> = conn.keys("seckill:*").unwrap();
        keys.sort();
        keys.into_iter()
            .map(|k| {
                let dump: Vec<u8> = redis::cmd("DUMP").arg(&k).query(conn).unwrap();
                (k, dump)
            })
            .collect()
    };
    let before = snapshot(&mut conn);
    assert!(before.len() >= 4, "{before:?}");
    let stderr = loadtest(
        &server,
        &lt_test(),
        "--variant all --connections 4 --requests 100 --stock 10",
        USAGE_ERROR,
    )
    .stderr();
    assert!(stderr.contains("live sale(s): real-sale"), "{stderr}");
    assert_eq!(snapshot(&mut conn), before);
    assert!(loadtest_keys(&server).is_empty());
}

#[test]
fn runs_exactly_on_a_cluster_and_cleans_every_node() {
    let cluster = support::cluster::RedisCluster::start();
    let file = lt_test().write();
    let run = |args: &str| {
        let words: Vec<&str> = args.split_whitespace().collect();
        seckill(&["loadtest", "--format", "json"])
            .args(&words)
            .campaign(&file)
            .cluster(&cluster)
            .succeeds()
            .json()
    };
    for report in
        run("--variant all --connections 8 --requests 400 --stock 20 --pipeline 4")["variants"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["variant"] != "v1")
    {
        assert_eq!(int(report, "succeeded"), 20, "{report}");
        assert_eq!(int(report, "final_stock"), 0, "{report}");
        assert_books(report);
        // One hash tag, one slot: one master takes (nearly) every command;
        // v2's keyless UNWATCH (sent when sold out) goes to any master.
        let masters = report["masters"].as_array().expect("masters on a cluster");
        assert_eq!(masters.len(), 3, "{report}");
        let shares: Vec<f64> = masters
            .iter()
            .map(|m| m["share"].as_f64().unwrap())
            .collect();
        assert!((shares.iter().sum::<f64>() - 1.0).abs() < 1e-9, "{report}");
        let top = shares.iter().copied().fold(0.0, f64::max);
        let expected = if report["variant"] == "v2" { 0.5 } else { 0.9 };
        assert!(top > expected, "{report}");
    }
    // Open loop on the blocking (redis-rs) workers a cluster gets.
    let open =
        &run("--variant full --connections 4 --rate 500 --duration 1s --stock 20")["variants"][0];
    assert_eq!(open["mode"], "open", "{open}");
    assert_eq!(int(open, "completed"), 500, "{open}");
    assert_eq!(int(open, "succeeded"), 20, "{open}");
    assert_books(open);
    for port in &cluster.ports {
        assert_eq!(cluster.keys_on(*port), 0, "keys left on node {port}");
    }
}

/// The event loop's sockets have no socket timeout: it must notice a Redis
/// that stops answering and end the run with an error, not a hang.
#[test]
fn a_redis_that_stops_answering_ends_the_run_with_an_error() {
    let server = RedisServer::start();
    let file = lt_test().write();
    let mut run = seckill(&["--response-timeout", "1s", "loadtest", "--variant", "v3"])
        .args(&["--connections", "4", "--requests", "1000000000"])
        .campaign(&file)
        .redis(&server)
        .start();
    let mut conn = server.conn();
    // Wait until the run is under way (its stock has moved), then freeze every client.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let stock: Option<i64> = conn.get(STOCK_KEY).unwrap();
        if stock.is_some_and(|s| s < 1000) {
            break;
        }
        assert!(Instant::now() < deadline, "the load test never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(20_000)
        .arg("ALL")
        .query(&mut conn)
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    while run.child().try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            panic!("loadtest still running 15 s after Redis froze");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let stderr = run.fails_with(RUNTIME_ERROR).stderr();
    assert!(stderr.contains("answered nothing for 1s"), "{stderr}");
}

/// `--variant v1,v3` runs those two, in that order, and nothing else.
#[test]
fn several_variants_are_a_comma_separated_list() {
    let server = RedisServer::start();
    let file = crate::support::spec::campaign("lv").item("1", 50).write();
    let report = crate::support::spec::seckill(&[
        "loadtest",
        "--variant",
        "v1,v3",
        "--requests",
        "200",
        "--connections",
        "4",
    ])
    .campaign(&file)
    .redis(&server)
    .json()
    .runs_within(std::time::Duration::from_secs(60))
    .json();
    let names: Vec<&str> = report["variants"]
        .as_array()
        .unwrap_or_else(|| panic!("{report}"))
        .iter()
        .map(|v| v["variant"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["v1", "v3"], "{report}");
    crate::support::spec::seckill(&["loadtest", "--variant", "queue,v1"])
        .campaign(&file)
        .redis(&server)
        .fails_with(seckill::model::exit_codes::USAGE_ERROR);
}

/// `--hdr-out` into a directory that does not exist is refused before the run.
#[test]
fn hdr_out_into_a_missing_directory_is_refused_up_front() {
    let server = RedisServer::start();
    let file = campaign("lh").item("1", 50).write();
    let missing = file.dir.path().join("no-such-dir").join("run-");
    let refused = seckill(&[
        "loadtest",
        "--variant",
        "v3",
        "--hdr-out",
        missing.to_str().unwrap(),
    ])
    .campaign(&file)
    .redis(&server)
    .fails_with(USAGE_ERROR);
    assert!(
        refused.stderr().contains("does not exist"),
        "{}",
        refused.describe()
    );
    let calls: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut server.conn())
        .unwrap();
    assert!(
        !calls.contains("cmdstat_evalsha"),
        "a run happened first: {calls}"
    );
}
