//! The HTTP door as one layer: what every request kind shares (in-flight
//! counting, failure answers) is done once, so no endpoint can forget it.
//! Each test here failed while the handlers did it one by one.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::http;
use crate::support::serve::Serve;
use crate::support::spec::{campaign, seckill};
use crate::support::{Frozen, RedisServer};

/// `seckill_serve_in_flight` (campaign label) as `/metrics` shows it.
fn in_flight(serve: &Serve) -> u64 {
    http::get(serve.addr, "/metrics")
        .body
        .lines()
        .find(|l| l.starts_with("seckill_serve_in_flight{"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse::<f64>().ok())
        .map_or(0, |v| v as u64)
}

/// Send `request` while Redis is frozen and wait until `/metrics` shows it in flight.
fn seen_in_flight(serve: &Serve, request: impl FnOnce() + Send + 'static) -> bool {
    let waiting = std::thread::spawn(request);
    let deadline = Instant::now() + Duration::from_secs(4);
    let mut seen = false;
    while Instant::now() < deadline && !seen {
        seen = in_flight(serve) >= 1;
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(waiting);
    seen
}

#[test]
fn every_request_kind_is_counted_in_flight() {
    let server = RedisServer::start();
    let file = campaign("inf")
        .item("1", 5)
        .item("room", 5)
        .room("{ mode: rate, admit_rate: 100/s }")
        .write();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let serve = Serve::start(&file, &server.url(), false, &["--recheck", "1h"]);
    let addr = serve.addr;
    type Request = Box<dyn FnOnce() + Send>;
    let requests: Vec<(&str, Request)> = vec![
        (
            "order lookup",
            Box::new(move || {
                let _ = http::send(addr, "GET", "/v1/items/1/orders/u1", &[], b"");
            }),
        ),
        (
            "queue read",
            Box::new(move || {
                let _ = http::send(addr, "GET", "/v1/items/room/queue/u1", &[], b"");
            }),
        ),
        (
            "queue join",
            Box::new(move || {
                let _ = http::send(
                    addr,
                    "POST",
                    "/v1/items/room/queue",
                    &[("Content-Type", "application/json")],
                    json!({"user": "u1"}).to_string().as_bytes(),
                );
            }),
        ),
    ];
    for (kind, request) in requests {
        let frozen = Frozen::new(&mut server.conn());
        let seen = seen_in_flight(&serve, request);
        drop(frozen);
        assert!(
            seen,
            "a {kind} held by a frozen Redis never showed in seckill_serve_in_flight"
        );
        let deadline = Instant::now() + Duration::from_secs(10);
        while in_flight(&serve) > 0 {
            assert!(
                Instant::now() < deadline,
                "the {kind} never left the in-flight count"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
fn a_failed_queue_join_never_mentions_a_request_id() {
    let server = RedisServer::start();
    let file = campaign("qf")
        .item("room", 5)
        .room("{ mode: rate, admit_rate: 100/s }")
        .write();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let serve = Serve::start(&file, &server.url(), false, &["--recheck", "1h"]);
    let frozen = Frozen::new(&mut server.conn());
    let join = http::post(serve.addr, "/v1/items/room/queue", &json!({"user": "u1"}));
    let read = http::get(serve.addr, "/v1/items/room/queue/u1");
    drop(frozen);
    for (what, answer) in [("join", &join), ("read", &read)] {
        assert!(
            answer.status >= 500,
            "{what}: {} {}",
            answer.status,
            answer.body
        );
        let text = answer.body.to_lowercase();
        assert!(
            !text.contains("request_id") && !text.contains("request id"),
            "a failed queue {what} names a request id it never had: {}",
            answer.body
        );
        assert!(
            answer.json()["error"]["kind"].is_string(),
            "{what}: {}",
            answer.body
        );
    }
}

#[test]
fn operator_pay_and_cancel_refused_for_permissions_are_not_executed() {
    let server = RedisServer::start();
    let file = campaign("perm").payment_timeout("10m").item("1", 3).write();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    // A credential that may pay when serve starts (serve refuses to start
    // with one that may not: tests/it/credentials.rs) ...
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("shopfront")
        .arg("on")
        .arg(">shopfront-pw")
        .arg("+@all")
        .arg("~*")
        .query(&mut server.conn())
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "operator-token-0123456789\n").unwrap();
    let url = format!("redis://shopfront:shopfront-pw@127.0.0.1:{}/0", server.port);
    let serve = Serve::start(
        &file,
        &url,
        false,
        &["--operator-token-file", token.to_str().unwrap()],
    );
    // ... and is then narrowed under it: the item's state, not its reservations.
    let base = "seckill:{perm:1}:";
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("shopfront")
        .arg("resetkeys")
        .arg(format!("~{base}meta"))
        .arg(format!("~{base}stock"))
        .arg(format!("~{base}buyers"))
        .arg(format!("~{base}orders"))
        .query(&mut server.conn())
        .unwrap();
    for action in ["pay", "cancel"] {
        let answer = http::send(
            serve.addr,
            "POST",
            &format!("/v1/orders/01ANYORDER0000000000000000/{action}"),
            &[
                ("Content-Type", "application/json"),
                ("Authorization", "Bearer operator-token-0123456789"),
            ],
            b"{}",
        )
        .unwrap();
        assert_eq!(
            (answer.status, answer.json()["error"]["kind"].as_str()),
            (503, Some("not_executed")),
            "{action} refused for permissions: {}",
            answer.body
        );
    }
}

/// A connection that sent its headers and one byte of a longer body.
fn slow_body(addr: std::net::SocketAddr, path: &str, headers: &str) -> std::net::TcpStream {
    use std::io::Write;
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{headers}Content-Length: 100\r\n\r\n{{"
    )
    .unwrap();
    stream.flush().unwrap();
    stream
}

/// Clients that send their body slowly take no place under --max-in-flight:
/// a place is taken once the body is whole.
#[test]
fn slow_bodies_do_not_take_the_places_of_whole_requests() {
    let server = RedisServer::start();
    let file = campaign("slow").item("1", 5).write();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let serve = Serve::start(
        &file,
        &server.url(),
        false,
        &["--max-in-flight", "8", "--body-timeout", "30s"],
    );
    let held: Vec<_> = (0..8)
        .map(|_| slow_body(serve.addr, "/v1/items/1/buy", ""))
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let whole = http::buy(serve.addr, "1", "whole", "w");
    assert_eq!(
        (whole.status, whole.json()["outcome"].as_str()),
        (200, Some("ok")),
        "a whole request behind 8 slow bodies: {}",
        whole.body
    );
    drop(held);
}

/// Without the token the operator endpoints answer at once, whatever the
/// body is doing: the token is checked before the body is read.
#[test]
fn the_operator_token_is_checked_before_the_body_is_read() {
    let server = RedisServer::start();
    let file = campaign("tok").payment_timeout("10m").item("1", 5).write();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "operator-token-0123456789\n").unwrap();
    let with_token = Serve::start(
        &file,
        &server.url(),
        false,
        &[
            "--operator-token-file",
            token.to_str().unwrap(),
            "--body-timeout",
            "60s",
        ],
    );
    let without_token = Serve::start(&file, &server.url(), false, &["--body-timeout", "60s"]);
    for (serve, headers, status) in [
        (
            &with_token,
            "Authorization: Bearer wrong-token-0000000000\r\n",
            401,
        ),
        (&without_token, "", 404),
    ] {
        use std::io::Read;
        let mut stream = slow_body(serve.addr, "/v1/orders/01ANY/cancel", headers);
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut answer = [0u8; 64];
        let n = stream
            .read(&mut answer)
            .expect("an answer before the body is complete");
        let head = String::from_utf8_lossy(&answer[..n]).to_string();
        assert!(
            head.starts_with(&format!("HTTP/1.1 {status}")),
            "expected {status} at once: {head}"
        );
    }
}

/// The CPU time of process `pid` (user + system), from /proc.
fn cpu_of(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

/// Out of file descriptors, serve waits for one to free up instead of
/// spinning on accept.
#[test]
fn out_of_file_descriptors_serve_waits_instead_of_spinning() {
    use std::process::{Command, Stdio};
    let server = RedisServer::start();
    let file = campaign("fds").item("1", 5).write();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let port = crate::support::free_port();
    let binary = assert_cmd::cargo::cargo_bin("seckill");
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -n 96 && exec {} -c {} --redis {} serve --listen 127.0.0.1:{port} --workers 2",
            binary.display(),
            file.path.display(),
            server.url()
        ))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "serve did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    let idle: Vec<_> = (0..140)
        .filter_map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).ok())
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let before = cpu_of(child.id());
    std::thread::sleep(Duration::from_secs(2));
    let spent = cpu_of(child.id()) - before;
    drop(idle);
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        spent < Duration::from_millis(500),
        "serve spent {spent:?} of CPU in 2 s with its descriptors used up"
    );
}

/// Before the sale opens, a buy says when it opens and when to come back.
#[test]
fn not_started_says_when_the_sale_opens() {
    let server = RedisServer::start();
    let file = campaign("soon").starts_in(120).item("1", 5).write();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let serve = Serve::start(&file, &server.url(), false, &["--recheck", "1h"]);
    for round in ["from Redis", "from memory"] {
        let answer = http::buy(serve.addr, "1", "early", "e");
        assert_eq!(answer.status, 425, "{round}: {}", answer.body);
        let opens = answer.json()["opens_at_ms"].as_i64().expect("opens_at_ms");
        let now = chrono::Utc::now().timestamp_millis();
        assert!(
            (now + 100_000..=now + 125_000).contains(&opens),
            "{round}: opens at {opens}, now {now}"
        );
        let retry: u64 = answer
            .header("Retry-After")
            .and_then(|v| v.parse().ok())
            .expect("Retry-After");
        assert!((100..=125).contains(&retry), "{round}: Retry-After {retry}");
    }
    let cli = seckill(&["--format", "json", "buy", "--item", "1", "--user", "early2"])
        .campaign(&file)
        .redis(&server)
        .fails_with(seckill::model::exit_codes::NOT_STARTED)
        .json();
    assert!(cli["opens_at"].is_string(), "{cli}");
}
