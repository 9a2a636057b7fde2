//! All-or-nothing for any stored state: every Lua script runs against
//! wrong-typed and malformed values of every key it reads. The buy script
//! validates each value as strictly as the command that later writes it,
//! before its first write; a corrupt value is its own outcome
//! (`corrupt_state`, exit 17) naming the key, and nothing is written. The
//! bucket scripts (`lua/bucket_*.lua`) must refuse every wrong type and every
//! malformed value they read (`must_refuse`), and so must the regions' transfer
//! scripts (`lua/region_*.lua`); the other scripts either name
//! the problem or fail, but never write half.

use crate::support;

use std::collections::BTreeMap;

use redis::Commands;
use seckill::model::exit_codes;
use seckill::model::keys::LIVE_PREFIX;
use seckill::model::layout::Layout;
use seckill::model::limits::LimitKeys;
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
    /// Store this malformed number (in a hash: as the user's units and as
    /// `initial_stock`; in the reservation counters: as `reserved_orders`
    /// and `reserved_units`).
    Value(&'static str),
}

impl Corruption {
    fn apply(self, conn: &mut redis::Connection, key: &str) {
        match self {
            Corruption::WrongType(kind) => wrong_type(conn, key, kind),
            // The reservation counters (absent in this campaign) as the
            // purchase reads them: by field name.
            Corruption::Value(value) if key.ends_with(":reservation_counts") => {
                let () = conn.hset(key, "reserved_orders", value).unwrap();
                let () = conn.hset(key, "reserved_units", value).unwrap();
            }
            // A seat section's orders as pay and release read them: the
            // seeded hold's entry (seed_seats).
            Corruption::Value(value) if key.ends_with(":seat_orders") => {
                let () = conn.hset(key, SEATED, value).unwrap();
            }
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
        "seats" => &item.seats,
        "seat_orders" => &item.seat_orders,
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
        "arrivals" => &room.arrivals,
        "arrival_counts" => &room.arrival_counts,
        "marks" => &room.marks,
        "passes" => &room.passes,
        "revoked" => &room.revoked,
        "prequeued" => &room.prequeued,
        // A limit group's bucket of the user of every ARGV table below.
        "limit_counts" => return LimitKeys::group("cs", "g", "u").counts,
        "limit_claims" => return LimitKeys::group("cs", "g", "u").claims,
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
/// So must both buy scripts a malformed reservation counter when the attempt
/// is a reservation (issue 25 item 29: `''` was taken for "none", then
/// HINCRBY refused it after the order entry and the record were written).
fn must_refuse(
    script: &str,
    key: &str,
    kind: &str,
    corruption: Corruption,
    argv: &[String],
) -> bool {
    // A reservation (payment_timeout_ms > 0) reads the counters it moves.
    let reserving = (script == "buy" || script == "bucket_buy") && argv[6] != "0";
    if reserving
        && key.ends_with(":reservation_counts")
        && matches!(corruption, Corruption::Value(_))
    {
        return true;
    }
    // The fence's scripts read every key they are given, and meta's,
    // the stock's and the buyer's values, before their first write.
    if script == "fence" || script == "fence_reapply" {
        return match corruption {
            Corruption::WrongType(wrong) => wrong != kind,
            Corruption::Value(_) => {
                key.ends_with(":meta")
                    || key.ends_with(":stock")
                    || (script == "fence_reapply" && key.ends_with(":buyers"))
            }
        };
    }
    // The seat scripts read the section's state and its seat lists before
    // their first write (lib/seat_pick, lib/order_seats): a buy always, pay
    // and cancel when the order is the seeded hold.
    let seat_key = key.ends_with(":seats") || key.ends_with(":seat_orders");
    let reaches_seats = match script {
        "seat_buy" => true,
        "pay" => argv[0] == SEATED,
        "release" => argv[0] == "cancel" && argv[1] == SEATED,
        _ => false,
    };
    if seat_key && reaches_seats {
        return match corruption {
            Corruption::WrongType(wrong) => wrong != kind,
            // A buy reads the state's length, not the seat lists' values.
            Corruption::Value(_) => script != "seat_buy" || key.ends_with(":seats"),
        };
    }
    // The regions' scripts read the slot's meta and stock (lib/region_slot,
    // region_state) before their first write.
    if script.starts_with("region_") {
        return match corruption {
            Corruption::WrongType(wrong) => wrong != kind,
            Corruption::Value(_) => key.ends_with(":meta") || key.ends_with(":stock"),
        };
    }
    // The limit scripts (docs/limits.md) read both keys' types, the claim's
    // record and (the claim always, the release when the record names the
    // member) the member's count before their first write.
    if script == "limit_claim" || script == "limit_release" {
        return match corruption {
            Corruption::WrongType(wrong) => wrong != kind,
            Corruption::Value(_) => script == "limit_claim" || key.ends_with(":limit_claims"),
        };
    }
    if !script.starts_with("bucket_") {
        return false;
    }
    let counted = script == "bucket_buy" && argv[7] == "1";
    let is_rate = key.ends_with(":rate:u");
    // bucket_buy reads a bucket's admissions (and a ticket room's copies)
    // only with the item's waiting room on; this campaign has none.
    let room_copies = [":admissions", ":room", ":passes", ":risk", ":revoked"];
    if script == "bucket_buy" && room_copies.iter().any(|k| key.ends_with(k)) {
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

/// The order id the buy scripts' ARGV give (a ULID, as `seckill` makes them:
/// a request id remembers it, and a replay refuses anything else).
const ORDER: &str = "01JDZ8Q6V4M7K3N9P2R5T8W1XY";
/// The order id of the buy scripts' reservation ARGV.
const RESERVED: &str = "01JDZ8Q6V4M7K3N9P2R5T8W1XZ";

/// The order id of the hold [`seed_seats`] makes: pay and release of it
/// read the section's state and its seat list.
const SEATED: &str = "01JDZ8Q6V4M7K3N9P2R5T8W1Y1";

/// A seat section on the item's slot (1 row of 5, as lua/seat_load.lua writes
/// it) and a hold of its first seat, order [`SEATED`] of user `w` (due in
/// 10 minutes): the seat scripts' values are then all reached.
fn seed_seats(conn: &mut redis::Connection) {
    let load = scripts::by_name("seat_load").unwrap();
    let keys: Vec<String> = load.keys.iter().map(|name| key_named(name)).collect();
    let argv = ["1", "5", "A", ".....", "", "create"].map(String::from);
    invoke(conn, load, &keys, &argv).unwrap();
    let buy = scripts::by_name("seat_buy").unwrap();
    let keys: Vec<String> = buy
        .keys
        .iter()
        .map(|name| match *name {
            "rate" => Layout::new(LIVE_PREFIX, "cs", "1", 1)
                .bucket(0)
                .keys
                .rate("w"),
            name => key_named(name),
        })
        .collect();
    let argv = [
        "w", "1", "", SEATED, "cs", "1", "600000", "?node", "named", "0",
    ]
    .map(String::from);
    let reply = invoke(conn, buy, &keys, &argv).unwrap();
    assert!(
        format!("{reply:?}").contains("ok"),
        "seeding the hold: {reply:?}"
    );
}

/// Valid ARGV lists for each script (`pending` is a pending order entry's id).
fn argv_variants(script: &str, pending: &str) -> Vec<Vec<String>> {
    let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    match script {
        // An ok that is final, then a reservation (it reads the counters;
        // its own request id, so it is no replay of the first).
        "buy" => vec![
            owned(&["u", "1", "r1", ORDER, "cs", "1", "0", "", "", "?node"]),
            owned(&[
                "u", "1", "r2", RESERVED, "cs", "1", "60000", "", "", "?node",
            ]),
        ],
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
        // An unknown order, then the seeded hold (seed_seats).
        "pay" => vec![owned(&[ORDER, "cs", "1"]), owned(&[SEATED, "cs", "1"])],
        "release" => vec![
            owned(&["cancel", ORDER, "why", "1", "1", "cs", "1"]),
            owned(&["cancel", SEATED, "why", "1", "1", "cs", "1"]),
            owned(&["expire", "", "", "10", "1", "cs", "1"]),
        ],
        // A best seat sold at once, then a named seat held (its own request
        // id: no replay of the first); the seeded hold has seat 0.
        "seat_buy" => vec![
            owned(&[
                "u", "1", "r1", ORDER, "cs", "1", "0", "?node", "best", "front",
            ]),
            owned(&[
                "u", "1", "r2", RESERVED, "cs", "1", "60000", "?node", "named", "2",
            ]),
        ],
        "seat_load" => ["create", "reset", "dry"]
            .iter()
            .map(|mode| owned(&["1", "5", "A", ".....", "", mode]))
            .collect(),
        // A home buy counting the attempt; a credit then a buy; both at once
        // (payment_timeout_ms 0: an ok is final); then a reservation at home
        // and with a credit of its own (they read the counters; their own
        // request id, so they are no replay of the first three).
        "bucket_buy" => [
            ["r1", ORDER, "0", "1", "", "0", "0"],
            ["r1", ORDER, "0", "0", "01XFER", "3", "2"],
            ["r1", ORDER, "0", "1", "01XFER", "3", "2"],
            ["r2", RESERVED, "60000", "1", "", "0", "0"],
            ["r2", RESERVED, "60000", "0", "02XFER", "3", "2"],
        ]
        .iter()
        .map(|[request, order, tail @ ..]| {
            let mut argv = owned(&["u", "1", request, order, "cs", "1"]);
            argv.extend(owned(tail));
            // No ticket (arrival_ms, ticket_key); the script reads the run_id itself.
            argv.extend(owned(&["", "", "?node"]));
            argv
        })
        .collect(),
        // The buyer's rule and the rebalancer's; stale_ms 0: the seeded pending transfer is stale.
        "bucket_take" => vec![
            owned(&["1", "01XFER", "3", "0", "16", "0", "?node"]),
            owned(&["2", "01XFER", "3", "0", "16", "1", "?node"]),
        ],
        "bucket_credit" => vec![owned(&["01XFER", "3", "2", "?node"])],
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
        "room_tick" => vec![owned(&[
            "i1", "100", "500", "1000", "-1", "-1", "1", "110 2",
        ])],
        "room_revoke" => vec![owned(&["k1"])],
        "bucket_cursor" => vec![owned(&["100", "1", "60000", "", "", ""])],
        // Each risk entry (a block, a delay, a clear), then a revoked key.
        "bucket_copy" => vec![
            owned(&["risk", "u", "block", ""]),
            owned(&["risk", "u", "delay 2000 1", "4102444800000"]),
            owned(&["risk", "u", "", ""]),
            owned(&["revoke", "k1", "", "4102444800000"]),
        ],
        "fence" => vec![owned(&["read"]), owned(&["fence"]), owned(&["reopen"])],
        // An order past the stream's end, re-applied on a fenced slot
        // (the test fences it first).
        "fence_reapply" => vec![owned(&[
            "99999999999999-0",
            "01JDZ8Q6V4M7K3N9P2R5T8W1Y0",
            "cs",
            "1",
            "u",
            "1",
            "100",
            "99999999999999",
        ])],
        "bucket_admit" => vec![
            owned(&["grant", "", "u", "1", "2"]),
            owned(&["revoke", "", "u"]),
        ],
        // A send and a raise to a peer region, a credit from one, a read
        // (docs/regions.md); the slot is this campaign's plain item.
        "region_debit" => vec![
            owned(&["sh", "2", "send", "?node"]),
            owned(&["sh", "2", "raise", "?node"]),
        ],
        "region_credit" => vec![owned(&["bj", "3", "?node"])],
        "region_state" => vec![owned(&["?node"])],
        "region_mark" => vec![owned(&["1"]), owned(&["0"])],
        // The claim id is `u`, the field a malformed value is stored in: the
        // claim and the release both read the claim's record and the count.
        "limit_claim" => vec![owned(&["u", "u", "1", "2", ""])],
        "limit_release" => vec![owned(&["u"])],
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
                if spec.keys.contains(&"seats") {
                    seed_seats(&mut conn);
                }
                corruption.apply(&mut conn, key);
                if name == "fence_reapply" {
                    // Fenced, so the re-apply reaches its writes (a meta of
                    // the wrong type refuses the HSET: left as it is).
                    let _: redis::RedisResult<i64> =
                        conn.hset(format!("{BASE}:meta"), "fenced", "1");
                }
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

/// A sale whose `ok` is a reservation: the purchase reads the counters it moves.
fn reserving() -> CampaignFile {
    campaign("cs")
        .field("ends_at", "2099-01-01T00:00:00Z")
        .keep_after_end("1h")
        .per_user_limit(2)
        .payment_timeout("10m")
        .item("1", 5)
        .write()
}

/// Issue 25 item 29: an empty (or otherwise malformed) reservation counter
/// was taken for "none"; HINCRBY then refused it after the order entry, the
/// reservation record and its deadline were written, with no stock taken, and
/// `expire` later released that phantom reservation into the stock (6 of 5).
#[test]
fn a_reservation_refuses_a_malformed_counter_before_its_first_write() {
    let server = RedisServer::start();
    let file = reserving();
    let counts = format!("{BASE}:reservation_counts");
    for value in NOT_INTEGERS {
        for field in ["reserved_orders", "reserved_units"] {
            let mut conn = fresh(&server, &file);
            let () = conn.hset(&counts, field, value).unwrap();
            assert_corrupt(&server, &file, &counts, &format!("{field} {value:?}"));
        }
    }
    // Valid counters still reserve, and move.
    let mut conn = fresh(&server, &file);
    let () = conn.hset(&counts, "reserved_units", "0").unwrap();
    seckill(&["buy", "--item", "1", "--user", "u"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let units: i64 = conn.hget(&counts, "reserved_units").unwrap();
    assert_eq!(units, 1);
}

/// The remembered values a request id may hold: `<order id>:<qty>` or, as
/// versions before the qty was kept wrote it, a bare order id; the order id
/// is a ULID (`seckill` makes every one). Anything else is corrupt.
const NOT_REMEMBERED: &[&str] = &[
    "not-an-order:1.5",
    "ZZZ:9007199254740993",
    "garbage",
    "",
    ":1",
    "01JDZ8Q6V4M7K3N9P2R5T8W1XY:0",
    "01JDZ8Q6V4M7K3N9P2R5T8W1XY:01",
    "01JDZ8Q6V4M7K3N9P2R5T8W1XY: 1",
    "01JDZ8Q6V4M7K3N9P2R5T8W1XY:1:1",
    "01JDZ8Q6V4M7K3N9P2R5T8W1X",
    "01JDZ8Q6V4M7K3N9P2R5T8W1XYZ:1",
    "01jdz8q6v4m7k3n9p2r5t8w1xy:1",
    "01JDZ8Q6V4M7K3N9P2R5T8W1XU:1",
];

/// Issue 25 item 37: a corrupt remembered request id was answered `ok` with
/// the garbage as its order id (or `request_id_reused` with a qty Lua's
/// `tonumber` rounded); it is `corrupt_state` naming the requests hash, with
/// nothing written — on a plain item, and on a bucket's credit call, whose
/// credit (its first write) must not land before the replay refuses.
#[test]
fn a_malformed_remembered_request_id_is_corrupt_state_and_writes_nothing() {
    let server = RedisServer::start();
    let file = cs();
    let requests = format!("{BASE}:requests");
    for value in NOT_REMEMBERED {
        let mut conn = fresh(&server, &file);
        let () = conn.hset(&requests, "1:u:r1", value).unwrap();
        assert_corrupt(&server, &file, &requests, &format!("remembered {value:?}"));
    }
    // What seckill writes is still answered: a bare order id (older
    // versions), and an order with its qty (a retry with another qty is
    // request_id_reused).
    let mut conn = fresh(&server, &file);
    let () = conn.hset(&requests, "1:u:r1", ORDER).unwrap();
    let replay = seckill(&["buy", "--item", "1", "--user", "u", "--request-id", "r1"])
        .campaign(&file)
        .redis(&server)
        .json()
        .succeeds()
        .json();
    assert_eq!(replay["order_id"], ORDER, "{replay}");
    let () = conn
        .hset(&requests, "1:u:r1", format!("{ORDER}:2"))
        .unwrap();
    seckill(&["buy", "--item", "1", "--user", "u", "--request-id", "r1"])
        .campaign(&file)
        .redis(&server)
        .fails_with(exit_codes::REQUEST_ID_REUSED);

    // A bucket's credit call meets the remembered request id after reading
    // everything else: refused before the credit, whatever the remembered
    // value or the record it names is made of.
    let spec = scripts::by_name("bucket_buy").unwrap();
    let keys: Vec<String> = spec.keys.iter().map(|name| key_named(name)).collect();
    let credit = |timeout: &str| -> Vec<String> {
        [
            "u", "1", "r1", ORDER, "cs", "1", timeout, "0", "01XFER", "3", "2", "", "", "?node",
        ]
        .map(String::from)
        .to_vec()
    };
    let reservations = format!("{BASE}:reservations");
    let cases: Vec<(String, Option<&str>, &str)> = NOT_REMEMBERED
        .iter()
        .map(|value| (value.to_string(), None, "0"))
        .chain([(format!("{ORDER}:1"), Some("not a record"), "60000")])
        .collect();
    for (value, record, timeout) in cases {
        let mut conn = fresh(&server, &file);
        let () = conn.hset(&requests, "1:u:r1", &value).unwrap();
        if let Some(record) = record {
            let () = conn.hset(&reservations, ORDER, record).unwrap();
        }
        let before = snapshot(&mut conn);
        let reply = invoke(&mut conn, spec, &keys, &credit(timeout)).unwrap();
        let case = format!("credit call, remembered {value:?}, record {record:?}");
        let redis::Value::Array(fields) = &reply else {
            panic!("{case}: {reply:?}");
        };
        assert_eq!(
            fields.first(),
            Some(&redis::Value::BulkString(b"corrupt_state".to_vec())),
            "{case}: {reply:?}"
        );
        assert_eq!(
            before,
            snapshot(&mut conn),
            "{case}: the credit was written"
        );
    }
}

/// A seat item's section (docs/seats.md): 2 rows of 4, holds of 10 minutes.
fn seated() -> CampaignFile {
    support::campaign_file(
        "campaign: cs\nkeep_after_end: 1h\nper_user_limit: 4\npayment_timeout: 10m\nitems:\n  - id: hall\n    name: Hall\n    seats:\n      sections:\n        - { id: A, rows: 2, seats_per_row: 4, tier: vip, price: \"100\" }\n",
    )
}

/// One way to corrupt a section's state.
type Breakage<'a> = dyn Fn(&mut redis::Connection) + 'a;

/// Corrupt seat state: the section's state of the wrong type or length is
/// `corrupt_state` for a buy (best and named), and a hold whose seat list
/// names a seat outside the section is a CORRUPT error for pay and cancel;
/// each names the key and writes nothing.
#[test]
fn corrupt_seat_state_is_refused_whole_and_named() {
    let server = RedisServer::start();
    let file = seated();
    let keys = Layout::new(LIVE_PREFIX, "cs", "hall", 1).bucket(0).keys;
    let breakages: [(&str, &Breakage<'_>); 3] = [
        ("a hash", &|c| wrong_type(c, &keys.seats, "hash")),
        ("7 bytes for 8 seats", &|c| {
            c.set(&keys.seats, "s......").unwrap()
        }),
        ("9 bytes for 8 seats", &|c| {
            c.set(&keys.seats, "s........").unwrap()
        }),
    ];
    for (what, breakage) in breakages {
        for ask in [&["--qty", "2"][..], &["--seats", "A-2-1"][..]] {
            let mut conn = fresh(&server, &file);
            breakage(&mut conn);
            let before = snapshot(&mut conn);
            let mut args = vec!["buy", "--item", "hall", "--user", "u"];
            args.extend_from_slice(ask);
            let reply = seckill(&args)
                .campaign(&file)
                .redis(&server)
                .json()
                .fails_with(exit_codes::CORRUPT_STATE)
                .json();
            let case = format!("seats {what}, buy {ask:?}");
            assert_eq!(reply["outcome"], "corrupt_state", "{case}: {reply}");
            let problem = reply["problem"].as_str().unwrap_or_default();
            assert!(problem.contains(&keys.seats), "{case}: {problem}");
            assert_eq!(
                before,
                snapshot(&mut conn),
                "{case}: the buy wrote something"
            );
        }
    }
    for list in ["8", "0,99", "-1", "", "1,x"] {
        for command in ["pay", "cancel"] {
            let mut conn = fresh(&server, &file);
            let held = seckill(&["buy", "--item", "hall", "--user", "h", "--qty", "2"])
                .campaign(&file)
                .redis(&server)
                .json()
                .succeeds()
                .json();
            let order = held["order_id"].as_str().unwrap();
            let () = conn.hset(&keys.seat_orders, order, list).unwrap();
            let before = snapshot(&mut conn);
            let ran = seckill(&[command, "--order", order])
                .campaign(&file)
                .redis(&server)
                .runs();
            let case = format!("{command} of an order whose seats are {list:?}");
            assert_ne!(ran.code(), 0, "{case}: {}", ran.describe());
            assert!(
                ran.stderr().contains("CORRUPT") && ran.stderr().contains(&keys.seat_orders),
                "{case}: {}",
                ran.describe()
            );
            assert_eq!(before, snapshot(&mut conn), "{case}: something was written");
        }
    }
}
