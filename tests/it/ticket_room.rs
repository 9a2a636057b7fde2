//! The ticket waiting room (docs/waiting-room.md, "Ticket mode"), through
//! real `serve` processes on a real Redis: joins and polls cost Redis
//! nothing, the cursor admits in arrival order at the rate and stops on a
//! pause, every bad ticket is `not_queued` with nothing written, and a
//! killed or frozen instance stops nothing.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use redis::Commands;
use serde_json::json;
use sha2::Digest;

use crate::support::http::{self, Answer};
use crate::support::serve::Serve;
use crate::support::spec::{campaign, seckill};
use crate::support::{CampaignFile, RedisServer};

const ITEM: &str = "t1";

/// A campaign with one ticket-room item, its secret file, preheated.
fn ticket_sale(server: &RedisServer, id: &str, stock: i64, rate: &str) -> (CampaignFile, String) {
    let file = campaign(id)
        .item(ITEM, stock)
        .room(&format!(
            "{{ mode: ticket, admit_rate: {rate}, admission_ttl: 2m }}"
        ))
        .write();
    let key = file.room_key_file();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(server)
        .succeeds();
    (file, key)
}

fn serve(file: &CampaignFile, server: &RedisServer, key: &str, extra: &[&str]) -> Serve {
    let mut args = vec!["--room-key-file", key];
    args.extend_from_slice(extra);
    Serve::start(file, &server.url(), false, &args)
}

fn join(serve: &Serve, user: &str) -> Answer {
    http::post(
        serve.addr,
        &format!("/v1/items/{ITEM}/queue"),
        &json!({"user": user}),
    )
}

fn poll(serve: &Serve, user: &str, ticket: &str) -> Answer {
    http::send(
        serve.addr,
        "GET",
        &format!("/v1/items/{ITEM}/queue/{user}"),
        &[("Seckill-Ticket", ticket)],
        b"",
    )
    .unwrap()
}

fn buy(serve: &Serve, user: &str, ticket: Option<&str>, request_id: &str) -> Answer {
    let mut headers = vec![("Content-Type", "application/json")];
    if let Some(ticket) = ticket {
        headers.push(("Seckill-Ticket", ticket));
    }
    http::send(
        serve.addr,
        "POST",
        &format!("/v1/items/{ITEM}/buy"),
        &headers,
        json!({"user": user, "qty": 1, "request_id": request_id})
            .to_string()
            .as_bytes(),
    )
    .unwrap()
}

fn ticket_of(answer: &Answer) -> String {
    answer.json()["ticket"]
        .as_str()
        .unwrap_or_else(|| panic!("no ticket in {}", answer.body))
        .to_string()
}

/// Calls of every script (EVALSHA/EVAL) Redis ran so far.
fn script_calls(conn: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query(conn).unwrap();
    info.lines()
        .filter(|l| l.starts_with("cmdstat_evalsha:") || l.starts_with("cmdstat_eval:"))
        .filter_map(|l| {
            l.split([':', ','])
                .find_map(|kv| kv.strip_prefix("calls="))
                .and_then(|n| n.parse::<u64>().ok())
        })
        .sum()
}

fn room_key(id: &str) -> String {
    format!("seckill:{{{id}:{ITEM}}}:room")
}

fn room_field(conn: &mut redis::Connection, id: &str, field: &str) -> i64 {
    let value: Option<String> = conn.hget(room_key(id), field).unwrap();
    value.and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// Redis time, Unix ms.
fn redis_ms(conn: &mut redis::Connection) -> i64 {
    let (s, us): (i64, i64) = redis::cmd("TIME").query(conn).unwrap();
    s * 1000 + us / 1000
}

/// Poll `user` until admitted (at most `limit`).
fn until_admitted(serve: &Serve, user: &str, ticket: &str, limit: Duration) -> serde_json::Value {
    let deadline = Instant::now() + limit;
    loop {
        let line = poll(serve, user, ticket).json();
        if line["state"] == "admitted" || Instant::now() > deadline {
            return line;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn joins_and_polls_cost_redis_nothing_but_the_beats() {
    let server = RedisServer::start();
    let (file, key) = ticket_sale(&server, "tk-calls", 10, "100000/s");
    let serves: Vec<Serve> = (0..4)
        .map(|_| serve(&file, &server, &key, &["--recheck", "1h"]))
        .collect();
    let mut conn = server.conn();
    let before = script_calls(&mut conn);
    let started = Instant::now();
    let workers: Vec<_> = serves
        .iter()
        .enumerate()
        .map(|(n, s)| {
            let addr = s.addr;
            std::thread::spawn(move || {
                let mut tickets = Vec::new();
                for u in 0..500 {
                    let user = format!("u{n}-{u}");
                    let answer = http::post(
                        addr,
                        &format!("/v1/items/{ITEM}/queue"),
                        &json!({"user": user}),
                    );
                    assert_eq!(answer.status, 200, "{}", answer.body);
                    tickets.push((user, ticket_of(&answer)));
                }
                tickets
            })
        })
        .collect();
    let tickets: Vec<Vec<(String, String)>> =
        workers.into_iter().map(|w| w.join().unwrap()).collect();
    let joins_took = started.elapsed();
    let during_joins = script_calls(&mut conn) - before;
    // Beats only: each instance beats at most every 100 ms (one script per
    // room), plus one in flight at either end.
    let beats = 4 * (joins_took.as_millis() as u64 / 100 + 2);
    println!(
        "2000 joins over 4 instances in {joins_took:?}: {during_joins} script calls \
         (beats allowed: {beats})"
    );
    assert!(during_joins <= beats, "{during_joins} > {beats}");

    let before_polls = script_calls(&mut conn);
    let started = Instant::now();
    for (n, list) in tickets.iter().enumerate() {
        for (user, ticket) in list.iter().take(250) {
            // Polled at another instance than the one that signed it.
            let answer = poll(&serves[(n + 1) % 4], user, ticket);
            assert_eq!(answer.status, 200, "{}", answer.body);
            assert!(["waiting", "admitted"].contains(&answer.json()["state"].as_str().unwrap()));
        }
    }
    let polls_took = started.elapsed();
    let during_polls = script_calls(&mut conn) - before_polls;
    let beats = 4 * (polls_took.as_millis() as u64 / 100 + 2);
    println!("1000 polls in {polls_took:?}: {during_polls} script calls (beats allowed: {beats})");
    assert!(during_polls <= beats, "{during_polls} > {beats}");
    // Every ticket was counted in Redis by its instance's beats.
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(room_field(&mut conn, "tk-calls", "arrived_total"), 2000);
}

#[test]
fn admission_follows_arrival_across_instances() {
    let server = RedisServer::start();
    let (file, key) = ticket_sale(&server, "tk-order", 100, "50/s");
    let a = serve(&file, &server, &key, &[]);
    let b = serve(&file, &server, &key, &[]);
    let mut conn = server.conn();
    let mut joined = Vec::new();
    let mut epsilon = 0i64;
    for n in 0..40 {
        let at = if n % 2 == 0 { &a } else { &b };
        let sent = redis_ms(&mut conn);
        let answer = join(at, &format!("o{n}"));
        let received = redis_ms(&mut conn);
        let arrival = answer.json()["arrival_ms"].as_i64().unwrap();
        epsilon = epsilon.max(sent - arrival).max(arrival - received);
        joined.push((format!("o{n}"), ticket_of(&answer), arrival));
        std::thread::sleep(Duration::from_millis(5));
    }
    println!("clock error ε between the instances and Redis: {epsilon} ms");
    assert!(epsilon <= 5, "ε {epsilon} ms");
    // Arrival order is the order the joins were sent: τ-b = 1.
    assert!(joined.windows(2).all(|w| w[0].2 < w[1].2), "{joined:?}");
    // Each admitted no earlier than anyone who arrived before it.
    let mut admitted = Vec::new();
    for (user, ticket, _) in &joined {
        let line = until_admitted(&a, user, ticket, Duration::from_secs(10));
        assert_eq!(line["state"], "admitted", "{line}");
        admitted.push(line["admitted_from_ms"].as_i64().unwrap());
    }
    assert!(admitted.windows(2).all(|w| w[0] <= w[1]), "{admitted:?}");
}

/// Sample (Redis ms, admitted_total) every 20 ms for `span`.
fn sample(conn: &mut redis::Connection, id: &str, span: Duration) -> Vec<(i64, i64)> {
    let end = Instant::now() + span;
    let mut samples = Vec::new();
    while Instant::now() < end {
        samples.push((redis_ms(conn), room_field(conn, id, "admitted_total")));
        std::thread::sleep(Duration::from_millis(20));
    }
    samples
}

#[test]
fn the_cursor_admits_at_the_rate_after_an_idle_opening_and_stops_on_a_pause() {
    let server = RedisServer::start();
    let (file, key) = ticket_sale(&server, "tk-rate", 100_000, "500/s");
    let door = serve(&file, &server, &key, &["--recheck", "1h"]);
    let mut conn = server.conn();
    // The room is open and idle: nothing may be banked for the crowd.
    std::thread::sleep(Duration::from_secs(60));
    let addr = door.addr;
    let crowd: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                for u in 0..2_500 {
                    let answer = http::post(
                        addr,
                        &format!("/v1/items/{ITEM}/queue"),
                        &json!({"user": format!("c{t}-{u}")}),
                    );
                    assert_eq!(answer.status, 200, "{}", answer.body);
                }
            })
        })
        .collect();
    let samples = sample(&mut conn, "tk-rate", Duration::from_secs(12));
    for c in crowd {
        c.join().unwrap();
    }
    let arrived = room_field(&mut conn, "tk-rate", "arrived_total");
    assert!(arrived > 6_000, "the crowd was too thin: {arrived}");
    // The largest bucket counted: the one whole bucket the budget may overdraw.
    let counts: BTreeMap<String, String> = conn
        .hgetall(format!("seckill:{{tk-rate:{ITEM}}}:arrival_counts"))
        .unwrap();
    let bucket = counts
        .values()
        .filter_map(|n| n.parse::<i64>().ok())
        .max()
        .unwrap_or(0)
        .max(60);
    let first = samples.iter().find(|(_, n)| *n > 0).copied().unwrap();
    let mut most = 0;
    let mut from_first = 0;
    for (i, (t0, n0)) in samples.iter().enumerate() {
        for (t1, n1) in &samples[i..] {
            if t1 - t0 <= 10_000 {
                most = most.max(n1 - n0);
            }
        }
        if *t0 == first.0 {
            from_first = samples
                .iter()
                .filter(|(t, _)| t - t0 <= 10_000)
                .map(|(_, n)| n - n0)
                .max()
                .unwrap();
        }
    }
    println!(
        "500/s after 60 s idle: {from_first} admitted in the 10 s from the first admission, \
         at most {most} in any 10 s window (a bucket holds up to {bucket})"
    );
    assert!(most <= 5_100 + bucket, "{most} admitted in 10 s");
    assert!(
        from_first >= 4_900 - bucket,
        "{from_first} admitted in 10 s"
    );

    // A pause stops the cursor at once; a resume moves it again.
    seckill(&["queue", "pause"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let paused = sample(&mut conn, "tk-rate", Duration::from_secs(2));
    assert_eq!(
        paused.first().unwrap().1,
        paused.last().unwrap().1,
        "{paused:?}"
    );
    seckill(&["queue", "resume"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let resumed = sample(&mut conn, "tk-rate", Duration::from_secs(1));
    assert!(resumed.last().unwrap().1 > paused.last().unwrap().1);
}

/// Every key but the beats' own bookkeeping (the room hash, marks, passes,
/// arrivals): what a buy could write.
fn sale_keys(conn: &mut redis::Connection, id: &str) -> BTreeMap<String, Vec<u8>> {
    let keys: Vec<String> = conn.keys(format!("seckill:{{{id}:*")).unwrap();
    keys.into_iter()
        .filter(|k| {
            // (and the operator's revocation, written on purpose)
            ![
                ":room",
                ":marks",
                ":passes",
                ":arrivals",
                ":arrival_counts",
                ":revoked",
            ]
            .iter()
            .any(|suffix| k.ends_with(suffix))
        })
        .map(|k| {
            let dump: Vec<u8> = redis::cmd("DUMP").arg(&k).query(conn).unwrap();
            (k, dump)
        })
        .collect()
}

#[test]
fn bad_tickets_are_not_queued_and_write_nothing() {
    let server = RedisServer::start();
    let (file, key) = ticket_sale(&server, "tk-bad", 5, "1000/s");
    let door = serve(&file, &server, &key, &[]);
    let mut conn = server.conn();
    let alice = ticket_of(&join(&door, "alice"));
    until_admitted(&door, "alice", &alice, Duration::from_secs(5));
    // Altered: another arrival under the same tag.
    let mut parts: Vec<String> = alice.split('.').map(str::to_string).collect();
    let payload = String::from_utf8(
        base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, &parts[1])
            .unwrap(),
    )
    .unwrap();
    let arrival = serde_json::from_str::<serde_json::Value>(&payload).unwrap()["a"]
        .as_i64()
        .unwrap();
    parts[1] = base64::Engine::encode(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        payload.replace(&arrival.to_string(), &(arrival - 60_000).to_string()),
    );
    let altered = parts.join(".");
    // Forged: signed with another secret.
    let forger = campaign("tk-bad")
        .item(ITEM, 5)
        .room("{ mode: ticket, admit_rate: 1000/s }")
        .write();
    let forged_key = forger.dir.path().join("room.key");
    std::fs::write(&forged_key, "another-secret-of-at-least-32-bytes-long").unwrap();
    let forged = seckill(&[
        "queue",
        "join",
        "--item",
        ITEM,
        "--user",
        "alice",
        "--room-key-file",
        forged_key.to_str().unwrap(),
    ])
    .campaign(&forger)
    .redis(&server)
    .json()
    .succeeds()
    .json()["tickets"][0]["ticket"]
        .as_str()
        .unwrap()
        .to_string();
    let before = sale_keys(&mut conn, "tk-bad");
    for (case, user, ticket) in [
        ("no ticket", "alice", None),
        ("altered", "alice", Some(altered.as_str())),
        ("forged", "alice", Some(forged.as_str())),
        ("another user's", "bob", Some(alice.as_str())),
    ] {
        let answer = buy(&door, user, ticket, &format!("r-{case}"));
        assert_eq!(answer.status, 428, "{case}: {}", answer.body);
        assert_eq!(answer.json()["outcome"], "not_queued", "{case}");
    }
    // Another item's: a ticket for item t2 presented on item t3.
    let two = campaign("tk-bad2")
        .item("t2", 5)
        .item("t3", 5)
        .field("waiting_room", "{ mode: ticket, admit_rate: 1000/s }")
        .write();
    let two_key = two.dir.path().join("room.key");
    std::fs::copy(&key, &two_key).unwrap();
    seckill(&["preheat"])
        .campaign(&two)
        .redis(&server)
        .succeeds();
    let door2 = serve(&two, &server, two_key.to_str().unwrap(), &[]);
    let t2 = ticket_of(&http::post(
        door2.addr,
        "/v1/items/t2/queue",
        &json!({"user": "alice"}),
    ));
    std::thread::sleep(Duration::from_millis(400));
    let before2 = sale_keys(&mut conn, "tk-bad2");
    let answer = http::send(
        door2.addr,
        "POST",
        "/v1/items/t3/buy",
        &[
            ("Content-Type", "application/json"),
            ("Seckill-Ticket", &t2),
        ],
        json!({"user": "alice", "qty": 1, "request_id": "x"})
            .to_string()
            .as_bytes(),
    )
    .unwrap();
    assert_eq!(answer.status, 428, "another item's: {}", answer.body);
    assert_eq!(sale_keys(&mut conn, "tk-bad2"), before2);
    drop(door2);
    // Revoked: the door's own key, revoked by the operator.
    let key_id = door
        .log
        .lock()
        .unwrap()
        .split("signs as key ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap()
        .to_string();
    seckill(&["queue", "revoke-key", "--key-id", &key_id])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    std::thread::sleep(Duration::from_millis(300));
    let answer = buy(&door, "alice", Some(&alice), "r-revoked");
    assert_eq!(answer.status, 428, "revoked: {}", answer.body);
    // The buy script refuses it too, whoever verified the tag.
    let cli = seckill(&[
        "buy",
        "--item",
        ITEM,
        "--user",
        "alice",
        "--ticket",
        &alice,
        "--room-key-file",
        &key,
    ])
    .campaign(&file)
    .redis(&server)
    .json()
    .runs();
    assert_eq!(cli.json()["outcome"], "not_queued", "{}", cli.describe());
    // Nothing a sale writes was written by any refusal, and the door's
    // refusals ran no buy script at all (only beats and the CLI's one buy).
    assert_eq!(sale_keys(&mut conn, "tk-bad"), before);
    let stock: i64 = conn
        .get(format!("seckill:{{tk-bad:{ITEM}}}:stock"))
        .unwrap();
    assert_eq!(stock, 5);
}

#[test]
fn a_killed_or_frozen_instance_stops_nothing() {
    let server = RedisServer::start();
    let (file, key) = ticket_sale(&server, "tk-kill", 300, "200/s");
    let a = serve(&file, &server, &key, &[]);
    let b = serve(&file, &server, &key, &[]);
    let mut conn = server.conn();
    let mut held = Vec::new();
    for n in 0..200 {
        let at = if n % 2 == 0 { &a } else { &b };
        let user = format!("k{n}");
        held.push((user.clone(), ticket_of(&join(at, &user))));
    }
    // Frozen for 3 s: dropped after a second, the cursor goes on.
    let stop = |signal: &str, pid: u32| {
        std::process::Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .unwrap();
    };
    stop("-STOP", b.pid());
    let frozen_at = room_field(&mut conn, "tk-kill", "cursor_ms");
    std::thread::sleep(Duration::from_millis(2_000));
    let moved = room_field(&mut conn, "tk-kill", "cursor_ms");
    stop("-CONT", b.pid());
    assert!(
        moved > frozen_at + 500,
        "cursor {frozen_at} → {moved} while b was frozen"
    );
    // Killed: the same within 2 s.
    let killed_at = room_field(&mut conn, "tk-kill", "cursor_ms");
    let late_before = room_field(&mut conn, "tk-kill", "late_total");
    b.stop("-KILL");
    std::thread::sleep(Duration::from_millis(2_000));
    let moved = room_field(&mut conn, "tk-kill", "cursor_ms");
    assert!(
        moved > killed_at + 500,
        "cursor {killed_at} → {moved} after b died"
    );
    // Everyone holding a ticket buys through the survivor: stock exact.
    let mut sold = 0;
    for (user, ticket) in &held {
        let line = until_admitted(&a, user, ticket, Duration::from_secs(10));
        assert_eq!(line["state"], "admitted", "{line}");
        let answer = buy(&a, user, Some(ticket), &format!("r-{user}"));
        assert_eq!(answer.json()["outcome"], "ok", "{}", answer.body);
        sold += 1;
    }
    let stock: i64 = conn
        .get(format!("seckill:{{tk-kill:{ITEM}}}:stock"))
        .unwrap();
    let buyers: i64 = conn
        .hlen(format!("seckill:{{tk-kill:{ITEM}}}:buyers"))
        .unwrap();
    assert_eq!((sold, buyers, stock), (200, 200, 100));
    // The nightly proof agrees: every order in the database, the books exact.
    seckill(&["consume", "--drain"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let proof = seckill(&["reconcile"])
        .campaign(&file)
        .redis(&server)
        .json()
        .runs();
    assert_eq!(proof.code(), 0, "{}", proof.describe());
    println!(
        "late (counted after the cursor passed them): {}",
        room_field(&mut conn, "tk-kill", "late_total") - late_before
    );
}

#[test]
fn a_sold_out_ticket_room_answers_joins_and_polls_from_memory() {
    let server = RedisServer::start();
    let (file, key) = ticket_sale(&server, "tk-gone", 1, "1000/s");
    let door = serve(&file, &server, &key, &[]);
    let mut conn = server.conn();
    let ticket = ticket_of(&join(&door, "first"));
    let late = ticket_of(&join(&door, "late"));
    until_admitted(&door, "first", &ticket, Duration::from_secs(5));
    until_admitted(&door, "late", &late, Duration::from_secs(5));
    assert_eq!(
        buy(&door, "first", Some(&ticket), "r1").json()["outcome"],
        "ok"
    );
    // The last unit is gone: this instance knows it from its own reply.
    assert_eq!(
        buy(&door, "late", Some(&late), "r2").json()["outcome"],
        "sold_out"
    );
    // The recheck (100 ms) has seen it by now.
    std::thread::sleep(Duration::from_millis(300));
    let calls = script_calls(&mut conn);
    let started = Instant::now();
    for n in 0..50 {
        let answer = join(&door, &format!("after{n}"));
        assert_eq!(answer.status, 410, "{}", answer.body);
        assert_eq!(answer.json()["outcome"], "sold_out");
        assert_eq!(poll(&door, "late", &late).json()["outcome"], "sold_out");
    }
    let took = started.elapsed();
    // The beats and the cache's rechecks only, none per join or poll.
    let allowed = 2 * (took.as_millis() as u64 / 100 + 2);
    let spent = script_calls(&mut conn) - calls;
    assert!(
        spent <= allowed,
        "{spent} script calls for 100 answers in {took:?}"
    );
}

#[test]
fn a_bucketed_ticket_room_on_a_cluster_sells_past_the_cursor_in_every_bucket() {
    use crate::support::cluster::RedisCluster;
    let cluster = RedisCluster::start_with_replicas(1);
    let file = campaign("tk-bkt")
        .item(ITEM, 60)
        .buckets(6)
        .room("{ mode: ticket, admit_rate: 40/s, admission_ttl: 2m }")
        .write();
    let key = file.room_key_file();
    let roles = cluster.create_roles(&file);
    let as_operator = |args: &[&str]| {
        seckill(args)
            .campaign(&file)
            .redis_url(&roles.seeds("operator"))
            .args(&["--cluster"])
            .succeeds()
    };
    as_operator(&["preheat"]);
    // The door runs as the generated buyer: it beats, leads and copies the cursor.
    let door = Serve::start(
        &file,
        &roles.seeds("buyer"),
        true,
        &["--room-key-file", &key],
    );
    let users: Vec<(String, String)> = (0..80)
        .map(|n| {
            let user = format!("b{n}");
            let ticket = ticket_of(&join(&door, &user));
            (user, ticket)
        })
        .collect();
    // 40/s: the last of 80 is not admitted yet; its buy is refused, nothing sold.
    let (last, last_ticket) = users.last().unwrap();
    let early = buy(&door, last, Some(last_ticket), "early");
    assert_eq!(early.json()["outcome"], "not_admitted", "{}", early.body);
    // A blocked user is refused in its home bucket too.
    as_operator(&[
        "queue", "penalize", "--item", ITEM, "--user", "b0", "--block",
    ]);
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    for (user, ticket) in &users {
        if user != "b0" {
            // Admitted, or told at once that nothing is left.
            let line = until_admitted(&door, user, ticket, Duration::from_secs(15));
            assert!(
                line["state"] == "admitted" || line["outcome"] == "sold_out",
                "{line}"
            );
        }
        let answer = buy(&door, user, Some(ticket), &format!("r-{user}"));
        *outcomes
            .entry(answer.json()["outcome"].as_str().unwrap_or("?").to_string())
            .or_default() += 1;
    }
    // 60 units, 79 admitted buyers: 60 ok, the rest sold out; b0 never admitted.
    assert_eq!(
        outcomes.get("ok"),
        Some(&60),
        "{outcomes:?} {}",
        door.log.lock().unwrap()
    );
    assert_eq!(outcomes.get("sold_out"), Some(&19), "{outcomes:?}");
    assert_eq!(outcomes.get("not_admitted"), Some(&1), "{outcomes:?}");
    let status = seckill(&["status"])
        .campaign(&file)
        .redis_url(&roles.seeds("operator"))
        .args(&["--cluster"])
        .json()
        .succeeds()
        .json();
    let item = &status["items"][0];
    assert_eq!(
        (item["sold"].as_i64(), item["stock_left"].as_i64()),
        (Some(60), Some(0)),
        "{item}"
    );
    // The cursor was copied to every bucket, on whichever master holds it.
    let mut conn = cluster.conn();
    let layout =
        seckill::model::layout::Layout::new(seckill::model::keys::LIVE_PREFIX, "tk-bkt", ITEM, 6);
    for bucket in layout.all() {
        let copy = bucket.keys.room().room;
        let cursor: Option<String> = redis::cmd("HGET")
            .arg(&copy)
            .arg("cursor_ms")
            .query(&mut conn)
            .unwrap();
        assert!(cursor.is_some(), "no cursor copied to {copy}");
    }
}

/// The rank docs/waiting-room.md defines, written from the page: the first
/// 48 bits (big-endian) of HMAC-SHA256(key = the seed's 32 bytes, the user).
fn rank_from_the_docs(seed_hex: &str, user: &str) -> u64 {
    let seed: Vec<u8> = (0..seed_hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&seed_hex[i..i + 2], 16).unwrap())
        .collect();
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &seed);
    let tag = ring::hmac::sign(&key, user.as_bytes());
    tag.as_ref()[..6]
        .iter()
        .fold(0u64, |rank, byte| (rank << 8) | u64::from(*byte))
}

/// The ticket room's figures in `queue status --format json`.
fn ticket_status(file: &CampaignFile, server: &RedisServer) -> serde_json::Value {
    let status = seckill(&["queue", "status"])
        .campaign(file)
        .redis(server)
        .json()
        .succeeds()
        .json();
    status["rooms"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .find(|r| r["item"] == ITEM)
        .unwrap_or_else(|| panic!("no room of {ITEM} in {status}"))
}

#[test]
fn a_pre_queue_is_admitted_by_rank_before_the_arrivals_and_anyone_can_check_it() {
    let server = RedisServer::start();
    let id = "tk-pre";
    let file = campaign(id)
        .item(ITEM, 100)
        .starts_in(9)
        .room("{ mode: ticket, admit_rate: 20/s, admission_ttl: 2m, prequeue: true }")
        .write();
    let key = file.room_key_file();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let (a, b) = (
        serve(&file, &server, &key, &[]),
        serve(&file, &server, &key, &[]),
    );
    let mut conn = server.conn();
    let starts: i64 = room_field(&mut conn, id, "starts_at_ms");

    // Before the start: tickets, no place yet; "p0" joins from three devices.
    let mut pre = Vec::new();
    for n in 0..30 {
        let (at, user) = (if n % 2 == 0 { &a } else { &b }, format!("p{n}"));
        let answer = join(at, &user);
        assert_eq!(answer.status, 200, "{}", answer.body);
        let line = answer.json();
        assert_eq!(line["prequeue"], true, "{line}");
        assert_eq!(line["position"], 0, "{line}");
        pre.push((user, ticket_of(&answer)));
    }
    let devices: Vec<String> = [&a, &b]
        .iter()
        .map(|at| ticket_of(&join(at, "p0")))
        .collect();
    // One more from the command line: counted in the same pre-queue.
    let cli = seckill(&[
        "queue",
        "join",
        "--item",
        ITEM,
        "--user",
        "p30",
        "--room-key-file",
        &key,
    ])
    .campaign(&file)
    .redis(&server)
    .json()
    .succeeds()
    .json();
    let cli_ticket = cli["tickets"][0]["ticket"]
        .as_str()
        .unwrap_or_else(|| panic!("{cli}"))
        .to_string();
    pre.push(("p30".to_string(), cli_ticket));
    assert!(
        redis_ms(&mut conn) < starts,
        "the joins took past the start: raise starts_in"
    );
    let early = buy(&b, "p1", Some(&pre[1].1), "early-p1");
    assert_eq!(early.json()["outcome"], "not_started", "{}", early.body);
    std::thread::sleep(Duration::from_millis(400));
    let before = ticket_status(&file, &server);
    let published = before["seed_sha256"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(before["tickets"]["prequeued"], 31, "{before}");
    assert!(
        before["tickets"].get("seed").is_none(),
        "the seed shows before the start: {before}"
    );

    // After the start: arrivals join while the ranks are swept first.
    while redis_ms(&mut conn) < starts + 50 {
        std::thread::sleep(Duration::from_millis(20));
    }
    let post: Vec<(String, String)> = (0..5)
        .map(|n| {
            let user = format!("q{n}");
            let ticket = ticket_of(&join(&a, &user));
            (user, ticket)
        })
        .collect();
    // Polled at one instance (its view of when the cursor passed), which
    // verifies the other's tickets too.
    let admitted_from = |user: &str, ticket: &str| {
        let line = until_admitted(&b, user, ticket, Duration::from_secs(20));
        assert_eq!(line["state"], "admitted", "{user}: {line}");
        line["admitted_from_ms"].as_i64().unwrap()
    };
    let pre_from: Vec<i64> = pre
        .iter()
        .map(|(user, ticket)| admitted_from(user, ticket))
        .collect();
    let device_from: Vec<i64> = devices.iter().map(|t| admitted_from("p0", t)).collect();
    let post_from: Vec<i64> = post
        .iter()
        .map(|(user, ticket)| admitted_from(user, ticket))
        .collect();

    // The seed is revealed at the start and is the one published at preheat.
    let after = ticket_status(&file, &server);
    let seed = after["tickets"]["seed"]
        .as_str()
        .unwrap_or_else(|| panic!("{after}"));
    let hash: String = sha2::Sha256::digest(
        (0..seed.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&seed[i..i + 2], 16).unwrap())
            .collect::<Vec<u8>>(),
    )
    .iter()
    .map(|b| format!("{b:02x}"))
    .collect();
    assert_eq!(
        hash, published,
        "the revealed seed does not hash to the published one"
    );

    // Admitted in rank order, the three devices of p0 together, the
    // arrivals after every pre-queued user.
    let mut by_rank: Vec<(u64, i64, &str)> = pre
        .iter()
        .zip(&pre_from)
        .map(|((user, _), from)| (rank_from_the_docs(seed, user), *from, user.as_str()))
        .collect();
    by_rank.sort();
    println!("pre-queue by rank (rank, admitted from, user): {by_rank:?}");
    assert!(by_rank.windows(2).all(|w| w[0].1 <= w[1].1), "{by_rank:?}");
    assert!(
        device_from.iter().all(|from| *from == pre_from[0]),
        "{device_from:?} vs {}",
        pre_from[0]
    );
    let last_pre = *pre_from.iter().max().unwrap();
    assert!(
        post_from.iter().all(|from| *from >= last_pre),
        "{post_from:?} before {last_pre}"
    );
    // At 20/s, 31 users take about 1.5 s: not all at once.
    let first_pre = *pre_from.iter().min().unwrap();
    assert!(
        last_pre - first_pre >= 900,
        "the pre-queue was admitted in {} ms",
        last_pre - first_pre
    );

    // They buy: through serve, and through the command line with a ticket.
    let bought = buy(&a, &pre[2].0, Some(&pre[2].1), "pre-2");
    assert_eq!(bought.json()["outcome"], "ok", "{}", bought.body);
    seckill(&[
        "buy",
        "--item",
        ITEM,
        "--user",
        &pre[3].0,
        "--ticket",
        &pre[3].1,
        "--room-key-file",
        &key,
    ])
    .campaign(&file)
    .redis(&server)
    .succeeds();
    let left: i64 = conn.get(format!("seckill:{{{id}:{ITEM}}}:stock")).unwrap();
    assert_eq!(left, 98);
}

#[test]
fn a_bucketed_pre_queue_admits_and_sells_in_every_bucket() {
    let server = RedisServer::start();
    let id = "tk-prebkt";
    let file = campaign(id)
        .item(ITEM, 100)
        .buckets(3)
        .starts_in(6)
        .room("{ mode: ticket, admit_rate: 20/s, admission_ttl: 2m, prequeue: true }")
        .write();
    let key = file.room_key_file();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let door = serve(&file, &server, &key, &[]);
    let mut conn = server.conn();
    let starts = room_field(&mut conn, id, "starts_at_ms");
    let pre: Vec<(String, String)> = (0..30)
        .map(|n| {
            let user = format!("k{n}");
            let ticket = ticket_of(&join(&door, &user));
            (user, ticket)
        })
        .collect();
    assert!(
        redis_ms(&mut conn) < starts,
        "the joins took past the start"
    );
    while redis_ms(&mut conn) < starts + 50 {
        std::thread::sleep(Duration::from_millis(20));
    }
    // Each admitted after the start, then bought in its home bucket (the copies of
    // the cursor there are what the bucket's buy checks).
    for (user, ticket) in &pre {
        let line = until_admitted(&door, user, ticket, Duration::from_secs(20));
        assert_eq!(line["state"], "admitted", "{user}: {line}");
        let bought = buy(&door, user, Some(ticket), &format!("r-{user}"));
        assert_eq!(bought.json()["outcome"], "ok", "{user}: {}", bought.body);
    }
    let status = seckill(&["status"])
        .campaign(&file)
        .redis(&server)
        .json()
        .succeeds()
        .json();
    let item = &status["items"][0];
    assert_eq!(
        (item["sold"].as_i64(), item["stock_left"].as_i64()),
        (Some(30), Some(70)),
        "{item}"
    );
    // 30 users' home buckets: every one of the 3 sold (a bucket without a
    // buyer has odds of about 1 in 70,000).
    let buyers: Vec<String> = conn
        .keys(format!("seckill:{{{id}:{ITEM}:b*}}:buyers"))
        .unwrap();
    assert_eq!(buyers.len(), 3, "{buyers:?}");
    for key in &buyers {
        let n: i64 = conn.hlen(key).unwrap();
        assert!(n > 0, "{key} sold nothing");
    }
}
