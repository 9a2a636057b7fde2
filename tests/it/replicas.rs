//! `buy --wait-replicas N`: WAIT on the same connection after the script. A
//! buy fewer replicas confirmed is `unreplicated` (its own exit code, the
//! order id named: it was bought, but a failover now could lose it), never
//! a plain `ok`.

use crate::support;

use std::time::Duration;

use redis::Commands;
use seckill::model::exit_codes;
use support::{RedisServer, campaign_file, json, seckill};

const CAMPAIGN: &str = r#"
campaign: rep
per_user_limit: 1
items:
  - { id: "1", name: x, price: "1.00", stock: 10 }
"#;

fn buy(file: &std::path::Path, url: &str, user: &str, extra: &[&str]) -> std::process::Output {
    seckill(file, url)
        .args(["buy", "--item", "1", "--user", user, "--format", "json"])
        .args(extra)
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap()
}

#[test]
fn a_buy_fewer_replicas_confirmed_is_unreplicated_not_ok() {
    let master = RedisServer::start();
    let replica = support::start_replica_of(&master);
    let mut m = master.conn();
    let file = campaign_file(CAMPAIGN);
    seckill(&file.path, &master.url())
        .arg("preheat")
        .assert()
        .success();

    let output = buy(
        &file.path,
        &master.url(),
        "u1",
        &["--wait-replicas", "1", "--wait-timeout", "2s"],
    );
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let shown = json(&output);
    assert_eq!(shown["outcome"], "ok");
    assert_eq!(shown["replicas_acked"], 1);

    // The replica detaches: the next buy happens, but nobody confirms it.
    let () = redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query(&mut replica.conn())
        .unwrap();
    let output = buy(
        &file.path,
        &master.url(),
        "u2",
        &["--wait-replicas", "1", "--wait-timeout", "300ms"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(exit_codes::UNREPLICATED),
        "{stderr}"
    );
    let shown = json(&output);
    assert_eq!(shown["outcome"], "unreplicated");
    assert_eq!(shown["replicas_acked"], 0);
    assert!(shown["order_id"].as_str().is_some_and(|id| !id.is_empty()));
    let stock: i64 = m.get("seckill:{rep:1}:stock").unwrap();
    assert_eq!(stock, 8, "the unreplicated buy did happen on the master");

    // Without the flag nothing waits. A WAIT longer than the reply timeout
    // is refused: the client would give up before WAIT answers.
    assert_eq!(
        buy(&file.path, &master.url(), "u3", &[]).status.code(),
        Some(0)
    );
    let output = buy(
        &file.path,
        &master.url(),
        "u4",
        &[
            "--wait-replicas",
            "1",
            "--wait-timeout",
            "5s",
            "--response-timeout",
            "5s",
        ],
    );
    assert_eq!(output.status.code(), Some(exit_codes::USAGE_ERROR));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--wait-timeout 5s must be shorter"));
}
