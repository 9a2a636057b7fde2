//! Issue 26, "Sold out is said at once, to everyone": a `serve` instance
//! learns a sell-out from its own first `sold_out` reply and from the
//! broadcast (a shard channel per slot) when another door proves it, and a
//! unit that comes back reopens every instance within a round trip — each
//! instance here started with `--recheck 60s`, so its periodic recheck
//! cannot explain what it knows. Real `serve` processes, real Redis (one
//! server, and a 3-master cluster with replicas), the roles `seckill acl`
//! writes.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::cluster::{RedisCluster, node};
use crate::support::http::{self, Answer};
use crate::support::serve::Serve;
use crate::support::spec::{CampaignSpec, campaign, seckill};
use crate::support::{CampaignFile, RedisServer, preheat};

/// Far beyond any test: only the broadcast or the own reply can explain
/// what an instance knows.
const NO_RECHECK: [&str; 2] = ["--recheck", "60s"];
/// Generous: "within a round trip" is measured and printed, never timed here.
const WITHIN: Duration = Duration::from_secs(10);

fn outcome(answer: &Answer) -> String {
    answer.json()["outcome"].as_str().unwrap_or("").to_string()
}

fn from_cache(answer: &Answer) -> bool {
    answer.json()["from_cache"].as_bool().unwrap_or(false)
}

/// Script calls (EVALSHA, FCALL) the nodes on `ports` ran since their last
/// `CONFIG RESETSTAT`.
fn script_calls(ports: &[u16]) -> i64 {
    ports
        .iter()
        .map(|port| {
            let info: String = redis::cmd("INFO")
                .arg("commandstats")
                .query(&mut node(*port).unwrap())
                .unwrap();
            info.lines()
                .filter(|l| l.starts_with("cmdstat_evalsha:") || l.starts_with("cmdstat_fcall:"))
                .filter_map(|l| {
                    l.split("calls=")
                        .nth(1)?
                        .split(',')
                        .next()?
                        .parse::<i64>()
                        .ok()
                })
                .sum::<i64>()
        })
        .sum()
}

fn reset_stats(ports: &[u16]) {
    for port in ports {
        let () = redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query(&mut node(*port).unwrap())
            .unwrap();
    }
}

/// Buy through `serve` as newcomers until one gets `ok`: how long after
/// `since` it took, and how many attempts.
fn until_sold(serve: &Serve, item: &str, tag: &str, since: Instant) -> (Duration, u32) {
    let mut attempts = 0;
    loop {
        attempts += 1;
        let user = format!("{tag}{attempts}");
        let answer = http::buy(serve.addr, item, &user, &user);
        if answer.status == 200 {
            return (since.elapsed(), attempts);
        }
        assert_eq!(outcome(&answer), "sold_out", "{}", answer.body);
        assert!(
            since.elapsed() < WITHIN,
            "the unit that came back never sold through the other instance (its recheck is 60 s)"
        );
    }
}

/// Ask `serve` as newcomers until it answers `sold_out` from memory: how
/// long after `since`.
fn until_from_cache(serve: &Serve, item: &str, tag: &str, since: Instant) -> Duration {
    let mut n = 0;
    loop {
        n += 1;
        let user = format!("{tag}{n}");
        let answer = http::buy(serve.addr, item, &user, &user);
        assert_eq!(
            (answer.status, outcome(&answer)),
            (410, "sold_out".to_string()),
            "{}",
            answer.body
        );
        if from_cache(&answer) {
            return since.elapsed();
        }
        assert!(
            since.elapsed() < WITHIN,
            "the instance never learned the sell-out (its recheck is 60 s)"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Connections subscribed to the shard channel `channel`.
fn subscribers(conn: &mut redis::Connection, channel: &str) -> i64 {
    let reply: Vec<redis::Value> = redis::cmd("PUBSUB")
        .arg("SHARDNUMSUB")
        .arg(channel)
        .query(conn)
        .unwrap();
    redis::from_redis_value_ref(&reply[1]).unwrap()
}

/// Wait until some `serve` subscribed to `channel`.
fn until_subscribed(conn: &mut redis::Connection, channel: &str) {
    let deadline = Instant::now() + WITHIN;
    while subscribers(conn, channel) == 0 {
        assert!(
            Instant::now() < deadline,
            "serve never subscribed to {channel}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The seller's order id of an `ok`.
fn order_of(answer: &Answer) -> String {
    assert_eq!(answer.status, 200, "{}", answer.body);
    answer.json()["order_id"].as_str().unwrap().to_string()
}

/// Instance A sells the last unit; instance B (another process, same
/// Redis) answers the next newcomer `sold_out` from memory, and sequential
/// attempts through both cost at most one script per instance.
#[test]
fn a_sell_out_through_one_instance_is_known_by_the_other_at_once() {
    let server = RedisServer::start();
    let file = campaign("once").item("1", 1).write();
    preheat(&file, &server);
    let a = Serve::start(&file, &server.url(), false, &NO_RECHECK);
    let b = Serve::start(&file, &server.url(), false, &NO_RECHECK);
    let ports = [server.port];
    let bought = http::buy(a.addr, "1", "buyer", "r-buyer");
    let order = order_of(&bought);
    let sold_at = Instant::now();
    reset_stats(&ports);
    // Let the message arrive (a round trip), not the recheck (60 s).
    std::thread::sleep(Duration::from_millis(300));
    let first = http::buy(b.addr, "1", "newcomer", "n");
    assert_eq!(
        (first.status, outcome(&first), from_cache(&first)),
        (410, "sold_out".to_string(), true),
        "instance B, {:?} after A sold the last unit: {}",
        sold_at.elapsed(),
        first.body
    );
    for n in 0..50 {
        for (name, serve) in [("a", &a), ("b", &b)] {
            let user = format!("late-{name}-{n}");
            let answer = http::buy(serve.addr, "1", &user, &user);
            assert_eq!((answer.status, outcome(&answer)), (410, "sold_out".into()));
        }
    }
    let scripts = script_calls(&ports);
    eprintln!("sold-out scripts that reached Redis after the sell-out, both instances: {scripts}");
    assert!(
        scripts <= 2,
        "{scripts} sold-out scripts reached Redis for 101 sequential attempts on two instances"
    );
    // A buyer's retry is never refused from memory: it gets its order back.
    let retry = http::buy(b.addr, "1", "buyer", "r-buyer");
    assert_eq!(
        (
            retry.status,
            retry.json()["order_id"].clone(),
            from_cache(&retry)
        ),
        (200, json!(order), false),
        "{}",
        retry.body
    );
}

/// An instance's own `sold_out` reply is remembered before it is answered:
/// with the stock emptied behind every door's back (no script, so no
/// broadcast), the first attempt reaches Redis and every later one is
/// answered from memory.
#[test]
fn an_instances_own_sold_out_reply_is_remembered_at_once() {
    let server = RedisServer::start();
    let file = campaign("own").item("1", 5).write();
    preheat(&file, &server);
    let serve = Serve::start(&file, &server.url(), false, &NO_RECHECK);
    // Once subscribed, the instance re-reads everything: let it, first.
    let mut conn = server.conn();
    until_subscribed(&mut conn, "seckill:{own:1}:stock");
    std::thread::sleep(Duration::from_millis(300));
    let () = redis::cmd("SET")
        .arg("seckill:{own:1}:stock")
        .arg(0)
        .query(&mut server.conn())
        .unwrap();
    reset_stats(&[server.port]);
    let answers: Vec<Answer> = (0..40)
        .map(|n| http::buy(serve.addr, "1", &format!("u{n}"), &format!("r{n}")))
        .collect();
    for answer in &answers {
        assert_eq!(
            (answer.status, outcome(answer)),
            (410, "sold_out".into()),
            "{}",
            answer.body
        );
    }
    let remembered = answers.iter().filter(|a| from_cache(a)).count();
    let scripts = script_calls(&[server.port]);
    eprintln!(
        "own reply: {scripts} script(s) for 40 sequential attempts, {remembered} from memory"
    );
    assert_eq!((scripts, remembered), (1, 39));
}

fn reservations(id: &str) -> CampaignSpec {
    campaign(id).payment_timeout("10m")
}

/// A reservation cancelled through the command line puts its unit back:
/// the other instance sells it again at once, not after its recheck.
#[test]
fn a_cancelled_unit_sells_again_through_another_instance_at_once() {
    let server = RedisServer::start();
    let file = reservations("back").item("1", 1).write();
    preheat(&file, &server);
    let a = Serve::start(&file, &server.url(), false, &NO_RECHECK);
    let b = Serve::start(&file, &server.url(), false, &NO_RECHECK);
    let order = order_of(&http::buy(a.addr, "1", "first", "f"));
    let learned = until_from_cache(&b, "1", "probe", Instant::now());
    seckill(&["cancel", "--item", "1", "--order", &order])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let cancelled = Instant::now();
    let (sold_again, attempts) = until_sold(&b, "1", "next", cancelled);
    eprintln!(
        "B knew the sell-out after {learned:?}; after the cancel returned, B sold the unit \
         again after {sold_again:?} ({attempts} attempt(s); --recheck 60s)"
    );
}

/// A `serve` process stopped with SIGSTOP, resumed with SIGCONT on drop.
struct Paused(String);

impl Paused {
    fn new(serve: &Serve) -> Paused {
        let pid = serve.pid().to_string();
        let stopped = std::process::Command::new("kill")
            .args(["-STOP", &pid])
            .status()
            .unwrap();
        assert!(stopped.success(), "kill -STOP {pid}");
        Paused(pid)
    }
}

impl Drop for Paused {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-CONT", &self.0])
            .status();
    }
}

/// The subscriber's connection killed (`CLIENT KILL TYPE pubsub`) and the
/// last unit sold before the instance noticed (it is stopped meanwhile, so
/// the message reaches nobody): the instance subscribes again and re-reads
/// every item, so its first attempt afterwards is answered from memory.
#[test]
fn a_killed_subscription_is_made_again_and_everything_re_read() {
    let server = RedisServer::start();
    let file = campaign("kill").item("1", 1).write();
    preheat(&file, &server);
    let serve = Serve::start(&file, &server.url(), false, &NO_RECHECK);
    let channel = "seckill:{kill:1}:stock";
    let mut conn = server.conn();
    until_subscribed(&mut conn, channel);
    {
        let _paused = Paused::new(&serve);
        let killed: i64 = redis::cmd("CLIENT")
            .arg("KILL")
            .arg("TYPE")
            .arg("pubsub")
            .query(&mut conn)
            .unwrap();
        assert_eq!(killed, 1);
        assert_eq!(subscribers(&mut conn, channel), 0);
        seckill(&["buy", "--item", "1", "--user", "cli", "--request-id", "c"])
            .campaign(&file)
            .redis(&server)
            .succeeds();
    }
    let resumed = Instant::now();
    until_subscribed(&mut conn, channel);
    std::thread::sleep(Duration::from_millis(300));
    let first = http::buy(serve.addr, "1", "newcomer", "n");
    assert_eq!(
        (first.status, outcome(&first), from_cache(&first)),
        (410, "sold_out".to_string(), true),
        "{:?} after serve resumed: {}",
        resumed.elapsed(),
        first.body
    );
    let log = serve.log.lock().unwrap().clone();
    assert!(
        log.contains("the sell-out broadcast is not heard")
            && log.contains("listening to the sell-out broadcast again"),
        "{log}"
    );
}

/// Each role's password in a file beside the campaign.
fn password_file(file: &CampaignFile, role: &str) -> (String, String) {
    let password = format!("{role}-pw-{}", std::process::id());
    let path = file.dir.path().join(format!("{role}.pw"));
    std::fs::write(&path, format!("{password}\n")).unwrap();
    (path.display().to_string(), password)
}

/// Every `ACL LOG` entry of the node on `port` naming a channel or a
/// publish/subscribe command, then `ACL LOG RESET`.
fn channel_denials(port: u16) -> Vec<String> {
    let mut conn = node(port).unwrap();
    let log: Vec<Vec<redis::Value>> = redis::cmd("ACL").arg("LOG").query(&mut conn).unwrap();
    let () = redis::cmd("ACL")
        .arg("LOG")
        .arg("RESET")
        .query(&mut conn)
        .unwrap();
    log.iter()
        .map(|entry| {
            entry
                .iter()
                .filter_map(|v| redis::from_redis_value_ref::<String>(v).ok())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|entry| {
            let entry = entry.to_lowercase();
            entry.contains("channel") || entry.contains("publish") || entry.contains("subscribe")
        })
        .collect()
}

/// The roles `seckill acl --apply` writes: `serve` as the buyer subscribes
/// and its buy publishes; the operator's cancel publishes. Nothing is
/// refused (ACL LOG), and the other instance sells the returned unit at once.
#[test]
fn the_generated_roles_subscribe_and_publish() {
    let server = RedisServer::start();
    let file = reservations("roles").item("1", 1).write();
    let url = |role: &str| {
        let (path, password) = password_file(&file, role);
        let applied = seckill(&["acl", "--role", role, "--password-file", &path, "--apply"])
            .campaign(&file)
            .redis(&server)
            .json()
            .succeeds()
            .json();
        let checks = applied["users"][0]["checks"].as_array().unwrap().clone();
        assert!(checks.iter().all(|c| c["ok"] == true), "{applied}");
        format!(
            "redis://seckill-{role}:{password}@127.0.0.1:{}/0",
            server.port
        )
    };
    let (buyer, operator) = (url("buyer"), url("operator"));
    seckill(&["preheat"])
        .campaign(&file)
        .redis_url(&operator)
        .succeeds();
    let a = Serve::start(&file, &buyer, false, &NO_RECHECK);
    let b = Serve::start(&file, &buyer, false, &NO_RECHECK);
    let order = order_of(&http::buy(a.addr, "1", "first", "f"));
    std::thread::sleep(Duration::from_millis(300));
    let first = http::buy(b.addr, "1", "newcomer", "n");
    assert!(from_cache(&first), "{}", first.body);
    seckill(&["cancel", "--item", "1", "--order", &order])
        .campaign(&file)
        .redis_url(&operator)
        .succeeds();
    let (sold_again, _) = until_sold(&b, "1", "next", Instant::now());
    eprintln!("as the generated roles: sold again through B after {sold_again:?}");
    assert_eq!(channel_denials(server.port), Vec::<String>::new());
}

/// The same on a 3-master cluster with replicas, for a bucketed item whose
/// buckets live on different masters: a sweep's proof through A is known by
/// B at once, and a unit cancelled through the command line (as the
/// operator) sells again through B at once; both serve as the buyer.
#[test]
fn on_a_cluster_a_bucketed_sell_out_and_a_returned_unit_are_known_at_once() {
    let cluster = RedisCluster::start_with_replicas(1);
    let file = reservations("cb").item("1", 4).buckets(4).write();
    let roles = cluster.create_roles(&file);
    seckill(&["preheat"])
        .campaign(&file)
        .cluster(&cluster)
        .succeeds();
    let buyer = roles.seeds("buyer");
    let a = Serve::start(&file, &buyer, true, &NO_RECHECK);
    let b = Serve::start(&file, &buyer, true, &NO_RECHECK);
    let orders: Vec<String> = (0..4)
        .map(|n| order_of(&http::buy(a.addr, "1", &format!("u{n}"), &format!("r{n}"))))
        .collect();
    // The next attempt through A sweeps every bucket and proves the sell-out.
    let proof = http::buy(a.addr, "1", "prover", "p");
    assert_eq!(
        (proof.status, outcome(&proof)),
        (410, "sold_out".into()),
        "{}",
        proof.body
    );
    std::thread::sleep(Duration::from_millis(300));
    reset_stats(&cluster.ports);
    for n in 0..20 {
        for (name, serve) in [("a", &a), ("b", &b)] {
            let user = format!("late-{name}-{n}");
            let answer = http::buy(serve.addr, "1", &user, &user);
            assert_eq!(
                (answer.status, outcome(&answer), from_cache(&answer)),
                (410, "sold_out".into(), true),
                "{name}: {}",
                answer.body
            );
        }
    }
    assert_eq!(script_calls(&cluster.ports), 0);
    seckill(&["--cluster", "cancel", "--item", "1", "--order", &orders[2]])
        .campaign(&file)
        .redis_url(&roles.seeds("operator"))
        .succeeds();
    let (sold_again, attempts) = until_sold(&b, "1", "next", Instant::now());
    eprintln!(
        "cluster, 4 buckets: the cancelled unit sold again through B after {sold_again:?} \
         ({attempts} attempt(s); --recheck 60s)"
    );
    let denials: Vec<String> = cluster
        .take_acl_denials()
        .into_iter()
        .filter(|d| {
            let d = d.to_lowercase();
            d.contains("channel") || d.contains("publish") || d.contains("subscribe")
        })
        .collect();
    assert_eq!(denials, Vec::<String>::new());
}

/// A room item sold out through one instance: joins and polls of
/// newcomers through both instances answer `sold_out` (410) from memory,
/// no script reaching Redis; the buyer's own poll still reads the room.
#[test]
fn joins_and_polls_of_a_sold_out_room_item_are_answered_from_memory() {
    let server = RedisServer::start();
    let file = campaign("room")
        .item("1", 1)
        .room("{ mode: rate, admit_rate: 1000/s }")
        .write();
    preheat(&file, &server);
    let a = Serve::start(&file, &server.url(), false, &NO_RECHECK);
    let b = Serve::start(&file, &server.url(), false, &NO_RECHECK);
    let joined = http::post(a.addr, "/v1/items/1/queue", &json!({"user": "alice"}));
    assert_eq!(joined.status, 200, "{}", joined.body);
    let deadline = Instant::now() + WITHIN;
    loop {
        let bought = http::buy(a.addr, "1", "alice", "ra");
        if bought.status == 200 {
            break;
        }
        assert_eq!(outcome(&bought), "not_admitted", "{}", bought.body);
        assert!(Instant::now() < deadline, "alice was never admitted");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    reset_stats(&[server.port]);
    for n in 0..20 {
        for (name, serve) in [("a", &a), ("b", &b)] {
            let user = format!("late-{name}-{n}");
            let join = http::post(serve.addr, "/v1/items/1/queue", &json!({"user": user}));
            let poll = http::get(serve.addr, &format!("/v1/items/1/queue/{user}"));
            for answer in [&join, &poll] {
                assert_eq!(
                    (answer.status, outcome(answer), from_cache(answer)),
                    (410, "sold_out".to_string(), true),
                    "{name}: {}",
                    answer.body
                );
            }
        }
    }
    assert_eq!(script_calls(&[server.port]), 0);
    let own = http::get(b.addr, "/v1/items/1/queue/alice");
    assert_eq!(own.status, 200, "{}", own.body);
    assert!(!from_cache(&own), "{}", own.body);
}

/// A sold-out item reset by the operator (`seckill init --yes --purge-orders`: its keys
/// deleted, the stock loaded again by the preheat script) sells again
/// through an instance that knew it sold out, at once.
#[test]
fn a_stock_loaded_again_reopens_every_instance_at_once() {
    let server = RedisServer::start();
    let file = campaign("reload").item("1", 1).write();
    preheat(&file, &server);
    let serve = Serve::start(&file, &server.url(), false, &NO_RECHECK);
    order_of(&http::buy(serve.addr, "1", "first", "f"));
    until_from_cache(&serve, "1", "probe", Instant::now());
    seckill(&["init", "--yes", "--purge-orders", "reload"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let (sold_again, attempts) = until_sold(&serve, "1", "next", Instant::now());
    eprintln!("after init --yes, sold again after {sold_again:?} ({attempts} attempt(s))");
}

/// Users from an older `seckill acl` line (no channel rights): the scripts
/// publish with `redis.pcall`, so the last unit still sells (and a cancel
/// still releases) with every write made, only without the broadcast;
/// `serve` says once that it is not heard.
#[test]
fn a_role_without_channel_rights_still_sells_only_without_the_broadcast() {
    let server = RedisServer::start();
    let file = reservations("old").item("1", 1).write();
    preheat(&file, &server);
    let mut urls = Vec::new();
    for role in ["buyer", "operator"] {
        let (path, password) = password_file(&file, role);
        seckill(&["acl", "--role", role, "--password-file", &path, "--apply"])
            .campaign(&file)
            .redis(&server)
            .succeeds();
        let () = redis::cmd("ACL")
            .arg("SETUSER")
            .arg(format!("seckill-{role}"))
            .arg("resetchannels")
            .query(&mut server.conn())
            .unwrap();
        urls.push(format!(
            "redis://seckill-{role}:{password}@127.0.0.1:{}/0",
            server.port
        ));
    }
    let serve = Serve::start(&file, &urls[0], false, &NO_RECHECK);
    let order = order_of(&http::buy(serve.addr, "1", "first", "f"));
    let mut conn = server.conn();
    let stock: i64 = redis::cmd("GET")
        .arg("seckill:{old:1}:stock")
        .query(&mut conn)
        .unwrap();
    let orders: i64 = redis::cmd("XLEN")
        .arg("seckill:{old:1}:orders")
        .query(&mut conn)
        .unwrap();
    assert_eq!((stock, orders), (0, 1));
    seckill(&["cancel", "--item", "1", "--order", &order])
        .campaign(&file)
        .redis_url(&urls[1])
        .json()
        .succeeds();
    let stock: i64 = redis::cmd("GET")
        .arg("seckill:{old:1}:stock")
        .query(&mut conn)
        .unwrap();
    assert_eq!(stock, 1, "the cancel released the unit");
    let log = serve.log.lock().unwrap().clone();
    assert!(log.contains("the sell-out broadcast is not heard"), "{log}");
    assert_eq!(
        log.matches("the sell-out broadcast is not heard").count(),
        1,
        "{log}"
    );
}

/// `seckill rebalance` refilling an emptied bucket (`lua/bucket_credit.lua`)
/// publishes on that bucket's channel, so every instance re-reads the item.
#[test]
fn a_rebalance_that_refills_an_empty_bucket_publishes() {
    let server = RedisServer::start();
    let file = campaign("rebal").item("1", 8).buckets(2).write();
    preheat(&file, &server);
    let at_home: Vec<String> = (0..)
        .map(|i| format!("user{i}"))
        .filter(|user| seckill::model::layout::home_bucket(user, 2) == 0)
        .take(4)
        .collect();
    for user in &at_home {
        seckill(&["buy", "--item", "1", "--user", user])
            .campaign(&file)
            .redis(&server)
            .succeeds();
    }
    let spublish = || -> i64 {
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .query(&mut server.conn())
            .unwrap();
        info.lines()
            .find(|l| l.starts_with("cmdstat_spublish:"))
            .and_then(|l| l.split("calls=").nth(1)?.split(',').next()?.parse().ok())
            .unwrap_or(0)
    };
    reset_stats(&[server.port]);
    seckill(&["rebalance"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    assert!(spublish() >= 1, "the rebalance published nothing");
}

/// A failover moves the item's slot to the replica (`CLUSTER FAILOVER`):
/// the old master ends the subscription (`sunsubscribe`), the instance
/// reads the slot map again and subscribes on the new master (asked
/// whether it is: a demoted master takes a subscription too, and never
/// passes the new master's messages on), so a sell-out proven there
/// afterwards is known at once.
#[test]
fn after_a_failover_the_instance_listens_again() {
    let cluster = RedisCluster::start_with_replicas(1);
    let file = campaign("fo").item("1", 1).write();
    seckill(&["preheat"])
        .campaign(&file)
        .cluster(&cluster)
        .succeeds();
    let channel = "seckill:{fo:1}:stock";
    let (master, replica) = cluster.master_and_synced_replica(channel);
    let serve = Serve::start(&file, &cluster.urls(), true, &NO_RECHECK);
    until_subscribed(&mut node(master).unwrap(), channel);
    let () = redis::cmd("CLUSTER")
        .arg("FAILOVER")
        .query(&mut node(replica).unwrap())
        .unwrap();
    let failed_over = Instant::now();
    let deadline = failed_over + WITHIN;
    loop {
        let role: Vec<redis::Value> = redis::cmd("ROLE")
            .query(&mut node(replica).unwrap())
            .unwrap();
        if redis::from_redis_value_ref::<String>(&role[0]).unwrap() == "master" {
            break;
        }
        assert!(Instant::now() < deadline, "the replica never took over");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Subscribed again, on the new master (the old one, now its replica,
    // would take the subscription too, and never pass the messages on).
    let deadline = Instant::now() + WITHIN;
    while !serve
        .log
        .lock()
        .unwrap()
        .contains("listening to the sell-out broadcast again")
    {
        assert!(
            Instant::now() < deadline,
            "serve never subscribed again: {}",
            serve.log.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let listening = failed_over.elapsed();
    assert_eq!(
        subscribers(&mut node(replica).unwrap(), channel),
        1,
        "the subscription is on the new master"
    );
    // The new master is another Redis process: the sale is fenced until
    // reconcile --fence proves the books (docs/failover.md, "The fence").
    for args in [&["consume", "--drain"][..], &["reconcile", "--fence"]] {
        seckill(args)
            .campaign(&file)
            .cluster(&cluster)
            .current_dir(file.dir.path())
            .succeeds();
    }
    seckill(&["buy", "--item", "1", "--user", "cli", "--request-id", "c"])
        .campaign(&file)
        .cluster(&cluster)
        .succeeds();
    std::thread::sleep(Duration::from_millis(300));
    let first = http::buy(serve.addr, "1", "newcomer", "n");
    assert_eq!(
        (first.status, outcome(&first), from_cache(&first)),
        (410, "sold_out".to_string(), true),
        "{}",
        first.body
    );
    eprintln!("after CLUSTER FAILOVER, listening again after {listening:?}");
}
