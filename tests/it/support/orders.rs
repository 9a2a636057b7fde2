//! Helpers for the order pipeline tests: campaigns with an order store,
//! real purchases through the buy script, background `seckill` processes,
//! and reading what the database and the consumer group hold.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use seckill::domain::slot::{self, BuyRequest, Outcome};
use seckill::model::campaign::Campaign;
use seckill::model::keys::ItemKeys;

use super::{CampaignFile, RedisServer, campaign_file, seckill};

/// A two-item campaign storing orders in `orders.db` next to the file.
pub fn two_item_campaign(stock_a: i64, stock_b: i64) -> CampaignFile {
    campaign_file(&format!(
        "campaign: flash\nper_user_limit: 1\nitems:\n  - id: \"1001\"\n    name: Moutai\n    price: \"1499.00\"\n    stock: {stock_a}\n  - id: \"1002\"\n    name: Phone\n    price: \"4999.00\"\n    stock: {stock_b}\norders:\n  store: sqlite://orders.db\n"
    ))
}

/// Preheat through the binary.
pub fn preheat(file: &CampaignFile, server: &RedisServer) {
    seckill(&file.path, &server.url())
        .arg("preheat")
        .assert()
        .success();
}

/// `users` purchase attempts of one unit each on `item` (users `<prefix>0..`);
/// returns the order ids of the `ok` outcomes.
pub fn buy_many(
    server: &RedisServer,
    file: &CampaignFile,
    item: &str,
    prefix: &str,
    users: usize,
) -> Vec<String> {
    let campaign = Campaign::load(&file.path).expect("campaign");
    let keys = ItemKeys::live(&campaign.id, item);
    let mut conn = server.conn();
    let mut ok = Vec::new();
    for n in 0..users {
        let user = format!("{prefix}{n}");
        let reply = slot::buy(
            &mut conn,
            &keys,
            &BuyRequest {
                campaign: &campaign.id,
                item,
                user: &user,
                qty: 1,
                request_id: None,
            },
        )
        .expect("buy script");
        if reply.outcome == Outcome::Ok {
            ok.push(reply.order_id.expect("ok has an order id"));
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
    let stdout =
        std::fs::File::create(file.dir.path().join(format!("{log_name}.out"))).expect("log file");
    let stderr =
        std::fs::File::create(file.dir.path().join(format!("{log_name}.err"))).expect("log file");
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_seckill"));
    command
        .env_remove("SECKILL_CAMPAIGN")
        .env_remove("SECKILL_REDIS_CLUSTER")
        .env_remove("SECKILL_ORDERS_DB")
        .env("SECKILL_REDIS_URL", redis_url)
        .envs(extra_env.iter().copied())
        .arg("-c")
        .arg(&file.path)
        .args(args)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr);
    Background(command.spawn().expect("spawn seckill"))
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

/// `reconcile --format json` → (exit code, parsed JSON).
pub fn reconcile(
    file: &CampaignFile,
    server: &RedisServer,
    extra: &[&str],
) -> (i32, serde_json::Value) {
    let output = seckill(&file.path, &server.url())
        .args(["reconcile", "--format", "json"])
        .args(extra)
        .output()
        .expect("run reconcile");
    (
        output.status.code().expect("exit code"),
        super::json(&output),
    )
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
