//! Every outcome of `seckill buy` named: a reply that proves the script did
//! not run (NOAUTH, NOPERM, READONLY, MASTERDOWN, OOM, BUSY) is a runtime
//! error naming host:port and the cause, safe to retry with a new attempt;
//! only a reply lost after the request was sent is `outcome_unknown` (its own
//! exit code, with the request id to retry with); a request id replayed with
//! another `--qty` is `request_id_reused`, never an `ok` for units not bought.

use crate::support;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use redis::Commands;
use seckill::model::exit_codes;
use support::{RedisServer, campaign_file, json, seckill};

const CAMPAIGN: &str = r#"
campaign: oc
per_user_limit: 5
items:
  - { id: "1", name: x, price: "1.00", stock: 10 }
"#;

const STOCK: &str = "seckill:{oc:1}:stock";

fn buy(file: &std::path::Path, url: &str, extra: &[&str]) -> std::process::Output {
    seckill(file, url)
        .args(["buy", "--item", "1", "--user", "u", "--format", "json"])
        .args(["--connect-timeout", "1s", "--response-timeout", "1s"])
        .args(extra)
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap()
}

/// The campaign file, preheated on `server`.
fn preheated(server: &RedisServer) -> support::CampaignFile {
    let file = campaign_file(CAMPAIGN);
    seckill(&file.path, &server.url())
        .arg("preheat")
        .assert()
        .success();
    file
}

/// Exit 1, the server's address, the cause, "not executed", never "unknown".
pub(crate) fn assert_not_executed(output: &std::process::Output, port: u16, cause: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(exit_codes::RUNTIME_ERROR),
        "{cause}: {stderr}"
    );
    assert!(stderr.contains(&format!("127.0.0.1:{port}")), "{stderr}");
    assert!(stderr.contains(cause), "expected {cause} in {stderr}");
    assert!(
        !stderr.contains("unknown"),
        "{cause} said unknown: {stderr}"
    );
    assert!(
        stderr.contains("not executed") || stderr.contains("cannot connect"),
        "{stderr}"
    );
}

#[test]
fn no_password_against_a_protected_redis_is_noauth_at_connect_not_unknown() {
    let server = RedisServer::start_with(&["--requirepass", "pw"]);
    let file = campaign_file(CAMPAIGN);
    let output = buy(&file.path, &server.url(), &[]);
    assert_not_executed(&output, server.port, "NOAUTH");
}

#[test]
fn refusals_that_prove_nothing_ran_are_named_runtime_errors() {
    let server = RedisServer::start();
    let file = preheated(&server);
    let mut conn = server.conn();

    // NOPERM: a user that may not run scripts.
    let () = redis::cmd("ACL")
        .arg(&[
            "SETUSER", "noscript", "on", ">pw", "~*", "+@all", "-evalsha", "-eval",
        ])
        .query(&mut conn)
        .unwrap();
    let url = format!("redis://noscript:pw@127.0.0.1:{}/0", server.port);
    assert_not_executed(&buy(&file.path, &url, &[]), server.port, "NOPERM");

    // OOM: the #!lua shebang makes Redis refuse the whole script up front.
    let () = redis::cmd("CONFIG")
        .arg(&["SET", "maxmemory", "1"])
        .query(&mut conn)
        .unwrap();
    assert_not_executed(&buy(&file.path, &server.url(), &[]), server.port, "OOM");
    let () = redis::cmd("CONFIG")
        .arg(&["SET", "maxmemory", "0"])
        .query(&mut conn)
        .unwrap();

    // BUSY: another script holds the server past busy-reply-threshold.
    let () = redis::cmd("CONFIG")
        .arg(&["SET", "busy-reply-threshold", "50"])
        .query(&mut conn)
        .unwrap();
    let busy_url = server.url();
    let busy = std::thread::spawn(move || {
        let client = redis::Client::open(busy_url).unwrap();
        let mut c = client.get_connection().unwrap();
        let _: redis::RedisResult<()> = redis::cmd("EVAL")
            .arg("while true do end")
            .arg(0)
            .query(&mut c);
    });
    std::thread::sleep(Duration::from_millis(300));
    let output = buy(&file.path, &server.url(), &[]);
    let mut killer = server.conn();
    let () = redis::cmd("SCRIPT").arg("KILL").query(&mut killer).unwrap();
    busy.join().unwrap();
    assert_not_executed(&output, server.port, "BUSY");

    let stock: i64 = conn.get(STOCK).unwrap();
    assert_eq!(stock, 10, "a refused attempt bought something");
    let output = buy(&file.path, &server.url(), &[]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
}

#[test]
fn a_replica_answers_readonly_or_masterdown_not_unknown() {
    let master = RedisServer::start();
    let file = preheated(&master);
    let replica = RedisServer::start_with(&["--replicaof", "127.0.0.1", &master.port.to_string()]);
    let mut rc = replica.conn();
    for _ in 0..100 {
        let stock: Option<i64> = rc.get(STOCK).unwrap();
        if stock.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_not_executed(
        &buy(&file.path, &replica.url(), &[]),
        replica.port,
        "READONLY",
    );
    drop(master);
    let () = redis::cmd("CONFIG")
        .arg(&["SET", "replica-serve-stale-data", "no"])
        .query(&mut rc)
        .unwrap();
    assert_not_executed(
        &buy(&file.path, &replica.url(), &[]),
        replica.port,
        "MASTERDOWN",
    );
}

/// Forwards one client to Redis, but once `swallow` is set, drops every
/// reply after the client's next request: the request runs, its reply is lost.
pub(crate) fn reply_eating_proxy(redis_port: u16, swallow: Arc<AtomicBool>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let server = TcpStream::connect(("127.0.0.1", redis_port)).unwrap();
            let (mut c_in, mut s_out) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            let eating = Arc::new(AtomicBool::new(false));
            let (swallow_up, eating_up) = (Arc::clone(&swallow), Arc::clone(&eating));
            std::thread::spawn(move || {
                let mut buf = [0u8; 65536];
                while let Ok(n) = c_in.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    if swallow_up.load(Ordering::SeqCst)
                        && buf[..n].windows(4).any(|w| w == b"EVAL")
                    {
                        eating_up.store(true, Ordering::SeqCst);
                    }
                    if s_out.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                let _ = s_out.shutdown(Shutdown::Both);
            });
            let (mut s_in, mut c_out) = (server, client);
            std::thread::spawn(move || {
                let mut buf = [0u8; 65536];
                while let Ok(n) = s_in.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    if !eating.load(Ordering::SeqCst) && c_out.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            });
        }
    });
    port
}

#[test]
fn a_reply_lost_after_sending_is_outcome_unknown_with_the_request_id() {
    let server = RedisServer::start();
    let file = preheated(&server);
    // Load the script so the attempt below is one EVALSHA.
    seckill(&file.path, &server.url())
        .args(["buy", "--item", "1", "--user", "warm"])
        .assert()
        .success();
    let swallow = Arc::new(AtomicBool::new(true));
    let proxy = reply_eating_proxy(server.port, swallow);
    let proxied = format!("redis://127.0.0.1:{proxy}/0");
    let output = buy(&file.path, &proxied, &["--request-id", "req-lost"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(exit_codes::OUTCOME_UNKNOWN),
        "{stderr}"
    );
    assert!(stderr.contains("outcome unknown"), "{stderr}");
    assert!(stderr.contains("--request-id req-lost"), "{stderr}");
    assert!(stderr.contains(&format!("127.0.0.1:{proxy}")), "{stderr}");
    // The script did run: retrying with the same id answers its order, buys nothing more.
    let mut conn = server.conn();
    let stock: i64 = conn.get(STOCK).unwrap();
    assert_eq!(stock, 8);
    let retry = buy(&file.path, &server.url(), &["--request-id", "req-lost"]);
    assert_eq!(retry.status.code(), Some(0));
    assert_eq!(json(&retry)["stock_left"], 8);
    let stock: i64 = conn.get(STOCK).unwrap();
    assert_eq!(stock, 8);
}

#[test]
fn a_request_id_replayed_with_another_qty_is_refused() {
    let server = RedisServer::start();
    let file = preheated(&server);
    let first = buy(
        &file.path,
        &server.url(),
        &["--qty", "1", "--request-id", "r"],
    );
    assert_eq!(first.status.code(), Some(0));
    let order = json(&first)["order_id"].clone();
    let replay = buy(
        &file.path,
        &server.url(),
        &["--qty", "3", "--request-id", "r"],
    );
    assert_eq!(
        replay.status.code(),
        Some(exit_codes::REQUEST_ID_REUSED),
        "{replay:?}"
    );
    let shown = json(&replay);
    assert_eq!(shown["outcome"], "request_id_reused");
    assert_eq!(shown["order_id"], order, "the original order is named");
    let same = buy(
        &file.path,
        &server.url(),
        &["--qty", "1", "--request-id", "r"],
    );
    assert_eq!(same.status.code(), Some(0));
    assert_eq!(json(&same)["order_id"], order);
    let mut conn = server.conn();
    let stock: i64 = conn.get(STOCK).unwrap();
    assert_eq!(stock, 9, "only the first attempt bought");
}
