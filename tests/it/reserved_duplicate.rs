//! A `duplicate` of a reserved order says the reservation it names (issue
//! 25, item 23): its state and deadline, over HTTP and on the command line,
//! so a shop can tell "pay the order you hold" from "you already bought".

use crate::support::RedisServer;
use crate::support::http;
use crate::support::serve::Serve;
use crate::support::spec::{campaign, seckill};

use seckill::model::exit_codes::DUPLICATE;

#[test]
fn a_duplicate_of_a_reserved_order_names_its_state_and_deadline() {
    let server = RedisServer::start();
    let file = campaign("dup").payment_timeout("5m").item("1", 5).write();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let serve = Serve::start(&file, &server.url(), false, &[]);

    let first = http::buy(serve.addr, "1", "alice", "r-1").json();
    assert_eq!(first["outcome"], "ok", "{first}");
    assert_eq!(first["reservation_state"], "reserved", "{first}");
    let again = http::buy(serve.addr, "1", "alice", "r-2");
    let again_json = again.json();
    assert_eq!(again_json["outcome"], "duplicate", "{}", again.body);
    assert_eq!(again_json["order_id"], first["order_id"], "{}", again.body);
    assert_eq!(
        again_json["reservation_state"], "reserved",
        "{}",
        again.body
    );
    assert_eq!(
        again_json["deadline_ms"], first["deadline_ms"],
        "{}",
        again.body
    );
    assert_eq!(again_json["deadline"], first["deadline"], "{}", again.body);

    // Paid, the duplicate says so; the command line answers the same.
    let order = first["order_id"].as_str().unwrap();
    seckill(&["pay", "--order", order])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let paid = http::buy(serve.addr, "1", "alice", "r-3").json();
    assert_eq!(paid["outcome"], "duplicate", "{paid}");
    assert_eq!(paid["reservation_state"], "paid", "{paid}");
    let cli = seckill(&["buy", "--item", "1", "--user", "alice"])
        .campaign(&file)
        .redis(&server)
        .json()
        .fails_with(DUPLICATE)
        .json();
    assert_eq!(cli["reservation_state"], "paid", "{cli}");
    assert_eq!(cli["order_id"], first["order_id"], "{cli}");
}
