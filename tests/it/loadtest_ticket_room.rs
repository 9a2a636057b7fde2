//! `seckill loadtest --target` through a ticket waiting room spread over two
//! `serve` instances (docs/loadtest.md, "Through a ticket room"): every
//! shopper joins one instance and polls and buys alternately at both, its
//! ticket in the `Seckill-Ticket` header. Real redis-server, real serve
//! processes; the books are read from Redis afterwards.

use crate::support::RedisServer;
use crate::support::serve::Serve;
use crate::support::spec::{campaign, seckill};

/// Two instances, 1,600 shoppers arriving at once (closed loop: each
/// connection one shopper), far faster than the room admits: exit 0, no `ok` without admission, the fairness and clock
/// figures reported, far less than one Redis call per join, and the stock
/// exact afterwards (sold + left = initial). Failed before `--target` took
/// several instances and before the ticket travelled with polls and buys
/// (every buy was `not_queued`).
#[test]
fn loadtest_through_a_ticket_room_on_two_instances() {
    let server = RedisServer::start();
    let stock = 20;
    let file = campaign("tk")
        .item("room", stock)
        .room("{ mode: ticket, admit_rate: 200/s, admission_ttl: 2m }")
        .write();
    let key = file.path.with_file_name("room.key");
    std::fs::write(
        &key,
        "Zm9yIHRoZSB0ZXN0cyBvbmx5OiBhIHJvb20ga2V5IG9mIDQ4IGJ5dGVzLCBub3Qgc2VjcmV0\n",
    )
    .unwrap();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let key_flag = ["--room-key-file", key.to_str().unwrap()];
    let first = Serve::start(&file, &server.url(), false, &key_flag);
    let second = Serve::start(&file, &server.url(), false, &key_flag);
    let targets = format!("http://{},http://{}", first.addr, second.addr);
    let report = seckill(&["loadtest", "--target", &targets, "--rehearsal"])
        .args(&["--item", "room", "--users", "1600", "--requests", "1600"])
        .args(&["--connections", "1600"])
        .campaign(&file)
        .redis(&server)
        .json()
        .succeeds()
        .json();
    let target = &report["target"];
    assert_eq!(target["targets"].as_array().unwrap().len(), 2, "{report}");
    assert_eq!(target["succeeded"], stock, "{report}");
    assert!(
        target["outcomes"]["not_queued"].is_null(),
        "every buy carried its ticket: {report}"
    );
    let room = &target["ticket_room"];
    assert_eq!(room["ok_without_admission"], 0, "{report}");
    let joins = room["joins"].as_u64().unwrap();
    assert!(joins > 100, "{report}");
    assert!(room["polls"].as_u64().unwrap() > 0, "{report}");
    assert!(room["buys"].as_u64().unwrap() >= stock as u64, "{report}");
    let tau = room["kendall_tau_b"].as_f64().unwrap();
    assert!((-1.0..=1.0).contains(&tau), "{report}");
    assert_eq!(room["admit_rate"], 200.0, "{report}");
    assert!(
        room["admit_rate_achieved"].as_f64().unwrap() > 0.0,
        "{report}"
    );
    assert!(room["wait_p99_ms"].as_f64().unwrap() >= room["wait_p50_ms"].as_f64().unwrap());
    // Both instances handed out tickets, and their clocks were measured.
    let instances = room["instances"].as_array().unwrap();
    assert_eq!(instances.len(), 2, "{report}");
    for instance in instances {
        assert!(instance["joins"].as_u64().unwrap() > 0, "{report}");
        assert!(instance["epsilon_ms"].as_f64().unwrap() >= 0.0, "{report}");
    }
    // Joins cost no Redis call: what the instances sent is their beats,
    // rechecks and the buys, far below one per join.
    let per_join = room["redis_calls_per_join"].as_f64().unwrap();
    assert!(per_join < 0.5, "{per_join} Redis calls per join: {report}");
    assert!(room["redis_commands"].as_u64().unwrap() > 0, "{report}");
    // The books: sold + left = initial.
    let sold: i64 = redis::cmd("HLEN")
        .arg("seckill:{tk:room}:buyers")
        .query(&mut server.conn())
        .unwrap();
    let left: i64 = redis::cmd("GET")
        .arg("seckill:{tk:room}:stock")
        .query(&mut server.conn())
        .unwrap();
    assert_eq!((sold, sold + left), (stock, stock), "{report}");
}
