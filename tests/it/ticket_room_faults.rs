//! A bucketed ticket room on a 3+3 cluster through hung masters
//! (docs/waiting-room.md, "Ticket mode"): two `serve` instances running as
//! the generated buyer keep answering joins and polls from memory while the
//! room's master is frozen, and while a bucket's master hangs until its
//! replica takes over; the beats and the cursor copies resume, every ticket
//! holder buys afterwards, and the books stay exact.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use seckill::model::keys::LIVE_PREFIX;
use seckill::model::layout::Layout;
use serde_json::json;

use crate::support::cluster::RedisCluster;
use crate::support::http;
use crate::support::serve::Serve;
use crate::support::spec::{campaign, seckill};

const CAMPAIGN: &str = "tkf";
const ITEM: &str = "t1";
const BUCKETS: u32 = 6;
const STOCK: i64 = 300;

/// One join at one instance, then a poll of the same ticket at the other.
#[derive(Debug, Clone)]
struct Attempt {
    user: String,
    /// When the join was sent, since the test's start.
    at: Duration,
    join_status: u16,
    join_took: Duration,
    ticket: Option<String>,
    poll_status: u16,
    poll_took: Duration,
    /// The cursor the polled instance mirrors (its last beat's).
    cursor_ms: Option<i64>,
}

/// Joins (alternating instances) and polls until `stop`, each recorded.
fn crowd(
    doors: [SocketAddr; 2],
    started: Instant,
    stop: Arc<AtomicBool>,
    attempts: Arc<Mutex<Vec<Attempt>>>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut n = 0usize;
        while !stop.load(Ordering::SeqCst) {
            let user = format!("f{n}");
            let (door, other) = (doors[n % 2], doors[(n + 1) % 2]);
            n += 1;
            let at = started.elapsed();
            let body = json!({"user": user}).to_string();
            let sent = Instant::now();
            let joined = http::send(
                door,
                "POST",
                &format!("/v1/items/{ITEM}/queue"),
                &[("Content-Type", "application/json")],
                body.as_bytes(),
            );
            let join_took = sent.elapsed();
            let (join_status, ticket) = match &joined {
                Ok(answer) => (
                    answer.status,
                    serde_json::from_str::<serde_json::Value>(&answer.body)
                        .ok()
                        .and_then(|v| v["ticket"].as_str().map(str::to_string)),
                ),
                Err(_) => (0, None),
            };
            let sent = Instant::now();
            let polled = ticket.as_deref().map(|ticket| {
                http::send(
                    other,
                    "GET",
                    &format!("/v1/items/{ITEM}/queue/{user}"),
                    &[("Seckill-Ticket", ticket)],
                    b"",
                )
            });
            let poll_took = sent.elapsed();
            let (poll_status, cursor_ms) = match polled {
                Some(Ok(answer)) => (
                    answer.status,
                    serde_json::from_str::<serde_json::Value>(&answer.body)
                        .ok()
                        .and_then(|v| v["cursor_ms"].as_i64()),
                ),
                Some(Err(_)) => (0, None),
                None => (0, None),
            };
            attempts.lock().unwrap().push(Attempt {
                user,
                at,
                join_status,
                join_took,
                ticket,
                poll_status,
                poll_took,
                cursor_ms,
            });
            std::thread::sleep(Duration::from_millis(20));
        }
    })
}

/// The attempts sent within `from..to` (since the start).
fn within(attempts: &[Attempt], from: Duration, to: Duration) -> Vec<Attempt> {
    attempts
        .iter()
        .filter(|a| a.at >= from && a.at < to)
        .cloned()
        .collect()
}

/// Every join and poll of `window` answered 200, and quickly: from memory.
fn answered_from_memory(window: &[Attempt], what: &str) -> Duration {
    assert!(window.len() >= 20, "{what}: only {} joins", window.len());
    for attempt in window {
        assert_eq!(attempt.join_status, 200, "{what}: join {attempt:?}");
        assert_eq!(attempt.poll_status, 200, "{what}: poll {attempt:?}");
    }
    let slowest = window
        .iter()
        .map(|a| a.join_took.max(a.poll_took))
        .max()
        .unwrap();
    assert!(
        // A join that waited on Redis would wait out the hang (seconds).
        slowest < Duration::from_secs(1),
        "{what}: a join or poll took {slowest:?}"
    );
    slowest
}

/// How long after `at` a poll first showed a cursor beyond every cursor
/// shown before `at`.
fn cursor_resumed_after(attempts: &[Attempt], at: Duration) -> Option<Duration> {
    let before = attempts
        .iter()
        .filter(|a| a.at < at)
        .filter_map(|a| a.cursor_ms)
        .max()?;
    attempts
        .iter()
        .filter(|a| a.at >= at)
        .find(|a| a.cursor_ms.is_some_and(|c| c > before))
        .map(|a| a.at - at)
}

/// The longest the cursor the polls showed stood still within `window`
/// (the beats' stall, as a shopper polling sees it).
fn longest_still(window: &[Attempt]) -> Duration {
    let mut highest = i64::MIN;
    let mut since = window.first().map_or(Duration::ZERO, |a| a.at);
    let mut longest = Duration::ZERO;
    for attempt in window {
        if let Some(cursor) = attempt.cursor_ms.filter(|c| *c > highest) {
            highest = cursor;
            since = attempt.at;
        }
        longest = longest.max(attempt.at - since);
    }
    longest
}

fn field(conn: &mut seckill::redis_client::conn::Conn, key: &str, name: &str) -> Option<i64> {
    redis::cmd("HGET")
        .arg(key)
        .arg(name)
        .query::<Option<String>>(conn)
        .ok()
        .flatten()
        .and_then(|v| v.parse().ok())
}

#[test]
fn a_hung_master_under_a_bucketed_ticket_room_stops_no_join_and_loses_no_unit() {
    let cluster = RedisCluster::start_with_replicas(1);
    let file = campaign(CAMPAIGN)
        .item(ITEM, STOCK)
        .buckets(BUCKETS)
        .room("{ mode: ticket, admit_rate: 200/s, admission_ttl: 5m }")
        .write();
    let key = file.room_key_file();
    let roles = cluster.create_roles(&file);
    seckill(&["preheat"])
        .campaign(&file)
        .redis_url(&roles.seeds("operator"))
        .args(&["--cluster"])
        .succeeds();
    let doors: Vec<Serve> = (0..2)
        .map(|_| {
            Serve::start(
                &file,
                &roles.seeds("buyer"),
                true,
                &["--room-key-file", &key],
            )
        })
        .collect();
    let layout = Layout::new(LIVE_PREFIX, CAMPAIGN, ITEM, BUCKETS);
    let room_key = seckill::model::keys::ItemKeys::live(CAMPAIGN, ITEM)
        .room()
        .room;
    let (room_master, _) = cluster.master_and_synced_replica(&room_key);
    // A bucket on another master than the room's: its failover leaves the room answering.
    let far = layout
        .all()
        .into_iter()
        .find(|b| cluster.master_and_replicas_of(&b.keys.room().room).0 != room_master)
        .expect("a bucket off the room's master");
    let far_copy = far.keys.room().room;
    let (far_master, _) = cluster.master_and_synced_replica(&far_copy);
    // A bucket copied after the far one, on a healthy master: does a hung
    // bucket hold back the copies to the others?
    let near_copy = layout
        .all()
        .into_iter()
        .filter(|b| b.bucket > far.bucket)
        .chain(layout.all())
        .map(|b| b.keys.room().room)
        .find(|copy| copy != &far_copy && cluster.master_and_replicas_of(copy).0 != far_master)
        .expect("a bucket on another master");
    let mut conn = cluster.conn();

    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let attempts = Arc::new(Mutex::new(Vec::new()));
    let crowd = crowd(
        [doors[0].addr, doors[1].addr],
        started,
        Arc::clone(&stop),
        Arc::clone(&attempts),
    );
    std::thread::sleep(Duration::from_secs(2));

    // 1. The room's master hangs for 3 s (below cluster-node-timeout: no failover).
    let room_frozen = started.elapsed();
    let frozen = cluster.freeze(room_master);
    std::thread::sleep(Duration::from_secs(3));
    let room_thawed = started.elapsed();
    drop(frozen);
    std::thread::sleep(Duration::from_secs(3));
    let cursor_before_far = field(&mut conn, &room_key, "cursor_ms").expect("a cursor");

    // 2. A bucket's master hangs until its replica is promoted, and a while
    // after. Nothing lands on its copy while it hangs: the copy then is the
    // one the promoted replica starts from.
    let copy_before = field(&mut conn, &far_copy, "cursor_ms").expect("a copied cursor");
    let far_frozen = started.elapsed();
    let frozen = cluster.freeze(far_master);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut near_moves = vec![(Duration::ZERO, field(&mut conn, &near_copy, "cursor_ms"))];
    let promoted = loop {
        let near = field(&mut conn, &near_copy, "cursor_ms");
        if near != near_moves.last().unwrap().1 {
            near_moves.push((started.elapsed() - far_frozen, near));
        }
        let (now_master, _) = cluster.master_and_replicas_seen_by(room_master, &far_copy);
        if now_master != far_master {
            break now_master;
        }
        assert!(
            Instant::now() < deadline,
            "no replica of {far_master} took over"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let promoted_at = started.elapsed();
    // The old master still hangs: the copies must reach the new one anyway.
    let copy_resumed = loop {
        if field(&mut conn, &far_copy, "cursor_ms").is_some_and(|c| c > copy_before) {
            break started.elapsed() - promoted_at;
        }
        assert!(
            started.elapsed() - promoted_at < Duration::from_secs(20),
            "the cursor copy to {far_copy} never moved after {promoted} took over"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    std::thread::sleep(Duration::from_secs(2));
    let far_thawed = started.elapsed();
    drop(frozen);
    std::thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::SeqCst);
    crowd.join().unwrap();
    let attempts = attempts.lock().unwrap().clone();

    // Joins and polls were answered from memory throughout.
    let room_stall = answered_from_memory(
        &within(&attempts, room_frozen, room_thawed),
        "room master frozen",
    );
    let far_stall = answered_from_memory(
        &within(&attempts, far_frozen, far_thawed),
        "bucket master frozen",
    );
    answered_from_memory(&attempts, "the whole run");
    // The beats resumed: the cursor moved again soon after each fault.
    let after_room = cursor_resumed_after(&attempts, room_thawed)
        .expect("the cursor never moved after the room's master came back");
    assert!(
        after_room < Duration::from_secs(3),
        "the cursor moved {after_room:?} after the room's master came back"
    );
    let after_promotion = cursor_resumed_after(&attempts, promoted_at)
        .expect("the cursor never moved after the promotion");
    assert!(
        copy_resumed < Duration::from_secs(10),
        "the copy to the promoted bucket moved {copy_resumed:?} after the promotion"
    );
    let room_still = longest_still(&within(&attempts, room_frozen, room_thawed));
    let far_still = longest_still(&within(&attempts, far_frozen, far_thawed));
    assert!(
        room_still < Duration::from_secs(4),
        "the cursor stood still {room_still:?} for a 3 s hang"
    );
    let cursor_after = field(&mut conn, &room_key, "cursor_ms").unwrap();
    assert!(
        cursor_after > cursor_before_far,
        "the room's cursor stood still"
    );
    let near_still = near_moves
        .windows(2)
        .map(|w| w[1].0 - w[0].0)
        .chain([promoted_at - far_frozen - near_moves.last().unwrap().0])
        .max()
        .unwrap();
    // A hung bucket holds back no other bucket's copies (the copy lanes of
    // `serve`): the first copy that meets the hang waits out one
    // --response-timeout (5 s), then the hung bucket is retried on the slow
    // lane and the others are copied at every move again.
    let hang = promoted_at - far_frozen;
    assert!(
        near_moves.len() > 1 && near_still + Duration::from_millis(1500) < hang,
        "while {far_copy} hung for {:?}, the copy to {near_copy} moved {} times, standing \
         still up to {near_still:?}",
        promoted_at - far_frozen,
        near_moves.len() - 1
    );
    println!(
        "while bucket {far_copy} hung until its promotion ({:?}), the copy to {near_copy} \
         (another master) moved {} times, standing still at most {near_still:?}",
        promoted_at - far_frozen,
        near_moves.len() - 1
    );
    println!(
        "joins {}; slowest join/poll: {room_stall:?} (room master frozen 3 s), {far_stall:?} \
         (bucket master frozen {:?} until promoted, {:?} in all); the cursor moved again \
         {after_room:?} after the room's master came back, {after_promotion:?} after the \
         promotion; the copy to the promoted bucket {copy_resumed:?} after it; the polled \
         cursor stood still at most {room_still:?} (room master) and {far_still:?} (bucket \
         master)",
        attempts.len(),
        promoted_at - far_frozen,
        far_thawed - far_frozen
    );

    let admin = |args: &[&str]| {
        seckill(&["--cluster"])
            .args(args)
            .campaign(&file)
            .redis_url(&cluster.urls())
            .json()
            .runs()
    };
    // The promoted replica is another Redis process: the failover fence
    // closed that bucket (docs/failover.md). Nothing was lost (the replica
    // was in sync): once the orders are stored, reconcile --fence proves it
    // and reopens.
    let drained = admin(&["consume", "--drain"]);
    assert_eq!(drained.code(), 0, "{}", drained.describe());
    let reopened = seckill(&["reconcile", "--fence"])
        .campaign(&file)
        .redis_url(&roles.seeds("operator"))
        .args(&["--cluster"])
        .json()
        .runs();
    assert_eq!(reopened.code(), 0, "{}", reopened.describe());

    // Every ticket holder buys, through either door: ok until the stock is gone.
    let holders: Vec<(String, String)> = attempts
        .iter()
        .filter_map(|a| Some((a.user.clone(), a.ticket.clone()?)))
        .collect();
    assert!(holders.len() as i64 > STOCK, "{} holders", holders.len());
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    let mut bought = BTreeSet::new();
    for (n, (user, ticket)) in holders.iter().enumerate() {
        let door = doors[n % 2].addr;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let line = http::send(
                door,
                "GET",
                &format!("/v1/items/{ITEM}/queue/{user}"),
                &[("Seckill-Ticket", ticket)],
                b"",
            )
            .unwrap()
            .json();
            if line["state"] == "admitted" || line["outcome"] == "sold_out" {
                break;
            }
            assert!(Instant::now() < deadline, "{user} never admitted: {line}");
            std::thread::sleep(Duration::from_millis(20));
        }
        let buy = |door: SocketAddr, request: &str| {
            http::send(
                door,
                "POST",
                &format!("/v1/items/{ITEM}/buy"),
                &[
                    ("Content-Type", "application/json"),
                    ("Seckill-Ticket", ticket),
                ],
                json!({"user": user, "qty": 1, "request_id": request})
                    .to_string()
                    .as_bytes(),
            )
            .unwrap()
        };
        let answer = buy(door, &format!("r-{user}"));
        let outcome = answer.json()["outcome"].as_str().unwrap_or("?").to_string();
        assert!(
            outcome == "ok" || outcome == "sold_out",
            "{user}: {} {}",
            answer.status,
            answer.body
        );
        if outcome == "ok" {
            bought.insert(user.clone());
            // A second attempt through the other door is no second unit.
            let again = buy(doors[(n + 1) % 2].addr, &format!("again-{user}"));
            assert_ne!(again.json()["outcome"], "ok", "{user} bought twice");
        }
        *outcomes.entry(outcome).or_default() += 1;
    }
    assert_eq!(outcomes.get("ok"), Some(&(STOCK as usize)), "{outcomes:?}");

    // The books: sold + left = initial, one unit per buyer, and the orders
    // in the database agree.
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
        (Some(STOCK), Some(0)),
        "{item}"
    );
    let mut buyers = 0;
    for bucket in layout.all() {
        let n: i64 = redis::cmd("HLEN")
            .arg(&bucket.keys.buyers)
            .query(&mut conn)
            .unwrap();
        buyers += n;
    }
    assert_eq!(buyers, bought.len() as i64);
    drop(doors);
    let drained = admin(&["consume", "--drain"]);
    assert_eq!(drained.code(), 0, "{}", drained.describe());
    let proof = admin(&["reconcile"]);
    assert_eq!(proof.code(), 0, "{}", proof.describe());
}
