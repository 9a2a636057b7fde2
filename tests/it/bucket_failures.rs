//! Issue 11's failure tests on a bucketed item (`buckets: 2`, docs/buckets.md),
//! on a standalone Redis (the buckets' tags differ; one server holds them all):
//! a corrupt value in the home bucket or in a bucket the sweep visits is the
//! `corrupt_state` outcome naming the key, nothing written; a request id
//! replayed with another `--qty` is `request_id_reused` whether the original
//! was served from the home bucket or through a transfer; NOAUTH, NOPERM and a
//! lost reply are named as on a plain item.

use crate::corrupt_state::snapshot;
use crate::outcomes::{assert_says_not_executed, reply_eating_proxy};
use crate::support;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use redis::Commands;
use seckill::domain::item::SaleItem;
use seckill::domain::slot::{BuyRequest, Outcome};
use seckill::model::campaign::Campaign;
use seckill::model::exit_codes::{
    CORRUPT_STATE, DUPLICATE, OUTCOME_UNKNOWN, PREHEAT_REFUSED, REQUEST_ID_REUSED, RUNTIME_ERROR,
    SUCCESS,
};
use seckill::model::layout::{Layout, home_bucket};
use support::spec::{CampaignSpec, Ran, campaign, seckill};
use support::{CampaignFile, Preheat, RedisServer};

fn bf() -> CampaignSpec {
    campaign("bf").per_user_limit(2).item("1", 4).buckets(2)
}

fn layout() -> Layout {
    Layout::new("seckill", "bf", "1", 2)
}

/// The `i`-th user id whose home is `bucket` (of 2).
fn homed_in(bucket: u32, i: usize) -> String {
    (0..)
        .map(|n| format!("user-{n}"))
        .filter(|u| home_bucket(u, 2) == bucket)
        .nth(i)
        .unwrap()
}

fn preheated(server: &RedisServer) -> CampaignFile {
    Preheat::on(server).flushed().spec(&bf())
}

/// `seckill buy --item 1 --user USER EXTRA` against `url`, with short Redis
/// timeouts; it must exit `code` within 30 s.
fn buy(file: &CampaignFile, url: &str, user: &str, extra: &[&str], code: i32) -> Ran {
    seckill(&["buy", "--item", "1", "--user", user])
        .args(&["--connect-timeout", "1s", "--response-timeout", "1s"])
        .args(extra)
        .campaign(file)
        .redis_url(url)
        .json()
        .fails_with_within(code, Duration::from_secs(30))
}

/// Units left in every bucket, summed.
fn stock_total(conn: &mut redis::Connection) -> i64 {
    layout()
        .all()
        .iter()
        .map(|b| conn.get::<_, i64>(&b.keys.stock).unwrap())
        .sum()
}

fn assert_corrupt(server: &RedisServer, file: &CampaignFile, user: &str, key: &str) {
    let mut conn = server.conn();
    let before = snapshot(&mut conn);
    let reply = buy(
        file,
        &server.url(),
        user,
        &["--request-id", "r1"],
        CORRUPT_STATE,
    )
    .json();
    assert_eq!(reply["outcome"], "corrupt_state", "{reply}");
    let problem = reply["problem"].as_str().unwrap_or_default();
    assert!(problem.contains(key), "{problem} does not name {key}");
    assert_eq!(before, snapshot(&mut conn), "the buy wrote something");
}

#[test]
fn a_corrupt_home_or_swept_bucket_is_corrupt_state_naming_its_key() {
    let server = RedisServer::start();
    let user = homed_in(0, 0);
    let (home, other) = (layout().bucket(0), layout().bucket(1));

    let file = preheated(&server);
    let mut conn = server.conn();
    let () = conn.set(&home.keys.stock, "1.5").unwrap();
    assert_corrupt(&server, &file, &user, &home.keys.stock);

    let file = preheated(&server);
    let () = conn.hset(&home.keys.buyers, &user, "0x1").unwrap();
    assert_corrupt(&server, &file, &user, &home.keys.buyers);

    // The home bucket is empty (valid), the sweep meets a corrupt bucket 1.
    for (key, corrupt) in [
        (&other.keys.meta, "initial_stock"),
        (&other.keys.stock, ""),
        (&other.xfer_pending, "type"),
    ] {
        let file = preheated(&server);
        let () = conn.set(&home.keys.stock, 0).unwrap();
        match corrupt {
            "" => conn.set::<_, _, ()>(key, "5e0").unwrap(),
            "type" => conn.set::<_, _, ()>(key, "x").unwrap(),
            field => conn.hset::<_, _, _, ()>(key, field, " 2").unwrap(),
        }
        assert_corrupt(&server, &file, &user, key);
    }
}

#[test]
fn a_request_id_replayed_with_another_qty_is_refused_on_a_bucketed_item() {
    let server = RedisServer::start();
    let file = preheated(&server);
    let mut conn = server.conn();
    let url = server.url();
    let buy = |user: &str, extra: &[&str], code: i32| buy(&file, &url, user, extra, code).json();

    // Served from the home bucket.
    let first = buy(&homed_in(1, 0), &["--request-id", "h"], SUCCESS);
    let replay = buy(
        &homed_in(1, 0),
        &["--request-id", "h", "--qty", "2"],
        REQUEST_ID_REUSED,
    );
    assert_eq!(replay["outcome"], "request_id_reused");
    assert_eq!(replay["order_id"], first["order_id"]);
    assert_eq!(stock_total(&mut conn), 3);

    // Bucket 0 drained by its own buyer; the next buyer homed there is served by a transfer.
    buy(&homed_in(0, 0), &["--qty", "2"], SUCCESS);
    let user = homed_in(0, 1);
    let first = buy(&user, &["--request-id", "t"], SUCCESS);
    let credits: i64 = conn.hlen(&layout().bucket(0).xfer_in).unwrap();
    assert_eq!(credits, 1, "the order was served through a transfer");
    let left = stock_total(&mut conn);
    let replay = buy(
        &user,
        &["--request-id", "t", "--qty", "2"],
        REQUEST_ID_REUSED,
    );
    assert_eq!(
        replay["order_id"], first["order_id"],
        "the original order is named"
    );
    let same = buy(&user, &["--request-id", "t"], SUCCESS);
    assert_eq!(same["order_id"], first["order_id"]);
    assert_eq!(stock_total(&mut conn), left, "a replay bought something");
    let bought: i64 = conn.hget(&layout().bucket(0).keys.buyers, &user).unwrap();
    assert_eq!(bought, 1);
}

#[test]
fn noauth_noperm_and_a_lost_reply_are_named_on_a_bucketed_item() {
    let protected = RedisServer::start_with(&["--requirepass", "pw"]);
    let file = bf().write();
    let refused = buy(&file, &protected.url(), &homed_in(0, 0), &[], RUNTIME_ERROR);
    assert_says_not_executed(&refused.stderr(), protected.port, "NOAUTH");

    let server = RedisServer::start();
    let file = preheated(&server);
    let mut conn = server.conn();
    let () = redis::cmd("ACL")
        .arg(&[
            "SETUSER", "noscript", "on", ">pw", "~*", "+@all", "-evalsha", "-eval",
        ])
        .query(&mut conn)
        .unwrap();
    let url = format!("redis://noscript:pw@127.0.0.1:{}/0", server.port);
    let refused = buy(&file, &url, &homed_in(0, 0), &[], RUNTIME_ERROR);
    assert_says_not_executed(&refused.stderr(), server.port, "NOPERM");
    assert_eq!(
        stock_total(&mut conn),
        4,
        "a refused attempt bought something"
    );

    // The script runs, its reply is lost: unknown, with the request id; the
    // retry with that id answers the same order and buys nothing more.
    let proxy = reply_eating_proxy(server.port, Arc::new(AtomicBool::new(true)));
    let proxied = format!("redis://127.0.0.1:{proxy}/0");
    let user = homed_in(0, 0);
    let lost = buy(
        &file,
        &proxied,
        &user,
        &["--request-id", "lost"],
        OUTCOME_UNKNOWN,
    );
    let stderr = lost.stderr();
    assert!(stderr.contains("--request-id lost"), "{stderr}");
    assert!(stderr.contains(&format!("127.0.0.1:{proxy}")), "{stderr}");
    assert_eq!(stock_total(&mut conn), 3, "the lost attempt ran");
    buy(
        &file,
        &server.url(),
        &user,
        &["--request-id", "lost"],
        SUCCESS,
    );
    assert_eq!(stock_total(&mut conn), 3, "the retry bought again");
}

fn lossb() -> CampaignFile {
    campaign("lossb")
        .per_user_limit(1)
        .item("1", 20)
        .buckets(4)
        .orders_store(Some("sqlite://orders.db"))
        .write()
}

/// One unit each for `users` distinct users `<prefix>0..` through the item
/// layer's buy; the number of `ok`.
fn buy_bucketed(server: &RedisServer, file: &CampaignFile, prefix: &str, users: usize) -> usize {
    let sale = Campaign::load(&file.path).unwrap();
    let item = SaleItem::live(&sale, sale.item("1").unwrap());
    let mut conn = server.conn();
    (0..users)
        .filter(|n| {
            let user = format!("{prefix}{n}");
            let request = BuyRequest {
                campaign: &sale.id,
                item: item.id(),
                user: &user,
                qty: 1,
                request_id: None,
                ticket: None,
                seats: None,
            };
            item.buy(&mut conn, &request).unwrap().reply.outcome == Outcome::Ok
        })
        .count()
}

fn drain(file: &CampaignFile, server: &RedisServer) {
    seckill(&["consume", "--drain"])
        .campaign(file)
        .redis(server)
        .succeeds();
}

#[test]
fn preheat_refuses_to_resell_a_bucketed_item_and_recover_splits_what_is_left() {
    let server = RedisServer::start();
    let file = lossb();
    let layout = Layout::new("seckill", "lossb", "1", 4);
    let preheat = |args: &[&str]| {
        seckill(&["preheat"])
            .args(args)
            .campaign(&file)
            .redis(&server)
    };
    preheat(&[]).succeeds();
    assert_eq!(buy_bucketed(&server, &file, "early", 12), 12);
    drain(&file, &server);

    // Redis loses everything; the natural next step must not put 20 back.
    let mut conn = server.conn();
    let () = redis::cmd("FLUSHALL").query(&mut conn).unwrap();
    let refused = preheat(&[]).fails_with(PREHEAT_REFUSED);
    let stderr = refused.stderr();
    assert!(stderr.contains("12 unit(s) in 12 order(s)"), "{stderr}");
    assert!(stderr.contains("--recover"), "{stderr}");
    let keys: Vec<String> = conn.keys("*").unwrap();
    assert!(keys.is_empty(), "a refused preheat wrote {keys:?}");

    let stdout = preheat(&["--recover"]).succeeds().stdout();
    assert!(stdout.contains("cannot be known"), "{stdout}");
    // 20 - 12 = 8 left, split evenly: 2 per bucket; every buyer in its home bucket.
    for bucket in layout.all() {
        let stock: i64 = conn.get(&bucket.keys.stock).unwrap();
        assert_eq!(stock, 2, "bucket {}", bucket.bucket);
        let closed: String = conn.hget(&bucket.keys.meta, "closed").unwrap();
        assert_eq!(closed, "0", "bucket {} is open again", bucket.bucket);
    }
    for n in 0..12 {
        let user = format!("early{n}");
        let home = layout.home(&user);
        let units: Option<i64> = conn.hget(&home.keys.buyers, &user).unwrap();
        assert_eq!(units, Some(1), "{user} restored in bucket {}", home.bucket);
    }
    let restored: i64 = layout
        .all()
        .iter()
        .map(|b| conn.hlen::<_, i64>(&b.keys.buyers).unwrap())
        .sum();
    assert_eq!(restored, 12, "each buyer once, in its home bucket only");

    // An early buyer is still a duplicate; 20 newcomers get only the 8 left.
    seckill(&["buy", "--item", "1", "--user", "early0"])
        .campaign(&file)
        .redis(&server)
        .fails_with(DUPLICATE);
    assert_eq!(buy_bucketed(&server, &file, "late", 20), 8);
    drain(&file, &server);
    assert_eq!(
        support::orders::sqlite_order_ids(&support::orders::sqlite_path(&file)).len(),
        20,
        "exactly the stock was sold, never more"
    );
    // A second --recover changes nothing: the stock is in Redis again.
    preheat(&["--recover"]).succeeds();
    for bucket in layout.all() {
        let stock: i64 = conn.get(&bucket.keys.stock).unwrap();
        assert_eq!(stock, 0);
    }
}

#[test]
fn recover_refuses_a_bucketed_item_that_lost_only_some_buckets() {
    let server = RedisServer::start();
    let file = lossb();
    let layout = Layout::new("seckill", "lossb", "1", 4);
    let preheat = |args: &[&str]| {
        seckill(&["preheat"])
            .args(args)
            .campaign(&file)
            .redis(&server)
    };
    preheat(&[]).succeeds();
    assert_eq!(buy_bucketed(&server, &file, "early", 6), 6);
    drain(&file, &server);
    // One master of a cluster came back empty: bucket 2's keys are gone.
    let mut conn = server.conn();
    let lost = layout.bucket(2);
    let _: i64 = conn.del(lost.fixed()).unwrap();
    let before = snapshot(&mut conn);
    preheat(&[]).fails_with(PREHEAT_REFUSED);
    let refused = preheat(&["--recover"]).fails_with(PREHEAT_REFUSED);
    let stderr = refused.stderr();
    assert!(stderr.contains("still holds bucket(s) 0, 1, 3"), "{stderr}");
    assert!(stderr.contains("nothing was written"), "{stderr}");
    assert_eq!(
        before,
        snapshot(&mut conn),
        "a refused recovery wrote something"
    );
}

/// Four buckets of 2, reservations: every key of a home bucket is in play.
fn bfr() -> CampaignSpec {
    campaign("bfr")
        .per_user_limit(2)
        .payment_timeout("10m")
        .item("1", 8)
        .buckets(4)
}

/// Issue 25 items 38 and 29: a home bucket holding something the attempt
/// cannot use is refused before the sweep moves a unit. Before, a home
/// bucket whose order stream was a string answered `corrupt_state` only on
/// the credit call, each attempt first moving half of a healthy bucket's
/// stock into transit; and a home whose transfer log was wrong-typed was met
/// (or not) depending on where the sweep started. With the home bucket
/// empty (valid: the attempt sweeps) and every other bucket healthy, each
/// key of the home bucket wrong-typed, and each reservation counter empty,
/// is `corrupt_state` naming that key, with every key of the Redis
/// byte-for-byte unchanged; the counters too when the home bucket has stock.
#[test]
fn a_corrupt_home_bucket_is_refused_before_the_sweep_moves_a_unit() {
    let server = RedisServer::start();
    let spec = bfr();
    let layout = Layout::new("seckill", "bfr", "1", 4);
    // Several users homed in bucket 0: the sweep's start is random.
    let users: Vec<String> = (0..)
        .map(|n| format!("user-{n}"))
        .filter(|u| home_bucket(u, 4) == 0)
        .take(4)
        .collect();
    let home = layout.bucket(0);
    let k = &home.keys;
    let wrong_typed = [
        (&k.meta, "string"),
        (&k.buyers, "string"),
        (&k.buyer_orders, "string"),
        (&format!("{}requests", k.base), "string"),
        (&k.orders, "string"),
        (&k.orders, "hash"),
        (&k.reservations, "string"),
        (&k.deadlines, "string"),
        (&k.reservation_counts, "string"),
        (&home.xfer_in, "string"),
        (&home.xfer_out, "string"),
        (&home.xfer_pending, "string"),
    ];
    let mut conn = server.conn();
    for (key, kind) in wrong_typed {
        for user in &users {
            let file = Preheat::on(&server).flushed().spec(&spec);
            let () = conn.set(&k.stock, 0).unwrap();
            let () = conn.del(key).unwrap();
            let () = match kind {
                "string" => conn.set(key, "x").unwrap(),
                _ => conn.hset(key, "f", "v").unwrap(),
            };
            assert_corrupt(&server, &file, user, key);
        }
    }
    for home_stock in [0, 2] {
        for field in ["reserved_orders", "reserved_units"] {
            let file = Preheat::on(&server).flushed().spec(&spec);
            let () = conn.set(&k.stock, home_stock).unwrap();
            let () = conn.hset(&k.reservation_counts, field, "").unwrap();
            assert_corrupt(&server, &file, &users[0], &k.reservation_counts);
        }
    }
    // Healthy, the same attempt sweeps and reserves a unit from another bucket.
    let file = Preheat::on(&server).flushed().spec(&spec);
    let () = conn.set(&k.stock, 0).unwrap();
    buy(&file, &server.url(), &users[0], &[], SUCCESS);
    let left: i64 = layout
        .all()
        .iter()
        .map(|b| conn.get::<_, i64>(&b.keys.stock).unwrap())
        .sum();
    assert_eq!(
        left, 5,
        "8 units, 2 set aside in the home bucket, 1 reserved"
    );
}
