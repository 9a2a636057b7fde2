//! A sale day on a 3+3 Redis Cluster in CI size (issue 25, "Done when"),
//! with only the users `seckill acl` generates, each job as its role: the
//! credentials proven before the sale (`serve --check-credential`, `buy
//! --dry-run`, `doctor --role`), `serve` selling to concurrent shoppers,
//! `consume` storing behind it, a replica frozen then a master frozen
//! (SIGSTOP) while the kill switch is flipped on and off and shown
//! refusing a buy, `serve` answering again after the promotion; then
//! lookup, pay, expire, the room's admitter, `status`, `reconcile`, and the
//! invariants counted. `scripts/rehearse-sale-day.sh` is the full-size
//! walk (60 s freezes), `docs/rehearsal.md` its figures.
//!
//! Also the two proofs on their own: `buy --dry-run` writes nothing (every
//! key's DUMP the same) and names a missing command; `serve
//! --check-credential` asks every node, replicas included.

use crate::support::check_of;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use seckill::model::exit_codes::{ACL_CHECK_FAILED, CLOSED};
use seckill::model::keys::ItemKeys;

use crate::cluster_faults::{as_role, timed};
use crate::support::cluster::{RedisCluster, node};
use crate::support::orders::{
    Background, spawn_seckill, sqlite_order_ids, sqlite_path, terminate, wait_exit,
};
use crate::support::serve::Serve;
use crate::support::spec::{campaign, seckill};
use crate::support::{CampaignFile, RedisServer, http, preheat};

/// Every key of the Redis and its DUMP (the bytes of its value), sorted.
fn snapshot(server: &RedisServer) -> BTreeMap<String, Vec<u8>> {
    let mut conn = server.conn();
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut conn).unwrap();
    keys.into_iter()
        .map(|key| {
            let dump: Vec<u8> = redis::cmd("DUMP").arg(&key).query(&mut conn).unwrap();
            (key, dump)
        })
        .collect()
}

/// The buyer's `ACL SETUSER` words as `seckill acl` writes them.
fn buyer_line(file: &CampaignFile, password_file: &str) -> Vec<String> {
    let report = seckill(&["acl", "--role", "buyer", "--password-file", password_file])
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

#[test]
fn buy_dry_run_proves_the_buyers_path_writes_nothing_and_names_a_missing_command() {
    let server = RedisServer::start();
    let file = campaign("dry").item("1", 10).payment_timeout("5m").write();
    preheat(&file, &server);
    let password_file = file.dir.path().join("buyer.pw");
    std::fs::write(&password_file, "buyer-secret\n").unwrap();
    let password_path = password_file.to_str().unwrap();
    seckill(&[
        "acl",
        "--role",
        "buyer",
        "--password-file",
        password_path,
        "--apply",
    ])
    .campaign(&file)
    .redis(&server)
    .succeeds();
    let buyer = format!(
        "redis://seckill-buyer:buyer-secret@127.0.0.1:{}/0",
        server.port
    );
    seckill(&["buy", "--item", "1", "--user", "early"])
        .campaign(&file)
        .redis_url(&buyer)
        .succeeds();

    let before = snapshot(&server);
    let proof = seckill(&["buy", "--item", "1", "--user", "alice", "--dry-run"])
        .campaign(&file)
        .redis_url(&buyer)
        .json()
        .succeeds()
        .json();
    assert_eq!(snapshot(&server), before, "a dry run changed Redis");
    let rows = proof["credentials"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{proof}");
    assert_eq!(rows[0]["verdict"], "proven", "{proof}");
    assert_eq!(rows[0]["user"], "seckill-buyer", "{proof}");
    assert!(rows[0]["checks"].as_u64().unwrap() >= 3, "{proof}");

    // The same user without the one rule that lets the buy append its order.
    let line: Vec<String> = buyer_line(&file, password_path)
        .into_iter()
        .filter(|word| !(word.starts_with("(+xadd") && word.contains(":orders")))
        .collect();
    let mut admin = server.conn();
    let () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg(&line)
        .query(&mut admin)
        .unwrap();
    let () = redis::cmd("ACL")
        .arg("LOG")
        .arg("RESET")
        .query(&mut admin)
        .unwrap();
    let refused = seckill(&["buy", "--item", "1", "--user", "alice", "--dry-run"])
        .campaign(&file)
        .redis_url(&buyer)
        .fails_with(ACL_CHECK_FAILED);
    assert_eq!(snapshot(&server), before, "a refused dry run changed Redis");
    let said = refused.stdout() + &refused.stderr();
    assert!(
        said.contains("script buy") && said.contains("XADD seckill:{dry:1}:orders"),
        "the refusal names the script and the command: {}",
        refused.describe()
    );
    assert!(
        said.contains("seckill acl --role buyer"),
        "{}",
        refused.describe()
    );
    let log: Vec<redis::Value> = redis::cmd("ACL").arg("LOG").query(&mut admin).unwrap();
    assert!(
        log.is_empty(),
        "the probe leaves nothing in ACL LOG: {log:?}"
    );
    // And the buy itself is refused where the dry run said it would be.
    let bought = seckill(&["buy", "--item", "1", "--user", "alice"])
        .campaign(&file)
        .redis_url(&buyer)
        .runs();
    assert_ne!(bought.code(), 0, "{}", bought.describe());
}

#[test]
fn serve_check_credential_asks_every_node_and_buy_dry_run_the_items_nodes() {
    let cluster = RedisCluster::start_with_replicas(1);
    let file = campaign("cc").item("1", 10).payment_timeout("5m").write();
    let roles = cluster.create_roles(&file);
    let token = file.dir.path().join("operator.token");
    std::fs::write(&token, "a-token-of-thirty-two-characters\n").unwrap();
    let token = token.to_str().unwrap();
    let buyer = roles.seeds("buyer");
    let operator = roles.seeds("operator");

    let proof = seckill(&[
        "serve",
        "--check-credential",
        "--operator-token-file",
        token,
        "--operator-redis",
        &operator,
    ])
    .campaign(&file)
    .redis_url(&buyer)
    .env("SECKILL_REDIS_CLUSTER", "true")
    .json()
    .within(Duration::from_secs(60))
    .succeeds()
    .json();
    let rows = proof["credentials"].as_array().unwrap();
    for credential in ["buyer", "operator"] {
        let nodes: Vec<&str> = rows
            .iter()
            .filter(|r| r["credential"] == credential)
            .map(|r| r["node"].as_str().unwrap())
            .collect();
        assert_eq!(nodes.len(), 6, "{credential} on every node: {proof}");
        assert_eq!(
            nodes.iter().filter(|n| n.starts_with("replica ")).count(),
            3,
            "{proof}"
        );
    }
    assert!(rows.iter().all(|r| r["verdict"] == "proven"), "{proof}");

    // Without --operator-redis the door's buyer credential would pay: it
    // may not, on any node, and nothing was started.
    let refused = seckill(&[
        "serve",
        "--check-credential",
        "--operator-token-file",
        token,
    ])
    .campaign(&file)
    .redis_url(&buyer)
    .env("SECKILL_REDIS_CLUSTER", "true")
    .json()
    .within(Duration::from_secs(60))
    .fails_with(ACL_CHECK_FAILED)
    .json();
    let rows = refused["credentials"].as_array().unwrap();
    let operator_rows: Vec<&serde_json::Value> = rows
        .iter()
        .filter(|r| r["credential"] == "operator")
        .collect();
    assert_eq!(operator_rows.len(), 6, "{refused}");
    for row in operator_rows {
        assert_eq!(row["verdict"], "refused", "{refused}");
        assert!(row["refused"].to_string().contains("script pay"), "{row}");
    }
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("seckill acl --role operator"),
        "{refused}"
    );

    // buy --dry-run asks the item's master and its replica only.
    let (master, replicas) = cluster.master_and_replicas_of(&ItemKeys::live("cc", "1").stock);
    let dry = seckill(&["buy", "--item", "1", "--user", "alice", "--dry-run"])
        .campaign(&file)
        .redis_url(&buyer)
        .env("SECKILL_REDIS_CLUSTER", "true")
        .json()
        .within(Duration::from_secs(60))
        .succeeds()
        .json();
    let mut nodes: Vec<String> = dry["credentials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["node"].as_str().unwrap().to_string())
        .collect();
    nodes.sort();
    let mut expected = vec![format!("master 127.0.0.1:{master}")];
    expected.extend(replicas.iter().map(|p| format!("replica 127.0.0.1:{p}")));
    expected.sort();
    assert_eq!(nodes, expected, "{dry}");
    let denials = cluster.take_acl_denials();
    assert!(denials.is_empty(), "{}", denials.join("\n"));
}

/// One shopper's request through `serve` and its answer.
#[derive(Debug, Clone)]
struct Attempt {
    item: String,
    user: String,
    sent: Instant,
    done: Instant,
    /// HTTP status; 0 when no answer came (the connection failed).
    status: u16,
    outcome: String,
    order_id: Option<String>,
}

/// Shoppers buying `items` in turn through `serve` until told to stop.
struct Shoppers {
    stop: Arc<AtomicBool>,
    attempts: Arc<Mutex<Vec<Attempt>>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Shoppers {
    fn start(addr: std::net::SocketAddr, items: &[String], count: usize) -> Shoppers {
        let stop = Arc::new(AtomicBool::new(false));
        let attempts = Arc::new(Mutex::new(Vec::new()));
        let threads = (0..count)
            .map(|t| {
                let (stop, attempts, items) =
                    (Arc::clone(&stop), Arc::clone(&attempts), items.to_vec());
                std::thread::spawn(move || {
                    for n in 0.. {
                        if stop.load(Ordering::SeqCst) {
                            break;
                        }
                        let item = items[n % items.len()].clone();
                        let user = format!("s{t}-{n}");
                        let sent = Instant::now();
                        let answer = http::send(
                            addr,
                            "POST",
                            &format!("/v1/items/{item}/buy"),
                            &[("Content-Type", "application/json")],
                            serde_json::json!({"user": user, "request_id": format!("r-{user}")})
                                .to_string()
                                .as_bytes(),
                        );
                        let (status, body) = match answer {
                            Ok(a) => (a.status, a.body),
                            Err(e) => (0, e.to_string()),
                        };
                        let json: serde_json::Value =
                            serde_json::from_str(&body).unwrap_or_default();
                        let outcome = json["outcome"]
                            .as_str()
                            .or(json["error"].as_str())
                            .unwrap_or(&body)
                            .to_string();
                        attempts.lock().unwrap().push(Attempt {
                            item,
                            user,
                            sent,
                            done: Instant::now(),
                            status,
                            outcome,
                            order_id: json["order_id"].as_str().map(String::from),
                        });
                        std::thread::sleep(Duration::from_millis(15));
                    }
                })
            })
            .collect();
        Shoppers {
            stop,
            attempts,
            threads,
        }
    }

    /// When the first ok for `item` came of the requests sent after `at`.
    fn first_ok_sent_after(&self, item: &str, at: Instant) -> Option<Instant> {
        self.attempts
            .lock()
            .unwrap()
            .iter()
            .filter(|a| a.item == item && a.status == 200 && a.sent >= at)
            .map(|a| a.done)
            .min()
    }

    fn finish(self) -> Vec<Attempt> {
        self.stop.store(true, Ordering::SeqCst);
        for thread in self.threads {
            thread.join().unwrap();
        }
        Arc::try_unwrap(self.attempts)
            .unwrap()
            .into_inner()
            .unwrap()
    }
}

/// Whether `port`'s line in `CLUSTER NODES`, as a node that answers sees
/// it, says master.
fn is_master_in_cluster_nodes(asked: u16, port: u16) -> bool {
    let Ok(mut conn) = node(asked) else {
        return false;
    };
    let Ok(nodes) = redis::cmd("CLUSTER")
        .arg("NODES")
        .query::<String>(&mut conn)
    else {
        return false;
    };
    nodes.lines().any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        fields.len() > 2
            && fields[1].starts_with(&format!("127.0.0.1:{port}@"))
            && fields[2].split(',').any(|f| f == "master")
            && !fields[2].contains("fail")
    })
}

#[test]
fn a_sale_day_on_a_cluster_survives_a_frozen_replica_then_a_frozen_master() {
    let started = Instant::now();
    // A node unanswered for 2 s is marked failed: the replica's freeze
    // spans both states, the master's ends in a promotion.
    let cluster = RedisCluster::start_with(1, Duration::from_secs(2));
    let (hot, calm) = cluster.items_apart("day");
    let room = "500".to_string();
    let initial = 1_000_000;
    let file = campaign("day")
        .item(&hot, initial)
        .item(&calm, initial)
        .item(&room, 10)
        .room("{ mode: max_active, max_active: 5 }")
        .payment_timeout("10m")
        .write();
    let roles = cluster.create_roles(&file);
    let (master, replica) = cluster.master_and_synced_replica(&ItemKeys::live("day", &hot).stock);
    let calm_master = cluster
        .master_and_replicas_of(&ItemKeys::live("day", &calm).stock)
        .0;
    let within = Duration::from_secs(60);

    // Before the sale: each credential proven on its path, every node.
    let token_file = file.dir.path().join("operator.token");
    std::fs::write(&token_file, "rehearsal-token-0123456789abcdef\n").unwrap();
    let token_path = token_file.to_str().unwrap();
    let operator_seeds = roles.urls("operator", calm_master);
    let operator_flags = [
        "--operator-token-file",
        token_path,
        "--operator-redis",
        &operator_seeds,
    ];
    as_role(&roles, "operator", calm_master, &["preheat"])
        .campaign(&file)
        .within(within)
        .succeeds();
    as_role(&roles, "buyer", replica, &["serve", "--check-credential"])
        .campaign(&file)
        .args(&operator_flags)
        .within(within)
        .succeeds();
    as_role(
        &roles,
        "buyer",
        replica,
        &["buy", "--item", &hot, "--user", "x", "--dry-run"],
    )
    .campaign(&file)
    .within(within)
    .succeeds();
    for role in ["buyer", "consumer", "operator"] {
        let report = as_role(
            &roles,
            role,
            calm_master,
            &["doctor", "--role", role, "--allow-unchecked"],
        )
        .campaign(&file)
        .json()
        .within(within)
        .runs()
        .json();
        assert_eq!(check_of(&report, "permissions").0, "ok", "{role}: {report}");
    }

    // The sale: serve as the buyer (its first seed the replica that will
    // freeze), consume as the consumer, shoppers throughout.
    // `ok` only once the replica has it: a forced failover (a frozen
    // master) then loses no acknowledged buy (docs/guide.md, "What is
    // never lost").
    let mut serve_flags = operator_flags.to_vec();
    // A master whose replica hangs (or was just promoted, its old master
    // frozen) answers `unreplicated` after the WAIT: a short one.
    serve_flags.extend(["--wait-replicas", "1", "--wait-timeout", "250ms"]);
    let serve = Serve::start(&file, &roles.urls("buyer", replica), true, &serve_flags);
    let consumer_urls = roles.urls("consumer", calm_master);
    let mut consume: Background = spawn_seckill(
        &file,
        &consumer_urls,
        &[("SECKILL_REDIS_CLUSTER", "true")],
        &["consume"],
        "consume",
    );
    let shoppers = Shoppers::start(serve.addr, &[hot.clone(), calm.clone()], 4);
    std::thread::sleep(Duration::from_millis(500));

    // Incident 1: the hot item's replica hangs. The kill switch goes on,
    // refuses a buy through the door and on the command line, goes off.
    let mut figures: Vec<String> = Vec::new();
    {
        let _frozen = cluster.freeze(replica);
        let froze = Instant::now();
        let (on, took_on) = timed(
            as_role(
                &roles,
                "operator",
                replica,
                &["shutdown-switch", "on", "--reason", "drill"],
            )
            .campaign(&file),
        );
        assert_eq!(on.code(), 0, "{}", on.describe());
        let door = http::buy(serve.addr, &hot, "during-replica", "rq-1");
        assert_eq!(door.status, 503, "{}", door.body);
        assert_eq!(door.json()["outcome"], "closed", "{}", door.body);
        as_role(
            &roles,
            "buyer",
            replica,
            &["buy", "--item", &calm, "--user", "cli-r"],
        )
        .campaign(&file)
        .within(within)
        .fails_with(CLOSED);
        let (status, took_status) =
            timed(as_role(&roles, "operator", replica, &["status"]).campaign(&file));
        assert_eq!(status.code(), 0, "{}", status.describe());
        let (off, took_off) = timed(
            as_role(&roles, "operator", replica, &["shutdown-switch", "off"]).campaign(&file),
        );
        assert_eq!(off.code(), 0, "{}", off.describe());
        figures.push(format!(
            "replica frozen: switch on {took_on:?}, off {took_off:?}, status {took_status:?}"
        ));
        // Past the node timeout: the cluster marks it failed meanwhile.
        let left = Duration::from_secs(4).saturating_sub(froze.elapsed());
        std::thread::sleep(left);
    }
    let (master, replica) = {
        // The replica resyncs before it can take over.
        let (m, r) = cluster.master_and_synced_replica(&ItemKeys::live("day", &hot).stock);
        assert_eq!(m, master);
        (m, r)
    };

    // Incident 2: the hot item's master hangs until its replica is promoted.
    let frozen = cluster.freeze(master);
    let froze = Instant::now();
    for action in ["on", "off"] {
        let (ran, took) = timed(
            as_role(
                &roles,
                "operator",
                calm_master,
                &["shutdown-switch", action, "--item", &calm],
            )
            .campaign(&file),
        );
        assert_eq!(ran.code(), 0, "{}", ran.describe());
        figures.push(format!(
            "master frozen: switch {action} --item {calm} {took:?}"
        ));
        if action == "on" {
            let door = http::buy(serve.addr, &calm, "during-master", "rm-1");
            assert_eq!(door.json()["outcome"], "closed", "{}", door.body);
        }
    }
    let promoted = loop {
        if is_master_in_cluster_nodes(calm_master, replica) {
            break Instant::now();
        }
        assert!(froze.elapsed() < within, "the replica was never promoted");
        std::thread::sleep(Duration::from_millis(20));
    };
    // The promoted replica is another Redis process: the hot item is fenced
    // (every buy answers `fenced`) until the operator proves the books —
    // what consume stored and the forced failover took from Redis is
    // re-applied — and the sale reopens (docs/failover.md, "The fence").
    let reopened = loop {
        let ran = as_role(&roles, "operator", calm_master, &["reconcile", "--fence"])
            .campaign(&file)
            .within(within)
            .runs();
        if ran.code() == 0 {
            break Instant::now();
        }
        assert!(
            promoted.elapsed() < within,
            "reconcile --fence never reopened the sale: {}",
            ran.describe()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    figures.push(format!(
        "master frozen: reconcile --fence reopened {:?} after the promotion",
        reopened.duration_since(promoted)
    ));
    let back = loop {
        if let Some(done) = shoppers.first_ok_sent_after(&hot, reopened) {
            break done;
        }
        assert!(
            promoted.elapsed() < within,
            "serve never sold again after the promotion: {}",
            serve.log.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let recovered = back.duration_since(reopened);
    figures.push(format!(
        "master frozen: promoted after {:?}; serve sold again {recovered:?} after the reopen",
        promoted.duration_since(froze)
    ));
    // A correctness bound, not a speed figure: serve goes to the new master.
    assert!(recovered < Duration::from_secs(10), "{recovered:?}");
    // The switch reaches the promoted master's item.
    as_role(
        &roles,
        "operator",
        calm_master,
        &["shutdown-switch", "on", "--reason", "drill 2"],
    )
    .campaign(&file)
    .within(within)
    .succeeds();
    let door = http::buy(serve.addr, &hot, "after-promotion", "rp-1");
    assert_eq!(door.json()["outcome"], "closed", "{}", door.body);
    as_role(&roles, "operator", calm_master, &["shutdown-switch", "off"])
        .campaign(&file)
        .within(within)
        .succeeds();
    drop(frozen);
    std::thread::sleep(Duration::from_millis(500));
    let attempts = shoppers.finish();

    // The rest of the day through the door: lookup, pay, the room.
    let acked: Vec<&Attempt> = attempts
        .iter()
        .filter(|a| a.status == 200 && a.outcome == "ok")
        .collect();
    assert!(acked.len() > 20, "too few sales to count: {}", acked.len());
    for attempt in acked.iter().rev().take(3) {
        let found = http::get(
            serve.addr,
            &format!(
                "/v1/items/{}/orders/{}?request_id=r-{}",
                attempt.item, attempt.user, attempt.user
            ),
        );
        assert_eq!(found.status, 200, "{}", found.body);
        assert!(
            found.body.contains(attempt.order_id.as_deref().unwrap()),
            "{}",
            found.body
        );
    }
    let paid_order = acked.last().unwrap().order_id.clone().unwrap();
    let paid = http::send(
        serve.addr,
        "POST",
        &format!("/v1/orders/{paid_order}/pay"),
        &[("Authorization", "Bearer rehearsal-token-0123456789abcdef")],
        b"",
    )
    .unwrap();
    assert_eq!(paid.status, 200, "{}", paid.body);
    let joined = http::post(
        serve.addr,
        &format!("/v1/items/{room}/queue"),
        &serde_json::json!({"user": "q1"}),
    );
    assert!(joined.status < 300, "{} {}", joined.status, joined.body);
    as_role(&roles, "operator", calm_master, &["queue", "admit"])
        .campaign(&file)
        .within(within)
        .succeeds();
    let room_buy = http::buy(serve.addr, &room, "q1", "q1-1");
    assert_eq!(room_buy.status, 200, "{}", room_buy.body);
    as_role(&roles, "operator", calm_master, &["expire"])
        .campaign(&file)
        .within(within)
        .succeeds();
    serve.stop("-TERM");

    // The night: every order stored, the books balanced.
    terminate(&consume);
    assert!(wait_exit(&mut consume).success());
    as_role(&roles, "consumer", calm_master, &["consume", "--drain"])
        .campaign(&file)
        .within(within)
        .succeeds();
    // Balanced, or drifting only by orders the forced failover took from
    // Redis after consume stored them: never one the door acknowledged ok.
    let acked_ids: Vec<&str> = attempts
        .iter()
        .filter(|a| a.status == 200 && a.outcome == "ok")
        .filter_map(|a| a.order_id.as_deref())
        .collect();
    let reconciled = as_role(&roles, "operator", calm_master, &["reconcile"])
        .campaign(&file)
        .json()
        .within(within)
        .runs();
    assert!(
        [0, 3].contains(&reconciled.code()),
        "{}",
        reconciled.describe()
    );
    let mut lost_unacknowledged = 0;
    for item in reconciled.json()["items"].as_array().unwrap() {
        if item["balanced"] == true {
            continue;
        }
        let lost = &item["not_in_redis"];
        let ids: Vec<&str> = lost["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|id| id.as_str().unwrap())
            .collect();
        assert!(
            !ids.is_empty(),
            "a drift other than a failover's loss: {item}"
        );
        assert_eq!(lost["count"].as_u64().unwrap(), ids.len() as u64, "{item}");
        for id in &ids {
            assert!(
                !acked_ids.contains(id),
                "acknowledged ok, then lost: {id}: {item}"
            );
        }
        lost_unacknowledged += ids.len();
    }
    let status = as_role(&roles, "operator", calm_master, &["status"])
        .campaign(&file)
        .json()
        .within(within)
        .succeeds()
        .json();
    let mut acked_by_item: HashMap<&str, u64> = HashMap::new();
    let mut unknown_by_item: HashMap<&str, u64> = HashMap::new();
    for attempt in &attempts {
        if attempt.status == 200 && attempt.outcome == "ok" {
            *acked_by_item.entry(&attempt.item).or_default() += 1;
        } else if attempt.status == 504 || attempt.status == 0 || attempt.outcome == "unreplicated"
        {
            *unknown_by_item.entry(&attempt.item).or_default() += 1;
        }
    }
    for item in status["items"].as_array().unwrap() {
        let id = item["item"].as_str().unwrap();
        let (initial, left, sold) = (
            item["initial_stock"].as_u64().unwrap(),
            item["stock_left"].as_u64().unwrap(),
            item["sold"].as_u64().unwrap(),
        );
        assert_eq!(sold + left, initial, "{item}");
        if id == room {
            assert_eq!(sold, 1, "{item}");
            continue;
        }
        let acked = acked_by_item.get(id).copied().unwrap_or(0);
        let unknown = unknown_by_item.get(id).copied().unwrap_or(0);
        assert!(
            acked <= sold && sold <= acked + unknown,
            "item {id}: {sold} sold, {acked} acknowledged, {unknown} unknown"
        );
    }
    let stored = sqlite_order_ids(&sqlite_path(&file));
    let missing: Vec<&String> = acked
        .iter()
        .filter_map(|a| a.order_id.as_ref())
        .filter(|id| !stored.contains(id))
        .collect();
    assert!(
        missing.is_empty(),
        "acknowledged but not stored: {missing:?}"
    );
    let denials = cluster.take_acl_denials();
    assert!(denials.is_empty(), "{}", denials.join("\n"));
    let refused = attempts.iter().filter(|a| a.status != 200).count();
    eprintln!(
        "sale day: {} attempts, {} acknowledged, {refused} refused, {lost_unacknowledged} \
         unacknowledged order(s) lost in the failover; {}; {:?} in all",
        attempts.len(),
        acked.len(),
        figures.join("; "),
        started.elapsed()
    );
}

/// A bucketed buy's sweep sends two commands outside its scripts (the ack
/// of a settled transfer, the bucket's sell-out proof): a buyer line
/// without them passes every script and still fails the sweep halfway, so
/// the proof must ask about them (they were missing from the role table).
#[test]
fn buy_dry_run_of_a_bucketed_item_asks_about_the_sweeps_own_commands() {
    let server = RedisServer::start();
    let file = campaign("sweep").item("1", 10).buckets(2).write();
    let password_file = file.dir.path().join("buyer.pw");
    std::fs::write(&password_file, "buyer-secret\n").unwrap();
    let password_path = password_file.to_str().unwrap();
    let buyer = format!(
        "redis://seckill-buyer:buyer-secret@127.0.0.1:{}/0",
        server.port
    );
    let dry_run = || {
        seckill(&["buy", "--item", "1", "--user", "alice", "--dry-run"])
            .campaign(&file)
            .redis_url(&buyer)
            .json()
            .runs()
    };
    let mut admin = server.conn();
    let line = buyer_line(&file, password_path);
    let () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg(&line)
        .query(&mut admin)
        .unwrap();
    let proven = dry_run();
    assert_eq!(proven.code(), 0, "{}", proven.describe());
    // The transfer log's selector without ZREM: the sweep could take
    // units, credit them home, and never ack the transfer.
    let without_zrem: Vec<String> = line
        .iter()
        .map(|word| match word.contains(":xfer_pending") {
            true => word.replace(" +zrem", ""),
            false => word.clone(),
        })
        .collect();
    assert_ne!(
        without_zrem, line,
        "the buyer's line has a transfer selector"
    );
    let () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg(&without_zrem)
        .query(&mut admin)
        .unwrap();
    let refused = dry_run();
    assert_eq!(refused.code(), ACL_CHECK_FAILED, "{}", refused.describe());
    assert!(
        refused.json()["credentials"][0]["refused"]
            .to_string()
            .contains("ZREM"),
        "{}",
        refused.describe()
    );
}
