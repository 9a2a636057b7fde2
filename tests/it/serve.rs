//! `seckill serve`: real HTTP against a real `serve` against real Redis
//! servers the tests start. Every outcome and its status; every bad input
//! refused before Redis with nothing changed; concurrent buys selling exactly
//! the stock (plain, and 8 buckets on a cluster); a SIGKILL mid-storm; the
//! sold-out cache (no EVALSHA) and how soon units coming back sell again;
//! SIGTERM; the operator endpoints.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::net::TcpStream;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use redis::Commands;
use seckill::model::exit_codes::SUCCESS;
use serde_json::json;

use crate::support::cluster::RedisCluster;
use crate::support::http::{self, Answer};
use crate::support::serve::Serve;
use crate::support::spec::{CampaignSpec, campaign, seckill};
use crate::support::{Frozen, RedisServer, preheat};

/// Every key of the test Redis and its DUMP.
fn keys(server: &RedisServer) -> Vec<(String, Vec<u8>)> {
    let mut conn = server.conn();
    let mut names: Vec<String> = conn.keys("*").unwrap();
    names.sort();
    names
        .into_iter()
        .map(|k| {
            let dump: Vec<u8> = redis::cmd("DUMP").arg(&k).query(&mut conn).unwrap();
            (k, dump)
        })
        .collect()
}

fn outcome(answer: &Answer) -> String {
    answer.json()["outcome"].as_str().unwrap_or("").to_string()
}

#[test]
fn every_outcome_has_its_http_status() {
    let server = RedisServer::start();
    let file = campaign("st")
        .per_user_limit(2)
        .rate_limit("10s", 2)
        .item("1", 2)
        .item("gone", 1)
        .item("broken", 5)
        .item("closed", 5)
        .write();
    preheat(&file, &server);
    let serve = Serve::start(&file, &server.url(), false, &[]);
    let addr = serve.addr;

    let ok = http::buy(addr, "1", "alice", "r1");
    assert_eq!((ok.status, outcome(&ok)), (200, "ok".into()), "{}", ok.body);
    let order = ok.json()["order_id"].clone();
    let replay = http::buy(addr, "1", "alice", "r1");
    assert_eq!(replay.status, 200);
    assert_eq!(
        replay.json()["order_id"],
        order,
        "a replay answers its order"
    );
    let reused = http::post(
        addr,
        "/v1/items/1/buy",
        &json!({"user": "alice", "qty": 2, "request_id": "r1"}),
    );
    assert_eq!(
        (reused.status, outcome(&reused)),
        (409, "request_id_reused".into())
    );
    let second = http::buy(addr, "1", "alice", "r2");
    assert_eq!((second.status, outcome(&second)), (200, "ok".into()));
    let third = http::buy(addr, "1", "alice", "r3");
    assert_eq!(
        (third.status, outcome(&third)),
        (429, "rate_limited".into()),
        "{}",
        third.body
    );
    assert_eq!(third.header("Retry-After"), Some("10"));
    let duplicate = http::buy(addr, "gone", "bob", "b1");
    assert_eq!(duplicate.status, 200);
    let dup = http::post(
        addr,
        "/v1/items/gone/buy",
        &json!({"user": "bob", "qty": 2, "request_id": "b2"}),
    );
    assert_eq!(
        (dup.status, outcome(&dup)),
        (409, "duplicate".into()),
        "{}",
        dup.body
    );
    let sold = http::buy(addr, "gone", "carol", "c1");
    assert_eq!((sold.status, outcome(&sold)), (410, "sold_out".into()));

    let () = server
        .conn()
        .set("seckill:{st:broken}:stock", "1.5")
        .unwrap();
    let corrupt = http::buy(addr, "broken", "dan", "d1");
    assert_eq!(
        (corrupt.status, outcome(&corrupt)),
        (500, "corrupt_state".into())
    );
    assert!(
        corrupt.json()["problem"]
            .as_str()
            .unwrap()
            .contains("stock")
    );

    seckill(&["shutdown-switch", "on", "--item", "closed"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let closed = http::buy(addr, "closed", "erin", "e1");
    assert_eq!((closed.status, outcome(&closed)), (503, "closed".into()));

    let () = server.conn().del("seckill:{st:closed}:meta").unwrap();
    let () = server.conn().del("seckill:{st:closed}:stock").unwrap();
    let missing = http::buy(addr, "closed", "erin", "e2");
    assert_eq!(
        (missing.status, outcome(&missing)),
        (503, "not_preheated".into())
    );

    let later = campaign("later").starts_in(3600).item("l1", 5).write();
    preheat(&later, &server);
    let early = Serve::start(&later, &server.url(), false, &[]);
    let not_started = http::buy(early.addr, "l1", "fay", "f1");
    assert_eq!(
        (not_started.status, outcome(&not_started)),
        (425, "not_started".into())
    );
    let past = campaign("past").ends_in(-60).item("p1", 5).write();
    preheat(&past, &server);
    let late = Serve::start(&past, &server.url(), false, &[]);
    let ended = http::buy(late.addr, "p1", "gus", "g1");
    assert_eq!((ended.status, outcome(&ended)), (410, "ended".into()));
}

#[test]
fn a_lost_reply_is_504_retry_with_the_same_request_id_and_the_retry_gets_the_order() {
    let server = RedisServer::start();
    let file = campaign("lost").item("1", 5).write();
    preheat(&file, &server);
    let serve = Serve::start(&file, &server.url(), false, &["--response-timeout", "1s"]);
    // A connection in the pool first: the next attempt is sent on it.
    assert_eq!(http::buy(serve.addr, "1", "warm", "w").status, 200);
    let answer = {
        let _frozen = Frozen::new(&mut server.conn());
        http::buy(serve.addr, "1", "hal", "h1")
    };
    assert_eq!(answer.status, 504, "{}", answer.body);
    let error = &answer.json()["error"];
    assert_eq!(error["kind"], "outcome_unknown");
    assert_eq!(error["request_id"], "h1");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("same request_id")
    );
    let retry = http::buy(serve.addr, "1", "hal", "h1");
    assert_eq!(
        (retry.status, outcome(&retry)),
        (200, "ok".into()),
        "{}",
        retry.body
    );
    let bought: i64 = server
        .conn()
        .hget("seckill:{lost:1}:buyers", "hal")
        .unwrap();
    assert_eq!(bought, 1, "the retry bought nothing twice");
}

/// A connection Redis dropped under serve is replaced: every attempt it
/// caught answers 200 or 504 (and the 504's retry with its request id gets
/// one order), the ones after buy again. A Redis that cannot be reached at
/// all answers 503 `redis_unreachable` (nothing sent) and /healthz 503.
#[test]
fn a_dropped_connection_is_replaced_and_an_unreachable_redis_is_503() {
    let mut server = RedisServer::start();
    let file = campaign("drop").item("1", 50).write();
    preheat(&file, &server);
    let serve = Serve::start(&file, &server.url(), false, &[]);
    assert_eq!(http::buy(serve.addr, "1", "before", "b").status, 200);
    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("normal")
        .arg("SKIPME")
        .arg("yes")
        .query(&mut server.conn())
        .unwrap();
    assert!(killed >= 1, "serve's connection was not there to drop");
    for n in 0..5 {
        let user = format!("after-{n}");
        let answer = http::buy(serve.addr, "1", &user, &user);
        match answer.status {
            200 => {}
            504 => {
                let retry = http::buy(serve.addr, "1", &user, &user);
                assert_eq!(retry.status, 200, "{}", retry.body);
            }
            other => panic!("{other} after a dropped connection: {}", answer.body),
        }
    }
    let last = http::buy(serve.addr, "1", "later", "l");
    assert_eq!(
        (last.status, outcome(&last)),
        (200, "ok".into()),
        "{}",
        last.body
    );
    let buyers: i64 = server.conn().hlen("seckill:{drop:1}:buyers").unwrap();
    assert_eq!(buyers, 7, "before, after-0..4, later: one order each");

    let _ = server_kill(&mut server);
    let mut kinds = Vec::new();
    for n in 0..3 {
        let user = format!("gone-{n}");
        let answer = http::buy(serve.addr, "1", &user, &user);
        kinds.push((answer.status, answer.json()["error"]["kind"].clone()));
    }
    assert_eq!(
        kinds.last().unwrap(),
        &(503, json!("redis_unreachable")),
        "{kinds:?}"
    );
    assert!(
        kinds
            .iter()
            .all(|(status, _)| *status == 503 || *status == 504),
        "{kinds:?}"
    );
    assert_eq!(http::get(serve.addr, "/healthz").status, 503);
}

/// Stop `server` for good (its port no longer answers).
fn server_kill(server: &mut RedisServer) -> std::io::Result<()> {
    let _: redis::RedisResult<()> = redis::cmd("SHUTDOWN")
        .arg("NOSAVE")
        .query(&mut server.conn());
    let deadline = Instant::now() + Duration::from_secs(5);
    while TcpStream::connect(("127.0.0.1", server.port)).is_ok() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// (what, body, headers, status) of a bad request.
type Case<'a> = (&'a str, Vec<u8>, &'a [(&'a str, &'a str)], u16);

/// Every bad request is refused with its status and a message, and Redis is
/// byte for byte as it was.
#[test]
fn bad_requests_are_refused_before_redis_and_change_nothing() {
    let server = RedisServer::start();
    let file = campaign("bad").item("1", 5).write();
    preheat(&file, &server);
    let serve = Serve::start(
        &file,
        &server.url(),
        false,
        &["--header-timeout", "1s", "--body-timeout", "1s"],
    );
    let addr = serve.addr;
    let before = keys(&server);
    let json_type = [("Content-Type", "application/json")];
    let long = "x".repeat(129);
    let cases: Vec<Case> = vec![
        ("malformed JSON", b"{\"user\": ".to_vec(), &json_type, 400),
        (
            "unknown field",
            br#"{"user":"u","request_id":"r","price":1}"#.to_vec(),
            &json_type,
            400,
        ),
        (
            "no user",
            br#"{"request_id":"r"}"#.to_vec(),
            &json_type,
            400,
        ),
        (
            "no request id",
            br#"{"user":"u"}"#.to_vec(),
            &json_type,
            400,
        ),
        (
            "empty user",
            br#"{"user":"","request_id":"r"}"#.to_vec(),
            &json_type,
            400,
        ),
        (
            "control character",
            b"{\"user\":\"a\\u0007b\",\"request_id\":\"r\"}".to_vec(),
            &json_type,
            400,
        ),
        (
            "qty 0",
            br#"{"user":"u","qty":0,"request_id":"r"}"#.to_vec(),
            &json_type,
            400,
        ),
        (
            "qty over the limit",
            br#"{"user":"u","qty":2,"request_id":"r"}"#.to_vec(),
            &json_type,
            400,
        ),
        (
            "qty not a number",
            br#"{"user":"u","qty":"1","request_id":"r"}"#.to_vec(),
            &json_type,
            400,
        ),
        (
            "not JSON",
            br#"user=u"#.to_vec(),
            &[("Content-Type", "text/plain")],
            415,
        ),
        (
            "no content type",
            br#"{"user":"u","request_id":"r"}"#.to_vec(),
            &[],
            415,
        ),
        ("body too large", vec![b' '; 17 * 1024], &json_type, 413),
    ];
    for (what, body, headers, status) in cases {
        let answer = http::send(addr, "POST", "/v1/items/1/buy", headers, &body).unwrap();
        assert_eq!(answer.status, status, "{what}: {}", answer.body);
        assert!(
            answer.json()["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{what}: {}",
            answer.body
        );
    }
    let long_user = http::post(
        addr,
        "/v1/items/1/buy",
        &json!({"user": long, "request_id": "r"}),
    );
    assert_eq!(long_user.status, 400, "{}", long_user.body);
    let long_id = http::post(
        addr,
        "/v1/items/1/buy",
        &json!({"user": "u", "request_id": long}),
    );
    assert_eq!(long_id.status, 400, "{}", long_id.body);
    let unknown = http::buy(addr, "nope", "u", "r");
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    assert_eq!(http::get(addr, "/v2/anything").status, 404);
    assert_eq!(http::get(addr, "/v1/items/1/buy").status, 405);
    // The body promised 100 bytes and sends 10: 408 after --body-timeout.
    let slow_body = http::raw(
        addr,
        b"POST /v1/items/1/buy HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"user\":\"u",
    )
    .unwrap();
    assert_eq!(slow_body.status, 408, "{}", slow_body.body);
    // Headers that never end: the connection is dropped after --header-timeout.
    let mut slow = TcpStream::connect(addr).unwrap();
    slow.write_all(b"POST /v1/items/1/buy HTTP/1.1\r\nHost: t\r\n")
        .unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let started = Instant::now();
    let mut rest = Vec::new();
    let _ = std::io::Read::read_to_end(&mut slow, &mut rest);
    assert!(
        started.elapsed() < Duration::from_secs(9),
        "a slow client held the connection"
    );
    assert_eq!(keys(&server), before, "a refused request changed Redis");
}

#[test]
fn beyond_the_in_flight_limit_the_answer_is_503_with_retry_after() {
    let server = RedisServer::start();
    let file = campaign("busy").item("1", 5).write();
    preheat(&file, &server);
    let serve = Serve::start(&file, &server.url(), false, &["--max-in-flight", "1"]);
    assert_eq!(http::buy(serve.addr, "1", "warm", "w").status, 200);
    let frozen = Frozen::new(&mut server.conn());
    std::thread::scope(|scope| {
        let held = scope.spawn(|| http::buy(serve.addr, "1", "held", "h"));
        std::thread::sleep(Duration::from_millis(300));
        let refused = http::buy(serve.addr, "1", "next", "n");
        assert_eq!(refused.status, 503, "{}", refused.body);
        assert_eq!(refused.json()["error"]["kind"], "overloaded");
        assert_eq!(refused.header("Retry-After"), Some("1"));
        drop(frozen);
        assert_eq!(held.join().unwrap().status, 200);
    });
}

/// `threads` clients send one attempt each for users 0..attempts (the same
/// request id per user), at once; the answers by user.
fn storm(
    addr: std::net::SocketAddr,
    item: &str,
    attempts: usize,
    threads: usize,
) -> HashMap<String, Answer> {
    let answers = Mutex::new(HashMap::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if n >= attempts {
                        break;
                    }
                    let user = format!("u{n}");
                    let answer = http::buy(addr, item, &user, &format!("r-{user}"));
                    answers.lock().unwrap().insert(user, answer);
                }
            });
        }
    });
    answers.into_inner().unwrap()
}

fn exactly_the_stock(answers: &HashMap<String, Answer>, stock: usize) {
    let oks = answers.values().filter(|a| a.status == 200).count();
    let sold_out = answers.values().filter(|a| a.status == 410).count();
    assert_eq!(oks, stock, "ok answers");
    assert_eq!(
        oks + sold_out,
        answers.len(),
        "every other answer is sold_out"
    );
    let orders: HashSet<String> = answers
        .values()
        .filter(|a| a.status == 200)
        .map(|a| a.json()["order_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(orders.len(), stock, "distinct orders");
}

fn same_request_from_twenty_clients(addr: std::net::SocketAddr, item: &str) -> String {
    let answers: Vec<Answer> = std::thread::scope(|scope| {
        let clients: Vec<_> = (0..20)
            .map(|_| scope.spawn(|| http::buy(addr, item, "twin", "the-same-id")))
            .collect();
        clients.into_iter().map(|c| c.join().unwrap()).collect()
    });
    let orders: HashSet<String> = answers
        .iter()
        .map(|a| {
            assert_eq!(a.status, 200, "{}", a.body);
            a.json()["order_id"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(orders.len(), 1, "20 clients, one request id: one order");
    orders.into_iter().next().unwrap()
}

#[test]
fn two_thousand_concurrent_http_buys_sell_exactly_the_stock() {
    let server = RedisServer::start();
    let file = campaign("storm")
        .per_user_limit(1)
        .item("1", 50)
        .item("twin", 5)
        .write();
    preheat(&file, &server);
    let serve = Serve::start(&file, &server.url(), false, &[]);
    let answers = storm(serve.addr, "1", 2000, 64);
    exactly_the_stock(&answers, 50);
    let mut conn = server.conn();
    let left: i64 = conn.get("seckill:{storm:1}:stock").unwrap();
    let entries: i64 = conn.xlen("seckill:{storm:1}:orders").unwrap();
    assert_eq!((left, entries), (0, 50));
    same_request_from_twenty_clients(serve.addr, "twin");
    seckill(&["consume", "--drain"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    seckill(&["reconcile"])
        .campaign(&file)
        .redis(&server)
        .fails_with(SUCCESS);
}

#[test]
fn two_thousand_concurrent_http_buys_on_eight_buckets_sell_exactly_the_stock() {
    let cluster = RedisCluster::start();
    let file = campaign("bstorm")
        .per_user_limit(1)
        .item("hot", 50)
        .buckets(8)
        .item("twin", 8)
        .buckets(8)
        .write();
    seckill(&["preheat"])
        .campaign(&file)
        .cluster(&cluster)
        .succeeds();
    let serve = Serve::start(&file, &cluster.urls(), true, &[]);
    let answers = storm(serve.addr, "hot", 2000, 64);
    exactly_the_stock(&answers, 50);
    same_request_from_twenty_clients(serve.addr, "twin");
    let status = seckill(&["status", "--item", "hot"])
        .campaign(&file)
        .cluster(&cluster)
        .json()
        .succeeds()
        .json();
    let item = &status["items"][0];
    assert_eq!(
        (
            item["stock_left"].as_i64(),
            item["stream"]["length"].as_i64()
        ),
        (Some(0), Some(50)),
        "{item}"
    );
    seckill(&["consume", "--drain"])
        .campaign(&file)
        .cluster(&cluster)
        .succeeds();
    seckill(&["reconcile"])
        .campaign(&file)
        .cluster(&cluster)
        .fails_with(SUCCESS);
}

/// SIGKILL of `serve` while a storm runs: an attempt whose client saw no
/// reply, retried with its request id through a new instance, gets the
/// outcome Redis recorded for it; nothing is oversold.
#[test]
fn sigkill_of_serve_mid_storm_loses_nothing_and_retries_resolve() {
    let server = RedisServer::start();
    let stock = 100;
    let file = campaign("kill").per_user_limit(1).item("1", stock).write();
    preheat(&file, &server);
    let first = Serve::start(&file, &server.url(), false, &[]);
    let addr = first.addr;
    let unanswered = Mutex::new(Vec::new());
    let answered = Mutex::new(HashMap::new());
    std::thread::scope(|scope| {
        for t in 0..32 {
            let (unanswered, answered) = (&unanswered, &answered);
            scope.spawn(move || {
                for n in 0..40 {
                    let user = format!("k{t}-{n}");
                    let body = json!({"user": user, "request_id": format!("r-{user}")});
                    match http::send(
                        addr,
                        "POST",
                        "/v1/items/1/buy",
                        &[("Content-Type", "application/json")],
                        body.to_string().as_bytes(),
                    ) {
                        Ok(answer) => {
                            answered.lock().unwrap().insert(user, answer);
                        }
                        Err(_) => unanswered.lock().unwrap().push(user),
                    }
                }
            });
        }
        std::thread::sleep(Duration::from_millis(150));
        first.stop("-KILL");
    });
    let unanswered = unanswered.into_inner().unwrap();
    let answered = answered.into_inner().unwrap();
    assert!(
        !unanswered.is_empty(),
        "the kill came after the storm: no attempt was cut"
    );
    let second = Serve::start(&file, &server.url(), false, &[]);
    let mut conn = server.conn();
    for user in &unanswered {
        let retry = http::buy(second.addr, "1", user, &format!("r-{user}"));
        let bought: Option<i64> = conn.hget("seckill:{kill:1}:buyers", user).unwrap();
        let remembered: Option<String> = conn
            .hget(
                "seckill:{kill:1}:requests",
                format!("{}:{user}:r-{user}", user.len()),
            )
            .unwrap();
        match remembered {
            Some(order) => {
                assert_eq!(
                    (retry.status, outcome(&retry)),
                    (200, "ok".into()),
                    "{user}: {}",
                    retry.body
                );
                assert_eq!(
                    retry.json()["order_id"].as_str(),
                    order.split(':').next(),
                    "{user}"
                );
            }
            None => assert!(
                matches!(retry.status, 200 | 410),
                "{user}: an unbought attempt is decided afresh: {}",
                retry.body
            ),
        }
        assert!(bought.unwrap_or(0) <= 1, "{user} bought twice");
    }
    let left: i64 = conn.get("seckill:{kill:1}:stock").unwrap();
    let entries: i64 = conn.xlen("seckill:{kill:1}:orders").unwrap();
    let buyers: i64 = conn.hlen("seckill:{kill:1}:buyers").unwrap();
    assert!(left >= 0, "oversold");
    assert_eq!(entries, stock - left, "every unit sold has its order");
    assert_eq!(buyers, entries, "one order per buyer");
    let oks = answered.values().filter(|a| a.status == 200).count() as i64;
    assert!(oks <= entries, "more ok answers than orders");
}

fn evalsha_calls(server: &RedisServer) -> i64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut server.conn())
        .unwrap();
    info.lines()
        .find(|l| l.starts_with("cmdstat_evalsha:"))
        .and_then(|l| l.split("calls=").nth(1))
        .and_then(|v| v.split(',').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Wait (10 s at most) until `serve` refuses a newcomer's attempt on `item`
/// from memory: it has learned the sell-out and read the buyers.
fn until_refused_from_memory(serve: &Serve, item: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !http::buy(serve.addr, item, "probe", "p").json()["from_cache"]
        .as_bool()
        .unwrap_or(false)
    {
        assert!(
            Instant::now() < deadline,
            "the cache never learned the sell-out"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn after_the_sell_out_attempts_are_refused_from_memory_with_no_script_call() {
    let server = RedisServer::start();
    let file = campaign("memo").item("1", 3).write();
    preheat(&file, &server);
    let serve = Serve::start(&file, &server.url(), false, &["--recheck", "50ms"]);
    let mut orders = HashMap::new();
    for user in ["a", "b", "c"] {
        let bought = http::buy(serve.addr, "1", user, &format!("r-{user}"));
        assert_eq!(bought.status, 200);
        orders.insert(user, bought.json()["order_id"].clone());
    }
    // Until the cache has read the buyers, attempts still go to Redis.
    until_refused_from_memory(&serve, "1");
    let () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut server.conn())
        .unwrap();
    for n in 0..200 {
        let answer = http::buy(serve.addr, "1", &format!("late{n}"), &format!("l{n}"));
        assert_eq!((answer.status, outcome(&answer)), (410, "sold_out".into()));
        assert_eq!(answer.json()["from_cache"], true);
    }
    assert_eq!(
        evalsha_calls(&server),
        0,
        "a refusal from memory ran a script"
    );
    // A buyer's retry is never refused from memory: it gets its order back.
    let retry = http::buy(serve.addr, "1", "b", "r-b");
    assert_eq!(
        (retry.status, outcome(&retry)),
        (200, "ok".into()),
        "{}",
        retry.body
    );
    assert_eq!(retry.json()["order_id"], orders["b"]);
    let metrics = http::get(serve.addr, "/metrics").body;
    let hits: u64 = metrics
        .lines()
        .find_map(|l| {
            l.strip_prefix(
                "seckill_serve_cache_hits_total{campaign=\"memo\",outcome=\"sold_out\"} ",
            )
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    assert!(hits >= 200, "{metrics}");
}

/// A `serve` process stopped with SIGSTOP (it answers nothing and refreshes
/// nothing), resumed with SIGCONT on drop — even when an assertion fails.
struct Paused(String);

impl Paused {
    fn new(serve: &Serve) -> Paused {
        let pid = serve.pid().to_string();
        let status = std::process::Command::new("kill")
            .args(["-STOP", &pid])
            .status()
            .unwrap();
        assert!(status.success(), "kill -STOP {pid}");
        Paused(pid)
    }
}

impl Drop for Paused {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-CONT", &self.0])
            .status();
    }
}

/// Issue 25 item 30: the cache held the buyers it read when the item sold
/// out for as long as the sell-out and the window looked the same at each
/// refresh. A unit released and bought again between two refreshes (through
/// another door) left the new buyer out, and that buyer's retry with its own
/// request id was answered `sold_out` from memory for as long as the item
/// stayed sold out. The buyers are read again once the item's orders moved.
#[test]
fn a_buyer_who_bought_through_another_door_gets_its_order_back_from_serve() {
    let server = RedisServer::start();
    let file = campaign("again")
        .payment_timeout("10m")
        .item("1", 1)
        .write();
    preheat(&file, &server);
    let serve = Serve::start(&file, &server.url(), false, &["--recheck", "100ms"]);
    let first = http::buy(serve.addr, "1", "a", "ra");
    assert_eq!(first.status, 200, "{}", first.body);
    let order = first.json()["order_id"].as_str().unwrap().to_string();
    until_refused_from_memory(&serve, "1");
    // Between two of serve's refreshes (it is stopped: no refresh runs), the
    // unit comes back and x buys it through the command line.
    let bought = {
        let _paused = Paused::new(&serve);
        let cli = |args: &[&str]| seckill(args).campaign(&file).redis(&server);
        cli(&["cancel", "--item", "1", "--order", &order]).succeeds();
        cli(&["buy", "--item", "1", "--user", "x", "--request-id", "rx"])
            .json()
            .succeeds()
            .json()
    };
    // Refreshes run again: the sell-out and the window look as before.
    std::thread::sleep(Duration::from_millis(600));
    let retry = http::buy(serve.addr, "1", "x", "rx");
    assert_eq!(
        (retry.status, outcome(&retry)),
        (200, "ok".into()),
        "x's retry with its own request id: {}",
        retry.body
    );
    assert_eq!(
        retry.json()["order_id"],
        bought["order_id"],
        "{}",
        retry.body
    );
    assert_ne!(retry.json()["from_cache"], json!(true), "{}", retry.body);
    // Non-buyers are still refused from memory.
    let late = http::buy(serve.addr, "1", "late", "l");
    assert_eq!(
        (late.status, late.json()["from_cache"].clone()),
        (410, json!(true))
    );
}

fn reservation_sale(token: &std::path::Path) -> (CampaignSpec, Vec<String>) {
    let spec = campaign("back").payment_timeout("10m").item("1", 1);
    (
        spec,
        vec!["--operator-token-file".into(), token.display().to_string()],
    )
}

/// A reservation released (cancelled through the operator endpoint) puts
/// its unit back on sale: through serve it sells again within --recheck
/// (the bound docs/serve.md states) plus a round trip.
#[test]
fn a_released_unit_sells_again_through_serve_within_the_recheck_bound() {
    let server = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "operator-token-0123456789\n").unwrap();
    let (spec, extra) = reservation_sale(&token);
    let file = spec.write();
    preheat(&file, &server);
    let recheck = Duration::from_millis(100);
    let mut args: Vec<&str> = extra.iter().map(String::as_str).collect();
    args.extend(["--recheck", "100ms"]);
    let serve = Serve::start(&file, &server.url(), false, &args);
    let reserved = http::buy(serve.addr, "1", "first", "f");
    assert_eq!(reserved.status, 200, "{}", reserved.body);
    let order = reserved.json()["order_id"].as_str().unwrap().to_string();
    until_refused_from_memory(&serve, "1");
    // The operator endpoints need the token, and are refused without it.
    let without = http::post(
        serve.addr,
        &format!("/v1/orders/{order}/cancel"),
        &json!({}),
    );
    assert_eq!(without.status, 401, "{}", without.body);
    let cancelled = http::send(
        serve.addr,
        "POST",
        &format!("/v1/orders/{order}/cancel"),
        &[
            ("Content-Type", "application/json"),
            ("Authorization", "Bearer operator-token-0123456789"),
        ],
        br#"{"reason": "changed her mind"}"#,
    )
    .unwrap();
    assert_eq!(cancelled.status, 200, "{}", cancelled.body);
    assert_eq!(cancelled.json()["outcome"], "cancelled");
    let released = Instant::now();
    let mut n = 0;
    let sold_again = loop {
        n += 1;
        let answer = http::buy(serve.addr, "1", &format!("next{n}"), &format!("n{n}"));
        if answer.status == 200 {
            break released.elapsed();
        }
        assert!(
            released.elapsed() < Duration::from_secs(5),
            "the released unit never sold again"
        );
    };
    eprintln!(
        "a released unit sold again through serve after {sold_again:?} (--recheck {recheck:?})"
    );
    assert!(
        sold_again < recheck * 10,
        "sold again after {sold_again:?}, beyond the bound of --recheck {recheck:?} and a round trip"
    );
}

#[test]
fn operator_endpoints_are_off_without_a_token_file() {
    let server = RedisServer::start();
    let file = campaign("off").payment_timeout("10m").item("1", 1).write();
    preheat(&file, &server);
    let serve = Serve::start(&file, &server.url(), false, &[]);
    let answer = http::send(
        serve.addr,
        "POST",
        "/v1/orders/anything/pay",
        &[("Authorization", "Bearer whatever-it-is-here")],
        b"",
    )
    .unwrap();
    assert_eq!(answer.status, 404, "{}", answer.body);
}

#[test]
fn the_order_lookup_says_ok_none_or_the_reservation_state() {
    let server = RedisServer::start();
    let file = campaign("look")
        .payment_timeout("10m")
        .item("1", 3)
        .item("hot", 8)
        .buckets(4)
        .write();
    preheat(&file, &server);
    let serve = Serve::start(&file, &server.url(), false, &[]);
    for item in ["1", "hot"] {
        let bought = http::buy(serve.addr, item, "ann", "a1");
        assert_eq!(bought.status, 200, "{}", bought.body);
        let order = bought.json()["order_id"].clone();
        let found = http::get(
            serve.addr,
            &format!("/v1/items/{item}/orders/ann?request_id=a1"),
        )
        .json();
        assert_eq!(found["result"], "ok", "{found}");
        assert_eq!(found["order_id"], order);
        assert_eq!(found["request_order_id"], order);
        assert_eq!(found["state"], "reserved");
        assert!(found["deadline_ms"].as_i64().is_some(), "{found}");
        let none = http::get(
            serve.addr,
            &format!("/v1/items/{item}/orders/nobody?request_id=x"),
        )
        .json();
        assert_eq!(none["result"], "none", "{none}");
    }
    assert_eq!(
        http::get(serve.addr, "/v1/items/nope/orders/ann").status,
        404
    );
    assert_eq!(http::get(serve.addr, "/healthz").status, 200);
}

#[test]
fn sigterm_lets_requests_in_flight_finish_and_exits_zero() {
    let server = RedisServer::start();
    let file = campaign("term").item("1", 5).write();
    preheat(&file, &server);
    let serve = Serve::start(&file, &server.url(), false, &["--shutdown-grace", "5s"]);
    let addr = serve.addr;
    assert_eq!(http::buy(addr, "1", "warm", "w").status, 200);
    let frozen = Frozen::new(&mut server.conn());
    std::thread::scope(|scope| {
        let held = scope.spawn(|| http::buy(addr, "1", "held", "h"));
        std::thread::sleep(Duration::from_millis(300));
        let pid = serve.pid().to_string();
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err(),
            "still accepting after SIGTERM"
        );
        drop(frozen);
        let answer = held.join().unwrap();
        assert_eq!(
            (answer.status, outcome(&answer)),
            (200, "ok".into()),
            "{}",
            answer.body
        );
    });
    let log = serve.log.lock().unwrap().clone();
    assert!(log.contains("stopping: no new connections"), "{log}");
    assert_eq!(serve.stop("-0"), Some(0), "serve exits 0 after a SIGTERM");
}

/// `loadtest --target`: a rehearsal through the front door sells exactly
/// the stock and reports the same outcome table.
#[test]
fn loadtest_through_serve_sells_exactly_the_stock() {
    let server = RedisServer::start();
    let file = campaign("door").item("1", 20).write();
    preheat(&file, &server);
    let serve = Serve::start(&file, &server.url(), false, &[]);
    let target = format!("http://{}", serve.addr);
    for pace in [&[][..], &["--rate", "400"][..]] {
        let report = seckill(&[
            "loadtest",
            "--target",
            &target,
            "--rehearsal",
            "--requests",
            "200",
            "--connections",
            "8",
        ])
        .args(pace)
        .campaign(&file)
        .json()
        .succeeds()
        .json();
        let run = &report["target"];
        assert_eq!(run["completed"], 200, "{run}");
        assert_eq!(run["errors"], 0, "{run}");
        let sold = run["succeeded"].as_u64().unwrap();
        assert_eq!(
            sold + run["sold_out"].as_u64().unwrap() + run["rejected"].as_u64().unwrap(),
            200
        );
        assert_eq!(run["mode"], if pace.is_empty() { "closed" } else { "open" });
    }
    let left: i64 = server.conn().get("seckill:{door:1}:stock").unwrap();
    let entries: i64 = server.conn().xlen("seckill:{door:1}:orders").unwrap();
    assert_eq!(
        (left, entries),
        (0, 20),
        "the rehearsal sold exactly the stock"
    );
    let refused = seckill(&["loadtest", "--target", "https://x:1"])
        .campaign(&file)
        .fails_with(seckill::model::exit_codes::USAGE_ERROR);
    assert!(
        refused.stderr().contains("http://HOST:PORT"),
        "{}",
        refused.describe()
    );
}
