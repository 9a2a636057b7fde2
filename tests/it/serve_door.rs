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
    // A credential that may read the item's state but not touch its reservations.
    let base = "seckill:{perm:1}:";
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("shopfront")
        .arg("on")
        .arg(">shopfront-pw")
        .arg("+@all")
        .arg(format!("~{base}meta"))
        .arg(format!("~{base}stock"))
        .arg(format!("~{base}buyers"))
        .arg(format!("~{base}orders"))
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
