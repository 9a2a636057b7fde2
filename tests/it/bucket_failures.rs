//! Issue 11's failure tests on a bucketed item (`buckets: 2`, docs/buckets.md),
//! on a standalone Redis (the buckets' tags differ; one server holds them all):
//! a corrupt value in the home bucket or in a bucket the sweep visits is the
//! `corrupt_state` outcome naming the key, nothing written; a request id
//! replayed with another `--qty` is `request_id_reused` whether the original
//! was served from the home bucket or through a transfer; NOAUTH, NOPERM and a
//! lost reply are named as on a plain item.

use crate::corrupt_state::snapshot;
use crate::outcomes::{assert_not_executed, reply_eating_proxy};
use crate::support;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use redis::Commands;
use seckill::buckets::{Layout, home_bucket};
use seckill::exit_codes;
use support::{CampaignFile, RedisServer, campaign_file, json, seckill};

const CAMPAIGN: &str = r#"
campaign: bf
per_user_limit: 2
items:
  - { id: "1", name: x, price: "1.00", stock: 4, buckets: 2 }
"#;

fn layout() -> Layout {
    Layout::new("seckill", "bf", "1", 2)
}

/// The `i`-th user id whose home is `bucket` (of 2).
fn homed_in(bucket: u32, i: usize) -> String {
    (0..)
        .map(|n| format!("user-{n}"))
        .filter(|u| home_bucket(u, 2) == bucket)
        .nth(i)
        .unwrap()
}

fn preheated(server: &RedisServer) -> CampaignFile {
    let file = campaign_file(CAMPAIGN);
    let mut conn = server.conn();
    let () = redis::cmd("FLUSHALL").query(&mut conn).unwrap();
    seckill(&file.path, &server.url())
        .arg("preheat")
        .assert()
        .success();
    file
}

fn buy(file: &CampaignFile, url: &str, user: &str, extra: &[&str]) -> std::process::Output {
    seckill(&file.path, url)
        .args(["buy", "--item", "1", "--user", user, "--format", "json"])
        .args(["--connect-timeout", "1s", "--response-timeout", "1s"])
        .args(extra)
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap()
}

/// Units left in every bucket, summed.
fn stock_total(conn: &mut redis::Connection) -> i64 {
    layout()
        .all()
        .iter()
        .map(|b| conn.get::<_, i64>(&b.keys.stock).unwrap())
        .sum()
}

fn assert_corrupt(server: &RedisServer, file: &CampaignFile, user: &str, key: &str) {
    let mut conn = server.conn();
    let before = snapshot(&mut conn);
    let output = buy(file, &server.url(), user, &["--request-id", "r1"]);
    assert_eq!(
        output.status.code(),
        Some(exit_codes::CORRUPT_STATE),
        "{output:?}"
    );
    let reply = json(&output);
    assert_eq!(reply["outcome"], "corrupt_state", "{reply}");
    let problem = reply["problem"].as_str().unwrap_or_default();
    assert!(problem.contains(key), "{problem} does not name {key}");
    assert_eq!(before, snapshot(&mut conn), "the buy wrote something");
}

#[test]
fn a_corrupt_home_or_swept_bucket_is_corrupt_state_naming_its_key() {
    let server = RedisServer::start();
    let user = homed_in(0, 0);
    let (home, other) = (layout().bucket(0), layout().bucket(1));

    let file = preheated(&server);
    let mut conn = server.conn();
    let () = conn.set(&home.keys.stock, "1.5").unwrap();
    assert_corrupt(&server, &file, &user, &home.keys.stock);

    let file = preheated(&server);
    let () = conn.hset(&home.keys.buyers, &user, "0x1").unwrap();
    assert_corrupt(&server, &file, &user, &home.keys.buyers);

    // The home bucket is empty (valid), the sweep meets a corrupt bucket 1.
    for (key, corrupt) in [
        (&other.keys.meta, "initial_stock"),
        (&other.keys.stock, ""),
        (&other.xfer_pending, "type"),
    ] {
        let file = preheated(&server);
        let () = conn.set(&home.keys.stock, 0).unwrap();
        match corrupt {
            "" => conn.set::<_, _, ()>(key, "5e0").unwrap(),
            "type" => conn.set::<_, _, ()>(key, "x").unwrap(),
            field => conn.hset::<_, _, _, ()>(key, field, " 2").unwrap(),
        }
        assert_corrupt(&server, &file, &user, key);
    }
}

#[test]
fn a_request_id_replayed_with_another_qty_is_refused_on_a_bucketed_item() {
    let server = RedisServer::start();
    let file = preheated(&server);
    let mut conn = server.conn();
    let url = server.url();
    let check = |output: &std::process::Output, code: i32| {
        assert_eq!(output.status.code(), Some(code), "{output:?}");
        json(output)
    };

    // Served from the home bucket.
    let first = check(
        &buy(&file, &url, &homed_in(1, 0), &["--request-id", "h"]),
        0,
    );
    let replay = buy(
        &file,
        &url,
        &homed_in(1, 0),
        &["--request-id", "h", "--qty", "2"],
    );
    let replay = check(&replay, exit_codes::REQUEST_ID_REUSED);
    assert_eq!(replay["outcome"], "request_id_reused");
    assert_eq!(replay["order_id"], first["order_id"]);
    assert_eq!(stock_total(&mut conn), 3);

    // Bucket 0 drained by its own buyer; the next buyer homed there is served by a transfer.
    check(&buy(&file, &url, &homed_in(0, 0), &["--qty", "2"]), 0);
    let user = homed_in(0, 1);
    let first = check(&buy(&file, &url, &user, &["--request-id", "t"]), 0);
    let credits: i64 = conn.hlen(&layout().bucket(0).xfer_in).unwrap();
    assert_eq!(credits, 1, "the order was served through a transfer");
    let left = stock_total(&mut conn);
    let replay = check(
        &buy(&file, &url, &user, &["--request-id", "t", "--qty", "2"]),
        exit_codes::REQUEST_ID_REUSED,
    );
    assert_eq!(
        replay["order_id"], first["order_id"],
        "the original order is named"
    );
    let same = check(&buy(&file, &url, &user, &["--request-id", "t"]), 0);
    assert_eq!(same["order_id"], first["order_id"]);
    assert_eq!(stock_total(&mut conn), left, "a replay bought something");
    let bought: i64 = conn.hget(&layout().bucket(0).keys.buyers, &user).unwrap();
    assert_eq!(bought, 1);
}

#[test]
fn noauth_noperm_and_a_lost_reply_are_named_on_a_bucketed_item() {
    let protected = RedisServer::start_with(&["--requirepass", "pw"]);
    let file = campaign_file(CAMPAIGN);
    let output = buy(&file, &protected.url(), &homed_in(0, 0), &[]);
    assert_not_executed(&output, protected.port, "NOAUTH");

    let server = RedisServer::start();
    let file = preheated(&server);
    let mut conn = server.conn();
    let () = redis::cmd("ACL")
        .arg(&[
            "SETUSER", "noscript", "on", ">pw", "~*", "+@all", "-evalsha", "-eval",
        ])
        .query(&mut conn)
        .unwrap();
    let url = format!("redis://noscript:pw@127.0.0.1:{}/0", server.port);
    assert_not_executed(
        &buy(&file, &url, &homed_in(0, 0), &[]),
        server.port,
        "NOPERM",
    );
    assert_eq!(
        stock_total(&mut conn),
        4,
        "a refused attempt bought something"
    );

    // The script runs, its reply is lost: unknown, with the request id; the
    // retry with that id answers the same order and buys nothing more.
    let proxy = reply_eating_proxy(server.port, Arc::new(AtomicBool::new(true)));
    let proxied = format!("redis://127.0.0.1:{proxy}/0");
    let user = homed_in(0, 0);
    let output = buy(&file, &proxied, &user, &["--request-id", "lost"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(exit_codes::OUTCOME_UNKNOWN),
        "{stderr}"
    );
    assert!(stderr.contains("--request-id lost"), "{stderr}");
    assert!(stderr.contains(&format!("127.0.0.1:{proxy}")), "{stderr}");
    assert_eq!(stock_total(&mut conn), 3, "the lost attempt ran");
    let retry = buy(&file, &server.url(), &user, &["--request-id", "lost"]);
    assert_eq!(retry.status.code(), Some(0), "{retry:?}");
    assert_eq!(stock_total(&mut conn), 3, "the retry bought again");
}
