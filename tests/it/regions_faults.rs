//! Regions under faults (issue 27, docs/regions.md and docs/failover.md
//! "Regions"): a mover killed anywhere, a replica that never confirms a
//! debit, a failover that lost a debit the peer had already credited. Each
//! region is its own real redis-server (the source with a real replica);
//! every command is the real binary.

use crate::support;

use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use redis::Value;
use seckill::model::exit_codes::{DRIFT_FOUND, FENCED, IN_TRANSIT, SOLD_OUT, SUCCESS};
use seckill::model::keys::ItemKeys;
use support::spec::{Run, seckill};
use support::{CampaignFile, Frozen, RedisServer};

const TOTAL: i64 = 30;
const CAMPAIGN: &str = "rgf";

fn keys() -> ItemKeys {
    ItemKeys::live(CAMPAIGN, "1")
}

/// The campaign: item 1, 30 units split 18 (bj) / 12 (sh), one order
/// database per region beside the file.
fn regions_yaml(bj: &str, sh: &str) -> String {
    format!(
        "campaign: {CAMPAIGN}\nper_user_limit: 1\nregions:\n  \
         bj: {{ redis: \"{bj}\", share: 600, orders: \"sqlite://orders-bj.db\" }}\n  \
         sh: {{ redis: \"{sh}\", share: 400, orders: \"sqlite://orders-sh.db\" }}\n\
         items:\n  - {{ id: \"1\", name: x, price: \"1\", stock: {TOTAL} }}\n"
    )
}

/// `seckill ARGS` on `file`, in its directory (the regions' order databases).
fn run(file: &CampaignFile, args: &[&str]) -> Run {
    seckill(args).campaign(file).current_dir(file.dir.path())
}

/// A field of the item's meta in `server` (0 when absent).
fn meta_field(server: &RedisServer, field: &str) -> i64 {
    let value: Option<i64> = redis::cmd("HGET")
        .arg(keys().meta)
        .arg(field)
        .query(&mut server.conn())
        .unwrap();
    value.unwrap_or(0)
}

fn stock(server: &RedisServer) -> i64 {
    redis::cmd("GET")
        .arg(keys().stock)
        .query(&mut server.conn())
        .unwrap()
}

/// DUMP of `keys` in `server`: what a refusal must leave as it was.
fn dump(server: &RedisServer, keys: &[String]) -> Vec<Value> {
    let mut conn = server.conn();
    keys.iter()
        .map(|key| redis::cmd("DUMP").arg(key).query(&mut conn).unwrap())
        .collect()
}

fn slot_keys() -> Vec<String> {
    let k = keys();
    vec![
        k.meta,
        k.stock,
        k.buyers,
        k.buyer_orders,
        format!("{}requests", k.base),
        k.orders,
    ]
}

/// `regions status --format json`'s item 1.
fn books(file: &CampaignFile) -> serde_json::Value {
    run(file, &["regions", "status", "--format", "json"])
        .succeeds()
        .json()["items"][0]
        .clone()
}

/// Units in transit over every pair, as `regions status` counts them.
fn in_transit(books: &serde_json::Value) -> i64 {
    books["in_transit"]
        .as_array()
        .unwrap()
        .iter()
        .map(|pair| pair["units"].as_i64().unwrap_or(0))
        .sum()
}

/// I3 from each region's own Redis: Σ stock + Σ sold + in transit = total.
fn assert_i3_exact(books: &serde_json::Value) {
    let regions = books["regions"].as_array().unwrap();
    let held: i64 = regions
        .iter()
        .map(|r| r["slot"]["initial"].as_i64().unwrap())
        .sum();
    assert_eq!(held + in_transit(books), TOTAL, "I3: {books}");
    assert_eq!(
        books["stock"].as_i64().unwrap() + books["sold"].as_i64().unwrap() + in_transit(books),
        TOTAL,
        "I3: {books}"
    );
}

/// Users `u0..u{n}` by home region, as `seckill regions home` says.
fn users_by_home(file: &CampaignFile, n: usize) -> (Vec<String>, Vec<String>) {
    let users: Vec<String> = (0..n).map(|i| format!("u{i}")).collect();
    let mut args = vec!["regions", "home", "--format", "json"];
    args.extend(users.iter().map(String::as_str));
    let homes = run(file, &args).succeeds().json();
    let (mut bj, mut sh) = (Vec::new(), Vec::new());
    for home in homes["homes"].as_array().unwrap() {
        let user = home["user"].as_str().unwrap().to_string();
        match home["home"].as_str().unwrap() {
            "bj" => bj.push(user),
            _ => sh.push(user),
        }
    }
    (bj, sh)
}

/// Wait until `master` counts `replicas` attached replicas.
fn attached(master: &RedisServer, replicas: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let info: String = redis::cmd("INFO")
            .arg("replication")
            .query(&mut master.conn())
            .unwrap();
        if info.contains(&format!("connected_slaves:{replicas}")) {
            return;
        }
        assert!(Instant::now() < deadline, "{info}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every write `master` acknowledged so far is on its one replica. WAIT
/// counts the writes of its own connection only (on a fresh one it answers
/// at once, proving nothing), so one write goes first, on the same
/// connection, to a key of the test's own.
fn caught_up(master: &RedisServer) {
    let mut conn = master.conn();
    let () = redis::cmd("SET")
        .arg("seckill-test:caught-up")
        .arg(1)
        .query(&mut conn)
        .unwrap();
    let acked: i64 = redis::cmd("WAIT")
        .arg(1)
        .arg(5000)
        .query(&mut conn)
        .unwrap();
    assert_eq!(acked, 1, "the replica did not acknowledge");
}

#[test]
fn the_mover_killed_anywhere_never_loses_or_doubles_a_unit() {
    let bj = RedisServer::start();
    let bj_replica = support::start_replica_of(&bj);
    let sh = RedisServer::start();
    let file = support::campaign_file(&regions_yaml(&bj.url(), &sh.url()));
    run(&file, &["preheat"]).succeeds();
    let credit_script = run(&file, &["scripts", "show", "region_credit"])
        .succeeds()
        .stdout();

    let seed: u64 = rand::rng().random();
    eprintln!("seed {seed}");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // Cumulative counts bj sent sh, each read on bj's replica (so proven
    // there, the only replica): the credits a late or duplicated mover
    // message would carry.
    let mut proven_values: Vec<i64> = Vec::new();
    let mut killed_in_transit = 0;
    for round in 0..20 {
        // Every other round the replica is frozen while the mover runs, so
        // the kill lands between the debit and the credit (WAIT blocks);
        // otherwise anywhere from before the connection to after the credit.
        // All the replica holds (it caught up at the end of the last round):
        // while it is frozen, no credit of more than this is proven.
        let replica_has = meta_field(&bj_replica, "out:sh");
        let frozen = (round % 2 == 1).then(|| Frozen::new(&mut bj_replica.conn()));
        let (from, to) = if round % 3 == 2 {
            ("sh", "bj")
        } else {
            ("bj", "sh")
        };
        let mut mover = run(
            &file,
            &[
                "regions",
                "move",
                "--item",
                "1",
                "--from",
                from,
                "--to",
                to,
                "--units",
                &rng.random_range(1..=3).to_string(),
                "--wait-timeout",
                "300ms",
            ],
        )
        .spawn();
        // The binary takes ~50 ms (debug build) to reach its debit: kills
        // land before it, inside it, in WAIT (frozen, 300 ms), after WAIT gave
        // up, or after the credit.
        let longest = if frozen.is_some() { 450_000 } else { 80_000 };
        let delay = Duration::from_micros(rng.random_range(1..longest));
        std::thread::sleep(delay);
        let _ = mover.kill();
        let _ = mover.wait();
        if frozen.is_some() {
            assert!(
                meta_field(&sh, "in:bj") <= replica_has,
                "round {round}: sh credited a count bj's frozen replica lacks"
            );
        }
        drop(frozen);
        caught_up(&bj);
        let now = books(&file);
        if in_transit(&now) > 0 {
            killed_in_transit += 1;
        }
        assert_i3_exact(&now);
        proven_values.push(meta_field(&bj_replica, "out:sh"));

        // Late, duplicated and reordered credits of proven values: only the
        // difference ever counts, whatever order they come in.
        let mut late: Vec<i64> = proven_values
            .iter()
            .copied()
            .chain(proven_values.iter().copied())
            .collect();
        for i in (1..late.len()).rev() {
            late.swap(i, rng.random_range(0..=i));
        }
        let mut conn = sh.conn();
        for value in late.iter().take(6) {
            let _: Value = redis::cmd("EVAL")
                .arg(&credit_script)
                .arg(2)
                .arg(keys().meta)
                .arg(keys().stock)
                .arg("bj")
                .arg(value)
                .arg("?node")
                .query(&mut conn)
                .unwrap();
        }
        assert!(
            meta_field(&sh, "in:bj") <= meta_field(&bj_replica, "out:sh"),
            "round {round}: sh credited a count bj's replica lacks"
        );
        assert_i3_exact(&books(&file));
    }
    eprintln!("{killed_in_transit} of 20 kills left units in transit");

    // One round of the scheduler settles everything in transit.
    run(&file, &["regions", "rebalance"]).succeeds();
    let settled = books(&file);
    assert_eq!(in_transit(&settled), 0, "{settled}");
    assert_i3_exact(&settled);
    assert_eq!(meta_field(&sh, "in:bj"), meta_field(&bj, "out:sh"));
    assert_eq!(meta_field(&bj, "in:sh"), meta_field(&sh, "out:bj"));
    assert_eq!(stock(&bj) + stock(&sh), TOTAL, "nothing sold: all stock");
    run(&file, &["reconcile", "--regions"]).succeeds();
}

#[test]
fn a_debit_no_replica_confirmed_is_never_credited() {
    let bj = RedisServer::start();
    let bj_replica = support::start_replica_of(&bj);
    let sh = RedisServer::start();
    let file = support::campaign_file(&regions_yaml(&bj.url(), &sh.url()));
    run(&file, &["preheat"]).succeeds();
    let sh_slot = vec![keys().meta, keys().stock];
    let before = dump(&sh, &sh_slot);

    let frozen = Frozen::new(&mut bj_replica.conn());
    let moved = run(
        &file,
        &[
            "regions",
            "move",
            "--item",
            "1",
            "--from",
            "bj",
            "--to",
            "sh",
            "--units",
            "4",
            "--wait-timeout",
            "200ms",
            "--format",
            "json",
        ],
    )
    .fails_with(IN_TRANSIT)
    .json();
    assert_eq!(moved["ending"], "in_transit", "{moved}");
    assert_eq!(moved["replicas"], serde_json::json!([0, 1]), "{moved}");
    assert_eq!(dump(&sh, &sh_slot), before, "sh was credited unproven");
    assert_eq!(meta_field(&bj, "out:sh"), 4);
    // A settle while the replica still lacks it credits nothing either.
    run(&file, &["regions", "rebalance", "--wait-timeout", "200ms"]).runs();
    assert_eq!(dump(&sh, &sh_slot), before, "a settle credited unproven");
    let waiting = books(&file);
    assert_eq!(in_transit(&waiting), 4, "{waiting}");
    assert_i3_exact(&waiting);

    drop(frozen);
    run(&file, &["regions", "rebalance"]).succeeds();
    let settled = books(&file);
    assert_eq!(in_transit(&settled), 0, "{settled}");
    assert_eq!(meta_field(&sh, "in:bj"), 4);
    assert_eq!(stock(&sh), 12 + 4);
    assert_i3_exact(&settled);
    run(&file, &["reconcile", "--regions"]).succeeds();
}

/// Buy item 1 as each user in its home region until both answer
/// `sold_out`; returns the units sold per region.
fn sell_out(file: &CampaignFile, bj_users: &[String], sh_users: &[String]) -> (i64, i64) {
    let sell = |region: &str, users: &[String]| {
        let mut sold = 0;
        for user in users {
            let ran = run(
                file,
                &["--region", region, "buy", "--item", "1", "--user", user],
            )
            .runs();
            match ran.code() {
                SUCCESS => sold += 1,
                SOLD_OUT => return sold,
                other => panic!("{user} in {region}: exit {other}: {}", ran.describe()),
            }
        }
        panic!(
            "region {region} did not sell out with {} users",
            users.len()
        )
    };
    (sell("bj", bj_users), sell("sh", sh_users))
}

#[test]
fn a_failover_that_lost_a_credited_debit_fences_the_source_until_reconcile() {
    let mut bj = RedisServer::start();
    let stale = support::start_replica_of(&bj);
    let sh = RedisServer::start();
    let file = support::campaign_file(&regions_yaml(&bj.url(), &sh.url()));
    run(&file, &["preheat"]).succeeds();
    caught_up(&bj);
    let (bj_users, sh_users) = users_by_home(&file, 120);
    // Two units sold in bj before, which the stale copy keeps.
    for user in &bj_users[..2] {
        run(
            &file,
            &["--region", "bj", "buy", "--item", "1", "--user", user],
        )
        .succeeds();
    }
    caught_up(&bj);

    // The stale copy: detached from bj before the move (REPLICAOF NO ONE,
    // as a partition would cut it off), so the master counts no replica and
    // WAIT proves the debit on "every" replica — none — exactly as a replica
    // that dropped out before a forced failover. It keeps bj's data up to
    // here, preheat's recorded process included.
    let () = redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query(&mut stale.conn())
        .unwrap();
    attached(&bj, 0);
    let moved = run(
        &file,
        &[
            "regions", "move", "--item", "1", "--from", "bj", "--to", "sh", "--units", "5",
            "--format", "json",
        ],
    )
    .succeeds()
    .json();
    assert_eq!(moved["ending"], "credited", "{moved}");
    assert_eq!(meta_field(&sh, "in:bj"), 5);

    // The failover: the stale copy is bj's Redis now; the old master dies.
    bj.kill();
    std::fs::write(&file.path, regions_yaml(&stale.url(), &sh.url())).unwrap();
    assert_eq!(stock(&stale), 18 - 2, "the stale copy lacks the debit");
    assert_eq!(meta_field(&stale, "out:sh"), 0);

    // Every buy in bj answers `fenced`, nothing written; the mover too.
    let before = dump(&stale, &slot_keys());
    for user in &bj_users[2..5] {
        let refused = run(
            &file,
            &[
                "--region", "bj", "buy", "--item", "1", "--user", user, "--format", "json",
            ],
        )
        .fails_with(FENCED)
        .json();
        assert_eq!(refused["outcome"], "fenced", "{refused}");
    }
    run(
        &file,
        &[
            "regions", "move", "--item", "1", "--from", "bj", "--to", "sh", "--units", "1",
        ],
    )
    .fails_with(FENCED);
    // A credit to the fenced region is refused too: sh's units stay in
    // transit, bj's slot untouched.
    let credit = run(
        &file,
        &[
            "regions", "move", "--item", "1", "--from", "sh", "--to", "bj", "--units", "1",
            "--format", "json",
        ],
    )
    .fails_with(IN_TRANSIT)
    .json();
    assert!(
        credit["why"].as_str().unwrap().contains("fenced"),
        "{credit}"
    );
    assert_eq!(dump(&stale, &slot_keys()), before, "a fenced call wrote");
    // The books name the breach: sh credited 5 units bj never sent.
    let breach = run(&file, &["reconcile", "--regions"])
        .fails_with(DRIFT_FOUND)
        .stdout();
    assert!(breach.contains("bj") && breach.contains("sh"), "{breach}");

    // A peer that cannot be read proves nothing: bj stays fenced.
    let down = support::free_port();
    let sh_url = sh.url();
    std::fs::write(
        &file.path,
        regions_yaml(&stale.url(), &format!("redis://127.0.0.1:{down}/0")),
    )
    .unwrap();
    run(&file, &["--region", "bj", "consume", "--drain"]).succeeds();
    let kept = run(
        &file,
        &["--region", "bj", "reconcile", "--fence", "--format", "json"],
    )
    .fails_with(DRIFT_FOUND)
    .json();
    let fence = &kept["items"][0]["fence"];
    assert_eq!(fence["fenced"], true, "{kept}");
    assert_eq!(fence["peers_unproven"][0]["peer"], "sh", "{kept}");
    assert_eq!(fence["peers_unproven"][0]["accepted"], false, "{kept}");
    // Only the fence's own mark was written (meta `fenced`): no unit moved.
    assert_eq!(stock(&stale), 18 - 2, "{kept}");
    assert_eq!(meta_field(&stale, "out:sh"), 0, "{kept}");
    assert_eq!(meta_field(&stale, "fenced"), 1, "{kept}");
    std::fs::write(&file.path, regions_yaml(&stale.url(), &sh_url)).unwrap();

    // reconcile --fence takes the lost debit again from what sh proves.
    let table = run(&file, &["--region", "bj", "reconcile", "--fence"])
        .succeeds()
        .stdout();
    assert!(table.contains("REOPENED"), "{table}");
    assert!(table.contains("5 units debited again"), "{table}");
    assert_eq!(stock(&stale), 18 - 2 - 5);
    assert_eq!(meta_field(&stale, "out:sh"), 5);
    let again = run(
        &file,
        &["--region", "bj", "reconcile", "--fence", "--format", "json"],
    )
    .succeeds()
    .json();
    assert_eq!(again["items"][0]["fence"]["before"], "open", "{again}");
    run(&file, &["reconcile", "--regions"]).succeeds();

    // The sale reopens: the unit sh sent while bj was fenced is credited
    // now, and selling out both regions sells no unit twice.
    run(&file, &["regions", "rebalance"]).succeeds();
    assert_eq!(meta_field(&stale, "in:sh"), 1);
    let (sold_bj, sold_sh) = sell_out(&file, &bj_users[2..], &sh_users);
    let settled = books(&file);
    assert_eq!(in_transit(&settled), 0, "{settled}");
    assert_eq!(settled["sold"], TOTAL, "{settled}");
    assert_eq!(sold_bj + sold_sh + 2, TOTAL, "total sold = total stock");
    assert_i3_exact(&settled);
    run(&file, &["reconcile", "--regions"]).succeeds();
    for region in ["bj", "sh"] {
        run(&file, &["--region", region, "consume", "--drain"]).succeeds();
        run(&file, &["--region", region, "reconcile"]).succeeds();
    }
}

#[test]
fn a_peer_that_cannot_be_read_keeps_the_region_fenced_unless_the_risk_is_accepted() {
    let bj = RedisServer::start();
    let copy = support::start_replica_of(&bj);
    let sh = RedisServer::start();
    let file = support::campaign_file(&regions_yaml(&bj.url(), &sh.url()));
    run(&file, &["preheat"]).succeeds();
    caught_up(&bj);
    let (bj_users, _) = users_by_home(&file, 20);
    // bj's Redis is another process now (its promoted copy), and sh is down.
    let () = redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query(&mut copy.conn())
        .unwrap();
    let down = format!("redis://127.0.0.1:{}/0", support::free_port());
    std::fs::write(&file.path, regions_yaml(&copy.url(), &down)).unwrap();
    run(&file, &["--region", "bj", "consume", "--drain"]).succeeds();
    let buy = [
        "--region",
        "bj",
        "buy",
        "--item",
        "1",
        "--user",
        &bj_users[0],
    ];
    run(&file, &buy).fails_with(FENCED);

    let kept = run(&file, &["--region", "bj", "reconcile", "--fence"])
        .fails_with(DRIFT_FOUND)
        .stdout();
    assert!(
        kept.contains("region sh could not prove") && kept.contains("STILL FENCED"),
        "{kept}"
    );
    run(&file, &buy).fails_with(FENCED);

    let accepted = run(
        &file,
        &[
            "--region",
            "bj",
            "reconcile",
            "--fence",
            "--accept-risk",
            "--format",
            "json",
        ],
    )
    .succeeds();
    assert!(
        accepted.stderr().contains("--accept-risk") && accepted.stderr().contains("sh"),
        "{}",
        accepted.stderr()
    );
    let fence = &accepted.json()["items"][0]["fence"];
    assert_eq!(fence["reopened"], true, "{fence}");
    assert_eq!(fence["peers_unproven"][0]["peer"], "sh", "{fence}");
    assert_eq!(fence["peers_unproven"][0]["accepted"], true, "{fence}");
    run(&file, &buy).succeeds();
}
