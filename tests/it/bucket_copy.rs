//! A bucketed ticket room's copies (`lua/bucket_copy.lua`): `queue penalize`
//! and `queue revoke-key` write the risk entry / the revoked key and the
//! bucket room's counter in one call per bucket, refuse a corrupt copy with
//! the bucket's keys unchanged, and reach every bucket on a cluster.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use redis::Commands;
use seckill::model::keys::LIVE_PREFIX;
use seckill::model::layout::{Layout, home_bucket};

use crate::corrupt_state::snapshot;
use crate::support::RedisServer;
use crate::support::cluster::RedisCluster;
use crate::support::serve::Serve;
use crate::support::spec::{campaign, seckill};

const ITEM: &str = "t1";
const BUCKETS: u32 = 3;

/// The keys of one bucket's copies and what each holds (type, dump, TTL).
fn bucket_copies(
    conn: &mut redis::Connection,
    layout: &Layout,
    bucket: u32,
) -> BTreeMap<String, (String, Vec<u8>, i64)> {
    let room = layout.bucket(bucket).keys.room();
    let mut all = snapshot(conn);
    all.retain(|key, _| [&room.room, &room.risk, &room.revoked].contains(&key));
    all
}

/// The key id a ticket was signed with (its payload's `k`).
fn key_id_of(ticket: &str) -> String {
    let payload = ticket.split('.').nth(1).expect("t1.<payload>.<tag>");
    let json: serde_json::Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
    json["k"].as_str().unwrap().to_string()
}

/// A user whose home bucket is `bucket`, named `prefix<n>`.
fn user_in(prefix: &str, bucket: u32, buckets: u32) -> String {
    (0..)
        .map(|n| format!("{prefix}{n}"))
        .find(|user| home_bucket(user, buckets) == bucket)
        .unwrap()
}

/// Before the script, the risk entry was written before the counter that
/// makes the bucket's buy read it: a malformed counter left the entry
/// written and the command failed half-way. Now the bucket's copies are
/// checked first and nothing of that bucket is written.
#[test]
fn a_corrupt_bucket_copy_is_refused_and_leaves_the_bucket_unchanged() {
    let server = RedisServer::start();
    let file = campaign("bc-bad")
        .item(ITEM, 10)
        .buckets(BUCKETS)
        .room("{ mode: ticket, admit_rate: 100/s, admission_ttl: 2m }")
        .write();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let mut conn = server.conn();
    let layout = Layout::new(LIVE_PREFIX, "bc-bad", ITEM, BUCKETS);
    let user = "mallory";
    let home = home_bucket(user, BUCKETS);
    let home_room = layout.bucket(home).keys.room();
    let cases: [(&str, &str, &str); 3] = [
        ("risk_version", "x", "a malformed risk_version"),
        ("risk_version", "1.5", "a fractional risk_version"),
        ("mode", "rate", "a bucket copy of another room mode"),
    ];
    for (field, value, what) in cases {
        let _: () = redis::cmd("DEL")
            .arg(&home_room.room)
            .query(&mut conn)
            .unwrap();
        let () = conn.hset(&home_room.room, field, value).unwrap();
        let before = bucket_copies(&mut conn, &layout, home);
        let ran = seckill(&[
            "queue", "penalize", "--item", ITEM, "--user", user, "--block",
        ])
        .campaign(&file)
        .redis(&server)
        .runs();
        assert_ne!(ran.code(), 0, "{what}: {}", ran.describe());
        assert!(
            ran.stderr().contains(&home_room.room),
            "{what}: the error names the key: {}",
            ran.describe()
        );
        assert_eq!(
            before,
            bucket_copies(&mut conn, &layout, home),
            "{what}: the bucket's copies changed"
        );
    }
    let _: () = redis::cmd("DEL")
        .arg(&home_room.room)
        .query(&mut conn)
        .unwrap();
    // A revoke reaches the buckets in order: the last one is corrupt, the
    // ones before it were written, the corrupt one not at all.
    let last = BUCKETS - 1;
    let last_room = layout.bucket(last).keys.room();
    for (field, value) in [("revoked_count", "1.5"), ("mode", "rate")] {
        let () = conn.hset(&last_room.room, field, value).unwrap();
        let before = bucket_copies(&mut conn, &layout, last);
        let ran = seckill(&["queue", "revoke-key", "--item", ITEM, "--key-id", "k-leak"])
            .campaign(&file)
            .redis(&server)
            .runs();
        assert_ne!(ran.code(), 0, "{field}: {}", ran.describe());
        assert!(ran.stderr().contains(&last_room.room), "{}", ran.describe());
        assert_eq!(before, bucket_copies(&mut conn, &layout, last), "{field}");
        let _: () = redis::cmd("DEL")
            .arg(&last_room.room)
            .query(&mut conn)
            .unwrap();
    }
    // A wrong-typed copy is refused the same way.
    let () = conn.set(&last_room.revoked, "not a set").unwrap();
    let before = bucket_copies(&mut conn, &layout, last);
    seckill(&["queue", "revoke-key", "--item", ITEM, "--key-id", "k-leak"])
        .campaign(&file)
        .redis(&server)
        .runs();
    assert_eq!(before, bucket_copies(&mut conn, &layout, last));
    // Repaired, the same command again (already revoked in the room) copies
    // the key to every bucket, each counted once.
    let _: () = conn.del(&last_room.revoked).unwrap();
    let again = seckill(&["queue", "revoke-key", "--item", ITEM, "--key-id", "k-leak"])
        .campaign(&file)
        .redis(&server)
        .json()
        .succeeds()
        .json();
    assert_eq!(again["rooms"][0]["status"], "already_revoked", "{again}");
    for bucket in layout.all() {
        let room = bucket.keys.room();
        let member: bool = conn.sismember(&room.revoked, "k-leak").unwrap();
        let count: Option<i64> = conn.hget(&room.room, "revoked_count").unwrap();
        assert!(member, "bucket {}", bucket.bucket);
        assert_eq!(count, Some(1), "bucket {}", bucket.bucket);
    }
}

/// The copies on a 3+3 cluster, buckets on every master: a block and a
/// delay reach the user's home bucket (its buy refuses), a revoked key
/// every bucket (each refuses the key's tickets, counted once even when
/// revoked twice), and tickets of other keys still buy.
#[test]
fn penalize_and_revoke_reach_every_bucket_of_a_bucketed_ticket_room_on_a_cluster() {
    const N: u32 = 6;
    let cluster = RedisCluster::start_with_replicas(1);
    let file = campaign("bc-clu")
        .item(ITEM, 100)
        .buckets(N)
        .room("{ mode: ticket, admit_rate: 1000/s, admission_ttl: 2m }")
        .write();
    let key = file.room_key_file();
    let roles = cluster.create_roles(&file);
    let run_as = |role: &str, args: &[&str]| {
        seckill(args)
            .campaign(&file)
            .redis_url(&roles.seeds(role))
            .args(&["--cluster"])
            .json()
            .runs()
    };
    let ok = |ran: crate::support::spec::Ran| {
        assert_eq!(ran.code(), 0, "{}", ran.describe());
        ran.json()
    };
    ok(run_as("operator", &["preheat"]));
    // The door beats and copies the cursor to every bucket.
    let _door = Serve::start(
        &file,
        &roles.seeds("buyer"),
        true,
        &["--room-key-file", &key],
    );
    // Per bucket: a user whose key gets revoked, one whose key stays.
    let leaked: Vec<String> = (0..N).map(|b| user_in("leak", b, N)).collect();
    let kept: Vec<String> = (0..N).map(|b| user_in("kept", b, N)).collect();
    let (blocked, delayed) = ("blocked-1", "delayed-1");
    let join = |users: &[String]| -> BTreeMap<String, String> {
        let mut args = vec!["queue", "join", "--item", ITEM, "--room-key-file", &key];
        for user in users {
            args.extend(["--user", user.as_str()]);
        }
        let report = ok(run_as("operator", &args));
        report["tickets"]
            .as_array()
            .unwrap_or_else(|| panic!("no tickets in {report}"))
            .iter()
            .map(|t| {
                (
                    t["user"].as_str().unwrap().to_string(),
                    t["ticket"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    // A delay moves only an admission not begun when it is set.
    ok(run_as(
        "operator",
        &[
            "queue", "penalize", "--item", ITEM, "--user", delayed, "--delay", "10m",
        ],
    ));
    let leaked_tickets = join(&leaked);
    let mut others = kept.clone();
    others.extend([blocked.to_string(), delayed.to_string()]);
    let kept_tickets = join(&others);
    let leaked_key = key_id_of(leaked_tickets.values().next().unwrap());
    assert_ne!(
        leaked_key,
        key_id_of(kept_tickets.values().next().unwrap()),
        "each `queue join` signs with a key of its own"
    );
    // Wait until every bucket's copy of the cursor passed every ticket.
    let arrival = |ticket: &str| -> i64 {
        let payload = ticket.split('.').nth(1).unwrap();
        let json: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
        json["a"].as_i64().unwrap()
    };
    let last_arrival = kept_tickets.values().map(|t| arrival(t)).max().unwrap();
    let layout = Layout::new(LIVE_PREFIX, "bc-clu", ITEM, N);
    let mut conn = cluster.conn();
    let deadline = Instant::now() + Duration::from_secs(15);
    for bucket in layout.all() {
        loop {
            let cursor: Option<i64> = redis::cmd("HGET")
                .arg(bucket.keys.room().room)
                .arg("cursor_ms")
                .query(&mut conn)
                .unwrap();
            if cursor.is_some_and(|c| c >= last_arrival) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "bucket {}'s cursor {cursor:?} never passed {last_arrival}",
                bucket.bucket
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let penalized = ok(run_as(
        "operator",
        &[
            "queue", "penalize", "--item", ITEM, "--user", blocked, "--block",
        ],
    ));
    assert_eq!(penalized["status"], "blocked", "{penalized}");
    for (user, entry) in [(blocked, "block"), (delayed, "delay 600000 ")] {
        let home = layout.home(user).keys.room();
        let copy: Option<String> = redis::cmd("HGET")
            .arg(&home.risk)
            .arg(user)
            .query(&mut conn)
            .unwrap();
        assert!(
            copy.as_deref().is_some_and(|c| c.starts_with(entry)),
            "{user}'s copy in {}: {copy:?}",
            home.risk
        );
        let version: i64 = redis::cmd("HGET")
            .arg(&home.room)
            .arg("risk_version")
            .query(&mut conn)
            .unwrap();
        assert!(version >= 1, "{}: risk_version {version}", home.room);
    }
    // Revoked twice: every bucket holds the key, counted once.
    let first = ok(run_as(
        "operator",
        &[
            "queue",
            "revoke-key",
            "--item",
            ITEM,
            "--key-id",
            &leaked_key,
        ],
    ));
    assert_eq!(first["rooms"][0]["status"], "revoked", "{first}");
    let second = ok(run_as(
        "operator",
        &[
            "queue",
            "revoke-key",
            "--item",
            ITEM,
            "--key-id",
            &leaked_key,
        ],
    ));
    assert_eq!(second["rooms"][0]["status"], "already_revoked", "{second}");
    let mut masters = std::collections::BTreeSet::new();
    for bucket in layout.all() {
        let room = bucket.keys.room();
        masters.insert(cluster.master_and_replicas_of(&room.room).0);
        let member: bool = redis::cmd("SISMEMBER")
            .arg(&room.revoked)
            .arg(&leaked_key)
            .query(&mut conn)
            .unwrap();
        let count: i64 = redis::cmd("HGET")
            .arg(&room.room)
            .arg("revoked_count")
            .query(&mut conn)
            .unwrap();
        assert!(member, "{} lacks {leaked_key}", room.revoked);
        assert_eq!(count, 1, "{}", room.room);
    }
    assert_eq!(masters.len(), 3, "the buckets sit on every master");
    // Each bucket's buy reads its copies.
    let buy = |user: &str, ticket: &str| -> String {
        let ran = run_as(
            "buyer",
            &[
                "buy",
                "--item",
                ITEM,
                "--user",
                user,
                "--ticket",
                ticket,
                "--room-key-file",
                &key,
            ],
        );
        ran.json()["outcome"]
            .as_str()
            .unwrap_or_else(|| panic!("{}", ran.describe()))
            .to_string()
    };
    for user in &leaked {
        assert_eq!(buy(user, &leaked_tickets[user]), "not_queued", "{user}");
    }
    for user in [blocked, delayed] {
        assert_eq!(buy(user, &kept_tickets[user]), "not_admitted", "{user}");
    }
    for user in &kept {
        assert_eq!(buy(user, &kept_tickets[user]), "ok", "{user}");
    }
}

/// A bucket fenced after a failover (docs/failover.md) takes no credit: a
/// transfer into it stays in transit (the sweep and `rebalance` leave it
/// pending, `reconcile --fence` reopens the bucket), and the bucket's keys
/// stay as they were. Before, `bucket_credit.lua` added the units to a
/// bucket whose Redis may have lost sales.
#[test]
fn a_fenced_bucket_takes_no_credit_and_the_transfer_stays_in_transit() {
    let server = RedisServer::start();
    let file = campaign("bc-fenced")
        .item(ITEM, 10)
        .buckets(BUCKETS)
        .write();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let mut conn = server.conn();
    let layout = Layout::new(LIVE_PREFIX, "bc-fenced", ITEM, BUCKETS);
    let dest = layout.bucket(1);
    let _: () = redis::cmd("HSET")
        .arg(&dest.keys.meta)
        .arg("fenced")
        .arg("1")
        .query(&mut conn)
        .unwrap();
    let before = snapshot(&mut conn);
    let source = seckill(&["scripts", "show", "bucket_credit"])
        .succeeds()
        .stdout();
    let reply: redis::Value = redis::cmd("EVAL")
        .arg(&source)
        .arg(3)
        .arg(&dest.keys.meta)
        .arg(&dest.keys.stock)
        .arg(&dest.xfer_in)
        .arg("01XFERFENCED")
        .arg("0")
        .arg("2")
        .arg("?node")
        .query(&mut conn)
        .unwrap();
    let (status, _stock): (String, i64) = redis::from_redis_value(reply).unwrap();
    assert_eq!(status, "fenced");
    assert_eq!(
        snapshot(&mut conn),
        before,
        "a fenced bucket's keys changed under a credit"
    );
}
