//! Helpers for the order pipeline tests: campaigns with an order store,
//! real purchases through the buy script, background `seckill` processes,
//! and reading what the database and the consumer group hold.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use seckill::domain::item::SaleItem;
use seckill::domain::slot::{BuyRequest, Outcome};
use seckill::model::campaign::Campaign;
use seckill::model::keys::ItemKeys;

use super::spec::{Run, campaign, seckill};
use super::{CampaignFile, RedisServer};

/// A two-item campaign storing orders in `orders.db` next to the file.
pub fn two_item_campaign(stock_a: i64, stock_b: i64) -> CampaignFile {
    campaign("flash")
        .per_user_limit(1)
        .item("1001", stock_a)
        .named("Moutai")
        .price("1499.00")
        .item("1002", stock_b)
        .named("Phone")
        .price("4999.00")
        .write()
}

/// `seckill ARGS` on `file` against `server`, not run yet.
pub fn seckill_on(file: &CampaignFile, server: &RedisServer, args: &[&str]) -> Run {
    seckill(args).campaign(file).redis(server)
}

/// `users` purchase attempts of one unit each on `item` (users `<prefix>0..`)
/// through the item layer; returns the order ids of the `ok` outcomes.
pub fn buy_many(
    server: &RedisServer,
    file: &CampaignFile,
    item: &str,
    prefix: &str,
    users: usize,
) -> Vec<String> {
    let campaign = Campaign::load(&file.path).expect("campaign");
    let sale = SaleItem::live(
        &campaign,
        campaign.item(item).expect("item of the campaign"),
    );
    let mut conn = server.conn();
    let mut ok = Vec::new();
    for n in 0..users {
        let user = format!("{prefix}{n}");
        let attempt = sale
            .buy(
                &mut conn,
                &BuyRequest {
                    campaign: &campaign.id,
                    item,
                    user: &user,
                    qty: 1,
                    request_id: None,
                    ticket: None,
                    seats: None,
                },
            )
            .expect("buy script");
        if attempt.reply.outcome == Outcome::Ok {
            ok.push(attempt.reply.order_id.expect("ok has an order id"));
        }
    }
    ok
}

/// Order stream key of one item of the `flash` campaign.
pub fn orders_key(item: &str) -> String {
    ItemKeys::live("flash", item).orders
}

/// Dead-letter stream key of one item of the `flash` campaign.
pub fn dead_key(item: &str) -> String {
    ItemKeys::live("flash", item).dead
}

/// The `orders.db` next to the campaign file.
pub fn sqlite_path(file: &CampaignFile) -> PathBuf {
    file.dir.path().join("orders.db")
}

/// Every order id in a SQLite order database (sorted; duplicates would show).
pub fn sqlite_order_ids(path: &Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(path).expect("open sqlite");
    let mut statement = conn
        .prepare("SELECT order_id FROM orders ORDER BY order_id")
        .expect("prepare");
    statement
        .query_map([], |row| row.get::<_, String>(0))
        .expect("query")
        .collect::<Result<Vec<_>, _>>()
        .expect("rows")
}

/// Sorted copy.
pub fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort();
    ids
}

/// A background `seckill`, killed on drop so a failing test leaves no
/// consumer behind.
pub struct Background(Child);

impl std::ops::Deref for Background {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for Background {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `seckill ARGS` in the background (stdout and stderr to files in the campaign's dir).
pub fn spawn_seckill(
    file: &CampaignFile,
    redis_url: &str,
    extra_env: &[(&str, &str)],
    args: &[&str],
    log_name: &str,
) -> Background {
    let log = |ext: &str| {
        std::fs::File::create(file.dir.path().join(format!("{log_name}.{ext}"))).expect("log file")
    };
    let mut run = seckill(args).campaign(file).redis_url(redis_url);
    for (name, value) in extra_env {
        run = run.env(name, value);
    }
    Background(run.spawn_with_output(log("out"), log("err")))
}

/// What a background process wrote to stderr.
pub fn log_of(file: &CampaignFile, log_name: &str) -> String {
    std::fs::read_to_string(file.dir.path().join(format!("{log_name}.err"))).unwrap_or_default()
}

/// Send SIGTERM (as `systemctl stop` or Ctrl-C would).
pub fn terminate(child: &Child) {
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -TERM failed");
}

/// Wait for a child with a generous limit (a hang is a failure, not a timing check).
pub fn wait_exit(child: &mut Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("seckill did not exit within 120 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Wait until `stream` has nothing pending or undelivered, SIGTERM the consumer, expect exit 0.
pub fn stop_when_caught_up(
    server: &RedisServer,
    stream: &str,
    consumer: &mut Child,
    file: &CampaignFile,
    log_name: &str,
) {
    wait_until("the consumer caught up", || {
        let (pending, _, undelivered) = group_state(server, stream);
        pending == 0 && undelivered == 0
    });
    terminate(consumer);
    let status = wait_exit(consumer);
    assert!(
        status.success(),
        "exit {status:?}: {}",
        log_of(file, log_name)
    );
}

/// Poll `condition` until it holds; panic naming `what` after 120 s.
pub fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !condition() {
        assert!(Instant::now() < deadline, "gave up waiting: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The `orders-db` group of a stream: (pending, delivered, never delivered).
/// Counted from the stream itself: Redis 7.0 may report `entries-read` and
/// `lag` as nil for a group created on an empty stream.
pub fn group_state(server: &RedisServer, stream: &str) -> (i64, i64, i64) {
    let mut conn = server.conn();
    let groups: Vec<HashMap<String, redis::Value>> = redis::cmd("XINFO")
        .arg("GROUPS")
        .arg(stream)
        .query(&mut conn)
        .expect("XINFO GROUPS");
    let group = groups
        .into_iter()
        .find(|g| g.get("name") == Some(&redis::Value::BulkString(b"orders-db".to_vec())))
        .expect("group orders-db exists");
    let pending = match group.get("pending") {
        Some(redis::Value::Int(n)) => *n,
        other => panic!("XINFO pending is {other:?}"),
    };
    let last: String =
        redis::from_redis_value_ref(group.get("last-delivered-id").expect("last-delivered-id"))
            .expect("last-delivered-id is text");
    let undelivered: Vec<redis::Value> = redis::cmd("XRANGE")
        .arg(stream)
        .arg(format!("({last}"))
        .arg("+")
        .query(&mut conn)
        .expect("XRANGE");
    let length: i64 = redis::cmd("XLEN")
        .arg(stream)
        .query(&mut conn)
        .expect("XLEN");
    let undelivered = undelivered.len() as i64;
    (pending, length - undelivered, undelivered)
}

/// `reconcile --format json EXTRA`, not run yet (then `.succeeds().json()`,
/// `.fails_with(DRIFT_FOUND).json()`).
pub fn reconciling(file: &CampaignFile, server: &RedisServer, extra: &[&str]) -> Run {
    seckill_on(file, server, &["reconcile"]).json().args(extra)
}

/// Every entry id of `stream`, oldest first.
pub fn stream_ids(server: &RedisServer, stream: &str) -> Vec<String> {
    let reply: redis::streams::StreamRangeReply = redis::cmd("XRANGE")
        .arg(stream)
        .arg("-")
        .arg("+")
        .query(&mut server.conn())
        .expect("XRANGE");
    reply.ids.into_iter().map(|entry| entry.id).collect()
}

/// The ids pending in the `orders-db` group of `stream` (any consumer), oldest first.
pub fn pending_ids(server: &RedisServer, stream: &str) -> Vec<String> {
    let reply: redis::streams::StreamPendingCountReply = redis::cmd("XPENDING")
        .arg(stream)
        .arg("orders-db")
        .arg("-")
        .arg("+")
        .arg(100_000)
        .query(&mut server.conn())
        .expect("XPENDING");
    reply.ids.into_iter().map(|pending| pending.id).collect()
}

/// The log lines of a consumer that failed to store a batch and will retry it.
pub fn failed_stores(log: &str) -> usize {
    log.lines()
        .filter(|line| line.contains("storing ") && line.contains("retrying"))
        .count()
}
