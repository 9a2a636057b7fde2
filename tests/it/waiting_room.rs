//! The waiting room (docs/waiting-room.md), against real Redis servers and
//! real processes: positions from Redis alone (concurrent joins, repeats),
//! the rate room admitting by the Redis clock with no admitter, max_active
//! giving back the places of those who abandon, the pre-queue's shuffle
//! reproduced from its revealed seed, no `ok` from any bucket without an
//! admission, the fan-out surviving SIGKILLs, registration with its caps
//! under concurrency, the risk list, pauses, refusals that write nothing,
//! the HTTP door, `status` and `loadtest --variant queue`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use redis::Commands;
use seckill::domain::waiting_room::clock::RateClock;
use seckill::model::exit_codes::{
    ADMISSION_EXPIRED, ALREADY_REGISTERED, CORRUPT_STATE, DEVICE_LIMIT, IP_LIMIT, NOT_ADMITTED,
    NOT_REGISTERED, REGISTRATION_CLOSED, RUNTIME_ERROR, SUCCESS, USAGE_ERROR,
};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::support::spec::{CampaignSpec, Ran, campaign, seckill};
use crate::support::{CampaignFile, Preheat, RedisServer, http};

/// Every key, its type, its content and whether it has a TTL: "nothing
/// written" means this is unchanged. (Content, not DUMP: a room hash is big
/// enough to be a hash table, whose DUMP order a mere read may change while
/// Redis rehashes it.)
fn snapshot(conn: &mut redis::Connection) -> BTreeMap<String, (String, Vec<String>, i64)> {
    let keys: Vec<String> = conn.keys("*").unwrap();
    keys.into_iter()
        .map(|key| {
            let kind: String = redis::cmd("TYPE").arg(&key).query(conn).unwrap();
            let mut content: Vec<String> = match kind.as_str() {
                "string" => vec![conn.get(&key).unwrap()],
                "hash" => {
                    let all: Vec<(String, String)> = conn.hgetall(&key).unwrap();
                    all.into_iter().map(|(f, v)| format!("{f}={v}")).collect()
                }
                "zset" => {
                    let all: Vec<(String, String)> = conn.zrange_withscores(&key, 0, -1).unwrap();
                    all.into_iter().map(|(m, s)| format!("{m}={s}")).collect()
                }
                "list" => conn.lrange(&key, 0, -1).unwrap(),
                "stream" => {
                    let all: Vec<(String, Vec<String>)> = redis::cmd("XRANGE")
                        .arg(&key)
                        .arg("-")
                        .arg("+")
                        .query(conn)
                        .unwrap();
                    all.into_iter()
                        .map(|(id, f)| format!("{id} {f:?}"))
                        .collect()
                }
                other => vec![other.to_string()],
            };
            if kind == "hash" || kind == "zset" {
                content.sort();
            }
            let ttl: i64 = conn.pttl(&key).unwrap();
            (key, (kind, content, ttl.signum()))
        })
        .collect()
}

/// Longest any one command may take before the test calls it a hang.
const HANG: Duration = Duration::from_secs(120);

fn preheated(server: &RedisServer, spec: CampaignSpec) -> CampaignFile {
    Preheat::on(server).within(HANG).spec(&spec)
}

/// `seckill queue join --item 1 --user ...` started (not waited for).
fn join_started(
    server: &RedisServer,
    file: &CampaignFile,
    users: &[String],
) -> crate::support::spec::Running {
    let mut args = vec![
        "queue".to_string(),
        "join".into(),
        "--item".into(),
        "1".into(),
    ];
    for user in users {
        args.extend(["--user".to_string(), user.clone()]);
    }
    seckill(&[])
        .args(&args)
        .campaign(file)
        .redis(server)
        .json()
        .start()
}

/// Every join answer of a finished `queue join`: (user, outcome, position).
/// `users` join in processes of `per_process` users each, all at once; each succeeds.
fn join_concurrently(
    server: &RedisServer,
    file: &CampaignFile,
    users: &[String],
    per_process: usize,
) {
    for ran in users
        .chunks(per_process)
        .map(|chunk| join_started(server, file, chunk))
        .collect::<Vec<_>>()
    {
        assert_eq!(ran.finish_within(HANG).code(), SUCCESS);
    }
}

fn joins_of(ran: &Ran) -> Vec<(String, String, i64)> {
    ran.json()["joins"]
        .as_array()
        .expect("joins")
        .iter()
        .map(|j| {
            (
                j["user"].as_str().unwrap().to_string(),
                j["outcome"].as_str().unwrap().to_string(),
                j["standing"]["position"].as_i64().unwrap_or(0),
            )
        })
        .collect()
}

/// Join `users` in one process, in order; they must all be let in.
fn join(server: &RedisServer, file: &CampaignFile, users: &[String]) -> Vec<(String, String, i64)> {
    let ran = join_started(server, file, users).finish_within(HANG);
    assert_eq!(ran.code(), SUCCESS, "{}", ran.describe());
    joins_of(&ran)
}

fn users(prefix: &str, range: std::ops::Range<u64>) -> Vec<String> {
    range.map(|n| format!("{prefix}{n}")).collect()
}

/// `queue status`'s first room.
fn room(server: &RedisServer, file: &CampaignFile) -> Value {
    let status = seckill(&["queue", "status"])
        .campaign(file)
        .redis(server)
        .json()
        .within(HANG)
        .succeeds()
        .json();
    status["rooms"][0].clone()
}

/// `queue position` of `users` (any exit code): the room and each standing.
fn positions(server: &RedisServer, file: &CampaignFile, users: &[String]) -> (Value, Vec<Value>) {
    let mut args = vec![
        "queue".to_string(),
        "position".into(),
        "--item".into(),
        "1".into(),
    ];
    for user in users {
        args.extend(["--user".to_string(), user.clone()]);
    }
    let ran = seckill(&[])
        .args(&args)
        .campaign(file)
        .redis(server)
        .json()
        .runs_within(HANG);
    let out = ran.json();
    (
        out["room"].clone(),
        out["users"].as_array().expect("users").clone(),
    )
}

fn buy(server: &RedisServer, file: &CampaignFile, user: &str, code: i32) -> Value {
    seckill(&["buy", "--item", "1", "--user", user])
        .campaign(file)
        .redis(server)
        .json()
        .within(HANG)
        .fails_with(code)
        .json()
}

/// Redis server time, ms.
fn redis_now(server: &RedisServer) -> i64 {
    let (s, us): (i64, i64) = redis::cmd("TIME").query(&mut server.conn()).unwrap();
    s * 1000 + us / 1000
}

/// Sleep until the Redis clock reaches `at_ms`.
fn until_redis(server: &RedisServer, at_ms: i64) {
    let deadline = Instant::now() + HANG;
    while redis_now(server) < at_ms {
        assert!(
            Instant::now() < deadline,
            "Redis time never reached {at_ms}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ten_thousand_joins_from_concurrent_processes_get_positions_one_to_ten_thousand() {
    let server = RedisServer::start();
    let file = preheated(
        &server,
        campaign("joins")
            .item("1", 10)
            .room("{ mode: rate, admit_rate: 1/s }"),
    );
    // Ten processes of 1,000 new users each and two of 500 repeats spread
    // over all of them, all started at once.
    let mut running: Vec<_> = (0..10)
        .map(|p| join_started(&server, &file, &users("u", p * 1000..(p + 1) * 1000)))
        .collect();
    for r in 0..2u64 {
        let repeats: Vec<String> = (0..500).map(|k| format!("u{}", k * 20 + r * 7)).collect();
        running.push(join_started(&server, &file, &repeats));
    }
    let mut answers: HashMap<String, Vec<(String, i64)>> = HashMap::new();
    for run in running {
        let ran = run.finish_within(HANG);
        assert_eq!(ran.code(), SUCCESS, "{}", ran.describe());
        for (user, outcome, position) in joins_of(&ran) {
            answers.entry(user).or_default().push((outcome, position));
        }
    }
    assert_eq!(answers.len(), 10_000);
    let mut positions = Vec::new();
    let mut repeated = 0;
    for (user, got) in &answers {
        let first = got[0].1;
        assert!(got.iter().all(|(_, p)| *p == first), "{user}: {got:?}");
        let joined = got.iter().filter(|(o, _)| o == "joined").count();
        assert_eq!(joined, 1, "{user} joined {joined} times: {got:?}");
        assert!(got.iter().all(|(o, _)| o == "joined" || o == "queued"));
        repeated += got.len() - 1;
        positions.push(first);
    }
    assert_eq!(repeated, 1000, "every repeat answered");
    positions.sort_unstable();
    assert_eq!(
        positions,
        (1..=10_000).collect::<Vec<i64>>(),
        "1..n, no hole, no duplicate"
    );
    assert_eq!(room(&server, &file)["joined"], 10_000);
}

#[test]
fn a_rate_room_admits_by_the_redis_clock_with_no_admitter_running() {
    let server = RedisServer::start();
    let file = preheated(
        &server,
        campaign("rate")
            .item("1", 5000)
            .room("{ mode: rate, admit_rate: 100/s, admission_ttl: 1h }"),
    );
    let everyone = users("r", 0..2000);
    let running: Vec<_> = everyone
        .chunks(500)
        .map(|chunk| join_started(&server, &file, chunk))
        .collect();
    for run in running {
        let ran = run.finish_within(HANG);
        assert_eq!(ran.code(), SUCCESS, "{}", ran.describe());
    }
    let opened = room(&server, &file)["opened_at_ms"]
        .as_i64()
        .expect("opened");
    until_redis(&server, opened + 10_000);
    // One script call reads every user at one instant.
    let (figures, standings) = positions(&server, &file, &everyone);
    let elapsed =
        figures["now_ms"].as_i64().unwrap() - opened - figures["paused_ms"].as_i64().unwrap();
    assert!(elapsed >= 10_000, "{elapsed}");
    let admitted: Vec<&Value> = standings
        .iter()
        .filter(|s| s["state"] == "admitted")
        .collect();
    let clock = RateClock {
        count: 100,
        per_ms: 1000,
    };
    assert!(
        (900..=1100).contains(&admitted.len()),
        "{} admitted after {elapsed} ms at 100/s",
        admitted.len()
    );
    assert_eq!(
        admitted.len() as i64,
        clock.serving(2000, elapsed),
        "the clock alone decides"
    );
    let serving = figures["serving"].as_i64().unwrap();
    assert_eq!(serving, admitted.len() as i64);
    let mut by_position: BTreeMap<i64, (&str, &Value)> = BTreeMap::new();
    for (user, s) in everyone.iter().zip(&standings) {
        by_position.insert(s["position"].as_i64().unwrap(), (user.as_str(), s));
    }
    for (position, (_, s)) in &by_position {
        assert_eq!(
            s["state"] == "admitted",
            *position <= serving,
            "position {position}"
        );
        if s["state"] == "waiting" {
            let eta = s["eta_ms"].as_i64().unwrap();
            let expected = (position - serving) * 1000 / 100;
            assert!(
                (eta - expected).abs() <= 1000,
                "position {position}: eta {eta}, (p - serving)/rate {expected}"
            );
        }
    }
    // A refused buy says where the user stands and writes nothing.
    let (later, _) = by_position[&(serving + 300)];
    let mut conn = server.conn();
    let before = snapshot(&mut conn);
    let refused = buy(&server, &file, later, NOT_ADMITTED);
    assert_eq!(snapshot(&mut conn), before, "not_admitted wrote something");
    assert_eq!(refused["outcome"], "not_admitted");
    assert_eq!(refused["waiting"]["position"], serving + 300);
    let eta = refused["waiting"]["eta_ms"].as_i64().unwrap();
    assert!((1000..=3100).contains(&eta), "{eta}");
    let (first, _) = by_position[&1];
    assert_eq!(buy(&server, &file, first, SUCCESS)["outcome"], "ok");
}

#[test]
fn max_active_gives_back_the_places_of_those_who_abandon_within_one_admit_tick() {
    let server = RedisServer::start();
    let file = preheated(
        &server,
        campaign("maxa")
            .item("1", 100)
            .room("{ mode: max_active, max_active: 10, admission_ttl: 2s }"),
    );
    let queued = users("m", 1..31);
    let joined = join(&server, &file, &queued);
    assert_eq!(
        joined.iter().map(|j| j.2).collect::<Vec<_>>(),
        (1..=30).collect::<Vec<i64>>()
    );
    let admit = || {
        seckill(&["queue", "admit"])
            .campaign(&file)
            .redis(&server)
            .json()
            .within(HANG)
            .succeeds()
            .json()["passes"][0]["admit"]
            .clone()
    };
    let tick = admit();
    assert_eq!(tick["admitted"], 10, "{tick}");
    let (_, standings) = positions(&server, &file, &queued);
    let states: Vec<&str> = standings
        .iter()
        .map(|s| s["state"].as_str().unwrap())
        .collect();
    assert_eq!(&states[..10], &["admitted"; 10]);
    assert_eq!(&states[10..], &["waiting"; 20]);
    buy(&server, &file, "m11", NOT_ADMITTED);
    // The first ten abandon: no buy. Their admissions run out and a single
    // tick gives their places to the next ten.
    let last_end = standings[..10]
        .iter()
        .map(|s| s["to_ms"].as_i64().unwrap())
        .max()
        .unwrap();
    until_redis(&server, last_end);
    let tick = admit();
    assert_eq!(tick["freed"], 10, "{tick}");
    assert_eq!(tick["admitted"], 10, "{tick}");
    let (_, standings) = positions(&server, &file, &queued);
    let states: Vec<&str> = standings
        .iter()
        .map(|s| s["state"].as_str().unwrap())
        .collect();
    assert_eq!(&states[..10], &["expired"; 10]);
    assert_eq!(&states[10..20], &["admitted"; 10]);
    assert_eq!(&states[20..], &["waiting"; 10]);
    buy(&server, &file, "m1", ADMISSION_EXPIRED);
    buy(&server, &file, "m21", NOT_ADMITTED);
    // A buy gives its place back at once: the next tick admits one more.
    buy(&server, &file, "m15", SUCCESS);
    let tick = admit();
    assert_eq!(tick["admitted"], 1, "{tick}");
    buy(&server, &file, "m21", SUCCESS);
}

/// The pre-queue's shuffle as docs/waiting-room.md specifies it, written
/// again here from the spec, not from the binary's code.
fn shuffle_by_the_spec(order: &mut [String], seed: [u8; 32]) {
    let mut rng = ChaCha20Rng::from_seed(seed);
    for i in (1..order.len()).rev() {
        let bound = i as u64 + 1;
        let zone = u64::MAX - (u64::MAX - bound + 1) % bound;
        let j = loop {
            let word = rng.next_u64();
            if word <= zone {
                break word % bound;
            }
        };
        order.swap(i, j as usize);
    }
}

#[test]
fn the_pre_queue_is_shuffled_at_the_start_and_anyone_can_reproduce_it() {
    let server = RedisServer::start();
    let file = preheated(
        &server,
        campaign("pre")
            .starts_in(5)
            .item("1", 1000)
            .room("{ mode: rate, admit_rate: 1000/s, prequeue: true }"),
    );
    let before = room(&server, &file);
    let published = before["seed_sha256"].as_str().unwrap().to_string();
    assert_eq!(published.len(), 64);
    assert!(
        before["seed"].is_null(),
        "the seed is secret before the shuffle"
    );
    let early = users("p", 0..200);
    let joined = join(&server, &file, &early);
    assert!(joined.iter().all(|j| j.1 == "joined"));
    let (_, standings) = positions(&server, &file, &early);
    assert!(
        standings.iter().all(|s| s["state"] == "prequeue"),
        "{standings:?}"
    );
    let shuffled = seckill(&["queue", "shuffle", "--wait"])
        .campaign(&file)
        .redis(&server)
        .json()
        .within(HANG)
        .succeeds()
        .json();
    let done = &shuffled["shuffles"][0];
    assert_eq!(done["status"], "committed", "{shuffled}");
    let seed_hex = done["seed"].as_str().unwrap();
    let mut seed = [0u8; 32];
    for (i, byte) in seed.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&seed_hex[2 * i..2 * i + 2], 16).unwrap();
    }
    let hash: String = Sha256::digest(seed)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(
        hash, published,
        "the revealed seed is the one whose hash was published"
    );
    // A join after the start follows in order.
    let late = join(&server, &file, &["late".to_string()]);
    assert_eq!(late[0].2, 201);
    // Re-run the shuffle from the join order and the seed: the same order.
    let mut expected = early.clone();
    shuffle_by_the_spec(&mut expected, seed);
    let (_, standings) = positions(&server, &file, &early);
    let final_position: HashMap<&str, i64> = early
        .iter()
        .zip(&standings)
        .map(|(u, s)| (u.as_str(), s["position"].as_i64().unwrap()))
        .collect();
    for (k, user) in expected.iter().enumerate() {
        assert_eq!(final_position[user.as_str()], k as i64 + 1, "{user}");
    }
    let moved = early
        .iter()
        .enumerate()
        .filter(|(k, u)| final_position[u.as_str()] != *k as i64 + 1)
        .count();
    assert!(moved > 150, "only {moved} of 200 moved: not shuffled");
    let verified = seckill(&["queue", "shuffle", "--verify"])
        .campaign(&file)
        .redis(&server)
        .within(HANG)
        .succeeds()
        .stdout();
    assert!(verified.contains("reproduced: 200 of 200"), "{verified}");
    // The room opened at the shuffle: admissions in the shuffled order.
    let first = expected[0].clone();
    buy(&server, &file, &first, SUCCESS);
}

/// The order entries of every bucket of item 1: (user, bought_at_ms).
fn bucket_orders(
    server: &RedisServer,
    layout: &seckill::model::layout::Layout,
) -> Vec<(String, i64)> {
    let mut conn = server.conn();
    let mut orders = Vec::new();
    for bucket in layout.all() {
        let entries: Vec<(String, HashMap<String, String>)> = redis::cmd("XRANGE")
            .arg(&bucket.keys.orders)
            .arg("-")
            .arg("+")
            .query(&mut conn)
            .unwrap();
        for (_, fields) in entries {
            if let (Some(user), Some(at)) = (fields.get("user_id"), fields.get("bought_at_ms")) {
                orders.push((user.clone(), at.parse().unwrap()));
            }
        }
    }
    orders
}

/// A user's admission in its home bucket, "start end" parsed.
fn granted(
    conn: &mut redis::Connection,
    layout: &seckill::model::layout::Layout,
    user: &str,
) -> Option<(i64, i64)> {
    let value: Option<String> = conn
        .hget(layout.home(user).keys.room().admissions, user)
        .unwrap();
    let value = value?;
    let (from, to) = value.split_once(' ').unwrap();
    Some((from.parse().unwrap(), to.parse().unwrap()))
}

/// The queue entries of item 1 read straight from Redis: user -> (position,
/// joined at ms); a third number, the room's pauses at the join, left out.
fn queue_entries(server: &RedisServer, campaign: &str) -> HashMap<String, (i64, i64)> {
    let raw: HashMap<String, String> = server
        .conn()
        .hgetall(format!("seckill:{{{campaign}:1}}:queue"))
        .unwrap();
    raw.into_iter()
        .map(|(user, entry)| {
            let numbers: Vec<i64> = entry.split(' ').map(|n| n.parse().unwrap()).collect();
            (user, (numbers[0], numbers[1]))
        })
        .collect()
}

#[test]
fn no_bucket_sells_to_a_user_the_room_did_not_admit() {
    let server = RedisServer::start();
    let file = preheated(
        &server,
        campaign("nob")
            .item("1", 10_000)
            .buckets(4)
            .room("{ mode: rate, admit_rate: 100/s, admission_ttl: 1h }"),
    );
    let queued = users("b", 0..600);
    join_concurrently(&server, &file, &queued, 300);
    let mut admitter = seckill(&["queue", "admit", "--loop", "--interval", "100ms"])
        .campaign(&file)
        .redis(&server)
        .start();
    let serve = crate::support::serve::Serve::start(&file, &server.url(), false, &[]);
    // Eight clients hammer the door for 3 s: the queued (admitted or not
    // yet) and impostors who never joined.
    let mut everyone = queued.clone();
    everyone.extend(users("impostor", 0..100));
    let answers: Vec<(u16, String)> = std::thread::scope(|scope| {
        let threads: Vec<_> = everyone
            .chunks(everyone.len().div_ceil(8))
            .map(|chunk| {
                let addr = serve.addr;
                scope.spawn(move || {
                    let mut seen = Vec::new();
                    let mut bought: HashSet<&str> = HashSet::new();
                    let end = Instant::now() + Duration::from_secs(3);
                    while Instant::now() < end {
                        std::thread::sleep(Duration::from_millis(50));
                        for user in chunk {
                            if bought.contains(user.as_str()) {
                                continue;
                            }
                            let answer = http::buy(addr, "1", user, &format!("r-{user}"));
                            let outcome =
                                answer.json()["outcome"].as_str().unwrap_or("").to_string();
                            if answer.status == 200 {
                                bought.insert(user);
                            }
                            seen.push((answer.status, outcome));
                        }
                    }
                    seen
                })
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect()
    });
    drop(serve);
    let _ = admitter.child().kill();
    let count = |status: u16| answers.iter().filter(|(s, _)| *s == status).count();
    assert!(
        count(200) > 100,
        "too few sold to test anything: {}",
        count(200)
    );
    assert!(count(425) > 100, "no not_admitted answers: {}", count(425));
    assert!(answers.iter().any(|(s, o)| *s == 428 && o == "not_queued"));
    let layout = seckill::model::layout::Layout::new("seckill", "nob", "1", 4);
    let orders = bucket_orders(&server, &layout);
    assert_eq!(orders.len(), count(200), "one order per ok");
    let entries = queue_entries(&server, "nob");
    let opened = room(&server, &file)["opened_at_ms"].as_i64().unwrap();
    let clock = RateClock {
        count: 100,
        per_ms: 1000,
    };
    let mut conn = server.conn();
    for (user, bought_at) in &orders {
        let (position, joined_at) = entries
            .get(user)
            .unwrap_or_else(|| panic!("{user} bought without ever joining"));
        let (from, to) = granted(&mut conn, &layout, user)
            .unwrap_or_else(|| panic!("{user} bought with no admission in its home bucket"));
        let turn = (opened + clock.reached_at(*position)).max(*joined_at);
        assert_eq!(from, turn, "{user}'s admission is the clock's");
        assert!(
            (from..to).contains(bought_at),
            "{user} bought at {bought_at}, admitted {from}..{to}"
        );
    }
}

#[test]
fn the_admission_fan_out_survives_twenty_sigkills_and_admits_everyone_exactly_once() {
    let server = RedisServer::start();
    let file = preheated(
        &server,
        campaign("kill")
            .item("1", 100_000)
            .buckets(8)
            .room("{ mode: rate, admit_rate: 1000/s, admission_ttl: 1h }"),
    );
    let everyone = users("k", 0..5000);
    join_concurrently(&server, &file, &everyone, 1000);
    let mut mid_way = 0;
    let mut rng = rand::rng();
    for _ in 0..20 {
        let mut running = seckill(&[
            "queue",
            "admit",
            "--loop",
            "--interval",
            "100ms",
            "--batch",
            "25",
        ])
        .campaign(&file)
        .redis(&server)
        .start();
        std::thread::sleep(Duration::from_millis(rand::Rng::random_range(
            &mut rng,
            40..250,
        )));
        let _ = running.child().kill(); // SIGKILL
        let _ = running.child().wait();
        let fanned = room(&server, &file)["fanned"].as_i64().unwrap();
        mid_way += usize::from(fanned > 0 && fanned < 5000);
    }
    assert!(
        mid_way >= 5,
        "only {mid_way} of 20 kills landed while the fan-out had work"
    );
    let opened = room(&server, &file)["opened_at_ms"].as_i64().unwrap();
    until_redis(&server, opened + 5_100);
    seckill(&["queue", "admit"])
        .campaign(&file)
        .redis(&server)
        .within(HANG)
        .succeeds();
    let figures = room(&server, &file);
    assert_eq!(figures["fanned"], 5000, "{figures}");
    let layout = seckill::model::layout::Layout::new("seckill", "kill", "1", 8);
    let mut conn = server.conn();
    let (mut held, mut granted_total) = (0i64, 0i64);
    for bucket in layout.all() {
        let keys = bucket.keys.room();
        let count: i64 = conn.hlen(&keys.admissions).unwrap();
        let ever: i64 = conn.get(&keys.admission_count).unwrap();
        assert_eq!(
            count, ever,
            "bucket {}: a user granted twice",
            bucket.bucket
        );
        held += count;
        granted_total += ever;
    }
    assert_eq!((held, granted_total), (5000, 5000));
    let entries = queue_entries(&server, "kill");
    let clock = RateClock {
        count: 1000,
        per_ms: 1000,
    };
    for user in &everyone {
        let (position, joined_at) = entries[user];
        let (from, to) =
            granted(&mut conn, &layout, user).unwrap_or_else(|| panic!("{user} never admitted"));
        assert_eq!(
            from,
            (opened + clock.reached_at(position)).max(joined_at),
            "{user}"
        );
        assert_eq!(to - from, 3_600_000);
        for other in layout
            .all()
            .iter()
            .filter(|b| b.bucket != layout.home(user).bucket)
        {
            let there: bool = conn.hexists(other.keys.room().admissions, user).unwrap();
            assert!(!there, "{user} admitted in a bucket that is not its home");
        }
    }
}

/// An RFC 3339 time `seconds` from now.
fn from_now(seconds: i64) -> String {
    (chrono::Utc::now() + chrono::Duration::seconds(seconds))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn register(server: &RedisServer, file: &CampaignFile, args: &[&str]) -> Ran {
    seckill(&["register"])
        .args(args)
        .campaign(file)
        .redis(server)
        .json()
        .runs_within(HANG)
}

#[test]
fn two_thousand_concurrent_registrations_on_one_device_register_exactly_the_cap() {
    let server = RedisServer::start();
    let file = preheated(
        &server,
        campaign("dev").item("1", 100).room(&format!(
            "{{ mode: rate, admit_rate: 1000/s, registration: {{ until: {}, per_device: 3 }} }}",
            from_now(3600)
        )),
    );
    let running: Vec<_> = (0..20u64)
        .map(|p| {
            let mut args = vec!["register".to_string(), "--device".into(), "phone-1".into()];
            for user in users("d", p * 100..(p + 1) * 100) {
                args.extend(["--user".to_string(), user]);
            }
            seckill(&[])
                .args(&args)
                .campaign(&file)
                .redis(&server)
                .json()
                .start()
        })
        .collect();
    let mut outcomes: HashMap<String, usize> = HashMap::new();
    for run in running {
        let ran = run.finish_within(HANG);
        for row in ran.json()["registrations"].as_array().unwrap() {
            *outcomes
                .entry(row["outcome"].as_str().unwrap().to_string())
                .or_default() += 1;
        }
    }
    assert_eq!(outcomes.get("registered"), Some(&3), "{outcomes:?}");
    assert_eq!(outcomes.get("device_limit"), Some(&1997), "{outcomes:?}");
    let mut conn = server.conn();
    let registered: i64 = conn.hlen("seckill:{dev:1}:registered").unwrap();
    let on_device: i64 = conn.hget("seckill:{dev:1}:devices", "phone-1").unwrap();
    assert_eq!((registered, on_device), (3, 3));
}

#[test]
fn registration_closes_on_the_redis_clock_and_join_and_buy_refuse_the_unregistered() {
    let server = RedisServer::start();
    let spec = campaign("reg")
        .item("1", 100)
        .room(&format!(
            "{{ mode: rate, admit_rate: 1000/s, registration: {{ until: {}, per_device: 3 }} }}",
            from_now(4)
        ))
        .item("2", 100)
        .room(&format!(
            "{{ mode: rate, admit_rate: 1000/s, registration: {{ until: {}, per_ip: 2 }} }}",
            from_now(3600)
        ));
    let file = preheated(&server, spec);
    let one = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--item", "1"]);
        register(&server, &file, &all)
    };
    assert_eq!(
        one(&["--user", "alice", "--device", "dev-a"]).code(),
        SUCCESS
    );
    let moved = one(&["--user", "alice", "--device", "dev-b"]);
    assert_eq!(moved.code(), ALREADY_REGISTERED, "{}", moved.describe());
    assert_eq!(
        one(&["--user", "alice", "--device", "dev-a"]).code(),
        SUCCESS,
        "a repeat is safe"
    );
    for user in ["x1", "x2", "x3"] {
        assert_eq!(one(&["--user", user, "--device", "dev-x"]).code(), SUCCESS);
    }
    assert_eq!(
        one(&["--user", "x4", "--device", "dev-x"]).code(),
        DEVICE_LIMIT
    );
    // Join and buy take registered users only.
    seckill(&["queue", "join", "--item", "1", "--user", "mallory"])
        .campaign(&file)
        .redis(&server)
        .within(HANG)
        .fails_with(NOT_REGISTERED);
    buy(&server, &file, "mallory", NOT_REGISTERED);
    join(&server, &file, &["alice".to_string()]);
    buy(&server, &file, "alice", SUCCESS);
    // The cut-off is Redis's clock; a registration made before it still answers.
    let until = seckill::model::campaign::Campaign::load(&file.path)
        .unwrap()
        .items[0]
        .waiting_room
        .as_ref()
        .unwrap()
        .registration
        .unwrap()
        .until_ms;
    until_redis(&server, until);
    assert_eq!(
        one(&["--user", "carol", "--device", "dev-c"]).code(),
        REGISTRATION_CLOSED
    );
    assert_eq!(
        one(&["--user", "alice", "--device", "dev-a"]).code(),
        SUCCESS
    );
    // Per IP prefix (/24): two accounts, a third refused, and no address at all is a usage error.
    let two = |user: &str, device: &str, ip: &str| {
        register(
            &server,
            &file,
            &[
                "--item", "2", "--user", user, "--device", device, "--ip", ip,
            ],
        )
    };
    assert_eq!(two("i1", "p1", "203.0.113.5").code(), SUCCESS);
    assert_eq!(two("i2", "p2", "203.0.113.6").code(), SUCCESS);
    assert_eq!(two("i3", "p3", "203.0.113.77").code(), IP_LIMIT);
    assert_eq!(two("i4", "p4", "198.51.100.1").code(), SUCCESS);
    let bare = register(
        &server,
        &file,
        &["--item", "2", "--user", "i5", "--device", "p5"],
    );
    assert_eq!(bare.code(), USAGE_ERROR, "{}", bare.describe());
    assert!(bare.stderr().contains("--ip"), "{}", bare.stderr());
}

#[test]
fn the_risk_list_delays_or_blocks_and_a_blocked_user_looks_like_anyone_waiting() {
    let server = RedisServer::start();
    let file = preheated(
        &server,
        campaign("risk")
            .item("1", 100)
            .room("{ mode: rate, admit_rate: 1000/s }")
            .item("2", 100)
            .buckets(2)
            .room("{ mode: rate, admit_rate: 1000/s }"),
    );
    let penalize = |item: &str, user: &str, how: &[&str]| {
        seckill(&["queue", "penalize", "--item", item, "--user", user])
            .args(how)
            .campaign(&file)
            .redis(&server)
            .within(HANG)
            .succeeds();
    };
    penalize("1", "slowpoke", &["--delay", "3s"]);
    penalize("1", "bot", &["--block"]);
    join(
        &server,
        &file,
        &["fast".into(), "slowpoke".into(), "bot".into()],
    );
    std::thread::sleep(Duration::from_millis(50));
    buy(&server, &file, "fast", SUCCESS);
    let slow = buy(&server, &file, "slowpoke", NOT_ADMITTED);
    let eta = slow["waiting"]["eta_ms"].as_i64().unwrap();
    assert!((1500..=3100).contains(&eta), "{slow}");
    let blocked = buy(&server, &file, "bot", NOT_ADMITTED);
    let keys = |v: &Value| {
        v["waiting"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(
        keys(&blocked),
        keys(&slow),
        "a blocked user's answer has the same shape"
    );
    assert!(
        blocked["waiting"]["position"].as_i64().unwrap() >= 3,
        "{blocked}"
    );
    assert!(
        blocked["waiting"]["eta_ms"].as_i64().unwrap() > 0,
        "{blocked}"
    );
    let from = slow["waiting"]["eta_ms"].as_i64().unwrap() + redis_now(&server);
    until_redis(&server, from + 50);
    buy(&server, &file, "slowpoke", SUCCESS);
    buy(&server, &file, "bot", NOT_ADMITTED);
    // A bucketed item: a block takes back an admission already carried to the home bucket.
    seckill(&["queue", "join", "--item", "2", "--user", "late-bot"])
        .campaign(&file)
        .redis(&server)
        .within(HANG)
        .succeeds();
    std::thread::sleep(Duration::from_millis(50));
    seckill(&["queue", "admit", "--item", "2"])
        .campaign(&file)
        .redis(&server)
        .within(HANG)
        .succeeds();
    penalize("2", "late-bot", &["--block"]);
    seckill(&["buy", "--item", "2", "--user", "late-bot"])
        .campaign(&file)
        .redis(&server)
        .within(HANG)
        .fails_with(NOT_ADMITTED);
}

#[test]
fn a_refused_or_corrupt_admission_writes_nothing_and_no_call_can_skip_the_room() {
    use seckill::redis_client::scripts::ScriptCall;
    let server = RedisServer::start();
    let file = preheated(
        &server,
        campaign("cor").item("1", 100).room(&format!(
            "{{ mode: max_active, max_active: 5, registration: {{ until: {} }} }}",
            from_now(3600)
        )),
    );
    register(&server, &file, &["--user", "alice", "--device", "d1"]);
    join(&server, &file, &["alice".to_string()]);
    seckill(&["queue", "admit"])
        .campaign(&file)
        .redis(&server)
        .within(HANG)
        .succeeds();
    let mut conn = server.conn();
    // The ten keys a room-off buy sends: refused, whatever the client thinks.
    let keys = seckill::model::keys::ItemKeys::live("cor", "1");
    let before = snapshot(&mut conn);
    let skipped = seckill::redis_client::scripts::buy::Buy {
        meta: keys.meta.clone(),
        stock: keys.stock.clone(),
        buyers: keys.buyers.clone(),
        buyer_orders: keys.buyer_orders.clone(),
        requests: format!("{}requests", keys.base),
        orders: keys.orders.clone(),
        rate: keys.rate("alice"),
        reservations: keys.reservations.clone(),
        deadlines: keys.deadlines.clone(),
        reservation_counts: keys.reservation_counts.clone(),
        room: None,
        queue: None,
        registered: None,
        risk: None,
        admitted: None,
        active: None,
        shuffled: None,
        passes: None,
        revoked: None,
        user: "mallory".to_string(),
        qty: "1".to_string(),
        request_id: String::new(),
        order_id: "01SKIPPED".to_string(),
        campaign: "cor".to_string(),
        item: "1".to_string(),
        payment_timeout_ms: "0".to_string(),
        arrival_ms: String::new(),
        ticket_key: String::new(),
        node: seckill::redis_client::node::NODE_PLACEHOLDER.to_string(),
    }
    .invoke(&mut conn)
    .unwrap_err();
    assert!(
        skipped.to_string().contains("waiting-room keys"),
        "{skipped}"
    );
    assert_eq!(
        snapshot(&mut conn),
        before,
        "the refused call wrote something"
    );
    // Each key the admission reads, of the wrong type: the buy refuses whole.
    let room = keys.room();
    for key in [
        &room.room,
        &room.queue,
        &room.registered,
        &room.risk,
        &room.admitted,
        &room.active,
    ] {
        let saved: Option<Vec<u8>> = redis::cmd("DUMP").arg(key).query(&mut conn).unwrap();
        let () = conn.del(key).unwrap();
        let () = conn.set(key, "not what it should be").unwrap();
        let before = snapshot(&mut conn);
        let refused = seckill(&["buy", "--item", "1", "--user", "alice"])
            .campaign(&file)
            .redis(&server)
            .json()
            .within(HANG)
            .fails_with(CORRUPT_STATE)
            .json();
        assert!(
            refused["problem"].as_str().unwrap().contains(key.as_str()),
            "{refused}"
        );
        assert_eq!(
            snapshot(&mut conn),
            before,
            "{key}: the buy wrote something"
        );
        // The join reads all of them but the active set.
        if *key != room.active {
            let join = seckill(&["queue", "join", "--item", "1", "--user", "alice"])
                .campaign(&file)
                .redis(&server)
                .within(HANG)
                .fails_with(RUNTIME_ERROR);
            assert!(join.stderr().contains(key.as_str()), "{}", join.stderr());
            assert_eq!(
                snapshot(&mut conn),
                before,
                "{key}: the join wrote something"
            );
        }
        let () = conn.del(key).unwrap();
        if let Some(saved) = saved {
            let () = redis::cmd("RESTORE")
                .arg(key)
                .arg(0)
                .arg(saved)
                .query(&mut conn)
                .unwrap();
        }
    }
    buy(&server, &file, "alice", SUCCESS);
    // A room-off item's buy is the ten-key call it always was.
    let plain = campaign("off").item("1", 10).write();
    let command = seckill(&["loadtest", "--print-command", "full"])
        .campaign(&plain)
        .within(HANG)
        .succeeds()
        .stdout();
    assert_eq!(command.split_whitespace().nth(2), Some("10"), "{command}");
}

#[test]
fn the_http_door_joins_reads_and_answers_each_refusal_with_its_status() {
    let server = RedisServer::start();
    let file = preheated(
        &server,
        campaign("door")
            .item("1", 100)
            .room("{ mode: rate, admit_rate: 1/s, admission_ttl: 2s }")
            .item("2", 100),
    );
    let serve = crate::support::serve::Serve::start(&file, &server.url(), false, &[]);
    let at = serve.addr;
    let join = |user: &str| {
        http::post(
            at,
            "/v1/items/1/queue",
            &serde_json::json!({ "user": user }),
        )
    };
    let read = |user: &str| http::get(at, &format!("/v1/items/1/queue/{user}"));
    assert_eq!(read("alice").json()["state"], "not_queued");
    let first = join("alice");
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(first.json()["outcome"], "joined");
    assert_eq!(first.json()["position"], 1);
    let again = join("alice");
    assert_eq!(
        (again.status, again.json()["outcome"].clone()),
        (200, "queued".into())
    );
    assert_eq!(again.json()["position"], 1);
    let bob = join("bob");
    assert_eq!(bob.json()["position"], 2);
    assert_eq!(bob.json()["state"], "waiting");
    assert!(bob.header("Retry-After").is_some(), "{:?}", bob.headers);
    let early = http::buy(at, "1", "bob", "rb-1");
    assert_eq!(early.status, 425, "{}", early.body);
    assert_eq!(early.json()["outcome"], "not_admitted");
    assert_eq!(early.json()["waiting"]["position"], 2);
    let wait: u64 = early.header("Retry-After").unwrap().parse().unwrap();
    assert!((1..=3).contains(&wait), "{wait}");
    let stranger = http::buy(at, "1", "carol", "rc-1");
    assert_eq!(
        (stranger.status, stranger.json()["outcome"].clone()),
        (428, "not_queued".into())
    );
    // Alice's turn comes a second after the room opened, Bob's a second later.
    let alice_from = read("alice");
    let bob_until = read("bob");
    let opened = room(&server, &file)["opened_at_ms"].as_i64().unwrap();
    until_redis(&server, opened + 1_000);
    assert_eq!(
        read("alice").json()["state"],
        "admitted",
        "{}",
        alice_from.body
    );
    let bought = http::buy(at, "1", "alice", "ra-1");
    assert_eq!(bought.status, 200, "{}", bought.body);
    // Bob never buys in his two seconds: expired, 410.
    until_redis(&server, opened + 2_000 + 2_000 + 10);
    let late = http::buy(at, "1", "bob", "rb-2");
    assert_eq!(
        (late.status, late.json()["outcome"].clone()),
        (410, "admission_expired".into()),
        "{}",
        bob_until.body
    );
    // Bad input never reaches Redis; an item without a room has no door.
    assert_eq!(
        http::post(at, "/v1/items/1/queue", &serde_json::json!({ "user": "" })).status,
        400
    );
    assert_eq!(
        http::post(at, "/v1/items/1/queue", &serde_json::json!({ "who": "x" })).status,
        400
    );
    assert_eq!(
        http::post(at, "/v1/items/9/queue", &serde_json::json!({ "user": "x" })).status,
        404
    );
    let roomless = http::post(at, "/v1/items/2/queue", &serde_json::json!({ "user": "x" }));
    assert_eq!(
        (roomless.status, roomless.json()["error"]["kind"].clone()),
        (404, "no_waiting_room".into())
    );
    drop(serve);

    // Another campaign selling item 1 needs a Redis of its own.
    let server = RedisServer::start();
    let registered = preheated(
        &server,
        campaign("door2").item("1", 100).room(&format!(
            "{{ mode: rate, admit_rate: 10/s, registration: {{ until: {} }} }}",
            from_now(3600)
        )),
    );
    let serve = crate::support::serve::Serve::start(&registered, &server.url(), false, &[]);
    let refused = http::post(
        serve.addr,
        "/v1/items/1/queue",
        &serde_json::json!({ "user": "mallory" }),
    );
    assert_eq!(
        (refused.status, refused.json()["outcome"].clone()),
        (403, "not_registered".into())
    );
    let buy = http::buy(serve.addr, "1", "mallory", "rm-1");
    assert_eq!(
        (buy.status, buy.json()["outcome"].clone()),
        (403, "not_registered".into())
    );
}

#[test]
fn a_pause_stops_the_clock_and_a_resume_goes_on_where_it_stopped() {
    let server = RedisServer::start();
    let file = preheated(
        &server,
        campaign("pause")
            .item("1", 10)
            .room("{ mode: rate, admit_rate: 100/s }"),
    );
    for ran in users("z", 0..1000)
        .chunks(500)
        .map(|chunk| join_started(&server, &file, chunk))
        .collect::<Vec<_>>()
    {
        assert_eq!(ran.finish_within(HANG).code(), SUCCESS);
    }
    let queue = |action: &str| {
        seckill(&["queue", action])
            .campaign(&file)
            .redis(&server)
            .within(HANG)
            .succeeds();
    };
    let opened = room(&server, &file)["opened_at_ms"].as_i64().unwrap();
    until_redis(&server, opened + 1_000);
    queue("pause");
    let paused = room(&server, &file);
    assert_eq!(paused["paused"], true);
    std::thread::sleep(Duration::from_millis(1500));
    let still = room(&server, &file);
    assert_eq!(
        still["serving"], paused["serving"],
        "nobody admitted while paused"
    );
    queue("resume");
    let resumed = room(&server, &file);
    let pause = resumed["paused_ms"].as_i64().unwrap();
    assert!((1400..=4000).contains(&pause), "{pause}");
    let clock = RateClock {
        count: 100,
        per_ms: 1000,
    };
    let elapsed = resumed["now_ms"].as_i64().unwrap() - opened - pause;
    assert_eq!(
        resumed["serving"].as_i64().unwrap(),
        clock.serving(1000, elapsed)
    );
}

#[test]
fn status_shows_the_room_and_loadtest_rehearses_it() {
    let server = RedisServer::start();
    let file = preheated(
        &server,
        campaign("st")
            .item("1", 10)
            .room("{ mode: rate, admit_rate: 200/s, admission_ttl: 1m }"),
    );
    join(&server, &file, &users("s", 0..5));
    let table = seckill(&["status"])
        .campaign(&file)
        .redis(&server)
        .columns(100)
        .within(HANG)
        .succeeds()
        .stdout();
    let line = table
        .lines()
        .find(|l| l.trim_start().starts_with("room"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(
        line.contains("5 joined") && line.contains("rate 200/s"),
        "{line}"
    );
    let json = seckill(&["status"])
        .campaign(&file)
        .redis(&server)
        .json()
        .within(HANG)
        .succeeds()
        .json();
    assert_eq!(json["items"][0]["room"]["joined"], 5);

    // The load test refuses a Redis with a live sale: a server of its own.
    let rehearsal = RedisServer::start();
    for buckets in ["1", "4"] {
        let report = seckill(&[
            "loadtest",
            "--variant",
            "queue",
            "--rate",
            "400",
            "--duration",
            "1s",
        ])
        .args(&["--stock", "1000", "--buckets", buckets])
        .campaign(&file)
        .redis(&rehearsal)
        .json()
        .within(HANG)
        .succeeds()
        .json();
        assert_eq!(report["verdict"], "exact", "{report}");
        assert_eq!(report["joined"], 400);
        assert_eq!(
            (report["duplicates"].clone(), report["holes"].clone()),
            (0.into(), 0.into())
        );
        assert_eq!(report["ok_without_admission"], 0);
        assert_eq!(report["ok"], 400);
        // Shoppers who joined in one millisecond share an admission moment
        // (τ-b then dips below 1): the promise is no pair out of order.
        assert_eq!(report["admitted_out_of_position_order"], 0, "{report}");
        let rate = report["admit_rate_achieved"].as_f64().unwrap();
        assert!(
            (150.0..=250.0).contains(&rate),
            "{rate} admissions/s for 200/s"
        );
        assert!(report["impostor_buys"].as_u64().unwrap() > 0);
    }
    let left: Vec<String> = rehearsal.conn().keys("seckill-loadtest:*").unwrap();
    assert!(left.is_empty(), "the load test left {left:?}");
}

/// `queue status`'s JSON for item `item`.
fn room_of_item(server: &RedisServer, file: &CampaignFile, item: &str) -> Value {
    seckill(&["queue", "status", "--item", item])
        .campaign(file)
        .redis(server)
        .json()
        .within(HANG)
        .succeeds()
        .json()["rooms"][0]
        .clone()
}

#[test]
fn a_room_that_waits_on_an_admitter_says_so_in_preheat_status_and_the_buy_answer() {
    let server = RedisServer::start();
    // Item 1: a bucketed rate room (its admissions reach the buckets only
    // through the fan-out). Item 2: a plain rate room with a pre-queue (the
    // admitter shuffles it at the start). Item 3: a plain rate room, which
    // needs nothing.
    let spec = campaign("need")
        .starts_in(3)
        .item("1", 100)
        .buckets(2)
        .room("{ mode: rate, admit_rate: 100/s }")
        .item("2", 100)
        .room("{ mode: rate, admit_rate: 100/s, prequeue: true }")
        .item("3", 100)
        .room("{ mode: rate, admit_rate: 100/s }");
    let file = spec.write();
    let preheat = seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .columns(400)
        .within(HANG)
        .succeeds()
        .stdout();
    let says = |item: &str| {
        preheat
            .lines()
            .find(|l| l.starts_with(&format!("{item}: this room needs")))
            .map(String::from)
    };
    assert!(
        says("1").is_some_and(|l| l.contains("`seckill queue admit --loop`")
            && l.contains("bucketed")
            && l.ends_with("none has run yet")),
        "{preheat}"
    );
    assert!(
        says("2").is_some_and(|l| l.contains("pre-queue")),
        "{preheat}"
    );
    assert_eq!(says("3"), None, "{preheat}");
    let join_item = |item: &str, user: &str| {
        seckill(&["queue", "join", "--item", item, "--user", user])
            .campaign(&file)
            .redis(&server)
            .within(HANG)
            .succeeds();
    };
    join_item("2", "early");
    let opens = redis_now(&server) + 3_100;
    until_redis(&server, opens);
    for item in ["1", "3"] {
        join_item(item, "ann");
    }
    std::thread::sleep(Duration::from_millis(100));
    let buy_item = |item: &str, user: &str, code: i32| {
        seckill(&["buy", "--item", item, "--user", user])
            .campaign(&file)
            .redis(&server)
            .json()
            .within(HANG)
            .fails_with(code)
            .json()
    };
    // Ann's turn has come in the room; with no admitter it never reaches her
    // bucket, nor does the pre-queue open: both answers say why.
    for (item, user) in [("1", "ann"), ("2", "early")] {
        let refused = buy_item(item, user, NOT_ADMITTED);
        assert_eq!(
            refused["waiting"]["needs_admitter"],
            serde_json::json!({ "silent_ms": null }),
            "item {item}: {refused}"
        );
        let text = seckill(&["buy", "--item", item, "--user", user])
            .campaign(&file)
            .redis(&server)
            .columns(400)
            .within(HANG)
            .fails_with(NOT_ADMITTED)
            .stdout();
        assert!(
            text.contains("this room needs `seckill queue admit --loop`; none has run yet"),
            "{text}"
        );
        let status = room_of_item(&server, &file, item);
        assert!(
            status["needs_admitter"]
                .as_str()
                .is_some_and(|s| s.ends_with("none has run yet")),
            "{status}"
        );
    }
    let plain = buy_item("3", "ann", SUCCESS);
    assert!(plain.get("waiting").is_none_or(Value::is_null), "{plain}");

    // An admitter runs: the bucket admits, the pre-queue opens, no note.
    let mut admitter = seckill(&["queue", "admit", "--loop"])
        .campaign(&file)
        .redis(&server)
        .start();
    let deadline = Instant::now() + HANG;
    while room_of_item(&server, &file, "1")["fanned"] != 1
        || room_of_item(&server, &file, "2")["shuffled"] != true
    {
        assert!(Instant::now() < deadline, "the admitter never ran");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The pre-queue's room opens at the shuffle: position 1's turn 10 ms later.
    std::thread::sleep(Duration::from_millis(100));
    buy_item("1", "ann", SUCCESS);
    buy_item("2", "early", SUCCESS);
    let status = room_of_item(&server, &file, "1");
    assert!(
        status["needs_admitter"]
            .as_str()
            .is_some_and(|s| s.contains("one finished a pass")),
        "{status}"
    );
    // It dies; twelve seconds later (its heartbeat set back as it would age)
    // the answer says for how long none has run.
    let _ = admitter.child().kill();
    let _ = admitter.child().wait();
    join_item("1", "cid");
    let _: () = server
        .conn()
        .hset(
            "seckill:{need:1}:room",
            "admitter_at_ms",
            redis_now(&server) - 12_000,
        )
        .unwrap();
    let stalled = buy_item("1", "cid", NOT_ADMITTED);
    let silent = stalled["waiting"]["needs_admitter"]["silent_ms"]
        .as_i64()
        .unwrap_or_else(|| panic!("{stalled}"));
    assert!((12_000..20_000).contains(&silent), "{stalled}");
    let text = seckill(&["buy", "--item", "1", "--user", "cid"])
        .campaign(&file)
        .redis(&server)
        .columns(400)
        .within(HANG)
        .fails_with(NOT_ADMITTED)
        .stdout();
    assert!(text.contains("none has run for 12s"), "{text}");
}

#[test]
fn a_pause_admits_nobody_new_and_a_join_during_it_gets_its_whole_admission_after() {
    let server = RedisServer::start();
    let file = preheated(
        &server,
        campaign("hold")
            .item("1", 100)
            .room("{ mode: rate, admit_rate: 100/s, admission_ttl: 2s }"),
    );
    let first = users("f", 0..5);
    join(&server, &file, &first);
    let opened = room(&server, &file)["opened_at_ms"].as_i64().unwrap();
    // A second later the clock has banked 100 turns for 5 users.
    until_redis(&server, opened + 1_000);
    let (_, before) = positions(&server, &file, &first);
    assert!(
        before.iter().all(|s| s["state"] == "admitted"),
        "{before:?}"
    );
    let paused = seckill(&["queue", "pause"])
        .campaign(&file)
        .redis(&server)
        .within(HANG)
        .succeeds()
        .stdout();
    assert!(paused.contains("item 1: paused"), "{paused}");
    let late = users("late", 0..3);
    let joined = join(&server, &file, &late);
    assert_eq!(
        joined.iter().map(|j| j.2).collect::<Vec<_>>(),
        [6, 7, 8],
        "{joined:?}"
    );
    let mut conn = server.conn();
    let snapshot_before = snapshot(&mut conn);
    let refused = buy(&server, &file, "late0", NOT_ADMITTED);
    assert_eq!(refused["waiting"]["position"], 6, "{refused}");
    assert_eq!(snapshot(&mut conn), snapshot_before, "not_admitted wrote");
    // The pause outlasts an admission: nobody new gets in meanwhile.
    std::thread::sleep(Duration::from_millis(2_500));
    let (figures, during) = positions(&server, &file, &late);
    assert!(during.iter().all(|s| s["state"] == "waiting"), "{during:?}");
    assert_eq!(figures["serving"], 5, "{figures}");
    let (_, firsts) = positions(&server, &file, &first);
    assert!(
        firsts.iter().all(|s| s["state"] == "admitted"),
        "an admission running when the pause began keeps its time: {firsts:?}"
    );
    seckill(&["queue", "resume"])
        .campaign(&file)
        .redis(&server)
        .within(HANG)
        .succeeds();
    let resumed_at = redis_now(&server);
    let (_, after) = positions(&server, &file, &late);
    for s in &after {
        assert_eq!(s["state"], "admitted", "{s}");
        let (from, to) = (s["from_ms"].as_i64().unwrap(), s["to_ms"].as_i64().unwrap());
        assert_eq!(to - from, 2_000, "{s}");
        assert!(
            (resumed_at - 100..=resumed_at).contains(&from),
            "admitted at the resume ({resumed_at}), not during the pause: {s}"
        );
    }
    buy(&server, &file, "late2", SUCCESS);
}

#[test]
fn the_kill_switch_pauses_the_room_and_off_resumes_it_unless_the_operator_holds_it() {
    let server = RedisServer::start();
    let file = preheated(
        &server,
        campaign("ks")
            .item("1", 100)
            .room("{ mode: rate, admit_rate: 1000/s }")
            .item("2", 100)
            .buckets(2)
            .room("{ mode: rate, admit_rate: 1000/s }"),
    );
    let run = |args: &[&str]| {
        seckill(args)
            .campaign(&file)
            .redis(&server)
            .within(HANG)
            .succeeds()
            .stdout()
    };
    let state = |item: &str| {
        let r = room_of_item(&server, &file, item);
        (
            r["paused"].as_bool().unwrap(),
            r["paused_by"].as_str().unwrap().to_string(),
        )
    };
    for item in ["1", "2"] {
        run(&["queue", "join", "--item", item, "--user", "a"]);
    }
    std::thread::sleep(Duration::from_millis(200));
    run(&["shutdown-switch", "on", "--reason", "incident"]);
    for item in ["1", "2"] {
        assert_eq!(state(item), (true, "switch".to_string()), "item {item}");
        // Nobody joining during the incident is told `admitted`.
        let joined = seckill(&["queue", "join", "--item", item, "--user", "newcomer"])
            .campaign(&file)
            .redis(&server)
            .json()
            .within(HANG)
            .succeeds()
            .json();
        assert_eq!(
            joined["joins"][0]["standing"]["state"], "waiting",
            "{joined}"
        );
    }
    let status = run(&["queue", "status", "--item", "1"]);
    assert!(
        status.contains("PAUSED now (by the kill switch)"),
        "{status}"
    );
    // The operator's resume cannot reopen what the switch holds.
    let resume = run(&["queue", "resume", "--item", "1"]);
    assert!(
        resume.contains("not_paused") && resume.contains("the kill switch holds it paused"),
        "{resume}"
    );
    assert!(state("1").0);
    // The operator pauses too; the switch going off leaves the operator's pause.
    run(&["queue", "pause", "--item", "1"]);
    run(&["shutdown-switch", "off"]);
    assert_eq!(state("1"), (true, "operator".to_string()));
    assert_eq!(state("2"), (false, String::new()));
    run(&["queue", "resume", "--item", "1"]);
    assert_eq!(state("1"), (false, String::new()));
    std::thread::sleep(Duration::from_millis(50));
    let (_, standing) = positions(&server, &file, &["newcomer".to_string()]);
    assert_eq!(standing[0]["state"], "admitted", "{standing:?}");
}

#[test]
fn a_shopper_whose_admission_ran_out_joins_again_at_the_tail() {
    let server = RedisServer::start();
    let file = preheated(
        &server,
        campaign("again")
            .item("1", 100)
            .room("{ mode: rate, admit_rate: 1000/s, admission_ttl: 1s }")
            .item("2", 100)
            .room("{ mode: max_active, max_active: 1, admission_ttl: 1s }")
            .item("3", 100)
            .buckets(2)
            .room("{ mode: rate, admit_rate: 1000/s, admission_ttl: 1s }"),
    );
    let on = |item: &str, args: &[&str], code: i32| {
        seckill(args)
            .args(&["--item", item])
            .campaign(&file)
            .redis(&server)
            .json()
            .within(HANG)
            .fails_with(code)
            .json()
    };
    let admit = |item: &str| on(item, &["queue", "admit"], SUCCESS);
    for item in ["1", "2", "3"] {
        on(
            item,
            &["queue", "join", "--user", "a", "--user", "b"],
            SUCCESS,
        );
        admit(item);
    }
    std::thread::sleep(Duration::from_millis(1_300));
    for item in ["1", "2", "3"] {
        // max_active: b takes the place a left.
        admit(item);
        on(item, &["buy", "--user", "a"], ADMISSION_EXPIRED);
        let again = on(item, &["queue", "join", "--user", "a"], SUCCESS);
        assert_eq!(
            again["joins"][0]["outcome"], "joined",
            "item {item}: {again}"
        );
        assert_eq!(
            again["joins"][0]["standing"]["position"], 3,
            "item {item}: the tail"
        );
        // A repeat of the new join is the same new position.
        let repeat = on(item, &["queue", "join", "--user", "a"], SUCCESS);
        assert_eq!(repeat["joins"][0]["outcome"], "queued", "{repeat}");
        assert_eq!(repeat["joins"][0]["standing"]["position"], 3);
    }
    // max_active: a waits behind b until b buys and gives the place back.
    let refused = on("2", &["buy", "--user", "a"], NOT_ADMITTED);
    assert_eq!(refused["waiting"]["position"], 3, "{refused}");
    on("2", &["buy", "--user", "b"], SUCCESS);
    for item in ["1", "2", "3"] {
        admit(item);
        on(item, &["buy", "--user", "a"], SUCCESS);
    }
    // The bucket replaced a's ended admission with the new one, counted as a grant.
    let layout = seckill::model::layout::Layout::new("seckill", "again", "3", 2);
    let mut conn = server.conn();
    let (from, to) = granted(&mut conn, &layout, "a").unwrap();
    assert_eq!(to - from, 1_000);
    let ever: i64 = layout
        .all()
        .iter()
        .map(|b| {
            conn.get::<_, Option<i64>>(&b.keys.room().admission_count)
                .unwrap()
                .unwrap_or(0)
        })
        .sum();
    assert_eq!(ever, 3, "a twice, b once");
}

#[test]
fn concurrent_joins_again_after_expiry_move_each_user_to_the_tail_once() {
    let server = RedisServer::start();
    let file = preheated(
        &server,
        campaign("rejoin")
            .item("1", 10)
            .room("{ mode: rate, admit_rate: 1000000/s, admission_ttl: 1s }"),
    );
    let everyone = users("r", 0..1000);
    join_concurrently(&server, &file, &everyone, 250);
    std::thread::sleep(Duration::from_millis(1_200));
    let (_, expired) = positions(&server, &file, &everyone);
    assert!(expired.iter().all(|s| s["state"] == "expired"));
    // Every user joins again twice, from six processes at once.
    let mut twice = everyone.clone();
    twice.extend(everyone.iter().rev().cloned());
    let running: Vec<_> = twice
        .chunks(twice.len().div_ceil(6))
        .map(|chunk| join_started(&server, &file, chunk))
        .collect();
    let mut answers: HashMap<String, Vec<(String, i64)>> = HashMap::new();
    for run in running {
        let ran = run.finish_within(HANG);
        assert_eq!(ran.code(), SUCCESS, "{}", ran.describe());
        for (user, outcome, position) in joins_of(&ran) {
            answers.entry(user).or_default().push((outcome, position));
        }
    }
    let mut positions_now = Vec::new();
    for (user, got) in &answers {
        let joined = got.iter().filter(|(o, _)| o == "joined").count();
        // The second join may land after the new admission already ran out
        // (1 s): then it is a third turn, still at the tail.
        assert!((1..=2).contains(&joined), "{user}: {got:?}");
        assert!(got.iter().all(|(_, p)| *p > 1000), "{user}: {got:?}");
    }
    for entry in queue_entries(&server, "rejoin").values() {
        positions_now.push(entry.0);
    }
    positions_now.sort_unstable();
    positions_now.dedup();
    assert_eq!(positions_now.len(), 1000, "one current position per user");
    let joined = room(&server, &file)["joined"].as_i64().unwrap();
    let handed_out: usize = answers
        .values()
        .map(|got| got.iter().filter(|(o, _)| o == "joined").count())
        .sum();
    assert_eq!(joined as usize, 1000 + handed_out, "no hole, no duplicate");
    assert!(positions_now.iter().all(|p| (1001..=joined).contains(p)));
}

#[test]
fn a_malformed_pause_heartbeat_or_entry_is_refused_whole_naming_its_key() {
    let server = RedisServer::start();
    let file = preheated(
        &server,
        campaign("bad")
            .item("1", 100)
            .room("{ mode: max_active, max_active: 5 }")
            .item("2", 100)
            .buckets(2)
            .room("{ mode: rate, admit_rate: 1000/s }"),
    );
    join(&server, &file, &["alice".to_string()]);
    seckill(&["queue", "admit"])
        .campaign(&file)
        .redis(&server)
        .within(HANG)
        .succeeds();
    let keys = seckill::model::keys::ItemKeys::live("bad", "1").room();
    let mut conn = server.conn();
    let try_all = |what: &str, key: &str| {
        let mut conn = server.conn();
        let before = snapshot(&mut conn);
        let refused = buy(&server, &file, "alice", CORRUPT_STATE);
        assert!(
            refused["problem"].as_str().unwrap().contains(key),
            "{what}: {refused}"
        );
        for args in [
            &["queue", "join", "--item", "1", "--user", "bob"][..],
            &["queue", "pause", "--item", "1"],
            &["queue", "admit", "--item", "1"],
        ] {
            let ran = seckill(args)
                .campaign(&file)
                .redis(&server)
                .within(HANG)
                .fails_with(RUNTIME_ERROR);
            assert!(
                ran.stderr().contains(key),
                "{what}: {args:?}: {}",
                ran.stderr()
            );
        }
        assert_eq!(snapshot(&mut conn), before, "{what}: something was written");
    };
    for field in ["paused_joined", "admitter_at_ms", "admitter_every_ms"] {
        let saved: Option<String> = conn.hget(&keys.room, field).unwrap();
        let () = conn.hset(&keys.room, field, "1.5").unwrap();
        try_all(field, &keys.room);
        match saved {
            Some(value) => conn.hset(&keys.room, field, value).unwrap(),
            None => conn.hdel(&keys.room, field).unwrap(),
        }
    }
    // Alice's entry with a malformed third number (the pauses at her join).
    let entry: String = conn.hget(&keys.queue, "alice").unwrap();
    for bad in [
        format!("{entry} x"),
        format!("{entry} 1 2"),
        format!("{entry} 05"),
    ] {
        let () = conn.hset(&keys.queue, "alice", &bad).unwrap();
        let before = snapshot(&mut conn);
        let refused = buy(&server, &file, "alice", CORRUPT_STATE);
        assert!(
            refused["problem"].as_str().unwrap().contains(&keys.queue),
            "{bad}: {refused}"
        );
        assert_eq!(snapshot(&mut conn), before, "{bad}");
    }
    let () = conn.hset(&keys.queue, "alice", &entry).unwrap();
    // Who holds the room paused, malformed.
    seckill(&["queue", "pause", "--item", "1"])
        .campaign(&file)
        .redis(&server)
        .within(HANG)
        .succeeds();
    let () = conn.hset(&keys.room, "paused_by", "somebody").unwrap();
    let before = snapshot(&mut conn);
    for args in [
        &["queue", "resume", "--item", "1"][..],
        &["queue", "pause", "--item", "1"],
    ] {
        let ran = seckill(args)
            .campaign(&file)
            .redis(&server)
            .within(HANG)
            .fails_with(RUNTIME_ERROR);
        assert!(ran.stderr().contains(&keys.room), "{}", ran.stderr());
    }
    assert_eq!(snapshot(&mut conn), before);
    // A bucket's admission of the user a grant would replace, malformed.
    seckill(&["queue", "join", "--item", "2", "--user", "carl"])
        .campaign(&file)
        .redis(&server)
        .within(HANG)
        .succeeds();
    let layout = seckill::model::layout::Layout::new("seckill", "bad", "2", 2);
    let admissions = layout.home("carl").keys.room().admissions;
    let () = conn.hset(&admissions, "carl", "soon later").unwrap();
    let before = snapshot(&mut conn);
    let ran = seckill(&["queue", "admit", "--item", "2"])
        .campaign(&file)
        .redis(&server)
        .within(HANG)
        .fails_with(RUNTIME_ERROR);
    assert!(ran.stderr().contains(&admissions), "{}", ran.stderr());
    assert_eq!(snapshot(&mut conn), before);
}

#[test]
fn a_user_the_admitter_passed_over_never_stops_the_fan_out() {
    let server = RedisServer::start();
    let file = preheated(
        &server,
        campaign("pass")
            .item("1", 100)
            .buckets(2)
            .room("{ mode: max_active, max_active: 10 }"),
    );
    let run = |args: &[&str]| {
        seckill(args)
            .args(&["--item", "1"])
            .campaign(&file)
            .redis(&server)
            .within(HANG)
            .succeeds()
    };
    run(&["queue", "penalize", "--user", "bot", "--block"]);
    run(&[
        "queue", "join", "--user", "bot", "--user", "ann", "--user", "bob",
    ]);
    // One admitter's tick passes the blocked user over; the block is cleared
    // before any fan-out (another admitter's, say) reaches position 1, which
    // has no admission and never will.
    let room_keys = seckill::model::keys::ItemKeys::live("pass", "1").room();
    let keys: Vec<String> = [
        &room_keys.room,
        &room_keys.line,
        &room_keys.admitted,
        &room_keys.active,
        &room_keys.risk,
        &room_keys.shuffled,
    ]
    .map(String::clone)
    .to_vec();
    seckill::redis_client::scripts::invoke_positional(
        "queue_admit",
        &keys,
        &["10".to_string()],
        &mut server.conn(),
    )
    .unwrap()
    .unwrap();
    run(&["queue", "penalize", "--user", "bot", "--clear"]);
    run(&["queue", "join", "--user", "cid"]);
    run(&["queue", "admit"]);
    assert_eq!(room(&server, &file)["fanned"], 4);
    for user in ["ann", "bob", "cid"] {
        buy(&server, &file, user, SUCCESS);
    }
}
