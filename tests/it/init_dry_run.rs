//! `init --dry-run` and `campaigns drop` (issue 25, "what operators expect
//! that is missing"): a dry run says what would be deleted and loaded and
//! leaves Redis byte for byte as it was (DUMP and PTTL of every key); the
//! real run then deletes exactly the keys the dry run counted.

use crate::support::RedisServer;
use crate::support::orders::{buy_many, seckill_on};
use crate::support::spec::{CampaignSpec, campaign};
use seckill::model::exit_codes::USAGE_ERROR;

/// Every key with its DUMP and PTTL (PTTL rounded to the second: it ticks).
pub(crate) fn snapshot(server: &RedisServer) -> Vec<(String, Vec<u8>, i64)> {
    let mut conn = server.conn();
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut conn).unwrap();
    keys.sort();
    keys.into_iter()
        .map(|key| {
            let dump: Vec<u8> = redis::cmd("DUMP").arg(&key).query(&mut conn).unwrap();
            let ttl: i64 = redis::cmd("PTTL").arg(&key).query(&mut conn).unwrap();
            (key, dump, if ttl < 0 { ttl } else { ttl / 10_000 })
        })
        .collect()
}

fn sale(id: &str) -> CampaignSpec {
    campaign(id)
        .per_user_limit(1)
        .item("1", 10)
        .item("2", 20)
        .buckets(4)
}

#[test]
fn init_dry_run_writes_nothing_and_counts_what_init_deletes() {
    let server = RedisServer::start();
    let file = sale("dry").write();
    let run = |args: &[&str]| seckill_on(&file, &server, args);
    run(&["preheat"]).succeeds();
    assert_eq!(buy_many(&server, &file, "1", "u", 3).len(), 3);
    run(&["buy", "--item", "2", "--user", "x"]).succeeds();
    run(&["consume", "--drain"]).succeeds();
    run(&["shutdown-switch", "on", "--reason", "rehearsal over"]).succeeds();

    let before = snapshot(&server);
    let dry = run(&["init", "--yes", "--dry-run"])
        .json()
        .succeeds()
        .json();
    assert_eq!(before, snapshot(&server), "init --dry-run wrote");
    assert_eq!(dry["dry_run"], true, "{dry}");
    let would: Vec<u64> = dry["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["keys_deleted"].as_u64().unwrap())
        .collect();
    assert!(would.iter().all(|n| *n > 0), "{dry}");
    let table = run(&["init", "--yes", "--dry-run"])
        .columns(80)
        .succeeds()
        .stdout();
    assert!(table.contains("dry run (nothing written)"), "{table}");
    assert!(table.contains("keys to delete"), "{table}");
    assert_eq!(before, snapshot(&server), "init --dry-run wrote");

    // Refused as init is refused: without --yes, a campaign with sales.
    run(&["init", "--dry-run"]).fails_with(USAGE_ERROR);
    assert_eq!(before, snapshot(&server));

    let done = run(&["init", "--yes"]).json().succeeds().json();
    let deleted: Vec<u64> = done["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["keys_deleted"].as_u64().unwrap())
        .collect();
    assert_eq!(
        would, deleted,
        "the dry run counted other keys than init deleted"
    );
}
