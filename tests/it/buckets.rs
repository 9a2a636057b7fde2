//! Bucketed items (`docs/buckets.md`) on a real three-master Redis Cluster the
//! tests start: the buckets land on every master, stock sells out completely
//! even when every buyer's home is the same 2 of 8 buckets, nobody buys past
//! the limit, the kill switch holds in every bucket, and buyers SIGKILLed at
//! random points lose and double nothing.

use crate::support;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use redis::{Commands, Value};
use seckill::domain::buckets::buy::buy;
use seckill::domain::buckets::scripts;
use seckill::domain::slot::{BuyRequest, Outcome};
use seckill::model::exit_codes;
use seckill::model::layout::{Layout, home_bucket, key_slot};
use seckill::redis_client::conn::{Conn, ConnectionArgs, RedisTarget};
use support::cluster::RedisCluster;
use support::{CampaignFile, KillOnDrop, campaign_file, json, seckill};

fn connect(cluster: &RedisCluster) -> Conn {
    let args = ConnectionArgs {
        redis_url: Some(cluster.urls()),
        cluster: true,
        ..ConnectionArgs::default()
    };
    RedisTarget::resolve(&args, None)
        .unwrap()
        .connect()
        .unwrap()
}

fn cli(file: &CampaignFile, cluster: &RedisCluster) -> assert_cmd::Command {
    let mut cmd = seckill(&file.path, &cluster.urls());
    cmd.arg("--cluster");
    cmd
}

/// Master port owning each slot, from `CLUSTER SHARDS` on the first node, once
/// its view has settled (right after `cluster create` gossip may lag behind
/// `cluster_state:ok`): every slot owned by one of the cluster's nodes.
fn slot_owners(cluster: &RedisCluster) -> HashMap<u16, u16> {
    for _ in 0..100 {
        let owners = shards_view(cluster.ports[0]);
        if owners.len() == 16384 && owners.values().all(|p| cluster.ports.contains(p)) {
            return owners;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("CLUSTER SHARDS never showed every slot owned by a node of the cluster");
}

fn shards_view(port: u16) -> HashMap<u16, u16> {
    let mut conn = redis::Client::open(format!("redis://127.0.0.1:{port}"))
        .unwrap()
        .get_connection()
        .unwrap();
    let shards: Vec<Value> = redis::cmd("CLUSTER")
        .arg("SHARDS")
        .query(&mut conn)
        .unwrap();
    let field = |map: &Value, name: &str| -> Value {
        let Value::Array(pairs) = map else {
            panic!("shard is not a flat map: {map:?}")
        };
        pairs
            .chunks(2)
            .find(|kv| redis::from_redis_value_ref::<String>(&kv[0]).unwrap() == name)
            .map(|kv| kv[1].clone())
            .unwrap_or_else(|| panic!("no {name} in {map:?}"))
    };
    let mut owners = HashMap::new();
    for shard in &shards {
        let slots: Vec<u16> = redis::from_redis_value(field(shard, "slots")).unwrap();
        let Value::Array(nodes) = field(shard, "nodes") else {
            panic!("nodes")
        };
        let master = nodes
            .iter()
            .find(|n| redis::from_redis_value::<String>(field(n, "role")).unwrap() == "master")
            .unwrap();
        let master_port: u16 = redis::from_redis_value(field(master, "port")).unwrap();
        for range in slots.chunks(2) {
            for slot in range[0]..=range[1] {
                owners.insert(slot, master_port);
            }
        }
    }
    owners
}

/// `count` distinct user ids whose home is one of `homes` (of `buckets`).
fn users_homed_in(homes: &[u32], buckets: u32, count: usize) -> Vec<String> {
    (0..)
        .map(|i| format!("user-{i}"))
        .filter(|u| homes.contains(&home_bucket(u, buckets)))
        .take(count)
        .collect()
}

/// Units left in each bucket, read through the cluster.
fn stock_left<C: redis::ConnectionLike>(conn: &mut C, layout: &Layout) -> Vec<i64> {
    layout
        .all()
        .iter()
        .map(|b| scripts::snapshot(conn, b).unwrap().stock.unwrap())
        .collect()
}

#[test]
fn eight_buckets_land_on_every_master_and_the_binary_runs_a_bucketed_sale() {
    let cluster = RedisCluster::start();
    let file = campaign_file(
        "campaign: bk\nper_user_limit: 2\nrate_limit: { window: 1h, max_requests: 3 }\nitems:\n  \
         - { id: hot, name: hot, price: \"1.00\", stock: 20, buckets: 8 }\n  \
         - { id: plain, name: plain, price: \"1.00\", stock: 5 }\n",
    );
    let layout = Layout::new("seckill", "bk", "hot", 8);

    // Tags: our CRC16 is Redis's, and the 8 buckets cover all 3 masters.
    let owners = slot_owners(&cluster);
    let mut conn = connect(&cluster);
    let mut masters = HashSet::new();
    for bucket in layout.all() {
        let slot: u16 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(&bucket.keys.stock)
            .query(&mut conn)
            .unwrap();
        assert_eq!(slot, key_slot(&bucket.keys.stock));
        masters.insert(owners[&slot]);
    }
    assert_eq!(masters.len(), 3, "8 buckets on {masters:?}");

    // preheat splits 20 into 3,3,3,3,2,2,2,2 and reports each bucket; again changes nothing.
    let out = cli(&file, &cluster)
        .args(["preheat", "--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = json(&out);
    let hot = &report["items"][0];
    assert_eq!(hot["status"], "loaded");
    assert_eq!(hot["redis_stock_after"], 20);
    let shares: Vec<i64> = hot["per_bucket"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["redis_stock_after"].as_i64().unwrap())
        .collect();
    assert_eq!(shares, [3, 3, 3, 3, 2, 2, 2, 2]);
    assert!(report["items"][1].get("per_bucket").is_none());
    let again = json(
        &cli(&file, &cluster)
            .args(["preheat", "--format", "json"])
            .output()
            .unwrap(),
    );
    assert_eq!(again["items"][0]["status"], "kept");
    // Every bucket's stock lives on the master that owns its slot.
    for bucket in layout.all() {
        let owner = owners[&key_slot(&bucket.keys.stock)];
        let mut node = redis::Client::open(format!("redis://127.0.0.1:{owner}"))
            .unwrap()
            .get_connection()
            .unwrap();
        let exists: bool = node.exists(&bucket.keys.stock).unwrap();
        assert!(exists, "bucket {} not on its master", bucket.bucket);
    }

    // The binary: a user homed in bucket 0, whose home we drain first, still
    // buys (a transfer); the limit and a retried request id hold across buckets.
    let alice = users_homed_in(&[0], 8, 1).remove(0);
    let drain = users_homed_in(&[0], 8, 3);
    for user in drain.iter().skip(1) {
        cli(&file, &cluster)
            .args(["buy", "--item", "hot", "--user", user])
            .assert()
            .code(0);
    }
    let buy = |user: &str, qty: &str, request: &str| {
        json(
            &cli(&file, &cluster)
                .args(["buy", "--item", "hot", "--user", user, "--qty", qty])
                .args(["--request-id", request, "--format", "json"])
                .output()
                .unwrap(),
        )
    };
    let first = buy(&alice, "2", "r1");
    assert_eq!(first["outcome"], "ok", "{first}");
    assert_eq!(buy(&alice, "2", "r1")["order_id"], first["order_id"]);
    assert_eq!(buy(&alice, "1", "r2")["outcome"], "duplicate");
    assert_eq!(buy(&alice, "1", "r3")["outcome"], "duplicate");
    assert_eq!(buy(&alice, "1", "r4")["outcome"], "rate_limited");
    let transfers: u64 = layout
        .all()
        .iter()
        .map(|b| scripts::snapshot(&mut conn, b).unwrap().in_count)
        .sum();
    assert!(
        transfers >= 1,
        "alice's home was empty: a transfer must have happened"
    );

    // A changed bucket count is refused, naming both counts.
    let changed = campaign_file(
        &std::fs::read_to_string(&file.path)
            .unwrap()
            .replace("buckets: 8", "buckets: 4"),
    );
    cli(&changed, &cluster)
        .arg("preheat")
        .assert()
        .code(exit_codes::PREHEAT_REFUSED)
        .stdout(predicates::str::contains("in 8 bucket(s), the file says 4"));

    // The kill switch closes every bucket; status shows them.
    cli(&file, &cluster)
        .args(["shutdown-switch", "on", "--reason", "test"])
        .assert()
        .success();
    let status = json(
        &cli(&file, &cluster)
            .args(["shutdown-switch", "status", "--buckets", "--format", "json"])
            .output()
            .unwrap(),
    );
    let hot = &status["items"][0];
    assert_eq!(hot["closed"], true);
    assert_eq!(hot["stock_left"], 16);
    assert_eq!(hot["per_bucket"].as_array().unwrap().len(), 8);
    assert!(
        hot["per_bucket"]
            .as_array()
            .unwrap()
            .iter()
            .all(|b| b["closed"] == true)
    );
    // One bucket reopened behind the command's back: status says so.
    let () = conn
        .hset(&layout.bucket(3).keys.meta, "closed", "0")
        .unwrap();
    let status = json(
        &cli(&file, &cluster)
            .args(["shutdown-switch", "status", "--format", "json"])
            .output()
            .unwrap(),
    );
    assert_eq!(status["items"][0]["closed"], false);
    assert_eq!(status["items"][0]["buckets_closed"], 7);
    cli(&file, &cluster)
        .args(["shutdown-switch", "on"])
        .assert()
        .success();
    for user in users_homed_in(&[3, 5], 8, 2) {
        cli(&file, &cluster)
            .args(["buy", "--item", "hot", "--user", &user])
            .assert()
            .code(exit_codes::CLOSED);
    }

    // reconcile balances (orders still in flight), names the transfers.
    let db = file.dir.path().join("orders.db");
    let db_url = format!("sqlite://{}", db.display());
    // An empty order database, as `consume` would have created (reconcile never creates one).
    seckill::domain::orders::StoreLocation::Sqlite(db.clone())
        .open()
        .unwrap();
    let out = cli(&file, &cluster)
        .args(["reconcile", "--format", "json", "--orders-db", &db_url])
        .output()
        .unwrap();
    let report = json(&out);
    assert_eq!(out.status.code(), Some(0), "{report}");
    let hot = &report["items"][0];
    assert_eq!(hot["in_flight"]["units"], 4);
    assert_eq!(hot["remaining"], 16);
    assert_eq!(hot["transfers"]["in_transit_units"], 0);
    assert_eq!(hot["transfers"]["per_bucket"].as_array().unwrap().len(), 8);

    // A consumer that died holding every bucket's orders: pending-claim takes
    // them over from each bucket's stream; reconcile finds them stored.
    for bucket in layout.all() {
        seckill::domain::orders::stream::read_group(
            &mut conn,
            "dead-consumer",
            &[(bucket.keys.orders.as_str(), ">")],
            100,
            None,
        )
        .unwrap();
    }
    let claimed = json(
        &cli(&file, &cluster)
            .args(["pending-claim", "--min-idle", "0s", "--format", "json"])
            .args(["--orders-db", &db_url])
            .output()
            .unwrap(),
    );
    assert_eq!(claimed["items"][0]["claimed"], 3, "{claimed}");
    assert_eq!(claimed["items"][0]["stored"], 3, "{claimed}");
    let report = json(
        &cli(&file, &cluster)
            .args(["reconcile", "--format", "json", "--orders-db", &db_url])
            .output()
            .unwrap(),
    );
    assert_eq!(report["items"][0]["stored"]["units"], 4, "{report}");
    assert_eq!(report["items"][0]["balanced"], true, "{report}");

    // init resets every bucket.
    cli(&file, &cluster)
        .args(["init", "--yes"])
        .assert()
        .success();
    assert_eq!(stock_left(&mut conn, &layout), [3, 3, 3, 3, 2, 2, 2, 2]);

    // A debit whose taker died is in transit, named by id; a credit counts
    // once however often it is sent; `--repair` settles and acks both.
    let (b0, b3, b5) = (layout.bucket(0), layout.bucket(3), layout.bucket(5));
    let lost = scripts::take(&mut conn, &b3, 1, "T-LOST", 0, 60_000).unwrap();
    assert_eq!(lost.taken, 2, "half of 3, rounded up");
    let half = scripts::take(&mut conn, &b5, 1, "T-HALF", 0, 60_000).unwrap();
    let credited = scripts::Transfer {
        id: "T-HALF".into(),
        source: 5,
        dest: 0,
        units: half.taken,
    };
    assert_eq!(
        scripts::credit(&mut conn, &b0, &credited).unwrap(),
        scripts::Credited::Now
    );
    assert_eq!(
        scripts::credit(&mut conn, &b0, &credited).unwrap(),
        scripts::Credited::Already
    );
    assert_eq!(
        stock_left(&mut conn, &layout),
        [3 + half.taken, 3, 3, 1, 2, 2 - half.taken, 2, 2]
    );
    // init leaves the order database alone: check against a fresh one.
    let fresh_db = format!(
        "sqlite://{}",
        file.dir.path().join("after-init.db").display()
    );
    seckill::domain::orders::StoreLocation::Sqlite(file.dir.path().join("after-init.db"))
        .open()
        .unwrap();
    let reconcile = |repair: bool| {
        let mut cmd = cli(&file, &cluster);
        cmd.args([
            "reconcile",
            "--format",
            "json",
            "--item",
            "hot",
            "--orders-db",
            &fresh_db,
        ]);
        if repair {
            cmd.arg("--repair");
        }
        let out = cmd.output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        json(&out)["items"][0]["transfers"].clone()
    };
    let before = reconcile(false);
    assert_eq!(before["in_transit_units"], 2);
    assert_eq!(
        before["in_transit"]["ids"][0],
        "T-LOST (2 unit(s), bucket 3 → 0)"
    );
    assert_eq!(reconcile(true)["settled"], 2);
    let after = reconcile(false);
    assert_eq!(after["in_transit_units"], 0);
    assert_eq!(stock_left(&mut conn, &layout).iter().sum::<i64>(), 20);
    assert!(
        layout
            .all()
            .iter()
            .all(|b| scripts::snapshot(&mut conn, b).unwrap().pending == 0)
    );
}

/// 32 threads, each with its own cluster connection, run the users' attempts
/// through the library's bucket buy; returns (ok attempts, units bought per user).
fn run_sale(
    cluster: &RedisCluster,
    layout: &Layout,
    users: &[String],
    attempts: &[u32],
) -> (usize, HashMap<String, i64>) {
    let next = AtomicUsize::new(0);
    let results: Vec<Vec<(String, u32, Outcome)>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..32)
            .map(|_| {
                scope.spawn(|| {
                    let mut conn = connect(cluster);
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(user) = users.get(i) else {
                            return mine;
                        };
                        for (n, qty) in attempts.iter().enumerate() {
                            let request_id = format!("{user}-{n}");
                            let request = BuyRequest {
                                campaign: &layout.campaign,
                                item: &layout.item,
                                user,
                                qty: *qty,
                                request_id: Some(&request_id),
                            };
                            let (reply, _) = buy(&mut conn, layout, &request).unwrap();
                            mine.push((user.clone(), *qty, reply.outcome));
                        }
                    }
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let mut bought: HashMap<String, i64> = HashMap::new();
    let mut ok = 0;
    for (user, qty, outcome) in results.into_iter().flatten() {
        assert!(
            matches!(outcome, Outcome::Ok | Outcome::SoldOut | Outcome::Duplicate),
            "{user}: {outcome:?}"
        );
        if outcome == Outcome::Ok {
            ok += 1;
            *bought.entry(user).or_default() += i64::from(qty);
        }
    }
    (ok, bought)
}

/// After a sale with demand above stock: 0 left everywhere, Redis's buyers
/// agree with what the buyers were told, the streams hold every unit, and
/// reconcile (the binary) balances.
fn assert_sold_out_exactly(
    cluster: &RedisCluster,
    file: &CampaignFile,
    layout: &Layout,
    (ok, bought): (usize, &HashMap<String, i64>),
    limit: i64,
) {
    let mut conn = connect(cluster);
    assert_eq!(
        stock_left(&mut conn, layout),
        vec![0; layout.buckets as usize]
    );
    // Proven sold out, the item says so from any home bucket in one round trip.
    let request = BuyRequest {
        campaign: &layout.campaign,
        item: &layout.item,
        user: "latecomer",
        qty: 1,
        request_id: None,
    };
    let (reply, cost) = buy(&mut conn, layout, &request).unwrap();
    assert_eq!((reply.outcome, cost.round_trips), (Outcome::SoldOut, 1));
    assert_eq!(bought.values().sum::<i64>(), 1000);
    assert!(bought.values().all(|units| *units <= limit));
    let mut streamed = 0;
    for bucket in layout.all() {
        let buyers: HashMap<String, i64> = conn.hgetall(&bucket.keys.buyers).unwrap();
        for (user, units) in &buyers {
            assert_eq!(
                home_bucket(user, layout.buckets),
                bucket.bucket,
                "{user} outside home"
            );
            assert_eq!(bought.get(user), Some(units), "{user}");
        }
        streamed += scripts::snapshot(&mut conn, &bucket).unwrap().stream_len;
    }
    assert_eq!(streamed as usize, ok, "one stream entry per ok");
    // consume reads every bucket's stream.
    let db = format!("sqlite://{}", file.dir.path().join("o.db").display());
    cli(file, cluster)
        .args(["consume", "--drain", "--orders-db", &db])
        .assert()
        .success();
    let out = cli(file, cluster)
        .args([
            "reconcile",
            "--format",
            "json",
            "--orders-db",
            &db,
            "--item",
            &layout.item,
        ])
        .output()
        .unwrap();
    let report = json(&out);
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert_eq!(report["items"][0]["stored"]["units"], 1000);
    assert_eq!(report["items"][0]["database"]["rows"], ok);
    assert_eq!(report["items"][0]["stream_entries"], streamed);
}

#[test]
fn stock_sells_out_completely_and_exactly_with_skewed_and_uniform_buyers() {
    let cluster = RedisCluster::start();
    let file = campaign_file(
        "campaign: sale\nitems:\n  \
         - { id: skewed, name: s, price: \"1.00\", stock: 1000, buckets: 8 }\n  \
         - { id: uniform, name: u, price: \"1.00\", stock: 1000, buckets: 8 }\n",
    );
    let limit3 = campaign_file(
        "campaign: sale3\nper_user_limit: 3\nitems:\n  \
         - { id: qty2, name: q, price: \"1.00\", stock: 1000, buckets: 8 }\n",
    );
    cli(&file, &cluster).arg("preheat").assert().success();
    cli(&limit3, &cluster).arg("preheat").assert().success();

    // Every buyer's home is bucket 0 or 1 of 8: 750 units must travel.
    let skewed = Layout::new("seckill", "sale", "skewed", 8);
    let users = users_homed_in(&[0, 1], 8, 3000);
    let (ok, bought) = run_sale(&cluster, &skewed, &users, &[1]);
    assert_eq!(ok, 1000);
    assert_sold_out_exactly(&cluster, &file, &skewed, (ok, &bought), 1);

    let uniform = Layout::new("seckill", "sale", "uniform", 8);
    let users: Vec<String> = (0..3000).map(|i| format!("fan-{i}")).collect();
    let (ok, bought) = run_sale(&cluster, &uniform, &users, &[1]);
    assert_eq!(ok, 1000);
    assert_sold_out_exactly(&cluster, &file, &uniform, (ok, &bought), 1);

    // per_user_limit 3: qty 2, qty 2 again (over the limit), then qty 1.
    let qty2 = Layout::new("seckill", "sale3", "qty2", 8);
    let users = users_homed_in(&[2, 7], 8, 3000);
    let (ok, bought) = run_sale(&cluster, &qty2, &users, &[2, 2, 1]);
    assert_sold_out_exactly(&cluster, &limit3, &qty2, (ok, &bought), 3);
}

#[test]
fn after_the_kill_switch_returns_no_bucket_says_ok() {
    let cluster = RedisCluster::start();
    let file = campaign_file(
        "campaign: ks\nitems:\n  - { id: hot, name: h, price: \"1.00\", stock: 100000, buckets: 8 }\n",
    );
    cli(&file, &cluster).arg("preheat").assert().success();
    let layout = Layout::new("seckill", "ks", "hot", 8);
    let stop = AtomicBool::new(false);
    let switched_at: std::sync::Mutex<Option<Instant>> = std::sync::Mutex::new(None);
    let counter = AtomicUsize::new(0);
    let late_ok = std::thread::scope(|scope| {
        let buyers: Vec<_> = (0..16)
            .map(|_| {
                scope.spawn(|| {
                    let mut conn = connect(&cluster);
                    let mut late = Vec::new();
                    while !stop.load(Ordering::Relaxed) {
                        let user = format!("u{}", counter.fetch_add(1, Ordering::Relaxed));
                        let started = Instant::now();
                        let request = BuyRequest {
                            campaign: "ks",
                            item: "hot",
                            user: &user,
                            qty: 1,
                            request_id: None,
                        };
                        let (reply, _) = buy(&mut conn, &layout, &request).unwrap();
                        let switched = *switched_at.lock().unwrap();
                        if reply.outcome == Outcome::Ok && switched.is_some_and(|at| started > at) {
                            late.push(user);
                        }
                    }
                    late
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(500));
        cli(&file, &cluster)
            .args(["shutdown-switch", "on"])
            .assert()
            .success();
        *switched_at.lock().unwrap() = Some(Instant::now());
        std::thread::sleep(Duration::from_millis(500));
        stop.store(true, Ordering::Relaxed);
        buyers
            .into_iter()
            .flat_map(|b| b.join().unwrap())
            .collect::<Vec<_>>()
    });
    assert!(
        late_ok.is_empty(),
        "ok after the switch returned: {late_ok:?}"
    );
    let mut conn = connect(&cluster);
    let left: i64 = stock_left(&mut conn, &layout).iter().sum();
    assert!(left < 100_000, "the buyers sold nothing before the switch");

    // A master dies: `on` cannot close the buckets it held, and says which.
    let owners = slot_owners(&cluster);
    let dead = owners[&key_slot(&layout.bucket(7).keys.stock)];
    let mut cluster = cluster;
    cluster.kill_node(dead);
    let out = cli(&file, &cluster)
        .args(["--connect-timeout", "300ms", "--response-timeout", "1s"])
        .args(["shutdown-switch", "on"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(exit_codes::RUNTIME_ERROR),
        "{stderr}"
    );
    assert!(stderr.contains("kill switch NOT set in bucket"), "{stderr}");
}

#[test]
fn buyers_sigkilled_mid_transfer_lose_and_double_nothing() {
    let cluster = RedisCluster::start();
    // One item per buyer process: 80 units in 8 buckets of 10, and each buyer
    // wants all 80, so after its first round trip it gathers 70 units from the
    // 7 other buckets by 7 transfers: most of its life after startup is transfers.
    const ITEMS: usize = 100;
    let items: String = (0..ITEMS)
        .map(|i| format!("  - {{ id: k{i}, name: k, price: \"1.00\", stock: 80, buckets: 8 }}\n"))
        .collect();
    let file = campaign_file(&format!(
        "campaign: crash\nper_user_limit: 80\nitems:\n{items}"
    ));
    cli(&file, &cluster).arg("preheat").assert().success();
    let mut conn = connect(&cluster);
    let binary = assert_cmd::cargo::cargo_bin("seckill");
    let spawn = |item: usize| {
        std::process::Command::new(&binary)
            .arg("-c")
            .arg(&file.path)
            .args([
                "--cluster",
                "--redis",
                &cluster.urls(),
                "buy",
                "--qty",
                "80",
            ])
            .args([
                "--item",
                &format!("k{item}"),
                "--user",
                &format!("buyer-{item}"),
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    // (pending transfers, transfers made) of one item.
    let progress_in = |conn: &mut Conn, item: usize| -> (u64, u64) {
        Layout::new("seckill", "crash", &format!("k{item}"), 8)
            .all()
            .iter()
            .map(|b| scripts::snapshot(conn, b).unwrap())
            .fold((0, 0), |(p, m), s| (p + s.pending, m + s.out_count))
    };
    // How long one gathering buy takes, to aim the kills inside it.
    let started = Instant::now();
    for item in 0..3 {
        assert!(spawn(item).wait().unwrap().success());
    }
    let typical = started.elapsed() / 3;
    // SIGKILL at a random point of the buy, 20 times and until at least one
    // kill left a transfer pending (debited, credit unconfirmed). The machine
    // is shared: when buyers finish before the kill, aim earlier; when a kill
    // comes before the first transfer, aim later.
    let (mut killed, mut kills_leaving_pending, mut item) = (0, 0, 3);
    let mut aim = typical;
    while killed < 20 || kills_leaving_pending == 0 {
        assert!(
            item < ITEMS,
            "{ITEMS} buyers, {killed} killed, none mid-transfer"
        );
        let mut child = KillOnDrop(spawn(item));
        std::thread::sleep(aim.mul_f64(rand::random_range(0.3..1.0)));
        if child.0.try_wait().unwrap().is_none() {
            child.0.kill().unwrap();
            child.0.wait().unwrap();
            killed += 1;
            let (pending, moved) = progress_in(&mut conn, item);
            kills_leaving_pending += usize::from(pending > 0);
            if moved == 0 {
                aim = aim.mul_f64(1.2);
            }
        } else {
            aim = aim.mul_f64(0.8);
        }
        item += 1;
    }
    eprintln!("{killed} buyers killed, {kills_leaving_pending} mid-transfer");

    let db = format!("sqlite://{}", file.dir.path().join("o.db").display());
    // An empty order database, as `consume` would have created (reconcile never creates one).
    seckill::domain::orders::StoreLocation::Sqlite(file.dir.path().join("o.db"))
        .open()
        .unwrap();
    let reconcile = |repair: bool| {
        let mut cmd = cli(&file, &cluster);
        cmd.args(["reconcile", "--format", "json", "--orders-db", &db]);
        if repair {
            cmd.arg("--repair");
        }
        let out = cmd.output().unwrap();
        (out.status.code(), json(&out))
    };
    // Before repair: every item balances with its units in transit counted,
    // and what reconcile calls in transit is exactly what is missing from
    // stock + orders.
    let (code, before) = reconcile(false);
    assert_eq!(code, Some(0), "{before}");
    let mut transit_total = 0;
    for report in before["items"].as_array().unwrap() {
        let transit = report["transfers"]["in_transit_units"].as_i64().unwrap();
        let sold = report["in_flight"]["units"].as_i64().unwrap();
        let left = report["remaining"].as_i64().unwrap();
        assert_eq!(sold + left + transit, 80, "{report}");
        transit_total += transit;
    }
    let (code, repaired) = reconcile(true);
    assert_eq!(code, Some(0), "{repaired}");
    let (code, after) = reconcile(false);
    assert_eq!(code, Some(0), "{after}");
    for (i, report) in after["items"].as_array().unwrap().iter().enumerate() {
        assert_eq!(report["transfers"]["in_transit_units"], 0, "{report}");
        let sold = report["in_flight"]["units"].as_i64().unwrap();
        let left = report["remaining"].as_i64().unwrap();
        assert_eq!(sold + left, 80, "{report}");
        assert_eq!(progress_in(&mut conn, i).0, 0);
    }
    eprintln!("{transit_total} unit(s) were in transit before --repair");
}

#[test]
fn the_rebalancer_refills_draining_buckets_and_survives_sigkill() {
    let cluster = RedisCluster::start();
    let file = campaign_file(
        "campaign: reb\nitems:\n  - { id: hot, name: h, price: \"1.00\", stock: 8000, buckets: 8 }\n",
    );
    cli(&file, &cluster).arg("preheat").assert().success();
    let layout = Layout::new("seckill", "reb", "hot", 8);
    let mut conn = connect(&cluster);

    // One pass: bucket 0, drained, is refilled from the others.
    let drainers = users_homed_in(&[0], 8, 900);
    let (ok, _) = run_sale(&cluster, &layout, &drainers, &[1]);
    assert_eq!(ok, 900);
    let pass = json(
        &cli(&file, &cluster)
            .args(["rebalance", "--format", "json"])
            .output()
            .unwrap(),
    );
    let pass = &pass["items"];
    assert_eq!(pass[0]["stock_before"][0], 100, "{pass}");
    assert!(pass[0]["stock_after"][0].as_i64().unwrap() > 100, "{pass}");
    assert_eq!(
        stock_left(&mut conn, &layout),
        serde_json::from_value::<Vec<i64>>(pass[0]["stock_after"].clone()).unwrap()
    );

    // Buyers keep draining bucket 0 while `rebalance --watch` processes are
    // SIGKILLed at random points, 20 times.
    let stop = AtomicBool::new(false);
    let buyers_homed_in_0 = users_homed_in(&[0], 8, 20_000);
    let next = AtomicUsize::new(900);
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                let mut conn = connect(&cluster);
                while !stop.load(Ordering::Relaxed) {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(user) = buyers_homed_in_0.get(i) else {
                        break;
                    };
                    let request = BuyRequest {
                        campaign: "reb",
                        item: "hot",
                        user,
                        qty: 1,
                        request_id: None,
                    };
                    buy(&mut conn, &layout, &request).unwrap();
                }
            });
        }
        let binary = assert_cmd::cargo::cargo_bin("seckill");
        for _ in 0..20 {
            let child = std::process::Command::new(&binary)
                .arg("-c")
                .arg(&file.path)
                .args([
                    "--cluster",
                    "--redis",
                    &cluster.urls(),
                    "rebalance",
                    "--watch",
                ])
                .args(["--interval", "0ms", "--low-water", "0.9"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            let mut child = KillOnDrop(child);
            std::thread::sleep(Duration::from_millis(rand::random_range(20..80)));
            child.0.kill().unwrap();
            child.0.wait().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
    });
    let moved: u64 = layout
        .all()
        .iter()
        .map(|b| scripts::snapshot(&mut conn, b).unwrap().out_count)
        .sum();
    assert!(moved > 1, "nothing moved between buckets");

    let db = format!("sqlite://{}", file.dir.path().join("o.db").display());
    // An empty order database, as `consume` would have created (reconcile never creates one).
    seckill::domain::orders::StoreLocation::Sqlite(file.dir.path().join("o.db"))
        .open()
        .unwrap();
    let reconcile = |repair: bool| {
        let mut cmd = cli(&file, &cluster);
        cmd.args(["reconcile", "--format", "json", "--orders-db", &db]);
        if repair {
            cmd.arg("--repair");
        }
        let out = cmd.output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        json(&out)["items"][0].clone()
    };
    let before = reconcile(false);
    let transit = before["transfers"]["in_transit_units"].as_i64().unwrap();
    let sold = before["in_flight"]["units"].as_i64().unwrap();
    let left = before["remaining"].as_i64().unwrap();
    assert_eq!(sold + left + transit, 8000, "{before}");
    reconcile(true);
    let after = reconcile(false);
    assert_eq!(after["transfers"]["in_transit_units"], 0, "{after}");
    let left: i64 = stock_left(&mut conn, &layout).iter().sum();
    assert_eq!(after["in_flight"]["units"].as_i64().unwrap() + left, 8000);
    eprintln!("{moved} transfers (buyers and rebalancers); {transit} unit(s) were in transit");
}

/// A connection that, the first time the sweep visits bucket 1 before bucket
/// 2, lets "another buyer" move bucket 2's stock into bucket 1 right after
/// the visit (a real transfer on a second connection): the interleaving that
/// a single sweep would miss.
struct MoveBehindTheSweep<'a> {
    conn: redis::Connection,
    other: redis::Connection,
    layout: &'a Layout,
    seen_bucket_2: bool,
    moved: bool,
}

impl redis::ConnectionLike for MoveBehindTheSweep<'_> {
    fn req_packed_command(&mut self, cmd: &[u8]) -> redis::RedisResult<Value> {
        let has = |key: &str| cmd.windows(key.len()).any(|w| w == key.as_bytes());
        let (b1, b2) = (self.layout.bucket(1), self.layout.bucket(2));
        self.seen_bucket_2 |= has(&b2.xfer_pending);
        let visits_1 = has(&b1.xfer_pending);
        let reply = self.conn.req_packed_command(cmd)?;
        if visits_1 && !self.seen_bucket_2 && !self.moved {
            self.moved = true;
            let id = "BEHIND-THE-SWEEP";
            let taken = scripts::take_with(&mut self.other, &b2, 1, id, 1, 60_000, true).unwrap();
            assert_eq!(taken.taken, 1);
            let transfer = scripts::Transfer {
                id: id.into(),
                source: 2,
                dest: 1,
                units: 1,
            };
            scripts::credit(&mut self.other, &b1, &transfer).unwrap();
            scripts::ack(&mut self.other, &b2, id).unwrap();
        }
        Ok(reply)
    }

    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        offset: usize,
        count: usize,
    ) -> redis::RedisResult<Vec<Value>> {
        self.conn.req_packed_commands(cmd, offset, count)
    }

    fn get_db(&self) -> i64 {
        self.conn.get_db()
    }

    fn check_connection(&mut self) -> bool {
        self.conn.check_connection()
    }

    fn is_open(&self) -> bool {
        self.conn.is_open()
    }
}

#[test]
fn sold_out_is_not_answered_while_stock_moved_behind_the_sweep() {
    let server = support::RedisServer::start();
    let items: String = (0..10)
        .map(|i| format!("  - {{ id: r{i}, name: r, price: \"1.00\", stock: 3, buckets: 3 }}\n"))
        .collect();
    let file = campaign_file(&format!("campaign: behind\nitems:\n{items}"));
    seckill(&file.path, &server.url())
        .arg("preheat")
        .assert()
        .success();
    let mut moved_behind = 0;
    for i in 0..10 {
        let layout = Layout::new("seckill", "behind", &format!("r{i}"), 3);
        let mut conn = server.conn();
        // Buckets 0 and 1 sold out by their own buyers; bucket 2 keeps 1 unit.
        for home in [0, 1] {
            let user = users_homed_in(&[home], 3, 1).remove(0);
            let request = BuyRequest {
                campaign: "behind",
                item: &layout.item,
                user: &user,
                qty: 1,
                request_id: None,
            };
            assert_eq!(
                buy(&mut conn, &layout, &request).unwrap().0.outcome,
                Outcome::Ok
            );
        }
        let mut sweeping = MoveBehindTheSweep {
            conn: server.conn(),
            other: server.conn(),
            layout: &layout,
            seen_bucket_2: false,
            moved: false,
        };
        // Another user whose home is bucket 0, now empty: a sweep is needed.
        let user = users_homed_in(&[0], 3, 2).remove(1);
        let request = BuyRequest {
            campaign: "behind",
            item: &layout.item,
            user: &user,
            qty: 1,
            request_id: None,
        };
        let (reply, _) = buy(&mut sweeping, &layout, &request).unwrap();
        moved_behind += usize::from(sweeping.moved);
        assert_eq!(
            reply.outcome,
            Outcome::Ok,
            "the unit moved behind the sweep was missed"
        );
        assert_eq!(stock_left(&mut conn, &layout), [0, 0, 0]);
    }
    // The sweep starts at a random bucket: about 2 in 3 runs meet the interleaving.
    assert!(
        moved_behind > 0,
        "the interleaving never happened in 10 runs"
    );
}
