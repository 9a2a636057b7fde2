//! `seckill status` and the metrics: every field against a real Redis, the
//! window states on the Redis clock, the exposition text checked by a real
//! Prometheus parser (`promtool check metrics`), and `/metrics` scraped over
//! real HTTP from a running `consume`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::orders::{buy_many, spawn_seckill, terminate, wait_exit, wait_until};
use crate::support::{CampaignFile, RedisServer, campaign_file, free_port, json, seckill};

/// RFC 3339 for "now + offset" (negative = in the past).
fn at(offset: Duration, past: bool) -> String {
    let now = chrono::Utc::now();
    let offset = chrono::Duration::from_std(offset).unwrap();
    let t = if past { now - offset } else { now + offset };
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// A one-item campaign `c` with `stock` units and an optional window.
fn campaign(stock: i64, window: &str) -> CampaignFile {
    campaign_file(&format!(
        "campaign: c\n{window}keep_after_end: 2h\nitems:\n  - id: \"1\"\n    name: Bottle\n    price: \"10.00\"\n    stock: {stock}\norders:\n  store: sqlite://orders.db\n"
    ))
}

fn status_json(file: &CampaignFile, server: &RedisServer) -> serde_json::Value {
    let output = seckill(&file.path, &server.url())
        .args(["status", "--format", "json"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    json(&output)["items"][0].clone()
}

fn status_text(file: &CampaignFile, server: &RedisServer) -> String {
    let output = seckill(&file.path, &server.url())
        .arg("status")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap()
}

fn switch_text(file: &CampaignFile, server: &RedisServer) -> String {
    let output = seckill(&file.path, &server.url())
        .args(["shutdown-switch", "status"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn status_shows_every_field_of_a_live_sale() {
    let server = RedisServer::start();
    let hour = Duration::from_secs(3600);
    let window = format!(
        "starts_at: {}\nends_at: {}\n",
        at(hour, true),
        at(hour, false)
    );
    let file = campaign(50, &window);
    seckill(&file.path, &server.url())
        .arg("preheat")
        .assert()
        .success();
    assert_eq!(buy_many(&server, &file, "1", "u", 7).len(), 7);
    seckill(&file.path, &server.url())
        .args([
            "shutdown-switch",
            "on",
            "--reason",
            "gateway down",
            "--by",
            "alice",
        ])
        .assert()
        .success();

    let s = status_json(&file, &server);
    assert_eq!(s["stock_left"], 43);
    assert_eq!(s["initial_stock"], 50);
    assert_eq!(s["sold"], 7);
    assert_eq!(s["buyers"], 7);
    // Nothing sold while status sampled twice, a second apart.
    let interval = s["rate_interval_ms"].as_i64().unwrap();
    assert!((900..5_000).contains(&interval), "{s}");
    assert_eq!(s["rate_per_s"], 0.0, "{s}");
    assert_eq!(s["window"]["state"], "open");
    let closes_in = s["window"]["closes_in_ms"].as_i64().unwrap();
    assert!(closes_in > 3_500_000 && closes_in <= 3_600_000, "{s}");
    assert_eq!(s["kill_switch"]["on"], true);
    assert_eq!(s["kill_switch"]["reason"], "gateway down");
    assert_eq!(s["kill_switch"]["switched_by"], "alice");
    assert!(s["kill_switch"]["switched_at_ms"].as_i64().is_some());
    assert_eq!(s["stream"]["length"], 7);
    assert_eq!(s["stream"]["group_exists"], true);
    assert_eq!(s["stream"]["pending"], 0);
    assert_eq!(s["stream"]["lag"], 7);
    assert_eq!(s["dead_letter"], 0);
    // Keys expire at ends_at + keep_after_end: 1 h + 2 h from now.
    let expires_in = s["expires_in_ms"].as_i64().unwrap();
    assert!(expires_in > 10_700_000 && expires_in <= 10_800_000, "{s}");

    // Delivered but not acked: pending moves, lag shrinks.
    let mut conn = server.conn();
    let keys = seckill::model::keys::ItemKeys::live("c", "1");
    seckill::domain::orders::stream::read_group(&mut conn, "w1", &[(&keys.orders, ">")], 3, None)
        .unwrap();
    let s = status_json(&file, &server);
    assert_eq!(s["stream"]["pending"], 3);
    assert_eq!(s["stream"]["lag"], 4);

    let text = status_text(&file, &server);
    assert!(
        text.contains("43 left of 50 · 7 sold to 7 buyers"),
        "{text}"
    );
    assert!(text.contains("open — closes in 59m"), "{text}");
    assert!(text.contains("ON — every buy is refused"), "{text}");
    assert!(text.contains(" by alice: \"gateway down\""), "{text}");
    assert!(text.contains("7 orders · 0 dead-lettered"), "{text}");
    assert!(text.contains("orders-db: 3 pending, lag 4"), "{text}");
    assert!(text.contains("keys expire in 2h 59m"), "{text}");
    // Fits an 80-column terminal (CJK and the middle dot count as one here: ASCII names).
    for line in text.lines() {
        assert!(line.chars().count() <= 80, "{line:?} is wider than 80");
    }
}

#[test]
fn the_rate_is_the_order_streams_growth_between_two_samples() {
    let server = RedisServer::start();
    let file = campaign(100_000, "");
    seckill(&file.path, &server.url())
        .arg("preheat")
        .assert()
        .success();
    let selling = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let shopper = {
        let (selling, url) = (selling.clone(), server.url());
        std::thread::spawn(move || {
            let keys = seckill::model::keys::ItemKeys::live("c", "1");
            let mut conn = redis::Client::open(url).unwrap().get_connection().unwrap();
            let mut n = 0u32;
            while selling.load(std::sync::atomic::Ordering::Relaxed) {
                let user = format!("r{n}");
                let request = seckill::domain::slot::BuyRequest {
                    campaign: "c",
                    item: "1",
                    user: &user,
                    qty: 1,
                    request_id: None,
                };
                seckill::domain::slot::buy(&mut conn, &keys, &request).unwrap();
                n += 1;
                std::thread::sleep(Duration::from_millis(5));
            }
            n
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    let s = status_json(&file, &server);
    selling.store(false, std::sync::atomic::Ordering::Relaxed);
    let sold = shopper.join().unwrap();
    let rate = s["rate_per_s"].as_f64().unwrap();
    let interval = s["rate_interval_ms"].as_i64().unwrap() as f64 / 1000.0;
    // Orders bought between the two samples: some, and no more than sold in all.
    assert!(rate > 0.0, "{s}");
    assert!(
        rate * interval <= f64::from(sold) + 0.5,
        "{s} (sold {sold})"
    );
    let text = status_text(&file, &server);
    assert!(text.contains(" orders/s (last "), "{text}");
}

#[test]
fn status_never_says_open_before_the_start_or_after_the_end() {
    let server = RedisServer::start();
    let hour = Duration::from_secs(3600);
    let later = campaign(5, &format!("starts_at: {}\n", at(hour * 2, false)));
    let ended = campaign(
        5,
        &format!("ends_at: {}\n", at(Duration::from_secs(60), true)),
    );
    let never = campaign(5, "");
    // The three share the campaign id `c`: the Redis is emptied between them.
    seckill(&later.path, &server.url())
        .arg("preheat")
        .assert()
        .success();
    let s = status_json(&later, &server);
    assert_eq!(s["window"]["state"], "not_started");
    let opens_in = s["window"]["opens_in_ms"].as_i64().unwrap();
    assert!(opens_in > 7_100_000 && opens_in <= 7_200_000, "{s}");
    let text = status_text(&later, &server);
    assert!(text.contains("not started — opens in 1h 59m"), "{text}");
    assert!(
        !text.contains("open —") && !text.contains("open (no end)"),
        "{text}"
    );
    // The kill switch's view says the same: "off" is not "open".
    let switch = switch_text(&later, &server);
    assert!(switch.contains("not started"), "{switch}");
    assert!(
        !switch.contains("(open)") && !switch.contains("open ("),
        "{switch}"
    );
    let _: () = redis::cmd("FLUSHALL").query(&mut server.conn()).unwrap();

    seckill(&ended.path, &server.url())
        .arg("preheat")
        .assert()
        .success();
    let s = status_json(&ended, &server);
    assert_eq!(s["window"]["state"], "ended");
    let text = status_text(&ended, &server);
    assert!(text.contains("ended 1m"), "{text}");
    assert!(!text.contains("open"), "{text}");
    let switch = switch_text(&ended, &server);
    assert!(switch.contains("ended 1m"), "{switch}");
    assert!(!switch.contains("open"), "{switch}");
    let _: () = redis::cmd("FLUSHALL").query(&mut server.conn()).unwrap();

    let s = status_json(&never, &server);
    assert_eq!(s["window"]["state"], "not_preheated");
    assert_eq!(s["preheated"], false);
    assert!(status_text(&never, &server).contains("not preheated: run `seckill -c"));
}

/// `promtool check metrics` on `text`: a real Prometheus parser and linter.
fn promtool_check(text: &str) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool must be installed (scripts/install-servers.sh installs prometheus)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success() && output.stdout.is_empty() && output.stderr.is_empty(),
        "promtool: {}{}\n{text}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The value of the one sample whose line starts with `series`.
fn sample(text: &str, series: &str) -> f64 {
    let line = text
        .lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .unwrap_or_else(|| panic!("no sample {series} in\n{text}"));
    line[series.len()..].trim().parse().unwrap()
}

#[test]
fn status_writes_prometheus_text_that_promtool_accepts() {
    let server = RedisServer::start();
    let file = campaign(20, "");
    seckill(&file.path, &server.url())
        .arg("preheat")
        .assert()
        .success();
    buy_many(&server, &file, "1", "u", 3);
    let output = seckill(&file.path, &server.url())
        .args(["status", "--format", "prometheus"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    promtool_check(&text);
    let labels = "{campaign=\"c\",item=\"1\"}";
    assert_eq!(sample(&text, &format!("seckill_stock_left{labels}")), 17.0);
    assert_eq!(sample(&text, &format!("seckill_sold_total{labels}")), 3.0);
    assert_eq!(sample(&text, &format!("seckill_window_open{labels}")), 1.0);
    assert_eq!(sample(&text, &format!("seckill_kill_switch{labels}")), 0.0);
    assert_eq!(sample(&text, &format!("seckill_stream_lag{labels}")), 3.0);

    // Elsewhere the format is a usage error, not a table in disguise.
    seckill(&file.path, &server.url())
        .args(["--format", "prometheus", "shutdown-switch", "status"])
        .assert()
        .code(seckill::model::exit_codes::USAGE_ERROR)
        .stderr(predicates::str::contains("only with `seckill status`"));
    // SECKILL_FORMAT chooses the format too.
    let output = seckill(&file.path, &server.url())
        .env("SECKILL_FORMAT", "json")
        .arg("status")
        .output()
        .unwrap();
    assert_eq!(json(&output)["items"][0]["stock_left"], 17);
}

/// GET `path` over a plain TCP connection; returns (status line, headers, body).
fn http_get(port: u16, path: &str) -> std::io::Result<(String, String, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: */*\r\n\r\n"
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let (head, body) = response.split_once("\r\n\r\n").expect("HTTP head");
    let (status, headers) = head.split_once("\r\n").unwrap_or((head, ""));
    Ok((status.to_string(), headers.to_string(), body.to_string()))
}

#[test]
fn consume_serves_metrics_over_http_while_it_runs() {
    let server = RedisServer::start();
    let file = campaign(30, "");
    seckill(&file.path, &server.url())
        .arg("preheat")
        .assert()
        .success();
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut consumer = spawn_seckill(
        &file,
        &server.url(),
        &[],
        &["consume", "--metrics-listen", &listen],
        "consume",
    );
    wait_until("the metrics endpoint answers", || {
        http_get(port, "/metrics").is_ok()
    });
    buy_many(&server, &file, "1", "u", 12);
    let labels = "{campaign=\"c\",item=\"1\"}";
    let mut last = String::new();
    wait_until("consume stored the 12 orders", || {
        let (status, headers, body) = http_get(port, "/metrics").unwrap();
        assert_eq!(status, "HTTP/1.1 200 OK");
        assert!(
            headers.contains("Content-Type: text/plain; version=0.0.4"),
            "{headers}"
        );
        assert!(
            headers.contains(&format!("Content-Length: {}", body.len())),
            "{headers}"
        );
        last = body;
        sample(&last, &format!("seckill_orders_stored_total{labels}")) == 12.0
    });
    promtool_check(&last);
    assert_eq!(sample(&last, &format!("seckill_stock_left{labels}")), 18.0);
    assert_eq!(sample(&last, &format!("seckill_sold_total{labels}")), 12.0);
    assert_eq!(sample(&last, "seckill_redis_up{campaign=\"c\"}"), 1.0);
    assert_eq!(
        sample(&last, "seckill_store_retries_total{campaign=\"c\"}"),
        0.0
    );
    let (status, _, _) = http_get(port, "/").unwrap();
    assert_eq!(status, "HTTP/1.1 404 Not Found");
    terminate(&consumer);
    assert!(wait_exit(&mut consumer).success());
}

#[test]
fn watch_prints_one_block_per_sample_when_piped_and_stops_cleanly() {
    let server = RedisServer::start();
    let file = campaign(9, "");
    seckill(&file.path, &server.url())
        .arg("preheat")
        .assert()
        .success();
    let mut watcher = spawn_seckill(
        &file,
        &server.url(),
        &[],
        &["status", "--watch", "200ms"],
        "watch",
    );
    let out = file.dir.path().join("watch.out");
    wait_until("three samples", || {
        std::fs::read_to_string(&out)
            .unwrap_or_default()
            .matches("9 left of 9")
            .count()
            >= 3
    });
    terminate(&watcher);
    assert!(wait_exit(&mut watcher).success());
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        !text.contains('\x1b'),
        "no terminal escapes when piped: {text:?}"
    );

    // A dropped connection is one failed sample, then a fresh connection.
    let mut watcher = spawn_seckill(
        &file,
        &server.url(),
        &[],
        &["status", "--watch", "200ms"],
        "watch-blip",
    );
    let out = file.dir.path().join("watch-blip.out");
    let samples = || {
        std::fs::read_to_string(&out)
            .unwrap_or_default()
            .matches("9 left of 9")
            .count()
    };
    wait_until("a first sample", || samples() >= 1);
    let _: i64 = redis::cmd("CLIENT")
        .arg(&["KILL", "TYPE", "normal", "SKIPME", "yes"])
        .query(&mut server.conn())
        .unwrap();
    let before = samples();
    wait_until("samples after the kill", || samples() >= before + 2);
    assert!(watcher.try_wait().unwrap().is_none(), "the console closed");
    terminate(&watcher);
    assert!(wait_exit(&mut watcher).success());

    // JSON: one envelope per line, per sample.
    let mut watcher = spawn_seckill(
        &file,
        &server.url(),
        &[],
        &["status", "--watch", "200ms", "--format", "json"],
        "watch-json",
    );
    let out = file.dir.path().join("watch-json.out");
    wait_until("two JSON samples", || {
        std::fs::read_to_string(&out)
            .unwrap_or_default()
            .lines()
            .count()
            >= 2
    });
    terminate(&watcher);
    assert!(wait_exit(&mut watcher).success());
    for line in std::fs::read_to_string(&out).unwrap().lines() {
        let sample: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(sample["command"], "status");
        assert_eq!(sample["items"][0]["stock_left"], 9);
    }
}

#[test]
fn a_bucketed_item_is_read_bucket_by_bucket_and_summed() {
    let server = RedisServer::start();
    let file = campaign_file(
        "campaign: c\nitems:\n  - id: \"1\"\n    name: Bottle\n    price: \"1.00\"\n    stock: 40\n    buckets: 4\norders:\n  store: sqlite://orders.db\n",
    );
    seckill(&file.path, &server.url())
        .arg("preheat")
        .assert()
        .success();
    for user in ["a", "b", "c"] {
        seckill(&file.path, &server.url())
            .args(["buy", "--item", "1", "--user", user])
            .assert()
            .success();
    }
    let s = status_json(&file, &server);
    assert_eq!(s["initial_stock"], 40, "{s}");
    assert_eq!(s["stock_left"], 37, "{s}");
    assert_eq!(s["sold"], 3);
    assert_eq!(s["stream"]["length"], 3);
    let parts = s["buckets"].as_array().unwrap();
    assert_eq!(parts.len(), 4);
    let left: i64 = parts
        .iter()
        .map(|p| p["stock_left"].as_i64().unwrap())
        .sum();
    assert_eq!(left, 37);
    assert_eq!(s["window"]["state"], "open");
    let text = status_text(&file, &server);
    assert!(
        text.contains("37 left of 40") && text.contains("bucket 3"),
        "{text}"
    );
    seckill(&file.path, &server.url())
        .args(["shutdown-switch", "on", "--by", "alice"])
        .assert()
        .success();
    let output = seckill(&file.path, &server.url())
        .args(["shutdown-switch", "status", "--history", "--format", "json"])
        .output()
        .unwrap();
    let row = json(&output)["items"][0].clone();
    assert_eq!(row["closed"], true);
    assert_eq!(row["window"]["state"], "open");
    assert_eq!(row["history"][0]["by"], "alice");
    assert_eq!(status_json(&file, &server)["kill_switch"]["on"], true);
}

#[test]
fn consume_counts_a_bucketed_items_orders_under_the_item() {
    let server = RedisServer::start();
    let file = campaign_file(
        "campaign: c\nitems:\n  - id: \"1\"\n    name: Bottle\n    price: \"1.00\"\n    stock: 40\n    buckets: 4\n  - id: \"2\"\n    name: Cup\n    price: \"1.00\"\n    stock: 5\norders:\n  store: sqlite://orders.db\n",
    );
    seckill(&file.path, &server.url())
        .arg("preheat")
        .assert()
        .success();
    for user in ["a", "b", "c", "d", "e"] {
        seckill(&file.path, &server.url())
            .args(["buy", "--item", "1", "--user", user])
            .assert()
            .success();
    }
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut consumer = spawn_seckill(
        &file,
        &server.url(),
        &[],
        &["consume", "--metrics-listen", &listen],
        "consume",
    );
    let mut last = String::new();
    wait_until("the five orders counted under item 1", || {
        let Ok((_, _, body)) = http_get(port, "/metrics") else {
            return false;
        };
        last = body;
        last.contains("seckill_orders_stored_total{campaign=\"c\",item=\"1\"} 5\n")
    });
    promtool_check(&last);
    assert_eq!(
        sample(
            &last,
            "seckill_orders_stored_total{campaign=\"c\",item=\"2\"}"
        ),
        0.0
    );
    assert_eq!(
        sample(&last, "seckill_stock_left{campaign=\"c\",item=\"1\"}"),
        35.0
    );
    terminate(&consumer);
    assert!(wait_exit(&mut consumer).success());
}
