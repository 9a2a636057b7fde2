//! Least privilege: the users `seckill acl --apply` writes for a campaign of
//! the test's own (not a shipped example), on a real Redis. Each subcommand
//! works with its role and fails (NOPERM, nothing changed) outside it; the
//! dangerous direct commands fail for every role that must not have them.
//! docs/security.md shows `seckill acl`'s output, and a test here keeps the
//! two equal.

use crate::support;
use crate::support::check_of;

use std::time::{Duration, Instant};

use redis::Commands;
use seckill::model::exit_codes::{RUNTIME_ERROR, SOLD_OUT, SUCCESS};
use seckill::model::keys::LIVE_PREFIX;
use seckill::model::layout::{BucketKeys, Layout, home_bucket};
use support::spec::{CampaignSpec, Run, campaign, seckill};
use support::{CampaignFile, RedisServer};

/// One item of 100 units, orders in `orders.db`.
fn sale() -> CampaignSpec {
    campaign(CAMPAIGN).item("1001", 100).named("x")
}

/// Not a shipped campaign: the roles are generated for whatever id a file has.
const CAMPAIGN: &str = "spring-27_b";
const BASE: &str = "seckill:{spring-27_b:1001}";

/// The same campaign with a bucketed item: 6 units in 2 buckets (3 each).
fn bucketed() -> CampaignFile {
    sale().item("2002", 6).named("y").buckets(2).write()
}

fn bucketed_layout() -> Layout {
    Layout::new(LIVE_PREFIX, CAMPAIGN, "2002", 2)
}

/// `count` user ids whose home is bucket `home` of 2.
fn users_at_home(home: u32, count: usize) -> Vec<String> {
    (0..)
        .map(|i| format!("user{i}"))
        .filter(|user| home_bucket(user, 2) == home)
        .take(count)
        .collect()
}

/// Each role's password, in a file beside the campaign.
fn password_file(file: &CampaignFile, role: &str) -> (String, String) {
    let password = format!("{role}-pw-{}", std::process::id());
    let path = file.dir.path().join(format!("{role}.pw"));
    std::fs::write(&path, format!("{password}\n")).unwrap();
    (path.display().to_string(), password)
}

/// `seckill acl --apply` for every role, as the test server's admin (its
/// default user); returns the URL of each role by name.
fn create_roles(server: &RedisServer, file: &CampaignFile) -> impl Fn(&str) -> String {
    let mut urls = Vec::new();
    for role in ["buyer", "consumer", "operator"] {
        let (path, password) = password_file(file, role);
        let applied = seckill(&["acl", "--role", role, "--password-file", &path, "--apply"])
            .campaign(file)
            .redis(server)
            .json()
            .succeeds()
            .json();
        let user = &applied["users"][0];
        assert_eq!(user["applied"], true);
        let checks = user["checks"].as_array().unwrap();
        assert!(checks.len() >= 16, "{applied}");
        assert!(checks.iter().all(|c| c["ok"] == true), "{applied}");
        assert!(
            !applied.to_string().contains(&password),
            "the password itself is never shown"
        );
        urls.push((
            role.to_string(),
            format!(
                "redis://seckill-{role}:{password}@127.0.0.1:{}/0",
                server.port
            ),
        ));
    }
    move |role: &str| {
        urls.iter()
            .find(|(name, _)| name == role)
            .unwrap_or_else(|| panic!("no role {role}"))
            .1
            .clone()
    }
}

/// The `ACL SETUSER` arguments `seckill acl` generates for `role` (selectors one argument each).
fn generated_args(file: &CampaignFile, role: &str, password_path: &str) -> Vec<String> {
    let report = seckill(&["acl", "--role", role, "--password-file", password_path])
        .campaign(file)
        .json()
        .succeeds()
        .json();
    report["users"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect()
}

/// `ACL SETUSER` with these arguments.
fn set_user(conn: &mut redis::Connection, args: &[String]) {
    let () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg(args)
        .query(conn)
        .unwrap_or_else(|e| panic!("ACL SETUSER {}: {e}", args[0]));
}

fn as_role(file: &CampaignFile, url: &str, args: &[&str]) -> Run {
    seckill(args)
        .campaign(file)
        .redis_url(url)
        .current_dir(file.dir.path())
}

fn assert_allowed(file: &CampaignFile, url: &str, args: &[&str]) {
    as_role(file, url, args).succeeds();
}

/// Refused for lack of permission, and the state is unchanged.
fn assert_denied(file: &CampaignFile, server: &RedisServer, url: &str, args: &[&str]) {
    let before = state(server);
    let stderr = as_role(file, url, args)
        .fails_with(RUNTIME_ERROR)
        .stderr()
        .to_lowercase();
    assert!(
        stderr.contains("noperm")
            || stderr.contains("can't run this command")
            || stderr.contains("can't access at least one of the keys"),
        "{args:?}: {stderr}"
    );
    assert_eq!(before, state(server), "{args:?} changed something");
}

/// Stock, buyers, stream length, meta (and each bucket's transfer logs) of
/// the plain item and of every bucket of the bucketed one: what a denied
/// command must not change.
fn state(server: &RedisServer) -> Vec<String> {
    let mut conn = server.conn();
    let buckets = bucketed_layout().all();
    let bases = std::iter::once(format!("{BASE}:"))
        .chain(buckets.iter().map(|bucket| bucket.keys.base.clone()));
    bases
        .map(|base| {
            let stock: Option<i64> = conn.get(format!("{base}stock")).unwrap();
            let buyers: i64 = conn.hlen(format!("{base}buyers")).unwrap();
            let stream: i64 = conn.xlen(format!("{base}orders")).unwrap();
            let mut meta: Vec<(String, String)> = conn.hgetall(format!("{base}meta")).unwrap();
            meta.sort();
            let debits: i64 = conn.hlen(format!("{base}xfer_out")).unwrap();
            let pending: i64 = conn.zcard(format!("{base}xfer_pending")).unwrap();
            let credits: i64 = conn.hlen(format!("{base}xfer_in")).unwrap();
            format!(
                "{base} stock {stock:?} buyers {buyers} stream {stream} meta {meta:?} \
                 out {debits} pending {pending} in {credits}"
            )
        })
        .collect()
}

fn direct(url: &str, cmd: &mut redis::Cmd) -> redis::RedisResult<redis::Value> {
    let mut conn = redis::Client::open(url).unwrap().get_connection().unwrap();
    cmd.query(&mut conn)
}

fn poison_id(reply: &redis::RedisResult<redis::Value>) -> String {
    match reply {
        Ok(redis::Value::BulkString(id)) => String::from_utf8(id.clone()).unwrap(),
        other => panic!("{other:?}"),
    }
}

fn assert_noperm(url: &str, what: &str, cmd: &mut redis::Cmd) {
    let error = direct(url, cmd).expect_err(what);
    assert_eq!(error.code(), Some("NOPERM"), "{what}: {error}");
}

#[test]
fn each_role_runs_its_subcommands_and_nothing_else() {
    let server = RedisServer::start();
    let file = sale().write();
    let url = create_roles(&server, &file);
    let (buyer, consumer, operator) = (url("buyer"), url("consumer"), url("operator"));

    // Nobody but the operator prepares the sale.
    assert_denied(&file, &server, &buyer, &["preheat"]);
    assert_denied(&file, &server, &consumer, &["preheat"]);
    assert_allowed(&file, &operator, &["preheat"]);
    assert_allowed(&file, &operator, &["shutdown-switch", "status"]);

    // The buyer buys; the others cannot.
    assert_allowed(&file, &buyer, &["buy", "--item", "1001", "--user", "b1"]);
    assert_allowed(&file, &buyer, &["buy", "--item", "1001", "--user", "b2"]);
    assert_denied(
        &file,
        &server,
        &consumer,
        &["buy", "--item", "1001", "--user", "c"],
    );

    // The buyer cannot stop, reset, drain or audit the sale.
    assert_denied(&file, &server, &buyer, &["shutdown-switch", "on"]);
    assert_denied(&file, &server, &buyer, &["init", "--yes"]);
    assert_denied(&file, &server, &buyer, &["consume", "--drain"]);
    assert_denied(&file, &server, &buyer, &["reconcile"]);
    assert_denied(&file, &server, &consumer, &["shutdown-switch", "on"]);
    assert_denied(&file, &server, &consumer, &["reconcile"]);

    // The consumer drains and claims, dead-lettering what is not an order
    // (an entry only the operator could have written).
    let poison = direct(
        &operator,
        redis::cmd("XADD")
            .arg(format!("{BASE}:orders"))
            .arg("*")
            .arg("junk")
            .arg("1"),
    );
    assert!(poison.is_ok(), "{poison:?}");
    assert_allowed(&file, &consumer, &["consume", "--drain"]);
    assert_allowed(&file, &consumer, &["pending-claim", "--min-idle", "0s"]);
    let dead: i64 = server.conn().xlen(format!("{BASE}:dead")).unwrap();
    assert_eq!(dead, 1, "the consumer could not dead-letter");
    let () = server.conn().del(format!("{BASE}:dead")).unwrap();
    let _: i64 = server
        .conn()
        .xdel(format!("{BASE}:orders"), &[poison_id(&poison)])
        .unwrap();
    assert_allowed(&file, &operator, &["reconcile"]);
    assert_allowed(
        &file,
        &operator,
        &["shutdown-switch", "on", "--reason", "t"],
    );
    assert_allowed(&file, &operator, &["shutdown-switch", "off"]);
    // A sale that has just sold is closed before a reset.
    assert_allowed(&file, &operator, &["shutdown-switch", "on"]);
    assert_allowed(&file, &operator, &["init", "--yes"]);

    // Direct commands outside each role.
    assert_noperm(
        &buyer,
        "buyer DEL stock",
        redis::cmd("DEL").arg(format!("{BASE}:stock")),
    );
    assert_noperm(
        &buyer,
        "buyer SET stock",
        redis::cmd("SET").arg(format!("{BASE}:stock")).arg(999),
    );
    assert_noperm(
        &buyer,
        "buyer reopens the sale",
        redis::cmd("HSET")
            .arg(format!("{BASE}:meta"))
            .arg("closed")
            .arg("0"),
    );
    assert_noperm(
        &buyer,
        "buyer XADD dead letters",
        redis::cmd("XADD")
            .arg(format!("{BASE}:dead"))
            .arg("*")
            .arg("f")
            .arg("v"),
    );
    assert_noperm(
        &buyer,
        "buyer DECRBY another campaign",
        redis::cmd("DECRBY").arg("seckill:{other:1}:stock").arg(1),
    );
    assert_noperm(
        &consumer,
        "consumer XADD an order",
        redis::cmd("XADD")
            .arg(format!("{BASE}:orders"))
            .arg("*")
            .arg("f")
            .arg("v"),
    );
    assert_noperm(
        &consumer,
        "consumer DEL",
        redis::cmd("DEL").arg(format!("{BASE}:orders")),
    );
    assert_noperm(
        &consumer,
        "consumer DECRBY stock",
        redis::cmd("DECRBY").arg(format!("{BASE}:stock")).arg(1),
    );
    assert_noperm(&operator, "operator FLUSHALL", &mut redis::cmd("FLUSHALL"));
    assert_noperm(
        &operator,
        "operator CONFIG",
        redis::cmd("CONFIG").arg("GET").arg("dir"),
    );
    assert_noperm(&operator, "operator KEYS", redis::cmd("KEYS").arg("*"));
    assert_noperm(
        &operator,
        "operator another campaign",
        redis::cmd("GET").arg("seckill:{other:1}:stock"),
    );
}

#[test]
fn the_operator_role_runs_the_load_test() {
    let server = RedisServer::start();
    let file = sale().write();
    let url = create_roles(&server, &file);
    assert_allowed(
        &file,
        &url("operator"),
        &[
            "loadtest",
            "--variant",
            "all",
            "--threads",
            "2",
            "--requests",
            "50",
            "--stock",
            "5",
        ],
    );
    assert_denied(
        &file,
        &server,
        &url("buyer"),
        &[
            "loadtest",
            "--variant",
            "v3",
            "--threads",
            "2",
            "--requests",
            "50",
            "--stock",
            "5",
        ],
    );
}

fn buy_bucketed(file: &CampaignFile, url: &str, user: &str, code: i32) {
    as_role(file, url, &["buy", "--item", "2002", "--user", user]).fails_with(code);
}

fn stock_of(server: &RedisServer, bucket: &BucketKeys) -> i64 {
    server.conn().get(&bucket.keys.stock).unwrap()
}

/// A debit from `source` to `dest` whose taker died (a second ago and more):
/// the next sweep, rebalance or `reconcile --repair` that meets it settles it.
fn forge_stale_debit(operator: &str, source: &BucketKeys, dest: u32, id: &str) {
    let mut pipe = redis::pipe();
    pipe.atomic()
        .cmd("DECRBY")
        .arg(&source.keys.stock)
        .arg(1)
        .cmd("HSET")
        .arg(&source.xfer_out)
        .arg(id)
        .arg(format!("{dest} 1 1000"))
        .cmd("ZADD")
        .arg(&source.xfer_pending)
        .arg(1000)
        .arg(id);
    let mut conn = redis::Client::open(operator)
        .unwrap()
        .get_connection()
        .unwrap();
    let () = pipe.query(&mut conn).unwrap();
}

/// The documented roles on a bucketed item (standalone Redis): the buyer buys
/// through the home bucket, a sweep, a transfer and the settling of a stale
/// transfer, and proves the sell-out; the consumer drains every bucket's
/// stream; the operator preheats, repairs, rebalances and reports per bucket.
#[test]
fn each_role_runs_its_subcommands_on_a_bucketed_item() {
    let server = RedisServer::start();
    let file = bucketed();
    let url = create_roles(&server, &file);
    let (buyer, consumer, operator) = (url("buyer"), url("consumer"), url("operator"));
    let layout = bucketed_layout();
    let (b0, b1) = (layout.bucket(0), layout.bucket(1));
    let home0 = users_at_home(0, 4);
    let home1 = users_at_home(1, 3);

    assert_denied(&file, &server, &buyer, &["preheat"]);
    assert_denied(&file, &server, &consumer, &["preheat"]);
    assert_allowed(&file, &operator, &["preheat"]);
    assert_eq!((stock_of(&server, &b0), stock_of(&server, &b1)), (3, 3));

    // A stale transfer 1 -> 0 for the buyer's sweep to settle (bucket_credit).
    forge_stale_debit(&operator, &b1, 0, "01STALEBUYERSETTLES000000");
    for user in &home0[..3] {
        buy_bucketed(&file, &buyer, user, SUCCESS);
    }
    assert_eq!(stock_of(&server, &b0), 0);
    // Home bucket empty: the sweep takes a unit from bucket 1 by transfer,
    // settles the stale one on the way, credits, buys and acks.
    buy_bucketed(&file, &buyer, &home0[3], SUCCESS);
    let pending: i64 = server.conn().zcard(&b1.xfer_pending).unwrap();
    let credits: i64 = server.conn().hlen(&b0.xfer_in).unwrap();
    assert_eq!((pending, credits), (0, 2), "transfers not settled/acked");
    assert_eq!((stock_of(&server, &b0), stock_of(&server, &b1)), (1, 1));

    // The buyer cannot reset, repair, drain or audit. (`rebalance` runs the
    // buyer's own sweep scripts, so the buyer role can run it: see the doc.)
    for args in [
        &["shutdown-switch", "on"][..],
        &["init", "--yes"],
        &["consume", "--drain"],
        &["reconcile"],
        &["reconcile", "--repair"],
    ] {
        assert_denied(&file, &server, &buyer, args);
    }
    assert_denied(
        &file,
        &server,
        &consumer,
        &["buy", "--item", "2002", "--user", "c"],
    );
    assert_denied(&file, &server, &consumer, &["reconcile", "--repair"]);

    // The consumer stores every bucket's orders.
    assert_allowed(&file, &consumer, &["consume", "--drain"]);

    // The operator repairs a transfer left in transit, then rebalances.
    forge_stale_debit(&operator, &b1, 0, "01STALEREPAIRSETTLES00000");
    assert_allowed(&file, &operator, &["reconcile", "--repair"]);
    assert_eq!((stock_of(&server, &b0), stock_of(&server, &b1)), (2, 0));
    // The consumer reads every key (its metrics), but moves no stock.
    assert_denied(
        &file,
        &server,
        &consumer,
        &["rebalance", "--low-water", "1"],
    );
    assert_eq!((stock_of(&server, &b0), stock_of(&server, &b1)), (2, 0));
    assert_allowed(&file, &operator, &["rebalance", "--low-water", "1"]);
    assert_eq!((stock_of(&server, &b0), stock_of(&server, &b1)), (1, 1));

    // Bucket 1's users: one plain home buy, one by transfer, then the
    // sweep proves the sell-out and marks every bucket.
    buy_bucketed(&file, &buyer, &home1[0], SUCCESS);
    buy_bucketed(&file, &buyer, &home1[1], SUCCESS);
    buy_bucketed(&file, &buyer, &home1[2], SOLD_OUT);
    for bucket in [&b0, &b1] {
        let proven: Option<String> = server.conn().hget(&bucket.keys.meta, "sold_out").unwrap();
        assert_eq!(proven.as_deref(), Some("1"), "{}", bucket.keys.meta);
    }

    // The consumer drains and claims on every bucket's stream, dead-lettering
    // an entry only the operator could have written.
    let poison = direct(
        &operator,
        redis::cmd("XADD")
            .arg(&b1.keys.orders)
            .arg("*")
            .arg("junk")
            .arg("1"),
    );
    assert!(poison.is_ok(), "{poison:?}");
    assert_allowed(&file, &consumer, &["consume", "--drain"]);
    assert_allowed(&file, &consumer, &["pending-claim", "--min-idle", "0s"]);
    let dead: i64 = server.conn().xlen(&b1.keys.dead).unwrap();
    assert_eq!(dead, 1, "the consumer could not dead-letter");
    let () = server.conn().del(&b1.keys.dead).unwrap();
    let _: i64 = server
        .conn()
        .xdel(&b1.keys.orders, &[poison_id(&poison)])
        .unwrap();

    assert_allowed(&file, &operator, &["reconcile"]);
    assert_allowed(
        &file,
        &operator,
        &["shutdown-switch", "status", "--buckets"],
    );
    assert_allowed(
        &file,
        &operator,
        &["shutdown-switch", "on", "--reason", "t"],
    );
    assert_allowed(&file, &operator, &["shutdown-switch", "off"]);

    // Direct commands outside the buyer's role, on a bucket's keys.
    let bucket_key = |key: &str| format!("{}{key}", b0.keys.base);
    assert_noperm(
        &buyer,
        "buyer DEL bucket stock",
        redis::cmd("DEL").arg(&b0.keys.stock),
    );
    assert_noperm(
        &buyer,
        "buyer SET bucket stock",
        redis::cmd("SET").arg(&b0.keys.stock).arg(999),
    );
    assert_noperm(
        &buyer,
        "buyer XADD a bucket's dead letters",
        redis::cmd("XADD")
            .arg(&b0.keys.dead)
            .arg("*")
            .arg("f")
            .arg("v"),
    );
    assert_noperm(
        &buyer,
        "buyer DEL a transfer log",
        redis::cmd("DEL").arg(&b0.xfer_in),
    );
    assert_noperm(
        &buyer,
        "buyer HDEL a transfer record",
        redis::cmd("HDEL").arg(&b0.xfer_out).arg("x"),
    );
    assert_noperm(
        &buyer,
        "buyer SET the bucket count",
        redis::cmd("SET").arg(layout.marker()).arg(3),
    );
    assert_noperm(
        &buyer,
        "buyer INCRBY a plain item's stock",
        redis::cmd("INCRBY").arg(format!("{BASE}:stock")).arg(5),
    );
    assert_noperm(
        &buyer,
        "buyer writes a transfer log of a plain item's tag",
        redis::cmd("HSET")
            .arg(format!("{BASE}:xfer_in"))
            .arg("t")
            .arg("0 5 1"),
    );
    assert_noperm(
        &consumer,
        "consumer XADD an order to a bucket",
        redis::cmd("XADD")
            .arg(&b0.keys.orders)
            .arg("*")
            .arg("f")
            .arg("v"),
    );
    assert_noperm(
        &consumer,
        "consumer INCRBY bucket stock",
        redis::cmd("INCRBY").arg(bucket_key("stock")).arg(1),
    );
    assert_noperm(
        &consumer,
        "consumer writes a transfer log",
        redis::cmd("ZADD").arg(&b0.xfer_pending).arg(1).arg("t"),
    );

    // A sale that has just sold is closed before a reset.
    assert_allowed(&file, &operator, &["shutdown-switch", "on"]);
    assert_allowed(&file, &operator, &["init", "--yes"]);
}

/// A role one read short (a misconfigured ACL): the script's read is refused
/// inside the script, and the buy says so (Redis's "can't run this command",
/// exit 1, nothing changed) instead of reporting the key as corrupt state
/// (exit 17), which would send the operator looking for damaged data.
#[test]
fn a_permission_missing_inside_a_script_is_noperm_not_corrupt_state() {
    let server = RedisServer::start();
    let file = bucketed();
    let url = create_roles(&server, &file);
    assert_allowed(&file, &url("operator"), &["preheat"]);
    let (path, password) = password_file(&file, "buyer");
    let mut args = generated_args(&file, "buyer", &path);
    args[0] = "seckill-buyer-short".to_string();
    // Every buy path reads meta with HMGET before its first write.
    args.retain(|arg| arg != "+hmget");
    set_user(&mut server.conn(), &args);
    let short = format!(
        "redis://seckill-buyer-short:{password}@127.0.0.1:{}/0",
        server.port
    );
    for item in ["1001", "2002"] {
        assert_denied(
            &file,
            &server,
            &short,
            &["buy", "--item", item, "--user", "u"],
        );
    }
}

/// A buyer role from before seat items (no `SETRANGE` on a section's
/// `seats`): the seat buy's writes come after its order entry and stock, so
/// without lib/seat_pick's ACL check it wrote the order and took the stock,
/// then failed on the seats (seen in tests/it/seats.rs on a cluster: stock
/// 152, free seats 220). Refused before the first write: every key unchanged.
#[test]
fn a_seat_buy_by_a_buyer_without_the_seat_writes_writes_nothing() {
    let server = RedisServer::start();
    let file = crate::support::campaign_file(
        "campaign: hall\nkeep_after_end: 1h\nper_user_limit: 4\nitems:\n  - id: hall-a\n    name: Hall A\n    seats:\n      sections:\n        - { id: A, rows: 2, seats_per_row: 4, tier: vip, price: \"100\" }\n",
    );
    let url = create_roles(&server, &file);
    assert_allowed(&file, &url("operator"), &["preheat"]);
    assert_allowed(
        &file,
        &url("buyer"),
        &["buy", "--item", "hall-a", "--user", "ok", "--qty", "2"],
    );
    let (path, password) = password_file(&file, "buyer");
    let mut args = generated_args(&file, "buyer", &path);
    args[0] = "seckill-buyer-short".to_string();
    args.retain(|arg| !arg.starts_with("(+setrange"));
    set_user(&mut server.conn(), &args);
    let short = format!(
        "redis://seckill-buyer-short:{password}@127.0.0.1:{}/0",
        server.port
    );
    let mut conn = server.conn();
    for ask in [&["--qty", "2"][..], &["--seats", "A-2-1"][..]] {
        let before = crate::corrupt_state::snapshot(&mut conn);
        let mut buy = vec!["buy", "--item", "hall-a", "--user", "u"];
        buy.extend_from_slice(ask);
        let stderr = as_role(&file, &short, &buy)
            .fails_with(RUNTIME_ERROR)
            .stderr()
            .to_lowercase();
        assert!(
            stderr.contains("can't run this command"),
            "{ask:?}: {stderr}"
        );
        assert_eq!(
            before,
            crate::corrupt_state::snapshot(&mut conn),
            "{ask:?} wrote half"
        );
    }
}

/// Three reservations bought with `url`'s credential (users p1, c1, e1: to
/// be paid, cancelled, left to expire), and when they were bought.
fn three_reservations(file: &CampaignFile, url: &str) -> (String, String, String, Instant) {
    let buy = |user: &str| -> String {
        as_role(file, url, &["buy", "--item", "1001", "--user", user])
            .json()
            .succeeds()
            .json()["order_id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (paid, cancelled, expired) = (buy("p1"), buy("c1"), buy("e1"));
    (paid, cancelled, expired, Instant::now())
}

#[test]
fn the_documented_roles_run_a_reservation_campaign() {
    let server = RedisServer::start();
    let file = sale().payment_timeout("3s").write();
    let url = create_roles(&server, &file);
    let (buyer, consumer, operator) = (url("buyer"), url("consumer"), url("operator"));
    assert_allowed(&file, &operator, &["preheat"]);

    // The buyer's buy writes the reservation (record, deadline, counts).
    let (paid, cancelled, expired, bought_at) = three_reservations(&file, &buyer);
    let mut conn = server.conn();
    for order in [&paid, &cancelled, &expired] {
        let record: String = conn.hget(format!("{BASE}:reservations"), order).unwrap();
        assert!(record.starts_with("reserved 1 "), "{record}");
        let deadline: Option<i64> = conn.zscore(format!("{BASE}:deadlines"), order).unwrap();
        assert!(deadline.is_some(), "{order} has no deadline");
    }

    // ...and nothing else: not meta, not stock, not a deadline.
    assert_noperm(
        &buyer,
        "buyer reopens the sale",
        redis::cmd("HSET")
            .arg(format!("{BASE}:meta"))
            .arg("closed")
            .arg("0"),
    );
    assert_noperm(
        &buyer,
        "buyer HINCRBY meta",
        redis::cmd("HINCRBY")
            .arg(format!("{BASE}:meta"))
            .arg("initial_stock")
            .arg(1),
    );
    assert_noperm(
        &buyer,
        "buyer DEL stock",
        redis::cmd("DEL").arg(format!("{BASE}:stock")),
    );
    assert_noperm(
        &buyer,
        "buyer ZREM a deadline",
        redis::cmd("ZREM")
            .arg(format!("{BASE}:deadlines"))
            .arg(&expired),
    );
    assert_noperm(
        &buyer,
        "buyer HDEL a reservation",
        redis::cmd("HDEL")
            .arg(format!("{BASE}:reservations"))
            .arg(&expired),
    );

    // The operator pays, cancels and (after the deadline) expires.
    assert_allowed(&file, &operator, &["pay", "--order", &paid]);
    assert_allowed(&file, &operator, &["cancel", "--order", &cancelled]);
    std::thread::sleep(Duration::from_millis(3300).saturating_sub(bought_at.elapsed()));
    assert_allowed(&file, &operator, &["expire"]);
    let state_of = |conn: &mut redis::Connection, order: &str| -> String {
        let record: String = conn.hget(format!("{BASE}:reservations"), order).unwrap();
        record.split(' ').next().unwrap().to_string()
    };
    assert_eq!(state_of(&mut conn, &paid), "paid");
    assert_eq!(state_of(&mut conn, &cancelled), "cancelled");
    assert_eq!(state_of(&mut conn, &expired), "expired");
    let stock: i64 = conn.get(format!("{BASE}:stock")).unwrap();
    assert_eq!(stock, 99, "the cancelled and the expired unit are back");

    // The consumer stores the orders and their state changes.
    assert_allowed(&file, &consumer, &["consume", "--drain"]);
    let db = rusqlite::Connection::open(file.dir.path().join("orders.db")).unwrap();
    let mut states: Vec<(String, String)> = db
        .prepare("SELECT order_id, state FROM orders")
        .unwrap()
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    states.sort();
    let mut expected = vec![
        (paid.clone(), "paid".to_string()),
        (cancelled.clone(), "cancelled".to_string()),
        (expired.clone(), "expired".to_string()),
    ];
    expected.sort();
    assert_eq!(states, expected);
    assert_allowed(&file, &operator, &["reconcile"]);
    assert_allowed(&file, &operator, &["status"]);
}

/// Issue 20, defect 1: `pay`, `cancel` and `expire` run with the documented
/// buyer credential (a plausible mistake: the web tier's credential on the
/// back office) must refuse before their first write — the buyer may `XADD`
/// an event and `HSET` a record but not `ZREM` a deadline, and a script has
/// no rollback. Each is refused with NOPERM and every key is byte for byte
/// what it was (DUMP); the operator then settles the same orders and
/// `reconcile` balances. (Before the fix: the `paid` event was appended and
/// the record marked paid, the order still on the deadline list — "paying
/// again is safe", said exit 1, while reconcile showed drift.)
#[test]
fn pay_cancel_and_expire_with_the_buyer_credential_write_nothing() {
    let server = RedisServer::start();
    let file = sale().payment_timeout("3s").write();
    let url = create_roles(&server, &file);
    let (buyer, operator) = (url("buyer"), url("operator"));
    assert_allowed(&file, &operator, &["preheat"]);
    let (paid, cancelled, expired, bought_at) = three_reservations(&file, &buyer);
    let untouched = |args: &[&str]| {
        let before = crate::corrupt_state::snapshot(&mut server.conn());
        let stderr = as_role(&file, &buyer, args)
            .fails_with(RUNTIME_ERROR)
            .stderr();
        assert_eq!(
            before,
            crate::corrupt_state::snapshot(&mut server.conn()),
            "{args:?} as the buyer wrote half a state change: {stderr}"
        );
        assert!(
            stderr.contains("can't run this command") && stderr.contains("nothing was written"),
            "{args:?}: {stderr}"
        );
    };
    untouched(&["pay", "--order", &paid]);
    untouched(&["cancel", "--order", &cancelled, "--reason", "by the buyer"]);
    // The same orders, settled by the role that may (before their deadline).
    assert_allowed(&file, &operator, &["pay", "--order", &paid]);
    assert_allowed(&file, &operator, &["cancel", "--order", &cancelled]);
    std::thread::sleep(Duration::from_millis(3300).saturating_sub(bought_at.elapsed()));
    untouched(&["expire"]);
    assert_allowed(&file, &operator, &["expire"]);
    let mut conn = server.conn();
    for (order, state) in [
        (&paid, "paid"),
        (&cancelled, "cancelled"),
        (&expired, "expired"),
    ] {
        let record: String = conn.hget(format!("{BASE}:reservations"), order).unwrap();
        assert!(
            record.starts_with(&format!("{state} ")),
            "{order}: {record}"
        );
    }
    assert_allowed(&file, &url("consumer"), &["consume", "--drain"]);
    assert_allowed(&file, &operator, &["reconcile"]);
}

/// docs/security.md shows what `seckill acl` prints: every `$ seckill ...`
/// line of its text blocks is run and must print exactly the lines under it
/// (`scripts/update-completions.sh` rewrites them).
#[test]
fn docs_security_shows_what_seckill_acl_prints() {
    let doc = std::fs::read_to_string("docs/security.md").unwrap();
    let mut shown = 0;
    let mut lines = doc.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(command) = line.strip_prefix("$ seckill ") else {
            continue;
        };
        let mut expected = Vec::new();
        while let Some(next) = lines.next_if(|l| !l.starts_with("```") && !l.starts_with("$ ")) {
            expected.push(next.to_string());
        }
        let args: Vec<&str> = command.split_whitespace().collect();
        let printed = seckill(&args).succeeds().stdout();
        assert_eq!(
            printed.lines().collect::<Vec<_>>(),
            expected,
            "docs/security.md shows other lines than `seckill {command}` prints: run scripts/update-completions.sh"
        );
        shown += 1;
    }
    assert!(shown >= 1, "docs/security.md shows no `seckill acl` output");
}

/// The line is safe to paste into a shell after `redis-cli` and to pipe
/// into `redis-cli`: both give the user exactly what `--apply` gives it.
#[test]
fn the_acl_line_survives_a_shell_and_a_pipe_into_redis_cli() {
    let server = RedisServer::start();
    let file = bucketed();
    let (path, _) = password_file(&file, "buyer");
    let acl = |user: &str| {
        seckill(&[
            "acl",
            "--role",
            "buyer",
            "--user",
            user,
            "--password-file",
            &path,
        ])
        .campaign(&file)
        .succeeds()
        .stdout()
    };
    let rules = |user: &str| -> String {
        let value: redis::Value = redis::cmd("ACL")
            .arg("GETUSER")
            .arg(user)
            .query(&mut server.conn())
            .unwrap();
        format!("{value:?}")
    };
    seckill(&[
        "acl",
        "--role",
        "buyer",
        "--user",
        "applied",
        "--password-file",
        &path,
        "--apply",
    ])
    .campaign(&file)
    .redis(&server)
    .succeeds();
    let pasted = acl("pasted");
    // In a directory full of files a glob could match, as a shell would see it.
    let shell = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("redis-cli -p {} {}", server.port, pasted.trim()))
        .current_dir(file.dir.path())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&shell.stdout).trim(),
        "OK",
        "{shell:?}"
    );
    let piped = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("redis-cli -p {}", server.port))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(acl("piped").as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&piped.stdout).trim(),
        "OK",
        "{piped:?}"
    );
    assert_eq!(rules("pasted"), rules("applied"));
    assert_eq!(rules("piped"), rules("applied"));
}

/// The waiting room's door runs as the buyer (register, join, position, a
/// buy that leaves the active set); admitting and the risk list are the
/// operator's: the buyer is refused them with nothing changed.
#[test]
fn the_buyer_runs_the_waiting_room_door_and_the_operator_admits() {
    use seckill::model::exit_codes::NOT_ADMITTED;
    let server = RedisServer::start();
    let until = (chrono::Utc::now() + chrono::Duration::hours(1))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let file = sale()
        .room(&format!(
            "{{ mode: max_active, max_active: 1, admission_ttl: 1m, registration: {{ until: \"{until}\", per_device: 3 }} }}"
        ))
        .write();
    let url = create_roles(&server, &file);
    let (buyer, operator) = (url("buyer"), url("operator"));
    assert_allowed(&file, &operator, &["preheat"]);
    for user in ["alice", "bob"] {
        assert_allowed(
            &file,
            &buyer,
            &["register", "--user", user, "--device", "d1"],
        );
        assert_allowed(
            &file,
            &buyer,
            &["queue", "join", "--item", "1001", "--user", user],
        );
    }
    as_role(&file, &buyer, &["buy", "--item", "1001", "--user", "alice"]).fails_with(NOT_ADMITTED);
    assert_denied(&file, &server, &buyer, &["queue", "admit"]);
    assert_denied(
        &file,
        &server,
        &buyer,
        &[
            "queue", "penalize", "--item", "1001", "--user", "bob", "--block",
        ],
    );
    assert_allowed(&file, &operator, &["queue", "admit"]);
    // A buyer one write short (no ZREM on the active set, the ok's last
    // write) is refused before the first: no sale, alice keeps her place.
    let (path, password) = password_file(&file, "buyer");
    let mut args = generated_args(&file, "buyer", &path);
    args[0] = "seckill-buyer-short".to_string();
    let active_rule = format!("(+zrem ~seckill:{{{CAMPAIGN}:*}}:active)");
    assert!(args.contains(&active_rule), "{args:?}");
    args.retain(|arg| *arg != active_rule);
    set_user(&mut server.conn(), &args);
    let short = format!(
        "redis://seckill-buyer-short:{password}@127.0.0.1:{}/0",
        server.port
    );
    assert_denied(
        &file,
        &server,
        &short,
        &["buy", "--item", "1001", "--user", "alice"],
    );
    let active: i64 = server.conn().zcard(format!("{BASE}:active")).unwrap();
    assert_eq!(active, 1);
    // max_active 1: alice's ok gives her place back (ZREM active, as the buyer).
    assert_allowed(&file, &buyer, &["buy", "--item", "1001", "--user", "alice"]);
    let mut conn = server.conn();
    let active: i64 = conn.zcard(format!("{BASE}:active")).unwrap();
    assert_eq!(active, 0, "alice's place was not given back");
    assert_allowed(&file, &operator, &["queue", "admit"]);
    assert_allowed(&file, &buyer, &["buy", "--item", "1001", "--user", "bob"]);
}

/// `acl --apply` proves a role's whole path, not only its scripts (issue
/// 25, item 1): each command its subcommands send outside scripts is a
/// check of its own (serve's cache reads a sold-out item's buyers with
/// HSCAN; `--wait-replicas` sends WAIT; every connection PINGs, reloads a
/// lost script), and a standalone node's proof has no cluster command. The
/// same proof, asked from an admin URL by `doctor --user`, names the
/// command a line one command short lacks.
#[test]
fn the_proof_covers_the_commands_outside_scripts() {
    let server = RedisServer::start();
    let file = sale().write();
    let (path, password) = password_file(&file, "buyer");
    let applied = seckill(&[
        "acl",
        "--role",
        "buyer",
        "--password-file",
        &path,
        "--apply",
    ])
    .campaign(&file)
    .redis(&server)
    .json()
    .runs()
    .json();
    let checks = applied["users"][0]["checks"].as_array().unwrap();
    let commands: Vec<&str> = checks
        .iter()
        .filter_map(|c| c["what"].as_str())
        .filter(|what| what.starts_with("command "))
        .collect();
    for needed in [
        "command PING",
        "command SCRIPT LOAD",
        "command HSCAN :buyers",
        "command WAIT",
        "command TIME",
    ] {
        assert!(commands.contains(&needed), "{needed}: {commands:?}");
    }
    assert!(
        !commands.iter().any(|c| c.contains("CLUSTER")),
        "{commands:?}"
    );
    // A line without HSCAN (whatever today's line has): the proof names it.
    let mut args = generated_args(&file, "buyer", &path);
    args[0] = "seckill-buyer-short".to_string();
    args.retain(|arg| arg != "+hscan");
    set_user(&mut server.conn(), &args);
    let report = seckill(&["doctor", "--role", "buyer", "--user", "seckill-buyer-short"])
        .campaign(&file)
        .redis(&server)
        .current_dir(file.dir.path())
        .json()
        .runs()
        .json();
    let (verdict, detail) = check_of(&report, "permissions");
    assert_eq!(verdict, "fail", "{report}");
    assert!(detail.contains("command HSCAN :buyers"), "{detail}");
    assert!(!report.to_string().contains(&password));
}
