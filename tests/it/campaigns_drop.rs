//! `seckill campaigns drop ID` (issue 25, "what operators expect that is
//! missing"): a typo'd or finished campaign removed from a Redis — every key
//! of its items and its registry entry — refused as `init` refuses (sales or
//! a kill switch ON without `--yes`; a selling sale or acknowledged orders
//! not stored yet without `--force`); `--dry-run` lists what it would delete
//! and writes nothing; on a cluster, each hash-tagged slot is reached.

use crate::init_dry_run::snapshot;
use crate::support::RedisServer;
use crate::support::cluster::{RedisCluster, node};
use crate::support::orders::{buy_many, seckill_on};
use crate::support::spec::{campaign, seckill};
use seckill::model::exit_codes::{PREHEAT_REFUSED, USAGE_ERROR};

/// Keys of campaign `id` (every item, every bucket) on `server`.
fn keys_of(server: &RedisServer, id: &str) -> Vec<String> {
    redis::cmd("KEYS")
        .arg(format!("seckill:{{{id}:*"))
        .query(&mut server.conn())
        .unwrap()
}

#[test]
fn a_typod_campaign_is_dropped_with_its_keys_and_entry_and_the_real_one_is_untouched() {
    let server = RedisServer::start();
    let real = campaign("shop-1111")
        .per_user_limit(1)
        .item("1", 10)
        .write();
    let typo = campaign("shop-111")
        .per_user_limit(1)
        .item("1", 10)
        .item("2", 8)
        .buckets(4)
        .write();
    seckill_on(&typo, &server, &["preheat"]).succeeds();
    seckill_on(&real, &server, &["preheat", "--allow-shared-items"]).succeeds();
    assert_eq!(buy_many(&server, &typo, "1", "u", 2).len(), 2);
    let real_keys = |s: &RedisServer| {
        let mut conn = s.conn();
        let mut keys: Vec<String> = redis::cmd("KEYS")
            .arg("seckill:{shop-1111:*")
            .query(&mut conn)
            .unwrap();
        keys.sort();
        keys.into_iter()
            .map(|k| {
                let dump: Vec<u8> = redis::cmd("DUMP").arg(&k).query(&mut conn).unwrap();
                (k, dump)
            })
            .collect::<Vec<_>>()
    };
    let real_before = real_keys(&server);
    let drop = |args: &[&str]| {
        seckill(&["campaigns", "drop", "shop-111"])
            .args(args)
            .redis(&server)
            .current_dir(typo.dir.path())
    };

    // The dry run lists every key and writes nothing.
    let before = snapshot(&server);
    let dry = drop(&["--dry-run"]).json().succeeds().json();
    assert_eq!(before, snapshot(&server), "drop --dry-run wrote");
    let listed: Vec<String> = dry["items"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|i| i["keys"].as_array().unwrap().clone())
        .map(|k| k.as_str().unwrap().to_string())
        .collect();
    let mut present = keys_of(&server, "shop-111");
    present.sort();
    let mut listed_sorted = listed.clone();
    listed_sorted.sort();
    assert_eq!(
        listed_sorted, present,
        "the dry run lists other keys than exist"
    );
    assert!(
        dry["would_refuse"].as_str().unwrap().contains("--yes"),
        "{dry}"
    );

    // Sales, not stored: refused without --yes, and with --yes alone.
    drop(&[]).fails_with(USAGE_ERROR);
    let stderr = drop(&["--yes"]).fails_with(USAGE_ERROR).stderr();
    assert!(stderr.contains("consume --drain"), "{stderr}");
    assert_eq!(before, snapshot(&server), "a refused drop wrote");
    seckill_on(&typo, &server, &["consume", "--drain"]).succeeds();
    // Stored, but still selling (orders in the last minute): closed first.
    drop(&["--yes"]).fails_with(USAGE_ERROR);
    seckill_on(
        &typo,
        &server,
        &["shutdown-switch", "on", "--reason", "typo"],
    )
    .succeeds();

    // The file fixed (or gone): the registry entry says which items to drop.
    std::fs::remove_file(&typo.path).unwrap();
    let dropped = drop(&["--yes"]).json().succeeds().json();
    assert_eq!(dropped["items_from"], "registry", "{dropped}");
    assert!(
        keys_of(&server, "shop-111").is_empty(),
        "{:?}",
        keys_of(&server, "shop-111")
    );
    let listed = seckill(&["campaigns"])
        .redis(&server)
        .json()
        .succeeds()
        .json();
    let live: Vec<&str> = listed["live"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["campaign"].as_str().unwrap())
        .collect();
    assert_eq!(live, vec!["shop-1111"], "{listed}");
    assert_eq!(real_before, real_keys(&server), "the real sale was touched");
    // The collision check still guards the real sale against the typo.
    let again = campaign("shop-111").per_user_limit(1).item("1", 10).write();
    seckill_on(&again, &server, &["preheat"]).fails_with(PREHEAT_REFUSED);
}

#[test]
fn a_selling_sale_is_refused_without_force() {
    let server = RedisServer::start();
    let file = campaign("live").per_user_limit(1).item("1", 10).write();
    seckill_on(&file, &server, &["preheat"]).succeeds();
    seckill_on(&file, &server, &["buy", "--item", "1", "--user", "a"]).succeeds();
    seckill_on(&file, &server, &["consume", "--drain"]).succeeds();
    let stderr = seckill_on(&file, &server, &["campaigns", "drop", "live", "--yes"])
        .fails_with(USAGE_ERROR)
        .stderr();
    assert!(stderr.contains("is selling"), "{stderr}");
    assert!(!keys_of(&server, "live").is_empty());
    seckill_on(
        &file,
        &server,
        &["campaigns", "drop", "live", "--yes", "--force"],
    )
    .succeeds();
    assert!(keys_of(&server, "live").is_empty());
}

#[test]
fn drop_reaches_every_slot_of_a_bucketed_campaign_on_a_cluster() {
    let cluster = RedisCluster::start();
    let file = campaign("cl").item("1", 40).buckets(8).item("2", 5).write();
    let run = |args: &[&str]| seckill(args).campaign(&file).cluster(&cluster);
    run(&["preheat"]).succeeds();
    let on_nodes = || -> usize {
        cluster
            .ports
            .iter()
            .map(|port| {
                let keys: Vec<String> = redis::cmd("KEYS")
                    .arg("seckill:{cl:*")
                    .query(&mut node(*port).unwrap())
                    .unwrap();
                keys.len()
            })
            .sum()
    };
    let before = on_nodes();
    assert!(before > 8, "{before}");
    let dry = run(&["campaigns", "drop", "cl", "--dry-run"])
        .json()
        .succeeds()
        .json();
    let listed: u64 = dry["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["keys_deleted"].as_u64().unwrap())
        .sum();
    assert_eq!(listed as usize, before, "{dry}");
    assert_eq!(on_nodes(), before, "the dry run deleted");
    run(&["campaigns", "drop", "cl"]).succeeds();
    assert_eq!(on_nodes(), 0, "keys left behind");
    let listed = seckill(&["campaigns"])
        .cluster(&cluster)
        .json()
        .succeeds()
        .json();
    assert_eq!(listed["live"].as_array().unwrap().len(), 0, "{listed}");
}
