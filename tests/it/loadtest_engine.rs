//! The load-test engine (issue 10): open loop with corrected and service
//! latency, results other tools read (CSV, `.hgrm`), CI thresholds. Real
//! redis-server, real redis-benchmark for the CSV header.

use crate::support;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use redis::Commands;
use serde_json::Value;
use support::{KillOnDrop, RedisServer, campaign_file, json, seckill};

const CAMPAIGN: &str = r#"
campaign: lt-engine
per_user_limit: 1
items:
  - id: "sku1"
    name: test bottle
    price: "10.00"
    stock: 7
"#;

const STOCK_KEY: &str = "seckill-loadtest:{lt-engine:sku1}:stock";

fn loadtest(server: &RedisServer, args: &str) -> Output {
    let campaign = campaign_file(CAMPAIGN);
    seckill(&campaign.path, &server.url())
        .arg("loadtest")
        .args(args.split_whitespace())
        .output()
        .expect("run seckill loadtest")
}

fn report(output: &Output) -> Value {
    json(output)["variants"][0].clone()
}

fn ms(report: &Value, field: &str) -> f64 {
    report[field]
        .as_f64()
        .unwrap_or_else(|| panic!("{field} is not a number in {report}"))
}

/// Run `args` in the background, freeze Redis with `CLIENT PAUSE 500` one
/// second after the load test's first sale, and return its report.
fn paused_run(server: &RedisServer, args: &str) -> Value {
    let campaign = campaign_file(CAMPAIGN);
    let child = Command::new(assert_cmd::cargo::cargo_bin("seckill"))
        .env_remove("SECKILL_REDIS_URL")
        .args(["--redis", &server.url(), "-c"])
        .arg(&campaign.path)
        .args(["loadtest", "--format", "json"])
        .args(args.split_whitespace())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = KillOnDrop(child);
    let mut conn = server.conn();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let stock: Option<i64> = conn.get(STOCK_KEY).unwrap();
        if stock.is_some_and(|s| s < 1_000_000) {
            break;
        }
        assert!(Instant::now() < deadline, "the load test never started");
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_secs(1));
    let () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(500)
        .arg("ALL")
        .query(&mut conn)
        .unwrap();
    let output = std::mem::replace(&mut child.0, Command::new("true").spawn().unwrap())
        .wait_with_output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    report(&output)
}

/// The point of open loop: a half-second stall shows in what shoppers see
/// (corrected p99 ≥ 400 ms) although each request, once sent, was quick.
/// The same stall in closed loop: the clients wait with Redis and the
/// attempts they would have made meanwhile are never made.
#[test]
fn open_loop_shows_a_stall_that_closed_loop_hides() {
    let server = RedisServer::start();
    let open = paused_run(
        &server,
        "--variant v3 --stock 1000000 --rate 1000 --duration 3s --connections 4",
    );
    assert_eq!(open["mode"], "open", "{open}");
    assert_eq!(open["requested_rate"].as_f64(), Some(1000.0));
    let corrected = ms(&open, "p99_ms");
    let service = ms(&open["service"], "p99_ms");
    assert!(corrected >= 400.0, "corrected p99 {corrected} ms: {open}");
    assert!(
        service < corrected / 4.0,
        "service p99 {service} ms: {open}"
    );
    // The attempts due during the pause went out late, none was lost.
    assert!(open["late_sends"].as_u64().unwrap() >= 300, "{open}");
    assert_eq!(open["dropped"], 0, "{open}");
    assert_eq!(open["completed"], 3000, "{open}");

    let closed = paused_run(
        &server,
        "--variant v3 --stock 1000000 --requests 60000 --connections 4",
    );
    assert_eq!(closed["mode"], "closed", "{closed}");
    // In closed loop there is no plan to be late against: both measures agree.
    assert_eq!(closed["p99_ms"], closed["service"]["p99_ms"], "{closed}");
    eprintln!(
        "same 500 ms pause: open-loop corrected p99 {corrected} ms, service p99 {service} ms; \
         closed-loop p99 {} ms",
        ms(&closed, "p99_ms")
    );
}

#[test]
fn open_loop_keeps_the_requested_rate_when_redis_keeps_up() {
    let server = RedisServer::start();
    let output = loadtest(
        &server,
        "--format json --variant full --rate 2000 --duration 2s --connections 8 --stock 100",
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report = report(&output);
    let achieved = ms(&report, "achieved_rate");
    assert!(
        (achieved - 2000.0).abs() <= 200.0,
        "achieved {achieved}/s: {report}"
    );
    assert_eq!(report["requests"], 4000, "{report}");
    assert_eq!(report["completed"], 4000, "{report}");
    assert_eq!(report["dropped"], 0, "{report}");
    assert_eq!(report["succeeded"], 100, "{report}");
    assert_eq!(report["undersold"], 0, "{report}");
    for field in ["p50_ms", "p90_ms", "p99_ms", "p99_9_ms", "max_ms"] {
        assert!(
            ms(&report, field) >= ms(&report["service"], field),
            "corrected {field} below service time: {report}"
        );
    }
}

/// The CSV's first eight columns are the installed redis-benchmark's, exactly.
#[test]
fn csv_header_starts_with_redis_benchmarks_columns() {
    let server = RedisServer::start();
    let theirs = Command::new("redis-benchmark")
        .args([
            "-p",
            &server.port.to_string(),
            "-n",
            "10",
            "-c",
            "1",
            "--csv",
            "-t",
            "ping",
        ])
        .output()
        .expect("redis-benchmark must be installed (apt-get install redis-tools)");
    let their_header = String::from_utf8_lossy(&theirs.stdout)
        .lines()
        .next()
        .expect("redis-benchmark printed a CSV header")
        .to_string();
    let output = loadtest(
        &server,
        "--format csv --variant all --connections 4 --requests 200 --stock 10",
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let mut lines = stdout.lines();
    let header = lines.next().unwrap();
    assert!(
        header.starts_with(&format!("{their_header},\"oversold\",\"undersold\",")),
        "ours:   {header}\ntheirs: {their_header}"
    );
    let columns = header.split(',').count();
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 6, "{stdout}");
    for row in rows {
        assert_eq!(row.split(',').count(), columns, "{row}");
        assert!(row.starts_with('"'), "{row}");
    }
    // Only the load test has a CSV; the others refuse it before doing anything.
    let campaign = campaign_file(CAMPAIGN);
    let other = seckill(&campaign.path, &server.url())
        .args(["--format", "csv", "preheat"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&other.stderr);
    assert_eq!(other.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--format csv applies to loadtest only"),
        "{stderr}"
    );
    let preheated: bool = server
        .conn()
        .exists("seckill:{lt-engine:sku1}:stock")
        .unwrap();
    assert!(!preheated);
}

/// `.hgrm` files parse back: monotonic values and percentiles, and the last
/// line's total count is the number of requests.
#[test]
fn hgrm_files_parse_back() {
    let server = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let prefix = format!("{}/run-", dir.path().display());
    let output = loadtest(
        &server,
        &format!(
            "--format json --variant v3 --connections 4 --requests 2000 --rate 4000 --hdr-out {prefix}"
        ),
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for file in ["run-v3.hgrm", "run-v3.service.hgrm"] {
        let text = std::fs::read_to_string(dir.path().join(file)).unwrap();
        let rows: Vec<(f64, f64, u64)> = text
            .lines()
            .skip(1)
            .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
            .map(|line| {
                let columns: Vec<&str> = line.split_whitespace().collect();
                (
                    columns[0].parse().unwrap(),
                    columns[1].parse().unwrap(),
                    columns[2].parse().unwrap(),
                )
            })
            .collect();
        assert!(rows.len() > 10, "{text}");
        for pair in rows.windows(2) {
            assert!(pair[0].0 <= pair[1].0, "values not monotonic: {pair:?}");
            assert!(
                pair[0].1 <= pair[1].1,
                "percentiles not monotonic: {pair:?}"
            );
            assert!(pair[0].2 <= pair[1].2, "counts not monotonic: {pair:?}");
        }
        let last = rows.last().unwrap();
        assert_eq!((last.1, last.2), (1.0, 2000), "{file}");
        assert!(text.contains("Total count    =         2000]"), "{text}");
    }
}

#[test]
fn an_impossible_p99_fails_with_the_threshold_code() {
    let server = RedisServer::start();
    let output = loadtest(
        &server,
        "--format json --variant v3 --connections 2 --requests 100 --max-p99 1us --min-qps 1",
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(seckill::model::exit_codes::THRESHOLD_FAILED),
        "{stderr}"
    );
    assert!(stderr.contains("threshold failed: v3: p99"), "{stderr}");
    let envelope = json(&output);
    assert_eq!(
        envelope["exit_code"],
        seckill::model::exit_codes::THRESHOLD_FAILED
    );
    assert_eq!(envelope["error"]["kind"], "threshold_failed", "{envelope}");
    let report = &envelope["variants"][0];
    assert_eq!(report["thresholds_failed"].as_array().unwrap().len(), 1);

    let relaxed = loadtest(
        &server,
        "--variant v3 --connections 2 --requests 100 --max-p99 1h",
    );
    assert!(relaxed.status.success());
}

/// v1 oversells by design: that fails a run only when asked to.
#[test]
fn v1_oversold_fails_only_with_fail_on_oversell() {
    let server = RedisServer::start();
    for _run in 0..5 {
        let output = loadtest(
            &server,
            "--format json --variant v1 --connections 32 --requests 3000 --stock 5 --fail-on-oversell",
        );
        let report = report(&output);
        if report["oversold"].as_u64().unwrap() > 0 {
            assert_eq!(
                output.status.code(),
                Some(seckill::model::exit_codes::THRESHOLD_FAILED),
                "{report}"
            );
            assert!(
                String::from_utf8_lossy(&output.stderr).contains("threshold failed: v1: oversold"),
            );
            return;
        }
        assert!(output.status.success(), "{report}");
    }
    panic!("v1 never oversold in 5 runs");
}

/// Narrow by default (fits 80 columns), every column with --wide.
#[test]
fn table_is_narrow_unless_wide() {
    let server = RedisServer::start();
    let campaign = campaign_file(CAMPAIGN);
    let narrow = seckill(&campaign.path, &server.url())
        .env("COLUMNS", "80")
        .args("loadtest --variant all --connections 4 --requests 200 --stock 10".split_whitespace())
        .output()
        .unwrap();
    assert!(narrow.status.success());
    let text = String::from_utf8_lossy(&narrow.stdout);
    for line in text.lines() {
        assert!(line.chars().count() <= 80, "longer than 80: {line}");
    }
    assert!(!text.contains("undersold"), "{text}");
    let wide = loadtest(
        &server,
        "--variant v3 --connections 4 --requests 200 --stock 10 --wide",
    );
    let text = String::from_utf8_lossy(&wide.stdout);
    for column in [
        "undersold",
        "p99.9 ms",
        "service p99 ms",
        "dropped",
        "retries",
    ] {
        assert!(text.contains(column), "--wide lacks {column}: {text}");
    }
}

/// Several event loops share the connections (7 over 3 here) and, in open
/// loop, the attempts (worker w owns w, w+3, ...): the books still balance
/// and every attempt is made exactly once.
#[test]
fn several_event_loops_split_the_work() {
    let server = RedisServer::start();
    let output = loadtest(
        &server,
        "--format json --variant all --threads 3 --connections 7 --requests 300 --stock 20",
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for report in json(&output)["variants"].as_array().unwrap() {
        assert_eq!(report["threads"], 3, "{report}");
        assert_eq!(report["completed"], 300, "{report}");
        assert_eq!(report["books_balance"], true, "{report}");
        if report["variant"] != "v1" {
            assert_eq!(report["succeeded"], 20, "{report}");
        }
    }
    let output = loadtest(
        &server,
        "--format json --variant full --threads 3 --connections 7 --rate 3000 --requests 600 --stock 1000",
    );
    let report = report(&output);
    assert_eq!(report["completed"], 600, "{report}");
    // Every attempt a distinct user, every user bought once: none made twice, none skipped.
    assert_eq!(report["succeeded"], 600, "{report}");
    assert_eq!(report["stream_len"], 600, "{report}");
}
