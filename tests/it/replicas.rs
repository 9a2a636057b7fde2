//! `buy --wait-replicas N`: WAIT on the same connection after the script. A
//! buy fewer replicas confirmed is `unreplicated` (its own exit code, the
//! order id named: it was bought, but a failover now could lose it), never
//! a plain `ok`.

use crate::support;

use std::time::Duration;

use redis::Commands;
use seckill::model::exit_codes::{UNREPLICATED, USAGE_ERROR};
use support::spec::{Within, campaign, seckill};
use support::{CampaignFile, RedisServer};

/// `buy --item 1 --user USER --format json EXTRA` against `server`, given 30 s at most.
fn buy(file: &CampaignFile, server: &RedisServer, user: &str, extra: &[&str]) -> Within {
    seckill(&["buy", "--item", "1", "--user", user])
        .campaign(file)
        .redis(server)
        .json()
        .args(extra)
        .within(Duration::from_secs(30))
}

#[test]
fn a_buy_fewer_replicas_confirmed_is_unreplicated_not_ok() {
    let master = RedisServer::start();
    let replica = support::start_replica_of(&master);
    let mut m = master.conn();
    let file = campaign("rep")
        .per_user_limit(1)
        .item("1", 10)
        .named("x")
        .orders_store(None)
        .write();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&master)
        .succeeds();

    let shown = buy(
        &file,
        &master,
        "u1",
        &["--wait-replicas", "1", "--wait-timeout", "2s"],
    )
    .succeeds()
    .json();
    assert_eq!(shown["outcome"], "ok");
    assert_eq!(shown["replicas_acked"], 1);

    // The replica detaches: the next buy happens, but nobody confirms it.
    let () = redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query(&mut replica.conn())
        .unwrap();
    let shown = buy(
        &file,
        &master,
        "u2",
        &["--wait-replicas", "1", "--wait-timeout", "300ms"],
    )
    .fails_with(UNREPLICATED)
    .json();
    assert_eq!(shown["outcome"], "unreplicated");
    assert_eq!(shown["replicas_acked"], 0);
    assert!(shown["order_id"].as_str().is_some_and(|id| !id.is_empty()));
    let stock: i64 = m.get("seckill:{rep:1}:stock").unwrap();
    assert_eq!(stock, 8, "the unreplicated buy did happen on the master");

    // Without the flag nothing waits. A WAIT longer than the reply timeout
    // is refused: the client would give up before WAIT answers.
    buy(&file, &master, "u3", &[]).succeeds();
    let refused = buy(
        &file,
        &master,
        "u4",
        &[
            "--wait-replicas",
            "1",
            "--wait-timeout",
            "5s",
            "--response-timeout",
            "5s",
        ],
    )
    .fails_with(USAGE_ERROR);
    assert!(
        refused
            .stderr()
            .contains("--wait-timeout 5s must be shorter")
    );
}
