//! Issue 25 item 18: the production campaign file preheated against a
//! rehearsal Redis. The order database (the file's) holds the sale's
//! orders, the rehearsal Redis never had the campaign — and `preheat`
//! recommended `--recover`, which writes a "known loss" of every stored
//! order into the production database. A Redis that kept older sales but
//! has no trace of this one never had it: refused, `--recover` included,
//! with "use a rehearsal database". A Redis with no trace of anything is
//! said as such, the rehearsal database first.

use crate::support::RedisServer;
use crate::support::orders::{buy_many, seckill_on, sqlite_path};
use crate::support::spec::campaign;
use seckill::model::exit_codes::PREHEAT_REFUSED;

/// Rows of `seckill_recoveries` and carried-over orders in the database.
fn known_losses(db: &std::path::Path) -> (i64, i64) {
    let conn = rusqlite::Connection::open(db).unwrap();
    let recoveries: i64 = conn
        .query_row("SELECT COUNT(*) FROM seckill_recoveries", [], |r| r.get(0))
        .unwrap();
    let carried: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM orders WHERE recovered_at IS NOT NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    (recoveries, carried)
}

#[test]
fn a_rehearsal_redis_that_never_had_the_campaign_is_not_offered_recover() {
    // The rehearsal Redis has had its own sale since before production's.
    let rehearsal = RedisServer::start();
    let drill = campaign("drill").item("9", 5).write();
    seckill_on(&drill, &rehearsal, &["preheat"]).succeeds();

    // Production sells 3 units and stores them.
    let production = RedisServer::start();
    let file = campaign("prod").per_user_limit(1).item("1", 10).write();
    seckill_on(&file, &production, &["preheat"]).succeeds();
    assert_eq!(buy_many(&production, &file, "1", "u", 3).len(), 3);
    seckill_on(&file, &production, &["consume", "--drain"]).succeeds();
    let db = sqlite_path(&file);

    // The production file, the rehearsal Redis.
    let before: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query(&mut rehearsal.conn())
        .unwrap();
    let refused = seckill_on(&file, &rehearsal, &["preheat"]).fails_with(PREHEAT_REFUSED);
    let stderr = refused.stderr();
    assert!(stderr.contains("never held campaign prod"), "{stderr}");
    assert!(stderr.contains("rehearsal database"), "{stderr}");
    assert!(!stderr.contains("did Redis lose its data"), "{stderr}");
    assert!(
        !stderr.contains("`seckill preheat --recover` loads"),
        "recommended --recover on a Redis that never had the sale: {stderr}"
    );
    // --recover would record the 3 orders as lost: refused as well.
    let stderr = seckill_on(&file, &rehearsal, &["preheat", "--recover"])
        .fails_with(PREHEAT_REFUSED)
        .stderr();
    assert!(stderr.contains("never held campaign prod"), "{stderr}");
    assert_eq!(known_losses(&db), (0, 0), "a known loss was written");
    let after: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query(&mut rehearsal.conn())
        .unwrap();
    assert_eq!(before.len(), after.len(), "the refused preheat wrote");

    // A rehearsal database of its own: the rehearsal runs.
    let own = file.dir.path().join("rehearsal-orders.db");
    seckill_on(&file, &rehearsal, &["preheat", "--orders-db"])
        .args(&[format!("sqlite://{}", own.display())])
        .succeeds();
}

#[test]
fn a_redis_with_no_trace_of_anything_names_both_cases_the_rehearsal_first() {
    let production = RedisServer::start();
    let file = campaign("prod2").per_user_limit(1).item("1", 10).write();
    seckill_on(&file, &production, &["preheat"]).succeeds();
    assert_eq!(buy_many(&production, &file, "1", "u", 2).len(), 2);
    seckill_on(&file, &production, &["consume", "--drain"]).succeeds();

    let empty = RedisServer::start();
    let stderr = seckill_on(&file, &empty, &["preheat"])
        .fails_with(PREHEAT_REFUSED)
        .stderr();
    assert!(
        stderr.contains("holds no trace of campaign prod2"),
        "{stderr}"
    );
    let rehearsal_at = stderr.find("rehearsal database").expect(&stderr);
    let recover_at = stderr.find("--recover").expect(&stderr);
    assert!(
        rehearsal_at < recover_at,
        "the rehearsal database must come first: {stderr}"
    );
    assert!(
        stderr.contains("would record 2 order(s) in sqlite://"),
        "{stderr}"
    );
    assert_eq!(known_losses(&sqlite_path(&file)), (0, 0));
}
