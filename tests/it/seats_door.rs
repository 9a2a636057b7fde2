//! A seat item through both doors (docs/seats.md, "Buying"): `serve`
//! answers named and best-available buys with their seats and the statuses
//! the docs give, and one section's last seat is not the hall's — `serve`
//! never answers the other sections `sold_out` from memory.

use crate::support::http;
use crate::support::serve::Serve;
use crate::support::spec::seckill;
use crate::support::{RedisServer, campaign_file, preheat};

use seckill::model::exit_codes::{
    IDENTITY_REQUIRED, LIMIT_REACHED, NO_BLOCK, SEAT_TAKEN, USAGE_ERROR,
};

const HALL: &str = "campaign: hall
per_user_limit: 4
items:
  - id: hall-a
    name: Hall A
    seats:
      sections:
        - { id: A, rows: 1, seats_per_row: 2, tier: vip, price: \"1880\" }
        - { id: B, rows: 2, seats_per_row: 3, tier: standard, price: \"380\", blocked: [B-1-2] }
";

fn seat_buy(addr: std::net::SocketAddr, body: serde_json::Value) -> http::Answer {
    http::post(addr, "/v1/items/hall-a/buy", &body)
}

#[test]
fn serve_sells_seats_and_one_empty_section_is_not_a_sold_out_hall() {
    let server = RedisServer::start();
    let file = campaign_file(HALL);
    preheat(&file, &server);
    let serve = Serve::start(&file, &server.url(), false, &[]);

    // Section A's two seats, named: the answer names them.
    let named = seat_buy(
        serve.addr,
        serde_json::json!({"user": "u1", "seats": ["A-1-1", "A-1-2"], "request_id": "r1"}),
    );
    let json = named.json();
    assert_eq!(named.status, 200, "{}", named.body);
    assert_eq!(
        json["seats"],
        serde_json::json!(["A-1-1", "A-1-2"]),
        "{json}"
    );
    assert_eq!(json["qty"], 2, "{json}");

    // Section A is empty now: a vip buy is sold_out (410), and serve learns it...
    let vip = seat_buy(
        serve.addr,
        serde_json::json!({"user": "u2", "qty": 1, "tier": "vip", "request_id": "r2"}),
    );
    assert_eq!(vip.status, 410, "{}", vip.body);
    assert_eq!(vip.json()["outcome"], "sold_out", "{}", vip.body);
    // ...but the hall is not sold out: section B sells, from Redis, not memory.
    // Row 1 of B is free, blocked, free: no pair side by side; row 2 has one.
    let standard = seat_buy(
        serve.addr,
        serde_json::json!({"user": "u3", "qty": 2, "tier": "standard", "request_id": "r3"}),
    );
    let json = standard.json();
    assert_eq!(standard.status, 200, "{}", standard.body);
    assert_eq!(
        json["seats"],
        serde_json::json!(["B-2-1", "B-2-2"]),
        "{json}"
    );
    let no_pair = seat_buy(
        serve.addr,
        serde_json::json!({"user": "u4", "qty": 2, "tier": "standard", "request_id": "r4"}),
    );
    assert_eq!(no_pair.status, 422, "{}", no_pair.body);
    let json = no_pair.json();
    assert_eq!(json["outcome"], "no_block", "{json}");
    assert!(
        json["problem"].as_str().unwrap().contains("closest is 1"),
        "{json}"
    );

    // A named seat taken: 409 naming it; a retry of r3 answers its seats again.
    let taken = seat_buy(
        serve.addr,
        serde_json::json!({"user": "u5", "seats": ["B-2-2"], "request_id": "r5"}),
    );
    assert_eq!(taken.status, 409, "{}", taken.body);
    assert!(
        taken.json()["problem"]
            .as_str()
            .unwrap()
            .contains("B-2-2 sold"),
        "{}",
        taken.body
    );
    let retried = seat_buy(
        serve.addr,
        serde_json::json!({"user": "u3", "qty": 2, "tier": "standard", "request_id": "r3"}),
    );
    assert_eq!(
        retried.json()["seats"],
        serde_json::json!(["B-2-1", "B-2-2"]),
        "{}",
        retried.body
    );

    // The command line says the same outcomes with their exit codes.
    let cli = seckill(&[
        "buy",
        "--item",
        "hall-a",
        "--user",
        "u6",
        "--seats",
        "B-1-1,B-2-3",
    ])
    .campaign(&file)
    .redis(&server)
    .succeeds()
    .stdout();
    assert!(cli.contains("B-1-1, B-2-3"), "{cli}");
    seckill(&[
        "buy", "--item", "hall-a", "--user", "u7", "--seats", "B-2-3",
    ])
    .campaign(&file)
    .redis(&server)
    .fails_with(SEAT_TAKEN);
    seckill(&[
        "buy",
        "--item",
        "hall-a",
        "--user",
        "u7",
        "--qty",
        "2",
        "--section",
        "B",
    ])
    .campaign(&file)
    .redis(&server)
    .fails_with(NO_BLOCK);
}

/// One attendee identity per seat (docs/seats.md, "Attendees"): each counts
/// its seats against the item's `per_identity_limit` whoever buys, the
/// count must equal the seats, and a refusal buys nothing.
#[test]
fn attendees_count_their_seats_against_the_identity_limit_over_every_buyer() {
    let server = RedisServer::start();
    let file = campaign_file(&HALL.replace(
        "    name: Hall A\n",
        "    name: Hall A\n    per_identity_limit: 2\n",
    ));
    preheat(&file, &server);
    let buy = |args: &[&str]| {
        let mut all = vec!["buy", "--item", "hall-a"];
        all.extend_from_slice(args);
        seckill(&all).campaign(&file).redis(&server)
    };
    buy(&[
        "--user",
        "u1",
        "--seats",
        "B-1-1,B-1-3",
        "--attendees",
        "id-x,id-y",
    ])
    .succeeds();
    buy(&[
        "--user",
        "u2",
        "--qty",
        "1",
        "--section",
        "B",
        "--attendees",
        "id-x",
    ])
    .succeeds();
    // id-x holds 2 seats now, bought by two accounts: a third is refused, whoever buys.
    let refused = buy(&[
        "--user",
        "u3",
        "--qty",
        "1",
        "--section",
        "B",
        "--attendees",
        "id-x",
    ])
    .json()
    .fails_with(LIMIT_REACHED)
    .json();
    assert!(refused["order_id"].is_null(), "{refused}");
    // The same through serve: 409, nothing bought; another attendee buys.
    let serve = Serve::start(&file, &server.url(), false, &[]);
    let again = seat_buy(
        serve.addr,
        serde_json::json!({"user": "u4", "qty": 1, "section": "B", "attendees": ["id-x"], "request_id": "r4"}),
    );
    assert_eq!(again.status, 409, "{}", again.body);
    assert_eq!(again.json()["outcome"], "limit_reached", "{}", again.body);
    let other = seat_buy(
        serve.addr,
        serde_json::json!({"user": "u4", "qty": 1, "section": "B", "attendees": ["id-z"], "request_id": "r5"}),
    );
    assert_eq!(other.status, 200, "{}", other.body);
    // One attendee per seat, or nothing is sent.
    let stderr = buy(&[
        "--user",
        "u5",
        "--seats",
        "B-2-2,B-2-3",
        "--attendees",
        "id-w",
    ])
    .fails_with(USAGE_ERROR)
    .stderr();
    assert!(stderr.contains("one attendee per seat"), "{stderr}");
    // Without attendees the buy needs the buyer's identity, as any limited item.
    buy(&["--user", "u6", "--qty", "1", "--section", "B"]).fails_with(IDENTITY_REQUIRED);
    // Sold: 2 + 1 + 1 seats of section B, nothing for the refused ones.
    let stock: i64 = redis::cmd("GET")
        .arg(
            seckill::model::layout::Layout::new("seckill", "hall", "hall-a", 2)
                .bucket(1)
                .keys
                .stock,
        )
        .query(&mut server.conn())
        .unwrap();
    assert_eq!(stock, 5 - 4, "section B sold exactly the 4 seats allowed");
}
