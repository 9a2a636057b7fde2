//! All-or-nothing for any stored state: every Lua script runs against
//! wrong-typed and malformed values of every key it reads. The buy script
//! validates each value as strictly as the command that later writes it,
//! before its first write; a corrupt value is its own outcome
//! (`corrupt_state`, exit 17) naming the key, and nothing is written. The
//! bucket scripts (`lua/bucket_*.lua`) must refuse every wrong type and every
//! malformed value they read (`must_refuse`); the other scripts either name
//! the problem or fail, but never write half.

use crate::support;

use std::collections::BTreeMap;

use redis::Commands;
use seckill::model::exit_codes;
use seckill::model::keys::LIVE_PREFIX;
use seckill::model::layout::Layout;
use seckill::redis_client::scripts::{self, Spec};
use support::spec::{campaign, seckill};
use support::{CampaignFile, Preheat, RedisServer};

/// A rate limit, so the buy script's earliest write (the rate counter) is in play.
fn cs() -> CampaignFile {
    campaign("cs")
        .field("ends_at", "2099-01-01T00:00:00Z")
        .keep_after_end("1h")
        .per_user_limit(2)
        .rate_limit("60s", 1000)
        .item("1", 5)
        .write()
}

const BASE: &str = "seckill:{cs:1}";

/// Integers Lua's `tonumber` accepts but `DECRBY`/`HINCRBY`/`PEXPIRE` refuse
/// (or that a double cannot hold exactly), and plain garbage.
const NOT_INTEGERS: &[&str] = &[
    "1.5",
    " 5",
    "5 ",
    "5e0",
    "0x10",
    "0.5",
    "05",
    "-0",
    "",
    "abc",
    "+5",
    "99999999999999999999",
    "9007199254740993",
    "inf",
    "nan",
];

/// Every key, its type, DUMP and TTL: "nothing written" means this is unchanged.
pub(crate) fn snapshot(conn: &mut redis::Connection) -> BTreeMap<String, (String, Vec<u8>, i64)> {
    let keys: Vec<String> = conn.keys("*").unwrap();
    keys.into_iter()
        .map(|key| {
            let kind: String = redis::cmd("TYPE").arg(&key).query(conn).unwrap();
            let dump: Vec<u8> = redis::cmd("DUMP").arg(&key).query(conn).unwrap();
            let ttl: i64 = conn.pttl(&key).unwrap();
            // TTLs tick down: only "has one" matters.
            (key, (kind, dump, ttl.signum()))
        })
        .collect()
}

/// An emptied Redis with `file` preheated, and a connection to it.
fn fresh(server: &RedisServer, file: &CampaignFile) -> redis::Connection {
    Preheat::on(server).flushed().file(file);
    server.conn()
}

fn wrong_type(conn: &mut redis::Connection, key: &str, kind: &str) {
    let () = conn.del(key).unwrap();
    let () = match kind {
        "string" => conn.set(key, "x").unwrap(),
        "hash" => conn.hset(key, "f", "v").unwrap(),
        "list" => {
            let _: i64 = conn.rpush(key, "x").unwrap();
        }
        other => panic!("{other}"),
    };
}

/// Buy once and insist on `corrupt_state` naming `key`, with nothing written.
fn assert_corrupt(server: &RedisServer, file: &CampaignFile, key: &str, case: &str) {
    let mut conn = server.conn();
    let before = snapshot(&mut conn);
    let reply = seckill(&["buy", "--item", "1", "--user", "u", "--qty", "1"])
        .args(&["--request-id", "r1"])
        .campaign(file)
        .redis(server)
        .json()
        .fails_with(exit_codes::CORRUPT_STATE)
        .json();
    assert_eq!(reply["outcome"], "corrupt_state", "{case}: {reply}");
    let problem = reply["problem"].as_str().unwrap_or_default();
    assert!(
        problem.contains(key),
        "{case}: {problem} does not name {key}"
    );
    assert_eq!(
        before,
        snapshot(&mut conn),
        "{case}: the buy wrote something"
    );
}

#[test]
fn buy_refuses_every_malformed_integer_before_its_first_write() {
    let server = RedisServer::start();
    let file = cs();
    let stock = format!("{BASE}:stock");
    let meta = format!("{BASE}:meta");
    let buyers = format!("{BASE}:buyers");
    let rate = format!("{BASE}:rate:u");
    for value in NOT_INTEGERS {
        let mut conn = fresh(&server, &file);
        let () = conn.set(&stock, value).unwrap();
        assert_corrupt(&server, &file, &stock, &format!("stock {value:?}"));

        for field in [
            "initial_stock",
            "starts_at_ms",
            "ends_at_ms",
            "per_user_limit",
            "rate_window_ms",
            "rate_max",
            "price_cents",
            "expire_at_ms",
        ] {
            let mut conn = fresh(&server, &file);
            // "" means "none" for the optional times, not corruption.
            if value.is_empty() && field.ends_with("_at_ms") {
                continue;
            }
            let () = conn.hset(&meta, field, value).unwrap();
            assert_corrupt(&server, &file, &meta, &format!("meta {field} {value:?}"));
        }

        let mut conn = fresh(&server, &file);
        let () = conn.hset(&buyers, "u", value).unwrap();
        assert_corrupt(&server, &file, &buyers, &format!("buyers u {value:?}"));

        // The rate counter is validated by INCR itself (Redis's int64 rule):
        // a huge but valid counter is simply over the limit.
        if *value != "9007199254740993" {
            let mut conn = fresh(&server, &file);
            let () = conn.set(&rate, value).unwrap();
            assert_corrupt(&server, &file, &rate, &format!("rate {value:?}"));
        }
    }
    let mut conn = fresh(&server, &file);
    let () = conn.hset(&meta, "closed", "yes").unwrap();
    assert_corrupt(&server, &file, &meta, "meta closed \"yes\"");
}

#[test]
fn buy_refuses_every_wrong_typed_key_before_its_first_write() {
    let server = RedisServer::start();
    let file = cs();
    for (suffix, kind) in [
        ("meta", "string"),
        ("stock", "hash"),
        ("buyers", "string"),
        ("buyer_orders", "string"),
        ("requests", "string"),
        ("orders", "hash"),
        ("rate:u", "list"),
    ] {
        let key = format!("{BASE}:{suffix}");
        let mut conn = fresh(&server, &file);
        wrong_type(&mut conn, &key, kind);
        assert_corrupt(&server, &file, &key, &format!("{suffix} as {kind}"));
    }
    // A retried request id is answered from the requests hash: stock is
    // still checked on that path.
    let mut conn = fresh(&server, &file);
    let () = conn
        .hset(format!("{BASE}:requests"), "1:u:r1", "01ORDER")
        .unwrap();
    let () = conn.set(format!("{BASE}:stock"), "abc").unwrap();
    assert_corrupt(
        &server,
        &file,
        &format!("{BASE}:stock"),
        "remembered, stock abc",
    );
}

#[test]
fn a_valid_state_still_buys_and_the_corrupt_outcome_is_documented() {
    let server = RedisServer::start();
    let file = cs();
    let mut conn = fresh(&server, &file);
    // Valid edge values: a zero-padded-free negative time, "0" counters.
    let () = conn
        .hset(format!("{BASE}:meta"), "starts_at_ms", "-1")
        .unwrap();
    let () = conn.hset(format!("{BASE}:buyers"), "u", "0").unwrap();
    seckill(&["buy", "--item", "1", "--user", "u", "--qty", "2"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let stock: i64 = conn.get(format!("{BASE}:stock")).unwrap();
    assert_eq!(stock, 3);
    assert!(
        exit_codes::ALL
            .iter()
            .any(|(code, name, _)| *code == exit_codes::CORRUPT_STATE && *name == "corrupt_state")
    );
}

/// One way to break a key.
#[derive(Debug, Clone, Copy)]
enum Corruption {
    /// Replace the key by one of this type.
    WrongType(&'static str),
    /// Store this malformed number (in a hash: as the user's units and as `initial_stock`).
    Value(&'static str),
}

impl Corruption {
    fn apply(self, conn: &mut redis::Connection, key: &str) {
        match self {
            Corruption::WrongType(kind) => wrong_type(conn, key, kind),
            Corruption::Value(value) => {
                let kind: String = redis::cmd("TYPE").arg(key).query(conn).unwrap();
                if kind == "hash" {
                    let () = conn.hset(key, "u", value).unwrap();
                    let () = conn.hset(key, "initial_stock", value).unwrap();
                } else if kind == "string" || kind == "none" {
                    let () = conn.set(key, value).unwrap();
                }
            }
        }
    }
}

/// The key a script's `KEYS[n] name` header line gets for item `cs:1`:
/// the model's own field of that name (`ItemKeys`, its room's, the bucket's
/// transfer log), so the test corrupts the keys the sale really passes.
fn key_named(name: &str) -> String {
    let slot = Layout::new(LIVE_PREFIX, "cs", "1", 1).bucket(0);
    let (item, room) = (&slot.keys, slot.keys.room());
    let field = match name {
        "meta" => &item.meta,
        "stock" => &item.stock,
        "buyers" => &item.buyers,
        "buyer_orders" => &item.buyer_orders,
        "orders" => &item.orders,
        "dead" => &item.dead,
        "reservations" => &item.reservations,
        "deadlines" => &item.deadlines,
        "reservation_counts" => &item.reservation_counts,
        "switch_log" => &item.switch_log,
        "xfer_out" => &slot.xfer_out,
        "xfer_pending" => &slot.xfer_pending,
        "xfer_in" => &slot.xfer_in,
        "room" => &room.room,
        "queue" => &room.queue,
        "line" => &room.line,
        "registered" => &room.registered,
        "devices" => &room.devices,
        "ips" => &room.ips,
        "risk" => &room.risk,
        "admitted" => &room.admitted,
        "active" => &room.active,
        "shuffled" => &room.shuffled,
        "admissions" => &room.admissions,
        "admission_count" => &room.admission_count,
        // The user of every ARGV table below.
        "rate" => return item.rate("u"),
        // `requests` is the crate's own field; `lock` is the load test's key.
        "requests" | "lock" => return format!("{}{name}", item.base),
        other => panic!("KEYS name {other} has no key of the model in this test: add it"),
    };
    field.clone()
}

/// The type column of each `-- KEYS[n] name type` header line of `spec`.
fn header_kinds(spec: &Spec) -> Vec<String> {
    let kinds: Vec<String> = spec
        .source
        .lines()
        .filter_map(|line| line.strip_prefix("-- KEYS["))
        .map(|rest| {
            let words: Vec<&str> = rest.split(']').nth(1).unwrap().split_whitespace().collect();
            words.get(1).map_or(String::new(), |w| w.to_string())
        })
        .collect();
    assert_eq!(
        kinds.len(),
        spec.keys.len(),
        "lua/{}: KEYS header",
        spec.file
    );
    kinds
}

/// The bucket scripts validate before anything else: a key of another type
/// than their header says, and a malformed value they read (meta, stock, the
/// user's units, the rate counter of a counted attempt, a stale transfer's
/// record), must be refused — a plain answer would mean it went unnoticed.
fn must_refuse(
    script: &str,
    key: &str,
    kind: &str,
    corruption: Corruption,
    argv: &[String],
) -> bool {
    if !script.starts_with("bucket_") {
        return false;
    }
    let counted = script == "bucket_buy" && argv[7] == "1";
    let is_rate = key.ends_with(":rate:u");
    // bucket_buy reads a bucket's admissions only with the item's waiting
    // room on; this campaign has none.
    if script == "bucket_buy" && key.ends_with(":admissions") {
        return false;
    }
    match corruption {
        Corruption::WrongType(wrong) => wrong != kind && (!is_rate || counted),
        Corruption::Value(_) => {
            key.ends_with(":meta")
                || key.ends_with(":stock")
                || (script == "bucket_buy" && key.ends_with(":buyers"))
                || (is_rate && counted)
                || (script == "bucket_take" && key.ends_with(":xfer_out"))
                // A grant reads the admission the user holds (it replaces
                // only one that has ended).
                || (script == "bucket_admit" && key.ends_with(":admissions") && argv[0] == "grant")
        }
    }
}

/// Valid ARGV lists for each script (`pending` is a pending order entry's id).
fn argv_variants(script: &str, pending: &str) -> Vec<Vec<String>> {
    let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    match script {
        "buy" => vec![owned(&["u", "1", "r1", "01ORDERX", "cs", "1", "0"])],
        "preheat" => ["load", "force", "meta", "dry"]
            .iter()
            .map(|mode| {
                owned(&[
                    mode,
                    "5",
                    "x",
                    "100",
                    "",
                    "",
                    "2",
                    "60000",
                    "1000",
                    "",
                    "orders-db",
                    "force",
                    "0",
                ])
            })
            .collect(),
        "dead_letter" => vec![owned(&["orders-db", pending, "reason", "1", "c"])],
        // The pending entry's consumer (kept: it holds it), and an idle empty one.
        "consumer_delete" => vec![
            owned(&["orders-db", "c", "0"]),
            owned(&["orders-db", "gone", "0"]),
        ],
        "stream_order_ids" => vec![owned(&[pending, "1-1"])],
        // A buyer of the seeded state, with and without a request id.
        "order_lookup" => vec![owned(&["u", "r1"]), owned(&["u", ""])],
        "lock_release" => vec![owned(&["token"])],
        "pay" => vec![owned(&["01ORDERX", "cs", "1"])],
        "release" => vec![
            owned(&["cancel", "01ORDERX", "why", "1", "1", "cs", "1"]),
            owned(&["expire", "", "", "10", "1", "cs", "1"]),
        ],
        // A home buy counting the attempt; a credit then a buy; both at once
        // (payment_timeout_ms 0: an ok is final).
        "bucket_buy" => [
            ["0", "1", "", "0", "0"],
            ["0", "0", "01XFER", "3", "2"],
            ["0", "1", "01XFER", "3", "2"],
        ]
        .iter()
        .map(|tail| {
            let mut argv = owned(&["u", "1", "r1", "01ORDERX", "cs", "1"]);
            argv.extend(owned(tail));
            argv
        })
        .collect(),
        // The buyer's rule and the rebalancer's; stale_ms 0: the seeded pending transfer is stale.
        "bucket_take" => vec![
            owned(&["1", "01XFER", "3", "0", "16", "0"]),
            owned(&["2", "01XFER", "3", "0", "16", "1"]),
        ],
        "bucket_credit" => vec![owned(&["01XFER", "3", "2"])],
        "item_status" => vec![owned(&["orders-db"])],
        "set_switch" => vec![owned(&["1", "why", "alice", "1", "", "20"])],
        "queue_setup" => ["create", "update"]
            .iter()
            .map(|mode| {
                owned(&[
                    mode, "rate", "5", "1000", "", "60000", "0", "1", "1", "3", "0", "rate", "ab",
                    "cd", "", "", "",
                ])
            })
            .collect(),
        "queue_join" => vec![owned(&["u"])],
        "queue_read" => vec![owned(&["u", "w"])],
        "queue_clock" => vec![
            owned(&["pause", ""]),
            owned(&["resume", ""]),
            owned(&["switch_on", ""]),
            owned(&["switch_off", ""]),
            owned(&["beat", "100"]),
        ],
        "queue_admit" => vec![owned(&["10"])],
        "queue_fanout" => vec![owned(&["read", "10", ""]), owned(&["advance", "0", "0"])],
        "queue_register" => vec![owned(&["u", "phone", "203.0.113.0/24"])],
        "queue_penalize" => vec![owned(&["u", "delay", "2000"]), owned(&["u", "block", ""])],
        "queue_shuffle" => vec![owned(&["prepare"]), owned(&["commit", "0"])],
        "bucket_admit" => vec![
            owned(&["grant", "", "u", "1", "2"]),
            owned(&["revoke", "", "u"]),
        ],
        _ => vec![vec![]],
    }
}

/// A transfer log for the bucket scripts: a pending debit whose id is `u`
/// (so a malformed value in a hash lands on the record a sweep reads) and a credit.
fn seed_transfers(conn: &mut redis::Connection) {
    let () = conn.hset(format!("{BASE}:xfer_out"), "u", "3 1 1").unwrap();
    let _: i64 = conn.zadd(format!("{BASE}:xfer_pending"), "u", 1).unwrap();
    let () = conn.hset(format!("{BASE}:xfer_in"), "t0", "3 1 1").unwrap();
}

/// Run `spec`'s script once through its typed call, with `keys` and `argv`
/// in the order of its header (`scripts::invoke_positional`).
fn invoke(
    conn: &mut redis::Connection,
    spec: &Spec,
    keys: &[String],
    argv: &[String],
) -> redis::RedisResult<redis::Value> {
    scripts::invoke_positional(spec.name(), keys, argv, conn)
        .unwrap_or_else(|e| panic!("the KEYS and ARGV tables of this test: {e}"))
}

#[test]
fn every_lua_file_fails_whole_and_names_the_key_on_wrong_typed_and_malformed_values() {
    let server = RedisServer::start();
    let file = cs();
    // Every script (the library's unit test holds `scripts::ALL` to `lua/`),
    // each key by its header name.
    assert!(scripts::ALL.len() >= 12, "scripts::ALL shrank");
    let mut cases = 0;
    for spec in scripts::ALL {
        let name = spec.name();
        let keys: Vec<String> = spec.keys.iter().map(|name| key_named(name)).collect();
        let kinds = header_kinds(spec);
        assert!(!keys.is_empty(), "{name} has no KEYS header");
        for (index, key) in keys.iter().enumerate() {
            let corruptions = ["string", "hash", "list"]
                .map(Corruption::WrongType)
                .into_iter()
                .chain(NOT_INTEGERS.iter().map(|v| Corruption::Value(v)));
            for corruption in corruptions {
                let mut conn = fresh(&server, &file);
                // One order, delivered and pending: every script has work to do.
                seckill(&["buy", "--item", "1", "--user", "w"])
                    .campaign(&file)
                    .redis(&server)
                    .succeeds();
                let read: redis::Value = redis::cmd("XREADGROUP")
                    .arg(&["GROUP", "orders-db", "c", "COUNT", "1", "STREAMS"])
                    .arg(format!("{BASE}:orders"))
                    .arg(">")
                    .query(&mut conn)
                    .unwrap();
                let pending = format!("{read:?}")
                    .split('"')
                    .find(|s| s.contains('-') && s.chars().next().unwrap().is_ascii_digit())
                    .map(String::from)
                    .unwrap_or_else(|| "1-1".into());
                seed_transfers(&mut conn);
                corruption.apply(&mut conn, key);
                let what = format!("{corruption:?}");
                for argv in argv_variants(name, &pending) {
                    let before = snapshot(&mut conn);
                    let result = invoke(&mut conn, spec, &keys, &argv);
                    let after = snapshot(&mut conn);
                    let case = format!("{name} KEYS[{}] {key} {what} argv {argv:?}", index + 1);
                    cases += 1;
                    match &result {
                        Err(e) => {
                            assert_eq!(before, after, "{case}: failed half-way: {e}");
                            assert!(
                                e.to_string().contains(key.as_str()),
                                "{case}: error does not name the key: {e}"
                            );
                        }
                        Ok(redis::Value::Array(fields))
                            if fields.first()
                                == Some(&redis::Value::BulkString(b"corrupt_state".to_vec())) =>
                        {
                            assert_eq!(
                                before, after,
                                "{case}: corrupt_state but something was written"
                            );
                        }
                        Ok(_)
                            if matches!(corruption, Corruption::Value(_))
                                && key.ends_with(":stock") =>
                        {
                            assert_eq!(
                                before, after,
                                "{case}: wrote over a malformed stock: {result:?}"
                            );
                        }
                        Ok(_) => assert!(
                            !must_refuse(name, key, kinds[index].as_str(), corruption, &argv),
                            "{case}: a corrupt value was not refused: {result:?}"
                        ),
                    }
                }
            }
        }
    }
    assert!(cases > 300, "only {cases} cases ran");
}

#[test]
fn preheat_on_an_empty_item_checks_the_meta_type_before_loading_stock() {
    let server = RedisServer::start();
    let mut conn = server.conn();
    let spec = scripts::by_name("preheat").unwrap();
    let keys: Vec<String> = spec.keys.iter().map(|name| key_named(name)).collect();
    let meta = format!("{BASE}:meta");
    let () = conn.set(&meta, "not a hash").unwrap();
    let before = snapshot(&mut conn);
    for argv in argv_variants("preheat", "1-1") {
        let error = invoke(&mut conn, spec, &keys, &argv).unwrap_err();
        assert!(error.to_string().contains(&meta), "{error}");
        assert_eq!(
            before,
            snapshot(&mut conn),
            "{argv:?}: stock loaded, meta not"
        );
    }
}
