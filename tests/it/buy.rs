//! The buy script, specified: never oversold, never twice to one person,
//! idempotent per request id, and every refusal with its own outcome.

use crate::support;

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use redis::Commands;
use seckill::domain::item::SaleItem;
use seckill::domain::kill_switch::Flip;
use seckill::domain::slot::{self, BuyRequest, Outcome, PreheatMode};
use seckill::model::campaign::Campaign;
use seckill::model::keys::ItemKeys;
use support::RedisServer;
use support::spec::{CampaignSpec, campaign};

/// The campaign `spec` describes, parsed as `seckill` would.
fn parsed(spec: &CampaignSpec) -> Campaign {
    Campaign::parse(&spec.yaml(), std::path::Path::new("test.yaml")).expect("valid yaml")
}

/// Preheat every item of `spec` into `server`, return the campaign.
fn preheated(server: &RedisServer, spec: &CampaignSpec) -> Campaign {
    let campaign = parsed(spec);
    let mut conn = server.conn();
    for item in &campaign.items {
        SaleItem::live(&campaign, item)
            .preheat(&mut conn, PreheatMode::Load, false)
            .unwrap();
    }
    campaign
}

/// One attempt on the campaign's first item, through the item layer.
fn try_buy(
    conn: &mut redis::Connection,
    campaign: &Campaign,
    user: &str,
    qty: u32,
    request_id: Option<&str>,
) -> anyhow::Result<slot::BuyReply> {
    let item = &campaign.items[0];
    let request = BuyRequest {
        campaign: &campaign.id,
        item: &item.id,
        user,
        qty,
        request_id,
        ticket: None,
        seats: None,
    };
    Ok(SaleItem::live(campaign, item).buy(conn, &request)?.reply)
}

fn attempt(
    conn: &mut redis::Connection,
    campaign: &Campaign,
    user: &str,
    qty: u32,
    request_id: Option<&str>,
) -> slot::BuyReply {
    try_buy(conn, campaign, user, qty, request_id).expect("buy script runs")
}

/// One item, `1001`, 100 bottles.
fn one_item() -> CampaignSpec {
    campaign("spec")
        .item("1001", 100)
        .named("bottle")
        .price("1499.00")
}

#[test]
fn sixty_four_threads_sell_exactly_the_stock_never_twice_to_one_user() {
    let server = RedisServer::start();
    let campaign = Arc::new(preheated(&server, &one_item()));
    let keys = ItemKeys::live(&campaign.id, "1001");
    // 1,000 distinct users, each trying twice, plus 200 users trying five times.
    let mut attempts: Vec<String> = Vec::new();
    for round in 0..2 {
        attempts.extend((0..1000).map(|u| format!("user-{}", (u * 7 + round) % 1000)));
    }
    for _ in 0..5 {
        attempts.extend((0..200).map(|u| format!("repeat-{u}")));
    }
    let attempts = Arc::new(attempts);
    let stop_watch = Arc::new(AtomicBool::new(false));
    let lowest_seen = Arc::new(AtomicI64::new(i64::MAX));
    let watcher = {
        let (stop, lowest, mut conn, stock_key) = (
            stop_watch.clone(),
            lowest_seen.clone(),
            server.conn(),
            keys.stock.clone(),
        );
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let stock: i64 = conn.get(&stock_key).unwrap();
                lowest.fetch_min(stock, Ordering::Relaxed);
            }
        })
    };
    let threads = 64;
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (campaign, attempts, lowest) =
                (campaign.clone(), attempts.clone(), lowest_seen.clone());
            let mut conn = server.conn();
            std::thread::spawn(move || {
                let mut outcomes = Vec::new();
                for user in attempts.iter().skip(t).step_by(threads) {
                    let reply = attempt(&mut conn, &campaign, user, 1, None);
                    if let Some(left) = reply.stock_left {
                        lowest.fetch_min(left, Ordering::Relaxed);
                    }
                    outcomes.push((user.clone(), reply));
                }
                outcomes
            })
        })
        .collect();
    let outcomes: Vec<_> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    stop_watch.store(true, Ordering::Relaxed);
    watcher.join().unwrap();

    assert_eq!(outcomes.len(), attempts.len());
    let winners: Vec<&String> = outcomes
        .iter()
        .filter(|(_, r)| r.outcome == Outcome::Ok)
        .map(|(u, _)| u)
        .collect();
    assert_eq!(winners.len(), 100, "exactly the stock is sold");
    let distinct: HashSet<&&String> = winners.iter().collect();
    assert_eq!(distinct.len(), 100, "no user bought twice");
    for (_, reply) in &outcomes {
        assert!(
            matches!(
                reply.outcome,
                Outcome::Ok | Outcome::SoldOut | Outcome::Duplicate
            ),
            "unexpected {reply:?}"
        );
    }
    let mut conn = server.conn();
    let stock: i64 = conn.get(&keys.stock).unwrap();
    assert_eq!(stock, 0);
    let stream_len: usize = conn.xlen(&keys.orders).unwrap();
    assert_eq!(stream_len, 100);
    let buyers: std::collections::HashMap<String, i64> = conn.hgetall(&keys.buyers).unwrap();
    assert_eq!(buyers.len(), 100);
    assert!(buyers.values().all(|units| *units == 1));
    assert!(
        lowest_seen.load(Ordering::Relaxed) >= 0,
        "stock was seen below zero"
    );
}

#[test]
fn the_same_request_id_five_times_is_one_order() {
    let server = RedisServer::start();
    let campaign = preheated(&server, &one_item());
    let mut conn = server.conn();
    let replies: Vec<_> = (0..5)
        .map(|_| attempt(&mut conn, &campaign, "alice", 1, Some("req-1")))
        .collect();
    assert!(
        replies.iter().all(|r| r.outcome == Outcome::Ok),
        "{replies:?}"
    );
    assert!(replies.iter().all(|r| r.order_id == replies[0].order_id));
    assert!(replies.iter().all(|r| r.stock_left == Some(99)));
    let keys = ItemKeys::live(&campaign.id, "1001");
    assert_eq!(conn.xlen::<_, usize>(&keys.orders).unwrap(), 1);
    // A new request id from the same user is a second attempt: a duplicate.
    let again = attempt(&mut conn, &campaign, "alice", 1, Some("req-2"));
    assert_eq!(again.outcome, Outcome::Duplicate);
    assert_eq!(
        again.order_id, replies[0].order_id,
        "duplicate names the existing order"
    );
    // The same request id from another user is that user's own request.
    let bob = attempt(&mut conn, &campaign, "bob", 1, Some("req-1"));
    assert_eq!(bob.outcome, Outcome::Ok);
    assert_ne!(bob.order_id, replies[0].order_id);
}

#[test]
fn the_order_entry_carries_everything_the_consumer_needs() {
    let server = RedisServer::start();
    let campaign = preheated(&server, &one_item());
    let mut conn = server.conn();
    let reply = attempt(&mut conn, &campaign, "carol", 1, Some("r-9"));
    let keys = ItemKeys::live(&campaign.id, "1001");
    let entries: redis::streams::StreamRangeReply = conn.xrange_all(&keys.orders).unwrap();
    let entry = &entries.ids[0];
    let field = |name: &str| -> String { entry.get(name).unwrap() };
    assert_eq!(Some(field("order_id")), reply.order_id);
    assert_eq!(field("campaign"), "spec");
    assert_eq!(field("item_id"), "1001");
    assert_eq!(field("user_id"), "carol");
    assert_eq!(field("qty"), "1");
    assert_eq!(field("price_cents"), "149900");
    assert_eq!(field("request_id"), "r-9");
    assert!(field("bought_at_ms").parse::<i64>().unwrap() > 1_700_000_000_000);
}

#[test]
fn per_user_limit_two_counts_units_not_attempts() {
    let server = RedisServer::start();
    let campaign = preheated(
        &server,
        &campaign("limit2")
            .per_user_limit(2)
            .item("t", 5)
            .named("ticket")
            .price("10"),
    );
    let mut conn = server.conn();
    assert_eq!(
        attempt(&mut conn, &campaign, "a", 2, None).outcome,
        Outcome::Ok
    );
    assert_eq!(
        attempt(&mut conn, &campaign, "a", 1, None).outcome,
        Outcome::Duplicate
    );
    assert_eq!(
        attempt(&mut conn, &campaign, "b", 1, None).outcome,
        Outcome::Ok
    );
    assert_eq!(
        attempt(&mut conn, &campaign, "b", 1, None).outcome,
        Outcome::Ok
    );
    assert_eq!(
        attempt(&mut conn, &campaign, "b", 1, None).outcome,
        Outcome::Duplicate
    );
    // One unit left: two are refused as sold out, one succeeds.
    let c = attempt(&mut conn, &campaign, "c", 2, None);
    assert_eq!((c.outcome, c.stock_left), (Outcome::SoldOut, Some(1)));
    let c = attempt(&mut conn, &campaign, "c", 1, None);
    assert_eq!((c.outcome, c.stock_left), (Outcome::Ok, Some(0)));
    assert_eq!(
        attempt(&mut conn, &campaign, "d", 1, None).outcome,
        Outcome::SoldOut
    );
}

#[test]
fn the_rate_limit_counts_every_attempt_in_the_window() {
    let server = RedisServer::start();
    let campaign = preheated(
        &server,
        &campaign("rated")
            .rate_limit("1h", 3)
            .item("x", 10)
            .named("x")
            .price("1"),
    );
    let mut conn = server.conn();
    let outcomes: Vec<Outcome> = (0..5)
        .map(|_| attempt(&mut conn, &campaign, "eve", 1, None).outcome)
        .collect();
    assert_eq!(
        outcomes,
        [
            Outcome::Ok,
            Outcome::Duplicate,
            Outcome::Duplicate,
            Outcome::RateLimited,
            Outcome::RateLimited
        ]
    );
    // Another user has a budget of their own.
    assert_eq!(
        attempt(&mut conn, &campaign, "frank", 1, None).outcome,
        Outcome::Ok
    );
    let keys = ItemKeys::live(&campaign.id, "x");
    let ttl: i64 = conn.pttl(keys.rate("eve")).unwrap();
    assert!(
        ttl > 0 && ttl <= 3_600_000,
        "rate key expires with its window: {ttl}"
    );
}

#[test]
fn the_kill_switch_takes_effect_on_the_next_call() {
    let server = RedisServer::start();
    let campaign = preheated(&server, &one_item());
    let keys = ItemKeys::live(&campaign.id, "1001");
    let mut conn = server.conn();
    let first = attempt(&mut conn, &campaign, "a", 1, Some("r-a"));
    assert_eq!(first.outcome, Outcome::Ok);
    let flip = |closed, reason: &str, at_ms| Flip {
        closed,
        reason: reason.to_string(),
        by: "test".to_string(),
        at_ms,
    };
    let sale = SaleItem::live(&campaign, &campaign.items[0]);
    sale.set_switch(&mut conn, &flip(true, "bots", 1), None)
        .unwrap();
    let refused = attempt(&mut conn, &campaign, "b", 1, None);
    assert_eq!(
        (refused.outcome, refused.stock_left),
        (Outcome::Closed, Some(99))
    );
    // A retry of an ok request still answers ok: it is not a new purchase.
    let retry = attempt(&mut conn, &campaign, "a", 1, Some("r-a"));
    assert_eq!(
        (retry.outcome, retry.order_id),
        (Outcome::Ok, first.order_id)
    );
    sale.set_switch(&mut conn, &flip(false, "", 2), None)
        .unwrap();
    assert_eq!(
        attempt(&mut conn, &campaign, "b", 1, None).outcome,
        Outcome::Ok
    );
    let s = slot::item_state(&mut conn, &keys).unwrap();
    assert_eq!((s.closed, s.stock, s.stream_len), (false, Some(98), 2));
}

#[test]
fn the_sale_window_is_checked_on_the_redis_clock() {
    let server = RedisServer::start();
    let future = preheated(
        &server,
        &campaign("future").starts_in(24 * 3600).item("1", 10),
    );
    let mut conn = server.conn();
    let reply = attempt(&mut conn, &future, "a", 1, None);
    assert_eq!(
        (reply.outcome, reply.stock_left),
        (Outcome::NotStarted, Some(10))
    );

    let past = preheated(
        &server,
        &campaign("past")
            .ends_in(-5 * 60)
            .keep_after_end("1h")
            .item("1", 10),
    );
    assert_eq!(
        attempt(&mut conn, &past, "a", 1, None).outcome,
        Outcome::Ended
    );
    // Keys expire keep_after_end after the end.
    let ttl: i64 = conn.pttl(ItemKeys::live("past", "1").stock).unwrap();
    assert!(ttl > 50 * 60_000 && ttl <= 55 * 60_000, "ttl {ttl}");
}

#[test]
fn an_item_never_preheated_is_not_preheated() {
    let server = RedisServer::start();
    let campaign = parsed(&one_item());
    let mut conn = server.conn();
    let reply = attempt(&mut conn, &campaign, "a", 1, None);
    assert_eq!(
        (reply.outcome, reply.stock_left),
        (Outcome::NotPreheated, None)
    );
    let keys_in_db: i64 = redis::cmd("DBSIZE").query(&mut conn).unwrap();
    assert_eq!(keys_in_db, 0, "a refusal writes nothing");
}

#[test]
fn a_flushed_script_cache_is_reloaded_transparently() {
    let server = RedisServer::start();
    let campaign = preheated(&server, &one_item());
    let mut conn = server.conn();
    assert_eq!(
        attempt(&mut conn, &campaign, "a", 1, None).outcome,
        Outcome::Ok
    );
    let () = redis::cmd("SCRIPT").arg("FLUSH").query(&mut conn).unwrap();
    assert_eq!(
        attempt(&mut conn, &campaign, "b", 1, None).outcome,
        Outcome::Ok
    );
}

#[test]
fn out_of_memory_refuses_the_whole_script_and_leaves_state_untouched() {
    let server = RedisServer::start();
    let campaign = preheated(&server, &one_item());
    let keys = ItemKeys::live(&campaign.id, "1001");
    let mut conn = server.conn();
    // Any used memory is over a 1-byte limit: every write-flagged command is refused.
    for (name, value) in [("maxmemory-policy", "noeviction"), ("maxmemory", "1")] {
        let () = redis::cmd("CONFIG")
            .arg("SET")
            .arg(name)
            .arg(value)
            .query(&mut conn)
            .unwrap();
    }
    let error = try_buy(&mut conn, &campaign, "oom", 1, None)
        .expect_err("a Redis out of memory refuses the script");
    assert!(format!("{error:#}").contains("OOM"), "{error:#}");
    let () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg("0")
        .query(&mut conn)
        .unwrap();
    let s = slot::item_state(&mut conn, &keys).unwrap();
    assert_eq!((s.stock, s.buyers, s.stream_len), (Some(100), 0, 0));
    assert_eq!(
        attempt(&mut conn, &campaign, "oom", 1, None).outcome,
        Outcome::Ok
    );
}

#[test]
fn a_key_of_the_wrong_type_is_corrupt_state_before_any_write() {
    let server = RedisServer::start();
    let campaign = preheated(&server, &one_item());
    let keys = ItemKeys::live(&campaign.id, "1001");
    let mut conn = server.conn();
    for broken in [&keys.orders, &keys.buyer_orders] {
        let () = redis::cmd("DEL").arg(broken).query(&mut conn).unwrap();
        let () = conn.set(broken, "not a stream or hash").unwrap();
        let reply = try_buy(&mut conn, &campaign, "u", 1, None).unwrap();
        assert_eq!(reply.outcome, Outcome::CorruptState, "{broken}");
        assert!(reply.problem.unwrap().contains(broken.as_str()), "{broken}");
        let stock: i64 = conn.get(&keys.stock).unwrap();
        let buyers: i64 = conn.hlen(&keys.buyers).unwrap();
        assert_eq!(
            (stock, buyers),
            (100, 0),
            "{broken}: a write happened before the failure"
        );
        let () = redis::cmd("DEL").arg(broken).query(&mut conn).unwrap();
    }
    assert_eq!(
        attempt(&mut conn, &campaign, "u", 1, None).outcome,
        Outcome::Ok
    );
}

/// `seckill buy ARGS` on `file` against `server`, JSON.
fn buy_json(
    file: &support::CampaignFile,
    server: &RedisServer,
    args: &[&str],
    code: i32,
) -> serde_json::Value {
    support::spec::seckill(&["buy", "--item", "1001"])
        .args(args)
        .campaign(file)
        .redis(server)
        .json()
        .fails_with(code)
        .json()
}

/// The documented precedence (docs/lua.md): on a sold-out item a shopper who
/// holds nothing hears `sold_out` before the kill switch, the window and the
/// rate limit, and such an attempt is not counted; a retried request id
/// still answers its order, and a holder goes the whole way as before
/// (rate limit, switch, `duplicate`). Before: `closed` and `rate_limited` won.
#[test]
fn sold_out_wins_before_the_switch_the_window_and_the_rate_limit() {
    use seckill::model::exit_codes::{CLOSED, RATE_LIMITED, SOLD_OUT, SUCCESS};
    let server = RedisServer::start();
    let file = one_item().rate_limit("1h", 1).write();
    support::spec::seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let keys = ItemKeys::live("spec", "1001");
    let () = server.conn().set(&keys.stock, 1).unwrap();
    let alice = buy_json(
        &file,
        &server,
        &["--user", "alice", "--request-id", "a1"],
        SUCCESS,
    );
    assert_eq!(alice["stock_left"], 0);
    // Two attempts of bob within the 1-per-hour window: both sold out,
    // neither counted (the second would be rate_limited if the first were).
    for _ in 0..2 {
        let bob = buy_json(&file, &server, &["--user", "bob"], SOLD_OUT);
        assert_eq!(bob["outcome"], "sold_out", "{bob}");
    }
    let rate: Option<i64> = server.conn().get(keys.rate("bob")).unwrap();
    assert_eq!(rate, None, "a sold-out attempt was counted");
    // The holder goes the whole way, as before: her second attempt in the
    // window is over the rate limit (never sold_out, which she could misread).
    buy_json(&file, &server, &["--user", "alice"], RATE_LIMITED);
    support::spec::seckill(&["shutdown-switch", "on", "--reason", "t"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let carol = buy_json(&file, &server, &["--user", "carol"], SOLD_OUT);
    assert_eq!(carol["outcome"], "sold_out", "{carol}");
    // A holder meets the switch; a retried request id still answers its order.
    buy_json(&file, &server, &["--user", "alice"], CLOSED);
    let replay = buy_json(
        &file,
        &server,
        &["--user", "alice", "--request-id", "a1"],
        SUCCESS,
    );
    assert_eq!(replay["order_id"], alice["order_id"]);
    // Units back: the first attempt of a shopper is counted again, as ever.
    support::spec::seckill(&["shutdown-switch", "off"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let () = server.conn().set(&keys.stock, 1).unwrap();
    buy_json(&file, &server, &["--user", "bob"], SUCCESS);
}

/// Issue 20: a reservation's `ok` says it is one and when it is due, in the
/// table and in JSON (`outcome` stays `ok`, exit 0, for scripts that read it;
/// `reserved`, `deadline` in RFC 3339 and `deadline_ms` say the rest); a
/// retried request id says what became of it; a final `ok` says none of it.
#[test]
fn a_reservation_ok_says_reserved_and_its_deadline() {
    use seckill::model::exit_codes::SUCCESS;
    let server = RedisServer::start();
    let file = one_item().payment_timeout("15m").write();
    support::spec::seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let before = chrono::Utc::now().timestamp_millis();
    let ok = buy_json(
        &file,
        &server,
        &["--user", "ann", "--request-id", "r1"],
        SUCCESS,
    );
    let after = chrono::Utc::now().timestamp_millis();
    assert_eq!(ok["outcome"], "ok", "{ok}");
    assert_eq!(ok["reserved"], true, "{ok}");
    assert_eq!(ok["reservation_state"], "reserved", "{ok}");
    let deadline_ms = ok["deadline_ms"].as_i64().unwrap();
    let fifteen_minutes = 15 * 60 * 1000;
    assert!(
        (before + fifteen_minutes - 2000..=after + fifteen_minutes + 2000).contains(&deadline_ms),
        "{ok}"
    );
    let deadline = ok["deadline"].as_str().unwrap();
    assert_eq!(
        chrono::DateTime::parse_from_rfc3339(deadline)
            .unwrap()
            .timestamp_millis(),
        deadline_ms,
        "{ok}"
    );
    let table = support::spec::seckill(&[
        "buy",
        "--item",
        "1001",
        "--user",
        "ann",
        "--request-id",
        "r1",
    ])
    .campaign(&file)
    .redis(&server)
    .columns(80)
    .succeeds()
    .stdout();
    assert!(table.contains("│ outcome    ┆ reserved"), "{table}");
    assert!(
        table.contains(&format!("{deadline} ({deadline_ms} ms)")),
        "{table}"
    );

    // Paid: a retry of the request says so, and is no reservation any more.
    let order = ok["order_id"].as_str().unwrap();
    support::spec::seckill(&["pay", "--order", order])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let retried = buy_json(
        &file,
        &server,
        &["--user", "ann", "--request-id", "r1"],
        SUCCESS,
    );
    assert_eq!(retried["order_id"], ok["order_id"]);
    assert_eq!(
        (
            retried["reserved"].clone(),
            retried["reservation_state"].clone()
        ),
        (false.into(), "paid".into())
    );
    assert_eq!(retried["deadline_ms"], deadline_ms);

    // Without payment_timeout an ok is final: nothing of the sort.
    let final_file = one_item().write();
    // The same campaign id, still selling: a reset names it.
    support::spec::seckill(&["init", "--yes", "--purge-orders", "spec"])
        .campaign(&final_file)
        .redis(&server)
        .succeeds();
    let plain = buy_json(&final_file, &server, &["--user", "bo"], SUCCESS);
    assert_eq!(plain["reserved"], false, "{plain}");
    assert!(
        plain["deadline"].is_null() && plain["deadline_ms"].is_null(),
        "{plain}"
    );
}
