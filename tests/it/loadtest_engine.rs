//! The load-test engine (issue 10): open loop with corrected and service
//! latency, results other tools read (CSV, `.hgrm`), CI thresholds. Real
//! redis-server, real redis-benchmark for the CSV header.

use crate::support;

use std::process::Command;
use std::time::{Duration, Instant};

use redis::Commands;
use seckill::model::exit_codes::{SUCCESS, THRESHOLD_FAILED, USAGE_ERROR};
use serde_json::Value;
use support::spec::{Ran, Run, campaign, seckill};
use support::{CampaignFile, RedisServer};

fn lt_engine() -> CampaignFile {
    campaign("lt-engine")
        .per_user_limit(1)
        .item("sku1", 7)
        .named("test bottle")
        .price("10.00")
        .write()
}

const STOCK_KEY: &str = "seckill-loadtest:{lt-engine:sku1}:stock";

/// `seckill loadtest ARGS` (split on whitespace) on `file`, not run yet.
fn loadtest_on(file: &CampaignFile, server: &RedisServer, args: &str) -> Run {
    let words: Vec<&str> = args.split_whitespace().collect();
    seckill(&["loadtest"])
        .args(&words)
        .campaign(file)
        .redis(server)
}

/// `seckill loadtest ARGS` on a fresh campaign file; it must exit `code`.
fn loadtest(server: &RedisServer, args: &str, code: i32) -> Ran {
    loadtest_on(&lt_engine(), server, args).fails_with(code)
}

fn report(ran: &Ran) -> Value {
    ran.json()["variants"][0].clone()
}

fn ms(report: &Value, field: &str) -> f64 {
    report[field]
        .as_f64()
        .unwrap_or_else(|| panic!("{field} is not a number in {report}"))
}

/// Run `args` in the background, freeze Redis with `CLIENT PAUSE 500` one
/// second after the load test's first sale, and return its report.
fn paused_run(server: &RedisServer, args: &str) -> Value {
    let file = lt_engine();
    let run = loadtest_on(&file, server, args).json().start();
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
    report(&run.succeeds())
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
    let report = report(&loadtest(
        &server,
        "--format json --variant full --rate 2000 --duration 2s --connections 8 --stock 100",
        SUCCESS,
    ));
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
    let stdout = loadtest(
        &server,
        "--format csv --variant all --connections 4 --requests 200 --stock 10",
        SUCCESS,
    )
    .stdout();
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
    let stderr = seckill(&["--format", "csv", "preheat"])
        .campaign(&lt_engine())
        .redis(&server)
        .fails_with(USAGE_ERROR)
        .stderr();
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
    loadtest(
        &server,
        &format!(
            "--format json --variant v3 --connections 4 --requests 2000 --rate 4000 --hdr-out {prefix}"
        ),
        SUCCESS,
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
    let failed = loadtest(
        &server,
        "--format json --variant v3 --connections 2 --requests 100 --max-p99 1us --min-qps 1",
        THRESHOLD_FAILED,
    );
    let stderr = failed.stderr();
    assert!(stderr.contains("threshold failed: v3: p99"), "{stderr}");
    let envelope = failed.json();
    assert_eq!(envelope["exit_code"], THRESHOLD_FAILED);
    assert_eq!(envelope["error"]["kind"], "threshold_failed", "{envelope}");
    let report = &envelope["variants"][0];
    assert_eq!(report["thresholds_failed"].as_array().unwrap().len(), 1);

    loadtest(
        &server,
        "--variant v3 --connections 2 --requests 100 --max-p99 1h",
        SUCCESS,
    );
}

/// v1 oversells by design: that fails a run only when asked to.
#[test]
fn v1_oversold_fails_only_with_fail_on_oversell() {
    let server = RedisServer::start();
    for _run in 0..5 {
        let ran = loadtest_on(
            &lt_engine(),
            &server,
            "--format json --variant v1 --connections 32 --requests 3000 --stock 5 --fail-on-oversell",
        )
        .runs();
        let report = report(&ran);
        let oversold = report["oversold"].as_u64().unwrap() > 0;
        // Exit 4 exactly when it oversold, naming the threshold.
        let expected = if oversold { THRESHOLD_FAILED } else { SUCCESS };
        assert_eq!(ran.code(), expected, "{report}");
        if oversold {
            assert!(ran.stderr().contains("threshold failed: v1: oversold"));
            return;
        }
    }
    panic!("v1 never oversold in 5 runs");
}

/// Narrow by default (fits 80 columns), every column with --wide.
#[test]
fn table_is_narrow_unless_wide() {
    let server = RedisServer::start();
    let text = loadtest_on(
        &lt_engine(),
        &server,
        "--variant all --connections 4 --requests 200 --stock 10",
    )
    .columns(80)
    .succeeds()
    .stdout();
    for line in text.lines() {
        assert!(line.chars().count() <= 80, "longer than 80: {line}");
    }
    assert!(!text.contains("undersold"), "{text}");
    let text = loadtest_on(
        &lt_engine(),
        &server,
        "--variant v3 --connections 4 --requests 200 --stock 10 --wide",
    )
    .runs()
    .stdout();
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
    let all = loadtest(
        &server,
        "--format json --variant all --threads 3 --connections 7 --requests 300 --stock 20",
        SUCCESS,
    );
    for report in all.json()["variants"].as_array().unwrap() {
        assert_eq!(report["threads"], 3, "{report}");
        assert_eq!(report["completed"], 300, "{report}");
        assert_eq!(report["books_balance"], true, "{report}");
        if report["variant"] != "v1" {
            assert_eq!(report["succeeded"], 20, "{report}");
        }
    }
    let report = report(
        &loadtest_on(
            &lt_engine(),
            &server,
            "--format json --variant full --threads 3 --connections 7 --rate 3000 --requests 600 --stock 1000",
        )
        .runs(),
    );
    assert_eq!(report["completed"], 600, "{report}");
    // Every attempt a distinct user, every user bought once: none made twice, none skipped.
    assert_eq!(report["succeeded"], 600, "{report}");
    assert_eq!(report["stream_len"], 600, "{report}");
}
