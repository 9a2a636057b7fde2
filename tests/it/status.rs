//! `seckill status` and the metrics: every field against a real Redis, the
//! window states on the Redis clock, the exposition text checked by a real
//! Prometheus parser (`promtool check metrics`), and `/metrics` scraped over
//! real HTTP from a running `consume`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::orders::{buy_many, spawn_seckill, terminate, wait_exit, wait_until};
use crate::support::spec::{CampaignSpec, Ran, campaign, seckill};
use crate::support::{CampaignFile, RedisServer, free_port, preheat};
use seckill::model::exit_codes::USAGE_ERROR;

/// A one-item campaign `c`: item "1", a Bottle at 10.00, `stock` units.
fn bottle(stock: i64) -> CampaignSpec {
    campaign("c")
        .item("1", stock)
        .named("Bottle")
        .price("10.00")
}

fn status_json(file: &CampaignFile, server: &RedisServer) -> serde_json::Value {
    seckill(&["status"])
        .campaign(file)
        .redis(server)
        .json()
        .succeeds()
        .json()["items"][0]
        .clone()
}

/// Stdout, which must be UTF-8.
fn utf8(ran: &Ran) -> String {
    String::from_utf8(ran.output().stdout.clone()).expect("stdout is UTF-8")
}

fn status_text(file: &CampaignFile, server: &RedisServer) -> String {
    utf8(&seckill(&["status"]).campaign(file).redis(server).succeeds())
}

fn switch_text(file: &CampaignFile, server: &RedisServer) -> String {
    utf8(
        &seckill(&["shutdown-switch", "status"])
            .campaign(file)
            .redis(server)
            .succeeds(),
    )
}

#[test]
fn status_shows_every_field_of_a_live_sale() {
    let server = RedisServer::start();
    let file = bottle(50).starts_in(-3600).ends_in(3600).write();
    preheat(&file, &server);
    assert_eq!(buy_many(&server, &file, "1", "u", 7).len(), 7);
    seckill(&["shutdown-switch", "on", "--reason", "gateway down"])
        .args(&["--by", "alice"])
        .campaign(&file)
        .redis(&server)
        .succeeds();

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
    let file = bottle(100_000).write();
    preheat(&file, &server);
    let selling = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let shopper = {
        let (selling, url, path) = (selling.clone(), server.url(), file.path.clone());
        std::thread::spawn(move || {
            let campaign =
                seckill::model::campaign::Campaign::load(&path).expect("the campaign file");
            let sale = seckill::domain::item::SaleItem::live(&campaign, &campaign.items[0]);
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
                    ticket: None,
                    seats: None,
                };
                sale.buy(&mut conn, &request).unwrap();
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
    let later = bottle(5).starts_in(2 * 3600).write();
    let ended = bottle(5).ends_in(-60).write();
    let never = bottle(5).write();
    // The three share the campaign id `c`: the Redis is emptied between them.
    preheat(&later, &server);
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

    preheat(&ended, &server);
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
pub(crate) fn promtool_check(text: &str) {
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
pub(crate) fn sample(text: &str, series: &str) -> f64 {
    let line = text
        .lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .unwrap_or_else(|| panic!("no sample {series} in\n{text}"));
    line[series.len()..].trim().parse().unwrap()
}

#[test]
fn status_writes_prometheus_text_that_promtool_accepts() {
    let server = RedisServer::start();
    let file = bottle(20).write();
    preheat(&file, &server);
    buy_many(&server, &file, "1", "u", 3);
    let text = utf8(
        &seckill(&["status", "--format", "prometheus"])
            .campaign(&file)
            .redis(&server)
            .succeeds(),
    );
    promtool_check(&text);
    let labels = "{campaign=\"c\",item=\"1\"}";
    assert_eq!(sample(&text, &format!("seckill_stock_left{labels}")), 17.0);
    assert_eq!(sample(&text, &format!("seckill_sold_units{labels}")), 3.0);
    assert_eq!(sample(&text, &format!("seckill_window_open{labels}")), 1.0);
    assert_eq!(sample(&text, &format!("seckill_kill_switch{labels}")), 0.0);
    assert_eq!(sample(&text, &format!("seckill_stream_lag{labels}")), 3.0);

    // Elsewhere the format is a usage error, not a table in disguise.
    let refused = seckill(&["--format", "prometheus", "shutdown-switch", "status"])
        .campaign(&file)
        .redis(&server)
        .fails_with(USAGE_ERROR);
    assert!(
        refused.stderr().contains("only with `seckill status`"),
        "{}",
        refused.describe()
    );
    // SECKILL_FORMAT chooses the format too.
    let chosen = seckill(&["status"])
        .campaign(&file)
        .redis(&server)
        .env("SECKILL_FORMAT", "json")
        .runs()
        .json();
    assert_eq!(chosen["items"][0]["stock_left"], 17);
}

/// GET `path` over a plain TCP connection; returns (status line, headers, body).
pub(crate) fn http_get(port: u16, path: &str) -> std::io::Result<(String, String, String)> {
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

/// `consume --metrics-listen 127.0.0.1:PORT` on `file` in the background; its port.
pub(crate) fn consume_with_metrics(
    file: &CampaignFile,
    server: &RedisServer,
) -> (crate::support::orders::Background, u16) {
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let consumer = spawn_seckill(
        file,
        &server.url(),
        &[],
        &["consume", "--metrics-listen", &listen],
        "consume",
    );
    (consumer, port)
}

/// Scrape `/metrics` at `port` until `done` holds for the text; returns it.
pub(crate) fn scrape_until(port: u16, what: &str, done: impl Fn(&str) -> bool) -> String {
    let mut last = String::new();
    wait_until(what, || {
        let Ok((_, _, body)) = http_get(port, "/metrics") else {
            return false;
        };
        last = body;
        done(&last)
    });
    last
}

#[test]
fn consume_serves_metrics_over_http_while_it_runs() {
    let server = RedisServer::start();
    let file = bottle(30).write();
    preheat(&file, &server);
    let (mut consumer, port) = consume_with_metrics(&file, &server);
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
    assert_eq!(sample(&last, &format!("seckill_sold_units{labels}")), 12.0);
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
    let file = bottle(9).write();
    preheat(&file, &server);
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
    let file = campaign("c")
        .item("1", 40)
        .named("Bottle")
        .buckets(4)
        .write();
    preheat(&file, &server);
    for user in ["a", "b", "c"] {
        seckill(&["buy", "--item", "1", "--user", user])
            .campaign(&file)
            .redis(&server)
            .succeeds();
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
    seckill(&["shutdown-switch", "on", "--by", "alice"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let row = seckill(&["shutdown-switch", "status", "--history"])
        .campaign(&file)
        .redis(&server)
        .json()
        .runs()
        .json()["items"][0]
        .clone();
    assert_eq!(row["closed"], true);
    assert_eq!(row["window"]["state"], "open");
    assert_eq!(row["history"][0]["by"], "alice");
    assert_eq!(status_json(&file, &server)["kill_switch"]["on"], true);
}

#[test]
fn consume_counts_a_bucketed_items_orders_under_the_item() {
    let server = RedisServer::start();
    let file = campaign("c")
        .item("1", 40)
        .named("Bottle")
        .buckets(4)
        .item("2", 5)
        .named("Cup")
        .write();
    preheat(&file, &server);
    for user in ["a", "b", "c", "d", "e"] {
        seckill(&["buy", "--item", "1", "--user", user])
            .campaign(&file)
            .redis(&server)
            .succeeds();
    }
    let (mut consumer, port) = consume_with_metrics(&file, &server);
    let last = scrape_until(port, "the five orders counted under item 1", |text| {
        text.contains("seckill_orders_stored_total{campaign=\"c\",item=\"1\"} 5\n")
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

/// `seckill status --check` against `file`, with `extra` flags.
fn check(file: &CampaignFile, server: &RedisServer, extra: &[&str], code: i32) -> Ran {
    seckill(&["status", "--check"])
        .args(extra)
        .campaign(file)
        .redis(server)
        .fails_with(code)
}

#[test]
fn status_check_exits_with_a_code_per_problem_one_line_each() {
    use seckill::model::exit_codes::{
        CHECK_EXPIRY, CHECK_LAG, CHECK_PREHEAT, CHECK_SWITCH_ON, SUCCESS,
    };
    let server = RedisServer::start();
    // Keys expire at ends_at + keep_after_end: 1 h + 1 h from now.
    let file = bottle(50)
        .item("2", 5)
        .ends_in(3600)
        .keep_after_end("1h")
        .write();
    let text = check(&file, &server, &[], CHECK_PREHEAT).stdout();
    assert_eq!(text.lines().count(), 2, "one line per problem: {text}");
    assert!(text.starts_with("1: not preheated"), "{text}");

    preheat(&file, &server);
    let text = check(&file, &server, &[], SUCCESS).stdout();
    assert!(text.starts_with("ok: 2 item(s)"), "{text}");
    assert_eq!(check(&file, &server, &["-q"], SUCCESS).stdout(), "");

    seckill(&["shutdown-switch", "on", "--item", "2", "--reason", "fraud"])
        .args(&["--by", "alice"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let text = check(&file, &server, &["-q"], CHECK_SWITCH_ON).stdout();
    assert_eq!(
        text,
        "2: kill switch ON: every buy is refused (set by alice: \"fraud\")\n"
    );
    seckill(&["shutdown-switch", "off", "--item", "2"])
        .campaign(&file)
        .redis(&server)
        .succeeds();

    // Five orders nobody consumed: lag 5.
    buy_many(&server, &file, "1", "u", 5);
    let text = check(&file, &server, &["--max-lag", "3"], CHECK_LAG).stdout();
    assert!(
        text.starts_with("1: consumer behind: lag 5, pending 0 (more than --max-lag 3)"),
        "{text}"
    );
    check(&file, &server, &["--max-lag", "5"], SUCCESS);

    // The keys expire in about 2 h: a reconcile in 3 h comes too late, one in 1 h does not.
    let at = |seconds: i64| {
        (chrono::Utc::now() + chrono::Duration::seconds(seconds))
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    };
    let text = check(
        &file,
        &server,
        &["--reconcile-at", &at(3 * 3600)],
        CHECK_EXPIRY,
    )
    .stdout();
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(
        text.contains("1: keys expire at ") && text.contains("before the reconcile at"),
        "{text}"
    );
    check(&file, &server, &["--reconcile-at", &at(3600)], SUCCESS);
    // A time of day is the next one: within 24 h, so the check runs either way.
    let ran = seckill(&["status", "--check", "--reconcile-at", "03:00"])
        .campaign(&file)
        .redis(&server)
        .runs();
    assert!(
        [SUCCESS, CHECK_EXPIRY].contains(&ran.code()),
        "{}",
        ran.describe()
    );

    // Several problems: one line each, the lowest code wins; JSON names them.
    seckill(&["shutdown-switch", "on", "--item", "1"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let ran = seckill(&["status", "--check", "--max-lag", "0"])
        .args(&["--reconcile-at", &at(3 * 3600)])
        .campaign(&file)
        .redis(&server)
        .json()
        .fails_with(CHECK_SWITCH_ON);
    let kinds: Vec<String> = ran.json()["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            format!(
                "{} {}",
                p["item"].as_str().unwrap(),
                p["kind"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "1 check_switch_on",
            "1 check_expiry",
            "1 check_lag",
            "2 check_expiry"
        ]
    );
    // Bad thresholds are usage errors, before Redis is asked.
    for bad in [
        &["--reconcile-at", "3am"][..],
        &["--max-lag", "-1"],
        &["--watch", "1s"],
    ] {
        check(&file, &server, bad, USAGE_ERROR);
    }
    seckill(&["status", "--max-lag", "3"])
        .campaign(&file)
        .redis(&server)
        .fails_with(USAGE_ERROR);
}

#[test]
fn status_lists_the_groups_consumers_with_idle_time_and_pending() {
    let server = RedisServer::start();
    let file = bottle(20).write();
    preheat(&file, &server);
    buy_many(&server, &file, "1", "u", 4);
    let mut conn = server.conn();
    let keys = seckill::model::keys::ItemKeys::live("c", "1");
    let read = |conn: &mut redis::Connection, consumer: &str, count: usize| {
        seckill::domain::orders::stream::read_group(
            conn,
            consumer,
            &[(&keys.orders, ">")],
            count,
            None,
        )
        .unwrap();
    };
    read(&mut conn, "worker-1", 3);
    read(&mut conn, "worker-2", 1);
    let s = status_json(&file, &server);
    let consumers = s["consumers"].as_array().unwrap();
    let named: Vec<(String, i64)> = consumers
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["pending"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        named,
        [("worker-1".to_string(), 3), ("worker-2".to_string(), 1)]
    );
    assert!(
        consumers
            .iter()
            .all(|c| c["idle_ms"].as_i64().unwrap() >= 0)
    );
    let text = status_text(&file, &server);
    assert!(
        text.contains("consumer worker-1 (3 pending, idle ")
            && text.contains("worker-2 (1 pending, idle "),
        "{text}"
    );
    let metrics = utf8(
        &seckill(&["status", "--format", "prometheus"])
            .campaign(&file)
            .redis(&server)
            .succeeds(),
    );
    promtool_check(&metrics);
    let series = "{campaign=\"c\",item=\"1\",consumer=\"worker-1\"}";
    assert_eq!(
        sample(&metrics, &format!("seckill_consumer_pending{series}")),
        3.0
    );
    assert!(sample(&metrics, &format!("seckill_consumer_idle_seconds{series}")) >= 0.0);
}

/// (type of each family, value of each series) of an exposition text.
pub(crate) fn parse_exposition(
    text: &str,
) -> (
    std::collections::HashMap<String, String>,
    Vec<(String, f64)>,
) {
    let mut types = std::collections::HashMap::new();
    let mut samples = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            types.insert(name.to_string(), kind.to_string());
        } else if !line.starts_with('#') && !line.is_empty() {
            let (series, value) = line.rsplit_once(' ').unwrap();
            samples.push((series.to_string(), value.parse().unwrap()));
        }
    }
    (types, samples)
}

/// A counter Prometheus reads a drop of as a reset: `rate()` then shows a
/// spike. Units sold fall when a reservation is released and dead letters
/// when they are re-driven: they are gauges, and every counter stays.
#[test]
fn no_counter_goes_down_when_a_reservation_is_released_or_a_dead_letter_redriven() {
    let server = RedisServer::start();
    let file = bottle(20).payment_timeout("1h").write();
    preheat(&file, &server);
    let run = |args: &[&str]| seckill(args).campaign(&file).redis(&server);
    let buy = |user: &str| -> String {
        run(&["buy", "--item", "1", "--user", user])
            .json()
            .succeeds()
            .json()["order_id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let kept = buy("a");
    run(&["consume", "--drain"]).succeeds();
    let db = rusqlite::Connection::open(file.dir.path().join("orders.db")).unwrap();
    db.execute_batch(
        "CREATE TRIGGER no_banned BEFORE INSERT ON orders WHEN NEW.user_id = 'banned'
         BEGIN SELECT RAISE(ABORT, 'banned'); END;",
    )
    .unwrap();
    buy("banned");
    run(&["consume", "--drain"]).fails_with(seckill::model::exit_codes::ORDERS_REFUSED);
    run(&["pending-claim", "--min-idle", "0s", "--max-deliveries", "1"])
        .fails_with(seckill::model::exit_codes::ORDERS_REFUSED);
    let exposition = || utf8(&run(&["status", "--format", "prometheus"]).succeeds());
    let before = exposition();
    let labels = "{campaign=\"c\",item=\"1\"}";
    assert_eq!(sample(&before, &format!("seckill_sold_units{labels}")), 2.0);
    assert_eq!(
        sample(&before, &format!("seckill_dead_letters{labels}")),
        1.0
    );

    run(&["cancel", "--order", &kept]).succeeds();
    db.execute_batch("DROP TRIGGER no_banned").unwrap();
    run(&["dead-letter", "redrive"]).succeeds();
    let after = exposition();
    promtool_check(&after);
    assert_eq!(sample(&after, &format!("seckill_sold_units{labels}")), 1.0);
    assert_eq!(
        sample(&after, &format!("seckill_dead_letters{labels}")),
        0.0
    );

    let (types, old) = parse_exposition(&before);
    let (_, new) = parse_exposition(&after);
    assert_eq!(types["seckill_sold_units"], "gauge");
    assert_eq!(types["seckill_dead_letters"], "gauge");
    for (series, was) in &old {
        let family = series.split('{').next().unwrap();
        if types[family] != "counter" {
            continue;
        }
        let now = new
            .iter()
            .find(|(s, _)| s == series)
            .map(|(_, v)| *v)
            .unwrap_or_else(|| panic!("counter {series} vanished"));
        assert!(
            now >= *was,
            "counter {series} went down from {was} to {now}"
        );
    }
}

/// After Redis lost its data, `preheat --recover` loads what is left (here
/// nothing) and carries the stored orders over; status and the metrics
/// count those units in the item's stock and its sales instead of reading
/// `0 left of 0 · 0 sold`.
#[test]
fn a_recovered_item_counts_the_units_it_carried_over() {
    let server = RedisServer::start();
    let file = campaign("c")
        .item("1", 30)
        .named("Bottle")
        .item("2", 20)
        .buckets(2)
        .write();
    preheat(&file, &server);
    buy_many(&server, &file, "1", "u", 30);
    buy_many(&server, &file, "2", "v", 8);
    seckill(&["consume", "--drain"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let _: () = redis::cmd("FLUSHALL").query(&mut server.conn()).unwrap();
    seckill(&["preheat", "--recover"])
        .campaign(&file)
        .redis(&server)
        .succeeds();

    let items = seckill(&["status"])
        .campaign(&file)
        .redis(&server)
        .json()
        .succeeds()
        .json()["items"]
        .clone();
    let (sold_out, bucketed) = (&items[0], &items[1]);
    assert_eq!(sold_out["stock_left"], 0, "{sold_out}");
    assert_eq!(sold_out["initial_stock"], 30, "{sold_out}");
    assert_eq!(sold_out["sold"], 30, "{sold_out}");
    assert_eq!(sold_out["buyers"], 30, "{sold_out}");
    assert_eq!(sold_out["carried_over"]["units"], 30, "{sold_out}");
    assert_eq!(sold_out["carried_over"]["orders"], 30, "{sold_out}");
    assert_eq!(bucketed["stock_left"], 12, "{bucketed}");
    assert_eq!(bucketed["initial_stock"], 20, "{bucketed}");
    assert_eq!(bucketed["sold"], 8, "{bucketed}");
    assert_eq!(bucketed["carried_over"]["units"], 8, "{bucketed}");

    let text = utf8(
        &seckill(&["status", "--item", "1"])
            .campaign(&file)
            .redis(&server)
            .columns(80)
            .succeeds(),
    );
    assert!(
        text.contains("0 left of 30 · 30 sold to 30 buyers"),
        "{text}"
    );
    assert!(
        text.contains("carried  30 of them: 30 orders stored before Redis lost its data"),
        "{text}"
    );
    let metrics = utf8(
        &seckill(&["status", "--format", "prometheus"])
            .campaign(&file)
            .redis(&server)
            .succeeds(),
    );
    promtool_check(&metrics);
    let labels = "{campaign=\"c\",item=\"1\"}";
    assert_eq!(
        sample(&metrics, &format!("seckill_stock_initial{labels}")),
        30.0
    );
    assert_eq!(
        sample(&metrics, &format!("seckill_sold_units{labels}")),
        30.0
    );
    assert_eq!(
        sample(&metrics, &format!("seckill_carried_over_units{labels}")),
        30.0
    );
    // Sales after the recovery add to what was carried over.
    buy_many(&server, &file, "2", "w", 2);
    let s = seckill(&["status", "--item", "2"])
        .campaign(&file)
        .redis(&server)
        .json()
        .succeeds()
        .json()["items"][0]
        .clone();
    assert_eq!(
        (s["sold"].clone(), s["stock_left"].clone()),
        (10.into(), 10.into()),
        "{s}"
    );
}

/// `seckill buy` of item 1 by each of `users`: with a `payment_timeout`, each a reservation.
fn reserve(file: &CampaignFile, server: &RedisServer, users: &[&str]) {
    for user in users {
        seckill(&["buy", "--item", "1", "--user", user])
            .campaign(file)
            .redis(server)
            .succeeds();
    }
}

/// Reservations past their payment deadline that no `expire` released: a
/// status line, a `--check` problem (exit 44), a gauge — then gone once
/// `expire` runs.
#[test]
fn overdue_reservations_are_a_line_a_check_and_a_gauge() {
    use seckill::model::exit_codes::{CHECK_OVERDUE, SUCCESS};
    let server = RedisServer::start();
    let file = bottle(10).payment_timeout("4s").write();
    preheat(&file, &server);
    reserve(&file, &server, &["a", "b", "c"]);
    // Nothing is overdue before the deadline, and a campaign without
    // reservations has no overdue figures at all.
    let s = status_json(&file, &server);
    assert_eq!(s["overdue"]["orders"], 0, "{s}");
    let plain = bottle(10).write();
    assert!(
        seckill(&["status"])
            .campaign(&plain)
            .redis(&server)
            .json()
            .succeeds()
            .json()["items"][0]["overdue"]
            .is_null()
    );
    std::thread::sleep(Duration::from_secs(4));

    let s = status_json(&file, &server);
    assert_eq!(s["overdue"]["orders"], 3, "{s}");
    assert!(s["overdue"]["oldest_ms"].as_i64().unwrap() >= 1000, "{s}");
    let text = status_text(&file, &server);
    assert!(
        text.contains("overdue  3 reservations past the payment deadline, the oldest by "),
        "{text}"
    );
    assert!(
        text.contains("is `seckill expire --loop` running?"),
        "{text}"
    );
    // Within --grace it is no problem yet; beyond, it is.
    check(&file, &server, &[], SUCCESS);
    let text = check(&file, &server, &["--grace", "1s"], CHECK_OVERDUE).stdout();
    assert!(
        text.starts_with("1: 3 reservation(s) past their payment deadline, the oldest by "),
        "{text}"
    );
    let metrics = utf8(
        &seckill(&["status", "--format", "prometheus"])
            .campaign(&file)
            .redis(&server)
            .succeeds(),
    );
    promtool_check(&metrics);
    let labels = "{campaign=\"c\",item=\"1\"}";
    assert_eq!(
        sample(&metrics, &format!("seckill_reservations_overdue{labels}")),
        3.0
    );
    assert!(
        sample(
            &metrics,
            &format!("seckill_reservations_overdue_oldest_seconds{labels}")
        ) >= 1.0
    );

    seckill(&["expire"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let s = status_json(&file, &server);
    assert_eq!(s["overdue"]["orders"], 0, "{s}");
    assert!(s["overdue"]["oldest_ms"].is_null(), "{s}");
    assert!(!status_text(&file, &server).contains("overdue"));
    check(&file, &server, &["--grace", "1s"], SUCCESS);
}

#[test]
fn status_check_finds_dead_letters_and_a_room_whose_admitter_does_not_run() {
    use seckill::model::exit_codes::{CHECK_ADMITTER, CHECK_DEAD_LETTERS, SUCCESS};
    let server = RedisServer::start();
    // A pre-queue room whose starts_at passed a minute ago: it admits nobody
    // until `queue admit` shuffles it.
    let file = bottle(10)
        .starts_in(-60)
        .room("{ mode: rate, admit_rate: 10/s, prequeue: true }")
        .write();
    preheat(&file, &server);
    let s = status_json(&file, &server);
    assert_eq!(
        s["room"]["needs_admitter"],
        serde_json::json!(["prequeue_shuffle"])
    );
    assert!(
        s["room"]["admitter_behind_ms"].as_i64().unwrap() >= 59_000,
        "{s}"
    );
    let text = status_text(&file, &server);
    assert!(
        text.contains("admitter `seckill queue admit --loop` must run: the pre-queue's shuffle"),
        "{text}"
    );
    assert!(
        text.contains("LATE: the pre-queue (0 joined) is not shuffled"),
        "{text}"
    );
    let ran = check(&file, &server, &[], CHECK_ADMITTER).stdout();
    assert!(
        ran.starts_with(
            "1: the waiting room needs `seckill queue admit --loop` and its work is late"
        ),
        "{ran}"
    );
    let metrics = utf8(
        &seckill(&["status", "--format", "prometheus"])
            .campaign(&file)
            .redis(&server)
            .succeeds(),
    );
    promtool_check(&metrics);
    let labels = "{campaign=\"c\",item=\"1\"}";
    assert_eq!(
        sample(&metrics, &format!("seckill_room_needs_admitter{labels}")),
        1.0
    );
    assert!(
        sample(
            &metrics,
            &format!("seckill_room_admitter_behind_seconds{labels}")
        ) >= 59.0
    );
    // The admitter's pass shuffles it: nothing is late, nothing more is needed.
    seckill(&["queue", "admit"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let s = status_json(&file, &server);
    assert_eq!(s["room"]["needs_admitter"], serde_json::json!([]), "{s}");
    assert_eq!(s["room"]["admitter_behind_ms"], 0, "{s}");
    check(&file, &server, &[], SUCCESS);

    // A bucketed rate room: admissions decided by the clock wait for the
    // fan-out to reach the buckets.
    let _: () = redis::cmd("FLUSHALL").query(&mut server.conn()).unwrap();
    let file = campaign("c")
        .item("1", 40)
        .buckets(2)
        .room("{ mode: rate, admit_rate: 10/s }")
        .write();
    preheat(&file, &server);
    for user in 0..30 {
        seckill(&[
            "queue",
            "join",
            "--item",
            "1",
            "--user",
            &format!("q{user}"),
        ])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    }
    let behind = || {
        status_json(&file, &server)["room"]["admitter_behind_ms"]
            .as_i64()
            .unwrap()
    };
    wait_until("the clock admitted all 30", || behind() >= 2_900);
    let ran = check(&file, &server, &["--grace", "1s"], CHECK_ADMITTER).stdout();
    assert!(
        ran.contains("admitted position(s) not carried to their buckets"),
        "{ran}"
    );
    seckill(&["queue", "admit"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    assert_eq!(behind(), 0);
    check(&file, &server, &["--grace", "1s"], SUCCESS);

    // Dead letters: orders the database never took.
    let _: () = redis::cmd("FLUSHALL").query(&mut server.conn()).unwrap();
    let file = bottle(10).write();
    preheat(&file, &server);
    buy_many(&server, &file, "1", "u", 2);
    let keys = seckill::model::keys::ItemKeys::live("c", "1");
    let _: String = redis::cmd("XADD")
        .arg(&keys.dead)
        .arg("*")
        .arg("order_id")
        .arg("x")
        .query(&mut server.conn())
        .unwrap();
    let text = check(&file, &server, &[], CHECK_DEAD_LETTERS).stdout();
    assert_eq!(
        text,
        "1: 1 order entry in the dead-letter stream, not in the order database: `seckill dead-letter list` says why; fix it, then `seckill dead-letter redrive`\n"
    );
}

/// `--nagios`: Nagios' 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN, a status line
/// with performance data, one line per problem; whatever keeps the check
/// from reading the sale is UNKNOWN, never a state of the sale.
#[test]
fn status_nagios_speaks_the_plugin_format_and_its_four_codes() {
    let server = RedisServer::start();
    let file = bottle(50).item("2", 5).payment_timeout("1s").write();
    let nagios = |extra: &[&str]| {
        seckill(&["status", "--nagios"])
            .args(extra)
            .campaign(&file)
            .redis(&server)
            .runs()
    };
    let ran = nagios(&[]);
    assert_eq!(ran.code(), 2, "{}", ran.describe());
    assert!(
        ran.stdout()
            .starts_with("SECKILL CRITICAL - campaign c: 2 problems; 1: not preheated"),
        "{}",
        ran.stdout()
    );

    preheat(&file, &server);
    // OK, with performance data; -q does not silence a plugin.
    let ran = nagios(&["--max-lag", "100", "-q"]);
    assert_eq!(ran.code(), 0, "{}", ran.describe());
    let out = ran.stdout();
    assert_eq!(out.lines().count(), 1, "{out}");
    let (status, perf) = out.trim_end().split_once(" | ").unwrap();
    assert_eq!(
        status,
        "SECKILL OK - 2 item(s) of campaign c: no problem found"
    );
    for datum in [
        "'left_1'=50;;;0;50",
        "'lag_1'=0;100;;0",
        "'pending_1'=0;100;;0",
        "'dead_1'=0;0;;0",
        "'overdue_1'=0;;;0",
        "'left_2'=5;;;0;5",
    ] {
        assert!(perf.split(' ').any(|d| d == datum), "{datum} not in {perf}");
    }

    // WARNING: a kill switch someone turned on, a consumer behind.
    seckill(&["shutdown-switch", "on", "--item", "2", "--by", "alice"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    reserve(&file, &server, &["a", "b", "c"]);
    let ran = nagios(&["--max-lag", "1"]);
    assert_eq!(ran.code(), 1, "{}", ran.describe());
    let out = ran.stdout();
    assert!(
        out.starts_with("SECKILL WARNING - campaign c: 2 problems; "),
        "{out}"
    );
    assert!(out.contains("'lag_1'=3;1;;0"), "{out}");
    assert!(
        out.lines().skip(1).collect::<Vec<_>>()
            == [
                "WARNING 1: consumer behind: lag 3, pending 0 (more than --max-lag 1); the group has no consumer",
                "WARNING 2: kill switch ON: every buy is refused (set by alice)",
            ],
        "{out}"
    );
    // CRITICAL leads when there is one: reservations overdue.
    std::thread::sleep(Duration::from_millis(2500));
    let ran = nagios(&["--max-lag", "1", "--grace", "1s"]);
    assert_eq!(ran.code(), 2, "{}", ran.describe());
    assert!(
        ran.stdout()
            .starts_with("SECKILL CRITICAL - campaign c: 3 problems; 1: 3 reservation(s) past"),
        "{}",
        ran.stdout()
    );

    // UNKNOWN: Redis cannot be read, an unknown item, a format Nagios cannot read.
    let down = seckill(&["status", "--nagios", "--connect-timeout", "1s"])
        .campaign(&file)
        .redis_url(&format!("redis://127.0.0.1:{}/0", free_port()))
        .runs();
    assert_eq!(down.code(), 3, "{}", down.describe());
    assert!(
        down.stdout()
            .starts_with("SECKILL UNKNOWN - cannot check: cannot connect to Redis"),
        "{}",
        down.stdout()
    );
    for extra in [&["--item", "nope"][..], &["--format", "json"]] {
        let ran = nagios(extra);
        assert_eq!(ran.code(), 3, "{}", ran.describe());
        assert!(
            ran.stdout().starts_with("SECKILL UNKNOWN - "),
            "{}",
            ran.stdout()
        );
    }
    // --grace and the thresholds belong to the probes.
    seckill(&["status", "--grace", "1s"])
        .campaign(&file)
        .redis(&server)
        .fails_with(USAGE_ERROR);
}

/// `--reconcile-at HH:MM` is the next such time on this machine's clock and
/// time zone — as cron reads its crontab — whatever the zone: a time an hour
/// away in Shanghai's zone is before keys that expire in two hours, and
/// the same HH:MM read in UTC would be nine hours away, after them.
#[test]
fn status_check_reads_reconcile_at_as_local_time_like_cron() {
    use seckill::model::exit_codes::{CHECK_EXPIRY, SUCCESS};
    let server = RedisServer::start();
    // Keys expire at ends_at + keep_after_end: 2 h from now.
    let file = bottle(5).ends_in(3600).keep_after_end("1h").write();
    preheat(&file, &server);
    let shanghai_in_an_hour = (chrono::Utc::now() + chrono::Duration::hours(9))
        .format("%H:%M")
        .to_string();
    let at = |tz: &str, code: i32| {
        seckill(&["status", "--check", "--reconcile-at", &shanghai_in_an_hour])
            .campaign(&file)
            .redis(&server)
            .env("TZ", tz)
            .fails_with(code)
    };
    at("Asia/Shanghai", SUCCESS);
    let late = at("UTC", CHECK_EXPIRY).stdout();
    assert!(late.contains("before the reconcile at "), "{late}");
    // The reconcile time is said in the zone it was read in.
    let text = at("Etc/GMT-14", CHECK_EXPIRY).stdout();
    assert!(text.contains(" +14:00:"), "{text}");
}

/// A room that needs an admitter and has heard from none for a while is
/// late by that silence: `status` says so, `--check` fails, whatever work
/// Redis shows (a max_active room's free places leave none).
#[test]
fn status_check_finds_an_admitter_whose_heartbeat_stopped() {
    use seckill::model::exit_codes::CHECK_ADMITTER;
    let server = RedisServer::start();
    let file = bottle(10)
        .room("{ mode: max_active, max_active: 5 }")
        .write();
    preheat(&file, &server);
    seckill(&["queue", "admit"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let s = status_json(&file, &server);
    assert_eq!(s["room"]["admitter_behind_ms"], 0, "a pass just ran: {s}");
    // The last pass a minute ago: the admitter stopped.
    let now: (i64, i64) = redis::cmd("TIME").query(&mut server.conn()).unwrap();
    let minute_ago = now.0 * 1000 - 60_000;
    let _: i64 = redis::cmd("HSET")
        .arg("seckill:{c:1}:room")
        .arg("admitter_at_ms")
        .arg(minute_ago)
        .query(&mut server.conn())
        .unwrap();
    let s = status_json(&file, &server);
    assert!(
        s["room"]["admitter_behind_ms"].as_i64().unwrap() >= 59_000,
        "{s}"
    );
    let ran = check(&file, &server, &[], CHECK_ADMITTER).stdout();
    assert!(ran.contains("none has run for"), "{ran}");
}
