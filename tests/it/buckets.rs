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
use seckill::domain::buckets::scripts;
use seckill::domain::item::SaleItem;
use seckill::domain::slot::{BuyRequest, Outcome};
use seckill::model::campaign::Campaign;
use seckill::model::exit_codes::{CLOSED, PREHEAT_REFUSED, RUNTIME_ERROR};
use seckill::model::layout::{Layout, home_bucket, key_slot};
use seckill::redis_client::conn::Conn;
use support::cluster::RedisCluster;
use support::spec::{Run, campaign, seckill};
use support::{CampaignFile, RedisServer};

/// `seckill ARGS` on this campaign, against the cluster.
fn cli(file: &CampaignFile, cluster: &RedisCluster, args: &[&str]) -> Run {
    seckill(args).campaign(file).cluster(cluster)
}

/// The campaign file as the library reads it.
fn load(file: &CampaignFile) -> Campaign {
    Campaign::load(&file.path).unwrap()
}

/// Item `id` of `campaign`, live.
fn item<'a>(campaign: &'a Campaign, id: &str) -> SaleItem<'a> {
    SaleItem::live(campaign, campaign.item(id).unwrap())
}

/// One attempt of `qty` units by `user` on `item`.
fn request<'a>(
    item: &'a SaleItem,
    user: &'a str,
    qty: u32,
    request_id: Option<&'a str>,
) -> BuyRequest<'a> {
    BuyRequest {
        campaign: &item.campaign.id,
        item: item.id(),
        user,
        qty,
        request_id,
        ticket: None,
        seats: None,
    }
}

/// An empty order database at `<campaign dir>/name`, as `consume` would
/// have created (reconcile never creates one); its URL.
fn empty_orders_db(file: &CampaignFile, name: &str) -> String {
    let path = file.dir.path().join(name);
    seckill::domain::orders::StoreLocation::Sqlite(path.clone())
        .open()
        .unwrap();
    format!("sqlite://{}", path.display())
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
    let bk = |buckets| {
        campaign("bk")
            .per_user_limit(2)
            .rate_limit("1h", 3)
            .item("hot", 20)
            .buckets(buckets)
            .item("plain", 5)
    };
    let file = bk(8).write();
    let sale = load(&file);
    let hot = item(&sale, "hot");
    let layout = hot.layout();

    // Tags: our CRC16 is Redis's, and the 8 buckets cover all 3 masters.
    let owners = cluster.slot_owners();
    let mut conn = cluster.conn();
    let mut masters = HashSet::new();
    for bucket in hot.slots() {
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
    let report = cli(&file, &cluster, &["preheat"]).json().succeeds().json();
    let reported = &report["items"][0];
    assert_eq!(reported["status"], "loaded");
    assert_eq!(reported["redis_stock_after"], 20);
    let shares: Vec<i64> = reported["per_bucket"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["redis_stock_after"].as_i64().unwrap())
        .collect();
    assert_eq!(shares, [3, 3, 3, 3, 2, 2, 2, 2]);
    assert!(report["items"][1].get("per_bucket").is_none());
    let again = cli(&file, &cluster, &["preheat"]).json().runs().json();
    assert_eq!(again["items"][0]["status"], "kept");
    // Every bucket's stock lives on the master that owns its slot.
    for bucket in hot.slots() {
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
        cli(&file, &cluster, &["buy", "--item", "hot", "--user", user]).succeeds();
    }
    let buy = |user: &str, qty: &str, request: &str| {
        cli(&file, &cluster, &["buy", "--item", "hot", "--user", user])
            .args(&["--qty", qty, "--request-id", request])
            .json()
            .runs()
            .json()
    };
    let first = buy(&alice, "2", "r1");
    assert_eq!(first["outcome"], "ok", "{first}");
    assert_eq!(buy(&alice, "2", "r1")["order_id"], first["order_id"]);
    assert_eq!(buy(&alice, "1", "r2")["outcome"], "duplicate");
    assert_eq!(buy(&alice, "1", "r3")["outcome"], "duplicate");
    assert_eq!(buy(&alice, "1", "r4")["outcome"], "rate_limited");
    let transfers: u64 = hot
        .slots()
        .iter()
        .map(|b| scripts::snapshot(&mut conn, b).unwrap().in_count)
        .sum();
    assert!(
        transfers >= 1,
        "alice's home was empty: a transfer must have happened"
    );

    // A changed bucket count is refused, naming both counts.
    let refused = cli(&bk(4).write(), &cluster, &["preheat"]).fails_with(PREHEAT_REFUSED);
    assert!(
        refused.stdout().contains("in 8 bucket(s), the file says 4"),
        "{}",
        refused.describe()
    );

    // The kill switch closes every bucket; status shows them.
    cli(
        &file,
        &cluster,
        &["shutdown-switch", "on", "--reason", "test"],
    )
    .succeeds();
    let status = cli(&file, &cluster, &["shutdown-switch", "status", "--buckets"])
        .json()
        .runs()
        .json();
    let shown = &status["items"][0];
    assert_eq!(shown["closed"], true);
    assert_eq!(shown["stock_left"], 16);
    assert_eq!(shown["per_bucket"].as_array().unwrap().len(), 8);
    assert!(
        shown["per_bucket"]
            .as_array()
            .unwrap()
            .iter()
            .all(|b| b["closed"] == true)
    );
    // One bucket reopened behind the command's back: status says so.
    let () = conn
        .hset(&layout.bucket(3).keys.meta, "closed", "0")
        .unwrap();
    let status = cli(&file, &cluster, &["shutdown-switch", "status"])
        .json()
        .runs()
        .json();
    assert_eq!(status["items"][0]["closed"], false);
    assert_eq!(status["items"][0]["buckets_closed"], 7);
    cli(&file, &cluster, &["shutdown-switch", "on"]).succeeds();
    for user in users_homed_in(&[3, 5], 8, 2) {
        cli(&file, &cluster, &["buy", "--item", "hot", "--user", &user]).fails_with(CLOSED);
    }

    // reconcile balances (orders still in flight), names the transfers.
    let db_url = empty_orders_db(&file, "orders.db");
    let report = cli(&file, &cluster, &["reconcile", "--orders-db", &db_url])
        .json()
        .succeeds()
        .json();
    let reconciled = &report["items"][0];
    assert_eq!(reconciled["in_flight"]["units"], 4);
    assert_eq!(reconciled["remaining"], 16);
    assert_eq!(reconciled["transfers"]["in_transit_units"], 0);
    assert_eq!(
        reconciled["transfers"]["per_bucket"]
            .as_array()
            .unwrap()
            .len(),
        8
    );

    // A consumer that died holding every bucket's orders: pending-claim takes
    // them over from each bucket's stream; reconcile finds them stored.
    for bucket in hot.slots() {
        seckill::domain::orders::stream::read_group(
            &mut conn,
            "dead-consumer",
            &[(bucket.keys.orders.as_str(), ">")],
            100,
            None,
        )
        .unwrap();
    }
    let claimed = cli(&file, &cluster, &["pending-claim", "--min-idle", "0s"])
        .args(&["--orders-db", &db_url])
        .json()
        .runs()
        .json();
    assert_eq!(claimed["items"][0]["claimed"], 3, "{claimed}");
    assert_eq!(claimed["items"][0]["stored"], 3, "{claimed}");
    let report = cli(&file, &cluster, &["reconcile", "--orders-db", &db_url])
        .json()
        .runs()
        .json();
    assert_eq!(report["items"][0]["stored"]["units"], 4, "{report}");
    assert_eq!(report["items"][0]["balanced"], true, "{report}");

    // init resets every bucket.
    cli(&file, &cluster, &["init", "--yes"]).succeeds();
    assert_eq!(stock_left(&mut conn, layout), [3, 3, 3, 3, 2, 2, 2, 2]);

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
        stock_left(&mut conn, layout),
        [3 + half.taken, 3, 3, 1, 2, 2 - half.taken, 2, 2]
    );
    // init leaves the order database alone: check against a fresh one.
    let fresh_db = empty_orders_db(&file, "after-init.db");
    let reconcile = |repair: bool| {
        let args = ["reconcile", "--item", "hot", "--orders-db", &fresh_db];
        let repair: &[&str] = if repair { &["--repair"] } else { &[] };
        cli(&file, &cluster, &args)
            .args(repair)
            .json()
            .succeeds()
            .json()["items"][0]["transfers"]
            .clone()
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
    assert_eq!(stock_left(&mut conn, layout).iter().sum::<i64>(), 20);
    assert!(
        hot.slots()
            .iter()
            .all(|b| scripts::snapshot(&mut conn, b).unwrap().pending == 0)
    );
}

/// 32 threads, each with its own cluster connection, run the users' attempts
/// through the item layer's buy; returns (ok attempts, units bought per user).
fn run_sale(
    cluster: &RedisCluster,
    item: &SaleItem,
    users: &[String],
    attempts: &[u32],
) -> (usize, HashMap<String, i64>) {
    let next = AtomicUsize::new(0);
    let results: Vec<Vec<(String, u32, Outcome)>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..32)
            .map(|_| {
                scope.spawn(|| {
                    let mut conn = cluster.conn();
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(user) = users.get(i) else {
                            return mine;
                        };
                        for (n, qty) in attempts.iter().enumerate() {
                            let request_id = format!("{user}-{n}");
                            let request = request(item, user, *qty, Some(&request_id));
                            let attempt = item.buy(&mut conn, &request).unwrap();
                            mine.push((user.clone(), *qty, attempt.reply.outcome));
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
    item: &SaleItem,
    (ok, bought): (usize, &HashMap<String, i64>),
    limit: i64,
) {
    let mut conn = cluster.conn();
    let layout = item.layout();
    assert_eq!(
        stock_left(&mut conn, layout),
        vec![0; layout.buckets as usize]
    );
    // Proven sold out, the item says so from any home bucket in one round trip.
    let attempt = item
        .buy(&mut conn, &request(item, "latecomer", 1, None))
        .unwrap();
    assert_eq!(
        (attempt.reply.outcome, attempt.cost.round_trips),
        (Outcome::SoldOut, 1)
    );
    assert_eq!(bought.values().sum::<i64>(), 1000);
    assert!(bought.values().all(|units| *units <= limit));
    let mut streamed = 0;
    for bucket in item.slots() {
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
    cli(file, cluster, &["consume", "--drain", "--orders-db", &db]).succeeds();
    let report = cli(file, cluster, &["reconcile", "--orders-db", &db])
        .args(&["--item", item.id()])
        .json()
        .succeeds()
        .json();
    assert_eq!(report["items"][0]["stored"]["units"], 1000);
    assert_eq!(report["items"][0]["database"]["rows"], ok);
    assert_eq!(report["items"][0]["stream_entries"], streamed);
}

#[test]
fn stock_sells_out_completely_and_exactly_with_skewed_and_uniform_buyers() {
    let cluster = RedisCluster::start();
    let file = campaign("sale")
        .item("skewed", 1000)
        .buckets(8)
        .item("uniform", 1000)
        .buckets(8)
        .write();
    let limit3 = campaign("sale3")
        .per_user_limit(3)
        .item("qty2", 1000)
        .buckets(8)
        .write();
    cli(&file, &cluster, &["preheat"]).succeeds();
    cli(&limit3, &cluster, &["preheat"]).succeeds();
    let (sale, sale3) = (load(&file), load(&limit3));

    // Every buyer's home is bucket 0 or 1 of 8: 750 units must travel.
    let skewed = item(&sale, "skewed");
    let users = users_homed_in(&[0, 1], 8, 3000);
    let (ok, bought) = run_sale(&cluster, &skewed, &users, &[1]);
    assert_eq!(ok, 1000);
    assert_sold_out_exactly(&cluster, &file, &skewed, (ok, &bought), 1);

    let uniform = item(&sale, "uniform");
    let users: Vec<String> = (0..3000).map(|i| format!("fan-{i}")).collect();
    let (ok, bought) = run_sale(&cluster, &uniform, &users, &[1]);
    assert_eq!(ok, 1000);
    assert_sold_out_exactly(&cluster, &file, &uniform, (ok, &bought), 1);

    // per_user_limit 3: qty 2, qty 2 again (over the limit), then qty 1.
    let qty2 = item(&sale3, "qty2");
    let users = users_homed_in(&[2, 7], 8, 3000);
    let (ok, bought) = run_sale(&cluster, &qty2, &users, &[2, 2, 1]);
    assert_sold_out_exactly(&cluster, &limit3, &qty2, (ok, &bought), 3);
}

#[test]
fn after_the_kill_switch_returns_no_bucket_says_ok() {
    let cluster = RedisCluster::start();
    let file = campaign("ks").item("hot", 100_000).buckets(8).write();
    cli(&file, &cluster, &["preheat"]).succeeds();
    let sale = load(&file);
    let hot = item(&sale, "hot");
    let stop = AtomicBool::new(false);
    let switched_at: std::sync::Mutex<Option<Instant>> = std::sync::Mutex::new(None);
    let counter = AtomicUsize::new(0);
    let late_ok = std::thread::scope(|scope| {
        let buyers: Vec<_> = (0..16)
            .map(|_| {
                scope.spawn(|| {
                    let mut conn = cluster.conn();
                    let mut late = Vec::new();
                    while !stop.load(Ordering::Relaxed) {
                        let user = format!("u{}", counter.fetch_add(1, Ordering::Relaxed));
                        let started = Instant::now();
                        let attempt = hot.buy(&mut conn, &request(&hot, &user, 1, None)).unwrap();
                        let switched = *switched_at.lock().unwrap();
                        if attempt.reply.outcome == Outcome::Ok
                            && switched.is_some_and(|at| started > at)
                        {
                            late.push(user);
                        }
                    }
                    late
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(500));
        cli(&file, &cluster, &["shutdown-switch", "on"]).succeeds();
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
    let mut conn = cluster.conn();
    let left: i64 = stock_left(&mut conn, hot.layout()).iter().sum();
    assert!(left < 100_000, "the buyers sold nothing before the switch");

    // A master dies: `on` cannot close the buckets it held, and says which.
    let owners = cluster.slot_owners();
    let dead = owners[&key_slot(&hot.layout().bucket(7).keys.stock)];
    let mut cluster = cluster;
    cluster.kill_node(dead);
    let refused = cli(&file, &cluster, &["--connect-timeout", "300ms"])
        .args(&["--response-timeout", "1s", "shutdown-switch", "on"])
        .fails_with(RUNTIME_ERROR);
    let stderr = refused.stderr();
    assert!(stderr.contains("kill switch NOT set in bucket"), "{stderr}");
}

#[test]
fn buyers_sigkilled_mid_transfer_lose_and_double_nothing() {
    let cluster = RedisCluster::start();
    // One item per buyer process: 80 units in 8 buckets of 10, and each buyer
    // wants all 80, so after its first round trip it gathers 70 units from the
    // 7 other buckets by 7 transfers: most of its life after startup is transfers.
    const ITEMS: usize = 100;
    let file = (0..ITEMS)
        .fold(campaign("crash").per_user_limit(80), |spec, i| {
            spec.item(&format!("k{i}"), 80).buckets(8)
        })
        .write();
    cli(&file, &cluster, &["preheat"]).succeeds();
    let sale = load(&file);
    let mut conn = cluster.conn();
    let start = |item: usize| {
        let (id, user) = (format!("k{item}"), format!("buyer-{item}"));
        cli(
            &file,
            &cluster,
            &["buy", "--qty", "80", "--item", &id, "--user", &user],
        )
        .start()
    };
    // (pending transfers, transfers made) of one item.
    let progress_in = |conn: &mut Conn, item: usize| -> (u64, u64) {
        self::item(&sale, &format!("k{item}"))
            .slots()
            .iter()
            .map(|b| scripts::snapshot(conn, b).unwrap())
            .fold((0, 0), |(p, m), s| (p + s.pending, m + s.out_count))
    };
    // How long one gathering buy takes, to aim the kills inside it.
    let started = Instant::now();
    for item in 0..3 {
        start(item).succeeds();
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
        let mut buyer = start(item);
        std::thread::sleep(aim.mul_f64(rand::random_range(0.3..1.0)));
        if buyer.child().try_wait().unwrap().is_none() {
            buyer.child().kill().unwrap();
            buyer.child().wait().unwrap();
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

    let db = empty_orders_db(&file, "o.db");
    let reconcile = |repair: bool| {
        let repair: &[&str] = if repair { &["--repair"] } else { &[] };
        cli(&file, &cluster, &["reconcile", "--orders-db", &db])
            .args(repair)
            .json()
            .succeeds()
            .json()
    };
    // Before repair: every item balances with its units in transit counted,
    // and what reconcile calls in transit is exactly what is missing from
    // stock + orders.
    let before = reconcile(false);
    let mut transit_total = 0;
    for report in before["items"].as_array().unwrap() {
        let transit = report["transfers"]["in_transit_units"].as_i64().unwrap();
        let sold = report["in_flight"]["units"].as_i64().unwrap();
        let left = report["remaining"].as_i64().unwrap();
        assert_eq!(sold + left + transit, 80, "{report}");
        transit_total += transit;
    }
    reconcile(true);
    let after = reconcile(false);
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
    let file = campaign("reb").item("hot", 8000).buckets(8).write();
    cli(&file, &cluster, &["preheat"]).succeeds();
    let sale = load(&file);
    let hot = item(&sale, "hot");
    let mut conn = cluster.conn();

    // One pass: bucket 0, drained, is refilled from the others.
    let drainers = users_homed_in(&[0], 8, 900);
    let (ok, _) = run_sale(&cluster, &hot, &drainers, &[1]);
    assert_eq!(ok, 900);
    let pass = cli(&file, &cluster, &["rebalance"]).json().runs().json();
    let pass = &pass["items"];
    assert_eq!(pass[0]["stock_before"][0], 100, "{pass}");
    assert!(pass[0]["stock_after"][0].as_i64().unwrap() > 100, "{pass}");
    assert_eq!(
        stock_left(&mut conn, hot.layout()),
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
                let mut conn = cluster.conn();
                while !stop.load(Ordering::Relaxed) {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(user) = buyers_homed_in_0.get(i) else {
                        break;
                    };
                    hot.buy(&mut conn, &request(&hot, user, 1, None)).unwrap();
                }
            });
        }
        for _ in 0..20 {
            // 100 ms is the shortest interval (a shorter one busies the selling
            // master): a kill within 250 ms lands in the first passes.
            let mut rebalancer = cli(&file, &cluster, &["rebalance", "--watch"])
                .args(&["--interval", "100ms", "--low-water", "0.9"])
                .start();
            std::thread::sleep(Duration::from_millis(rand::random_range(20..250)));
            rebalancer.child().kill().unwrap();
            rebalancer.child().wait().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
    });
    let moved: u64 = hot
        .slots()
        .iter()
        .map(|b| scripts::snapshot(&mut conn, b).unwrap().out_count)
        .sum();
    assert!(moved > 1, "nothing moved between buckets");

    let db = empty_orders_db(&file, "o.db");
    let reconcile = |repair: bool| {
        let repair: &[&str] = if repair { &["--repair"] } else { &[] };
        cli(&file, &cluster, &["reconcile", "--orders-db", &db])
            .args(repair)
            .json()
            .succeeds()
            .json()["items"][0]
            .clone()
    };
    let before = reconcile(false);
    let transit = before["transfers"]["in_transit_units"].as_i64().unwrap();
    let sold = before["in_flight"]["units"].as_i64().unwrap();
    let left = before["remaining"].as_i64().unwrap();
    assert_eq!(sold + left + transit, 8000, "{before}");
    reconcile(true);
    let after = reconcile(false);
    assert_eq!(after["transfers"]["in_transit_units"], 0, "{after}");
    let left: i64 = stock_left(&mut conn, hot.layout()).iter().sum();
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
    let server = RedisServer::start();
    let file = (0..10)
        .fold(campaign("behind"), |spec, i| {
            spec.item(&format!("r{i}"), 3).buckets(3)
        })
        .write();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let sale = load(&file);
    let mut moved_behind = 0;
    for i in 0..10 {
        let item = item(&sale, &format!("r{i}"));
        let mut conn = server.conn();
        // Buckets 0 and 1 sold out by their own buyers; bucket 2 keeps 1 unit.
        for home in [0, 1] {
            let user = users_homed_in(&[home], 3, 1).remove(0);
            assert_eq!(
                item.buy(&mut conn, &request(&item, &user, 1, None))
                    .unwrap()
                    .reply
                    .outcome,
                Outcome::Ok
            );
        }
        let mut sweeping = MoveBehindTheSweep {
            conn: server.conn(),
            other: server.conn(),
            layout: item.layout(),
            seen_bucket_2: false,
            moved: false,
        };
        // Another user whose home is bucket 0, now empty: a sweep is needed.
        let user = users_homed_in(&[0], 3, 2).remove(1);
        let attempt = item
            .buy(&mut sweeping, &request(&item, &user, 1, None))
            .unwrap();
        moved_behind += usize::from(sweeping.moved);
        assert_eq!(
            attempt.reply.outcome,
            Outcome::Ok,
            "the unit moved behind the sweep was missed"
        );
        assert_eq!(stock_left(&mut conn, item.layout()), [0, 0, 0]);
    }
    // The sweep starts at a random bucket: about 2 in 3 runs meet the interleaving.
    assert!(
        moved_behind > 0,
        "the interleaving never happened in 10 runs"
    );
}
