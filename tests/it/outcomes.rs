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
use std::time::{Duration, Instant};

use redis::Commands;
use seckill::model::exit_codes::{OUTCOME_UNKNOWN, REQUEST_ID_REUSED, RUNTIME_ERROR};
use seckill::model::keys::ItemKeys;
use seckill::redis_client::scripts::ScriptCall;
use seckill::redis_client::scripts::stream_order_ids::StreamOrderIds;
use support::spec::{Within, campaign, seckill};
use support::{CampaignFile, RedisServer, preheat};

const STOCK: &str = "seckill:{oc:1}:stock";

/// `buy --item 1 --user u --format json EXTRA` with 1 s connect and reply
/// timeouts, against `url`, given 30 s at most.
fn buy(file: &CampaignFile, url: &str, extra: &[&str]) -> Within {
    seckill(&["buy", "--item", "1", "--user", "u"])
        .campaign(file)
        .redis_url(url)
        .json()
        .args(&["--connect-timeout", "1s", "--response-timeout", "1s"])
        .args(extra)
        .within(Duration::from_secs(30))
}

/// Campaign `oc`: one item, 10 units, up to 5 per user.
fn sale() -> CampaignFile {
    campaign("oc")
        .per_user_limit(5)
        .item("1", 10)
        .named("x")
        .orders_store(None)
        .write()
}

/// The campaign file, preheated on `server`.
fn preheated(server: &RedisServer) -> CampaignFile {
    let file = sale();
    preheat(&file, server);
    file
}

/// What a refusal that proves nothing ran says on stderr: the server's
/// address, the cause, "not executed" (or "cannot connect"), never "unknown".
pub(crate) fn assert_says_not_executed(stderr: &str, port: u16, cause: &str) {
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

/// The attempt exits 1 saying it was not executed, naming the server and `cause`.
fn assert_refused_unrun(attempt: Within, port: u16, cause: &str) {
    let stderr = attempt.fails_with(RUNTIME_ERROR).stderr();
    assert_says_not_executed(&stderr, port, cause);
}

#[test]
fn no_password_against_a_protected_redis_is_noauth_at_connect_not_unknown() {
    let server = RedisServer::start_with(&["--requirepass", "pw"]);
    let file = sale();
    assert_refused_unrun(buy(&file, &server.url(), &[]), server.port, "NOAUTH");
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
    assert_refused_unrun(buy(&file, &url, &[]), server.port, "NOPERM");

    // OOM: the #!lua shebang makes Redis refuse the whole script up front.
    let () = redis::cmd("CONFIG")
        .arg(&["SET", "maxmemory", "1"])
        .query(&mut conn)
        .unwrap();
    assert_refused_unrun(buy(&file, &server.url(), &[]), server.port, "OOM");
    let () = redis::cmd("CONFIG")
        .arg(&["SET", "maxmemory", "0"])
        .query(&mut conn)
        .unwrap();

    // BUSY: another script holds the server past busy-reply-threshold —
    // reconcile's order-id lookup, asked for four million ids at once (a
    // read-only script, so SCRIPT KILL ends it once the attempt was refused).
    let () = redis::cmd("CONFIG")
        .arg(&["SET", "busy-reply-threshold", "50"])
        .query(&mut conn)
        .unwrap();
    let busy_url = server.url();
    let busy = std::thread::spawn(move || {
        let client = redis::Client::open(busy_url).unwrap();
        let mut c = client.get_connection().unwrap();
        let lookup = StreamOrderIds {
            orders: ItemKeys::live("oc", "1").orders,
            stream_id: vec!["1-1".to_string(); 4_000_000],
        };
        let _ = lookup.invoke(&mut c);
    });
    wait_until_busy(&server);
    assert_refused_unrun(buy(&file, &server.url(), &[]), server.port, "BUSY");
    let mut killer = server.conn();
    let () = redis::cmd("SCRIPT").arg("KILL").query(&mut killer).unwrap();
    busy.join().unwrap();

    let stock: i64 = conn.get(STOCK).unwrap();
    assert_eq!(stock, 10, "a refused attempt bought something");
    buy(&file, &server.url(), &[]).succeeds();
}

/// Wait until `server` answers BUSY (a script holds it past busy-reply-threshold).
fn wait_until_busy(server: &RedisServer) {
    let mut probe = server.conn();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match redis::cmd("PING").query::<String>(&mut probe) {
            Err(e) if e.code() == Some("BUSY") => return,
            _ => assert!(Instant::now() < deadline, "the server never got busy"),
        }
        std::thread::sleep(Duration::from_millis(5));
    }
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
    assert_refused_unrun(buy(&file, &replica.url(), &[]), replica.port, "READONLY");
    drop(master);
    let () = redis::cmd("CONFIG")
        .arg(&["SET", "replica-serve-stale-data", "no"])
        .query(&mut rc)
        .unwrap();
    assert_refused_unrun(buy(&file, &replica.url(), &[]), replica.port, "MASTERDOWN");
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
    seckill(&["buy", "--item", "1", "--user", "warm"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let swallow = Arc::new(AtomicBool::new(true));
    let proxy = reply_eating_proxy(server.port, swallow);
    let proxied = format!("redis://127.0.0.1:{proxy}/0");
    let stderr = buy(&file, &proxied, &["--request-id", "req-lost"])
        .fails_with(OUTCOME_UNKNOWN)
        .stderr();
    assert!(stderr.contains("outcome unknown"), "{stderr}");
    assert!(stderr.contains("--request-id req-lost"), "{stderr}");
    assert!(stderr.contains(&format!("127.0.0.1:{proxy}")), "{stderr}");
    // The script did run: retrying with the same id answers its order, buys nothing more.
    let mut conn = server.conn();
    let stock: i64 = conn.get(STOCK).unwrap();
    assert_eq!(stock, 8);
    let retry = buy(&file, &server.url(), &["--request-id", "req-lost"])
        .succeeds()
        .json();
    assert_eq!(retry["stock_left"], 8);
    let stock: i64 = conn.get(STOCK).unwrap();
    assert_eq!(stock, 8);
}

#[test]
fn a_request_id_replayed_with_another_qty_is_refused() {
    let server = RedisServer::start();
    let file = preheated(&server);
    let attempt = |qty: &str| buy(&file, &server.url(), &["--qty", qty, "--request-id", "r"]);
    let order = attempt("1").succeeds().json()["order_id"].clone();
    let shown = attempt("3").fails_with(REQUEST_ID_REUSED).json();
    assert_eq!(shown["outcome"], "request_id_reused");
    assert_eq!(shown["order_id"], order, "the original order is named");
    let same = attempt("1").succeeds().json();
    assert_eq!(same["order_id"], order);
    let mut conn = server.conn();
    let stock: i64 = conn.get(STOCK).unwrap();
    assert_eq!(stock, 9, "only the first attempt bought");
}
