//! The long-running commands as services: `/healthz` and `/metrics` at
//! `--metrics-listen` (`:PORT` or `HOST:PORT`), stable consumer names that
//! resume their own pending entries, idle consumers deleted, loop intervals
//! of at least 100 ms, every loop stopping at once on SIGTERM with exit 0,
//! even when the signal interrupts a Redis call (EINTR), every loop waiting
//! out a Redis stall (SIGSTOP) with timestamped retry lines, and ending at
//! once on a refusal no wait can fix (credentials).

use std::time::Duration;

use crate::status::{http_get, promtool_check, sample};
use crate::support::mariadb::MariaDb;
use crate::support::orders::{Background, buy_many, log_of, spawn_seckill, terminate, wait_until};
use crate::support::spec::{campaign, seckill};
use crate::support::{CampaignFile, Frozen, RedisServer, free_port, preheat};
use seckill::model::exit_codes::{RUNTIME_ERROR, SUCCESS, USAGE_ERROR};
use seckill::model::keys::ItemKeys;

/// A preheated campaign every loop has work in: reservations, a bucketed
/// item behind a waiting room.
fn loops_sale(server: &RedisServer) -> CampaignFile {
    let file = campaign("svc")
        .payment_timeout("1m")
        .item("1", 40)
        .buckets(4)
        .room("{ mode: rate, admit_rate: 100/s }")
        .write();
    preheat(&file, server);
    file
}

/// GET `path` until it answers (the service is starting).
fn get(port: u16, path: &str) -> (String, String) {
    let mut answer = None;
    wait_until(&format!("http://127.0.0.1:{port}{path} answers"), || {
        answer = http_get(port, path).ok();
        answer.is_some()
    });
    let (status, _, body) = answer.unwrap();
    (status, body)
}

#[test]
fn consume_is_healthy_while_redis_and_the_database_answer() {
    let mut db = MariaDb::start();
    let server = RedisServer::start();
    let file = campaign("svc").item("1", 50).write();
    preheat(&file, &server);
    buy_many(&server, &file, "1", "u", 3);
    let port = free_port();
    // node_exporter's way: `:PORT` is every interface, loopback included.
    let listen = format!(":{port}");
    let mut consumer = spawn_seckill(
        &file,
        &server.url(),
        &[],
        &[
            "consume",
            "--orders-db",
            &db.url(),
            "--metrics-listen",
            &listen,
        ],
        "consume",
    );
    let (status, body) = get(port, "/healthz");
    assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
    // serve's shape: one probe config reads every seckill process.
    let health: serde_json::Value = serde_json::from_str(&body).expect("/healthz is JSON");
    assert_eq!(health["status"], "ok", "{body}");
    let said = health["message"].as_str().unwrap_or_default();
    assert!(
        said.starts_with("Redis at 127.0.0.1:") && said.contains("; database mysql://"),
        "{body}"
    );
    let mut metrics = String::new();
    wait_until("the three orders stored", || {
        metrics = get(port, "/metrics").1;
        metrics.contains("seckill_orders_stored_total{campaign=\"svc\",item=\"1\"} 3\n")
    });
    promtool_check(&metrics);
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        metrics.contains(&format!(
            "seckill_build_info{{version=\"{version}\",commit=\""
        )),
        "{metrics}"
    );
    assert_eq!(
        sample(&metrics, "seckill_database_up{campaign=\"svc\"}"),
        1.0
    );
    assert_eq!(sample(&metrics, "seckill_redis_up{campaign=\"svc\"}"), 1.0);
    let last = sample(
        &metrics,
        "seckill_last_success_timestamp_seconds{campaign=\"svc\",command=\"consume\"}",
    );
    let now = chrono::Utc::now().timestamp() as f64;
    assert!((now - 60.0..=now + 1.0).contains(&last), "{last} vs {now}");

    db.stop();
    let (status, body) = get(port, "/healthz");
    assert_eq!(status, "HTTP/1.1 503 Service Unavailable", "{body}");
    let health: serde_json::Value = serde_json::from_str(&body).expect("/healthz is JSON");
    assert_eq!(health["error"]["kind"], "database_unreachable", "{body}");
    let why = health["error"]["message"].as_str().unwrap_or_default();
    assert!(why.starts_with("database mysql://"), "{body}");
    assert_eq!(
        sample(
            &get(port, "/metrics").1,
            "seckill_database_up{campaign=\"svc\"}"
        ),
        0.0
    );
    db.restart();
    wait_until("healthy again once the database is back", || {
        http_get(port, "/healthz").is_ok_and(|(status, _, _)| status == "HTTP/1.1 200 OK")
    });

    drop(server);
    let (status, body) = get(port, "/healthz");
    assert_eq!(status, "HTTP/1.1 503 Service Unavailable", "{body}");
    let health: serde_json::Value = serde_json::from_str(&body).expect("/healthz is JSON");
    assert_eq!(health["error"]["kind"], "redis_unreachable", "{body}");
    let why = health["error"]["message"].as_str().unwrap_or_default();
    assert!(why.starts_with("Redis at 127.0.0.1:"), "{body}");
    assert_eq!(
        sample(
            &get(port, "/metrics").1,
            "seckill_redis_up{campaign=\"svc\"}"
        ),
        0.0
    );
    let _ = consumer.kill();
}

#[test]
fn expire_and_rebalance_serve_their_metrics_and_health() {
    let server = RedisServer::start();
    let file = campaign("svc")
        .payment_timeout("1s")
        .item("1", 10)
        .item("2", 40)
        .buckets(4)
        .room("{ mode: rate, admit_rate: 100/s }")
        .write();
    preheat(&file, &server);
    for (command, host, name) in [
        (
            &["expire", "--loop", "--interval", "100ms"][..],
            "127.0.0.1",
            "expire",
        ),
        (
            &["rebalance", "--watch", "--interval", "100ms"][..],
            "localhost",
            "rebalance",
        ),
        (
            &["queue", "admit", "--loop", "--interval", "100ms"][..],
            "127.0.0.1",
            "queue_admit",
        ),
    ] {
        let port = free_port();
        let listen = format!("{host}:{port}");
        let mut args = command.to_vec();
        args.extend(["--metrics-listen", &listen]);
        let mut service = spawn_seckill(&file, &server.url(), &[], &args, name);
        let series = format!(
            "seckill_last_success_timestamp_seconds{{campaign=\"svc\",command=\"{name}\"}}"
        );
        let mut first = 0.0;
        wait_until("a first pass", || {
            let text = get(port, "/metrics").1;
            if text.lines().any(|l| l.starts_with(&series)) {
                first = sample(&text, &series);
            }
            first > 0.0
        });
        wait_until("passes go on", || {
            sample(&get(port, "/metrics").1, &series) > first
        });
        let text = get(port, "/metrics").1;
        promtool_check(&text);
        assert!(text.contains("seckill_build_info{"), "{text}");
        assert_eq!(sample(&text, "seckill_redis_up{campaign=\"svc\"}"), 1.0);
        let (status, body) = get(port, "/healthz");
        assert_eq!(status, "HTTP/1.1 200 OK", "{name}: {body}");
        let health: serde_json::Value = serde_json::from_str(&body).expect("/healthz is JSON");
        assert_eq!(health["status"], "ok", "{name}: {body}");
        terminate(&service);
        assert!(
            crate::support::orders::wait_exit(&mut service).success(),
            "{name}"
        );
    }
    // The endpoints belong to the loops.
    for args in [
        &["expire", "--metrics-listen", ":0"][..],
        &["rebalance", "--metrics-listen", ":0"],
        &["queue", "admit", "--metrics-listen", ":0"],
        &["consume", "--metrics-listen", "9464"],
    ] {
        seckill(args)
            .campaign(&file)
            .redis(&server)
            .fails_with(USAGE_ERROR);
    }
}

#[test]
fn loop_intervals_below_100ms_are_refused_not_busy_looped() {
    let server = RedisServer::start();
    let file = loops_sale(&server);
    for args in [
        &["expire", "--loop", "--interval", "0s"][..],
        &["expire", "--loop", "--interval", "1ms"],
        &["rebalance", "--watch", "--interval", "0s"],
        &["rebalance", "--watch", "--interval", "1ns"],
        &["rebalance", "--watch", "--interval", "1ms"],
        &["status", "--watch", "0s"],
        &["queue", "admit", "--loop", "--interval", "0s"],
        &["queue", "admit", "--loop", "--interval", "99ms"],
    ] {
        let ran = seckill(args)
            .campaign(&file)
            .redis(&server)
            .within(Duration::from_secs(20))
            .fails_with(USAGE_ERROR);
        assert!(
            ran.stderr().contains("at least 100ms"),
            "{args:?}: {}",
            ran.stderr()
        );
    }
}

/// Start `args` in the background (logs beside the campaign file, named
/// after the command) and wait until its stderr shows `ready`.
fn started(file: &CampaignFile, server: &RedisServer, args: &[&str], ready: &str) -> Background {
    let mut running = spawn_seckill(file, &server.url(), &[], args, args[0]);
    wait_until(&format!("{args:?} shows {ready:?}"), || {
        log_of(file, args[0]).contains(ready) || running.try_wait().unwrap().is_some()
    });
    running
}

/// Wait for `child` to exit; it must do so within `limit` (a hang fails the test).
fn exit_within(child: &mut Background, limit: Duration) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("still running {limit:?} after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn every_loop_stops_at_once_on_sigterm_with_exit_0() {
    let server = RedisServer::start();
    let file = loops_sale(&server);
    // An hour between passes: before, rebalance slept it out whatever the signal.
    for (args, ready) in [
        (&["rebalance", "--watch", "--interval", "1h"][..], ""),
        (&["expire", "--loop", "--interval", "1h"], "until stopped"),
        (
            &["queue", "admit", "--loop", "--interval", "1h"],
            "until SIGTERM",
        ),
        (&["status", "--watch", "1h"], ""),
        (&["consume"], "is new in the group"),
    ] {
        let mut running = started(&file, &server, args, ready);
        std::thread::sleep(Duration::from_millis(300));
        terminate(&running);
        let status = exit_within(&mut running, Duration::from_secs(10));
        assert!(
            status.success(),
            "{args:?}: {status:?}\n{}",
            log_of(&file, args[0])
        );
    }
}

#[test]
fn a_signal_that_interrupts_a_redis_call_is_retried_not_a_failure() {
    let server = RedisServer::start();
    let file = loops_sale(&server);
    for args in [
        &["rebalance", "--watch", "--interval", "100ms"][..],
        &["expire", "--loop", "--interval", "100ms"],
        &["queue", "admit", "--loop", "--interval", "100ms"],
        &["consume"],
    ] {
        let mut running = started(&file, &server, args, "");
        std::thread::sleep(Duration::from_millis(500));
        // Redis frozen: the loop's next call waits in a read; SIGTERM cuts it (EINTR).
        let frozen = Frozen::new(&mut server.conn());
        std::thread::sleep(Duration::from_millis(400));
        terminate(&running);
        std::thread::sleep(Duration::from_millis(300));
        drop(frozen);
        let status = exit_within(&mut running, Duration::from_secs(30));
        let log = log_of(&file, args[0]);
        assert_eq!(status.code(), Some(SUCCESS), "{args:?}: {log}");
        assert!(!log.contains("Interrupted system call"), "{args:?}: {log}");
    }
}

/// `<RFC 3339 UTC> seckill <command>: ...`: the log line format of the loops.
fn timestamped(line: &str) -> bool {
    let Some((at, rest)) = line.split_once(' ') else {
        return false;
    };
    chrono::DateTime::parse_from_rfc3339(at).is_ok() && rest.starts_with("seckill ")
}

/// The last success `/metrics` at `port` reports for `command`, Unix s (0: none yet).
fn last_success(port: u16, command: &str) -> f64 {
    let series =
        format!("seckill_last_success_timestamp_seconds{{campaign=\"svc\",command=\"{command}\"}}");
    let text = get(port, "/metrics").1;
    if text.lines().any(|l| l.starts_with(&series)) {
        sample(&text, &series)
    } else {
        0.0
    }
}

#[test]
fn every_loop_waits_out_a_redis_stall_and_ends_at_once_on_a_refused_credential() {
    let server = RedisServer::start();
    let file = loops_sale(&server);
    // Timeouts shorter than the stall, so the stall meets every step:
    // calls in flight, reconnects, the first call on a new connection.
    let patience = ["--response-timeout", "1s", "--connect-timeout", "1s"];
    let loops = [
        (&["expire", "--loop", "--interval", "100ms"][..], "expire"),
        (
            &["queue", "admit", "--loop", "--interval", "100ms"],
            "queue_admit",
        ),
    ];
    let mut running = Vec::new();
    for (args, command) in loops {
        let port = free_port();
        let listen = format!("127.0.0.1:{port}");
        let mut all = patience.to_vec();
        all.extend(args);
        all.extend(["--metrics-listen", &listen]);
        let child = spawn_seckill(&file, &server.url(), &[], &all, command);
        wait_until(&format!("{command}: a first pass"), || {
            last_success(port, command) > 0.0
        });
        running.push((child, command, port));
    }
    // Four seconds of a frozen Redis.
    let frozen = Frozen::new(&mut server.conn());
    std::thread::sleep(Duration::from_secs(4));
    drop(frozen);
    let thawed = chrono::Utc::now().timestamp_millis() as f64 / 1000.0;
    for (child, command, port) in &mut running {
        wait_until(&format!("{command}: passes go on after the stall"), || {
            last_success(*port, command) > thawed
        });
        assert!(child.try_wait().unwrap().is_none(), "{command} exited");
        let log = log_of(&file, command);
        let retries: Vec<&str> = log.lines().filter(|l| l.contains("retrying in")).collect();
        assert!(!retries.is_empty(), "{command} never retried: {log}");
        assert!(retries.iter().all(|l| timestamped(l)), "{log}");
        assert!(log.contains("succeeded after"), "{log}");
    }
    // A password now, and every connection cut: no wait can fix that.
    let mut conn = server.conn();
    let () = redis::cmd("CONFIG")
        .arg(&["SET", "requirepass", "s3cret"])
        .query(&mut conn)
        .unwrap();
    let _: i64 = redis::cmd("CLIENT")
        .arg(&["KILL", "TYPE", "normal", "SKIPME", "yes"])
        .query(&mut conn)
        .unwrap();
    for (child, command, _) in &mut running {
        let status = exit_within(child, Duration::from_secs(30));
        let log = log_of(&file, command);
        assert_eq!(status.code(), Some(RUNTIME_ERROR), "{command}: {log}");
        let stopping = log
            .lines()
            .find(|l| l.contains("stopping:"))
            .unwrap_or_else(|| panic!("{command}: {log}"));
        assert!(timestamped(stopping), "{stopping}");
        assert!(
            stopping.contains("NOAUTH") || stopping.contains("uthentication"),
            "{stopping}"
        );
    }
}

#[test]
fn a_consumer_started_under_its_old_name_stores_its_pending_entries_first() {
    let server = RedisServer::start();
    let file = campaign("svc").item("1", 50).write();
    preheat(&file, &server);
    buy_many(&server, &file, "1", "a", 5);
    // worker-1 read three entries and died before storing them.
    let keys = ItemKeys::live("svc", "1");
    seckill::domain::orders::stream::read_group(
        &mut server.conn(),
        "worker-1",
        &[(&keys.orders, ">")],
        3,
        None,
    )
    .unwrap();
    let pending = |consumer: &str| -> i64 {
        let reply: redis::streams::StreamPendingCountReply = redis::cmd("XPENDING")
            .arg(&keys.orders)
            .arg("orders-db")
            .arg("-")
            .arg("+")
            .arg(100)
            .arg(consumer)
            .query(&mut server.conn())
            .unwrap();
        reply.ids.len() as i64
    };
    let drain = |consumer: &str| {
        seckill(&["consume", "--drain", "--consumer", consumer])
            .campaign(&file)
            .redis(&server)
            .json()
            .within(Duration::from_secs(60))
            .succeeds()
    };
    // Another name takes the two never delivered, not worker-1's three.
    let other = drain("worker-2");
    assert_eq!(other.json()["acked"], 2);
    assert_eq!(pending("worker-1"), 3);
    buy_many(&server, &file, "1", "b", 2);
    let resumed = drain("worker-1");
    assert!(
        resumed
            .stderr()
            .contains("consumer worker-1 resumes its 3 pending entries first"),
        "{}",
        resumed.stderr()
    );
    assert_eq!(resumed.json()["acked"], 5);
    assert_eq!(pending("worker-1"), 0);

    // Without --consumer the name is the host's, the same run after run: no pile-up.
    let first = seckill(&["consume", "--drain"])
        .campaign(&file)
        .redis(&server)
        .json()
        .succeeds();
    let second = seckill(&["consume", "--drain"])
        .campaign(&file)
        .redis(&server)
        .json()
        .succeeds();
    assert_eq!(first.json()["consumer"], second.json()["consumer"]);
    let status = seckill(&["status"])
        .campaign(&file)
        .redis(&server)
        .json()
        .succeeds()
        .json();
    let names: Vec<&str> = status["items"][0]["consumers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
}

#[test]
fn pending_claim_deletes_idle_empty_consumers_and_never_one_holding_entries() {
    let server = RedisServer::start();
    let file = campaign("svc").item("1", 50).buckets(2).write();
    preheat(&file, &server);
    let streams = seckill::model::layout::Layout::new("seckill", "svc", "1", 2);
    let mut conn = server.conn();
    for bucket in streams.all() {
        for name in ["gone-1", "gone-2"] {
            let _: i64 = redis::cmd("XGROUP")
                .arg(&["CREATECONSUMER", &bucket.keys.orders, "orders-db", name])
                .query(&mut conn)
                .unwrap();
        }
    }
    // holder read an order and still holds it.
    let user = "h";
    buy_many(&server, &file, "1", user, 1);
    let home = streams.home(&format!("{user}0")).keys.orders;
    seckill::domain::orders::stream::read_group(&mut conn, "holder", &[(&home, ">")], 1, None)
        .unwrap();
    std::thread::sleep(Duration::from_millis(1100));
    let ran = seckill(&[
        "pending-claim",
        "--min-idle",
        "1h",
        "--delete-consumers",
        "1s",
    ])
    .campaign(&file)
    .redis(&server)
    .json()
    .succeeds();
    let mut deleted: Vec<String> = ran.json()["items"][0]["consumers_deleted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect();
    deleted.sort();
    assert_eq!(deleted, ["gone-1", "gone-2"], "{}", ran.describe());
    // Even with no idle time asked for, the one holding an entry stays.
    let _: i64 = redis::cmd("XGROUP")
        .arg(&["CREATECONSUMER", &home, "orders-db", "gone-3"])
        .query(&mut conn)
        .unwrap();
    let text = seckill(&["pending-claim", "--min-idle", "1h"])
        .args(&["--delete-consumers", "0s"])
        .campaign(&file)
        .redis(&server)
        .succeeds()
        .stdout();
    assert!(
        text.contains("deleted 1 idle consumer(s) with nothing pending: gone-3"),
        "{text}"
    );
    let consumers: Vec<std::collections::HashMap<String, redis::Value>> = redis::cmd("XINFO")
        .arg(&["CONSUMERS", &home, "orders-db"])
        .query(&mut conn)
        .unwrap();
    let names: Vec<String> = consumers
        .iter()
        .map(|c| redis::from_redis_value_ref::<String>(&c["name"]).unwrap())
        .collect();
    assert_eq!(names, ["holder"], "the one holding an entry stays");
}
