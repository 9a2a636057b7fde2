//! The failover fence (issue 27, docs/failover.md "The fence"): a Redis that
//! is not the process preheat loaded the stock on — a promoted replica that
//! missed acknowledged buys, a restarted server — sells nothing (`fenced`,
//! nothing written) until `seckill reconcile --fence` re-applied what the
//! order database proves was sold; then the sale reopens and no unit is sold
//! twice. Every command runs as the user `seckill acl` generates for its role.

use crate::support;

use std::time::{Duration, Instant};

use redis::{Commands, Value};
use seckill::model::exit_codes::{CHECK_FENCED, DUPLICATE, FENCED, SOLD_OUT, SUCCESS};
use seckill::model::keys::ItemKeys;
use support::orders::{sqlite_order_ids, sqlite_path};
use support::spec::{Run, campaign, seckill};
use support::{CampaignFile, RedisServer};

const STOCK: i64 = 20;

fn keys() -> ItemKeys {
    ItemKeys::live("fence", "1")
}

/// `seckill acl --apply` for every role on `server` (as its admin); returns
/// each role's URL.
fn apply_roles(server: &RedisServer, file: &CampaignFile) -> Vec<(String, String)> {
    ["buyer", "consumer", "operator"]
        .iter()
        .map(|role| {
            let password = format!("{role}-pw-{}", std::process::id());
            let path = file.dir.path().join(format!("{role}.pw"));
            std::fs::write(&path, &password).unwrap();
            let path = path.display().to_string();
            let applied = seckill(&["acl", "--role", role, "--password-file", &path, "--apply"])
                .campaign(file)
                .redis(server)
                .json()
                .succeeds()
                .json();
            let checks = applied["users"][0]["checks"].as_array().unwrap().clone();
            assert!(checks.iter().all(|c| c["ok"] == true), "{applied}");
            (role.to_string(), password)
        })
        .collect()
}

/// `seckill ARGS` as `role` on the Redis at `port`, in the campaign's dir
/// (its `orders.db`).
fn as_role(
    file: &CampaignFile,
    roles: &[(String, String)],
    role: &str,
    port: u16,
    args: &[&str],
) -> Run {
    let password = &roles.iter().find(|(name, _)| name == role).unwrap().1;
    seckill(args)
        .campaign(file)
        .redis_url(&format!(
            "redis://seckill-{role}:{password}@127.0.0.1:{port}/0"
        ))
        .current_dir(file.dir.path())
}

/// DUMP of every key of the item's sale: what a refusal must leave as it was.
fn dump(conn: &mut redis::Connection) -> Vec<(String, Value)> {
    let k = keys();
    let rate = k.rate("newcomer");
    [
        k.meta,
        k.stock,
        k.buyers,
        k.buyer_orders,
        format!("{}requests", k.base),
        k.orders,
        rate,
    ]
    .into_iter()
    .map(|key| {
        let dumped: Value = redis::cmd("DUMP").arg(&key).query(conn).unwrap();
        (key, dumped)
    })
    .collect()
}

/// Wait until `replica` has every write `master` acknowledged so far.
fn caught_up(master: &RedisServer) {
    let acked: i64 = redis::cmd("WAIT")
        .arg(1)
        .arg(5000)
        .query(&mut master.conn())
        .unwrap();
    assert_eq!(acked, 1, "the replica did not acknowledge");
}

#[test]
fn a_promoted_replica_that_missed_buys_is_fenced_until_reconcile_reapplies_them() {
    let master = RedisServer::start();
    let file = campaign("fence")
        .per_user_limit(1)
        .item("1", STOCK)
        .named("x")
        .write();
    let roles = apply_roles(&master, &file);
    let replica = support::start_replica_of(&master);
    // ACL users are not replicated: the replica gets the same ones.
    apply_roles(&replica, &file);
    let on_master = |role: &str, args: &[&str]| as_role(&file, &roles, role, master.port, args);
    on_master("operator", &["preheat"]).succeeds();
    for n in 0..5 {
        on_master(
            "buyer",
            &["buy", "--item", "1", "--user", &format!("kept{n}")],
        )
        .succeeds();
    }
    caught_up(&master);

    // A forced failover during a partition: the replica, cut off from the
    // master, is promoted; the master, still reachable by the shoppers,
    // acknowledges six more buys the promoted replica never gets, which are
    // consumed into the order database; then the master dies. (A replica
    // frozen with SIGSTOP would not do: the master's stream waits in its
    // socket buffer and arrives at SIGCONT.)
    let mut promoted = replica.conn();
    let () = redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query(&mut promoted)
        .unwrap();
    for n in 0..6 {
        on_master(
            "buyer",
            &["buy", "--item", "1", "--user", &format!("lost{n}")],
        )
        .succeeds();
    }
    on_master("consumer", &["consume", "--drain"]).succeeds();
    assert_eq!(sqlite_order_ids(&sqlite_path(&file)).len(), 11);
    let mut master = master;
    master.kill();
    let stock: i64 = promoted.get(keys().stock).unwrap();
    assert_eq!(
        stock,
        STOCK - 5,
        "the promoted replica lacks the six lost buys"
    );
    let on_new = |role: &str, args: &[&str]| as_role(&file, &roles, role, replica.port, args);

    // Every buy is refused, nothing written: a newcomer, and a buyer whose
    // unit the promoted replica forgot (it would buy a second one).
    let before = dump(&mut promoted);
    for user in ["newcomer", "lost0"] {
        let refused = on_new("buyer", &["buy", "--item", "1", "--user", user])
            .json()
            .fails_with(FENCED)
            .json();
        assert_eq!(refused["outcome"], "fenced", "{refused}");
        let said = refused.to_string();
        assert!(said.contains("reconcile --fence"), "{said}");
    }
    // serve answers 503 `fenced`, saying what to run; nothing written.
    let serve_url = {
        let password = &roles.iter().find(|(name, _)| name == "buyer").unwrap().1;
        format!(
            "redis://seckill-buyer:{password}@127.0.0.1:{}/0",
            replica.port
        )
    };
    let serve = support::serve::Serve::start(&file, &serve_url, false, &[]);
    let answer = support::http::buy(serve.addr, "1", "newcomer", "r-fenced");
    assert_eq!(answer.status, 503, "{}", answer.body);
    let body = answer.json();
    assert_eq!(body["outcome"], "fenced", "{body}");
    assert!(
        body["problem"]
            .as_str()
            .unwrap()
            .contains("reconcile --fence"),
        "{body}"
    );
    let metrics = support::http::get(serve.addr, "/metrics").body;
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("seckill_serve_requests_total")
                && l.contains("outcome=\"fenced\"")
                && l.contains("status=\"503\"")),
        "{metrics}"
    );
    assert_eq!(dump(&mut promoted), before, "a fenced buy wrote to Redis");

    // status names the fence, --check fails on it, doctor says no-go.
    let status = on_new("operator", &["status"]).succeeds().stdout();
    assert!(status.contains("FENCED"), "{status}");
    on_new("operator", &["status", "--check"]).fails_with(CHECK_FENCED);
    let doctor = on_new("operator", &["doctor"]).json().runs().json();
    let (verdict, detail) = support::check_of(&doctor, "fence");
    assert_eq!(verdict, "fail", "{detail}");
    assert_eq!(doctor["go"], false, "{doctor}");

    // reconcile --fence re-applies the six orders the database holds, and
    // reopens once the books balance.
    let report = on_new("operator", &["reconcile", "--fence"])
        .json()
        .succeeds()
        .json();
    let fence = &report["items"][0]["fence"];
    assert_eq!(fence["before"], "fenced", "{report}");
    assert_eq!(fence["reapplied"].as_array().unwrap().len(), 6, "{report}");
    assert_eq!(fence["units_reapplied"], 6, "{report}");
    assert_eq!(fence["reopened"], true, "{report}");
    let stock: i64 = promoted.get(keys().stock).unwrap();
    assert_eq!(stock, STOCK - 11);
    let table = on_new("operator", &["reconcile", "--fence"])
        .succeeds()
        .stdout();
    assert!(table.contains("nothing to re-apply"), "{table}");

    // The sale reopens: a lost buyer's limit holds, newcomers get exactly
    // what is left, never more.
    on_new("buyer", &["buy", "--item", "1", "--user", "lost0"]).fails_with(DUPLICATE);
    let mut sold = 0;
    for n in 0..(STOCK as usize) {
        let ran = on_new(
            "buyer",
            &["buy", "--item", "1", "--user", &format!("late{n}")],
        )
        .runs();
        match ran.code() {
            SUCCESS => sold += 1,
            SOLD_OUT => {}
            other => panic!("late{n}: exit {other}: {}", ran.describe()),
        }
    }
    assert_eq!(sold, STOCK - 11);
    on_new("consumer", &["consume", "--drain"]).succeeds();
    let stored = sqlite_order_ids(&sqlite_path(&file));
    let mut unique = stored.clone();
    unique.dedup();
    assert_eq!(unique.len(), stored.len());
    assert_eq!(stored.len() as i64, STOCK, "no unit sold twice");
    let stock: i64 = promoted.get(keys().stock).unwrap();
    let units: i64 = promoted
        .hvals::<_, Vec<i64>>(keys().buyers)
        .unwrap()
        .iter()
        .sum();
    assert_eq!((units, stock), (STOCK, 0), "sold + left = initial");
    on_new("operator", &["reconcile"]).succeeds();
    let doctor = on_new("operator", &["doctor"]).json().runs().json();
    let (verdict, detail) = support::check_of(&doctor, "fence");
    assert_eq!(verdict, "ok", "{detail}");
    let answer = support::http::buy(serve.addr, "1", "late0", "r-after");
    assert_eq!(
        answer.status, 409,
        "a reopened sale answers from Redis: {}",
        answer.body
    );
}

#[test]
fn a_restarted_redis_is_fenced_until_reconcile_proves_nothing_was_lost() {
    let dir = tempfile::tempdir().unwrap();
    let port = support::free_port();
    let start = || {
        RedisServer::options()
            .port(port)
            .dir(dir.path())
            .args(&["--appendonly", "yes", "--appendfsync", "always"])
            .start()
    };
    let mut server = start();
    let file = campaign("fence")
        .per_user_limit(1)
        .item("1", STOCK)
        .named("x")
        .write();
    let roles = apply_roles(&server, &file);
    let run = |role: &str, args: &[&str]| as_role(&file, &roles, role, port, args);
    run("operator", &["preheat"]).succeeds();
    run("buyer", &["buy", "--item", "1", "--user", "early"]).succeeds();
    run("consumer", &["consume", "--drain"]).succeeds();

    server.kill();
    let server = start();
    // ACL users are not persisted here (no aclfile): written again.
    apply_roles(&server, &file);
    let deadline = Instant::now() + Duration::from_secs(10);
    while redis::cmd("PING")
        .query::<String>(&mut server.conn())
        .is_err()
    {
        assert!(
            Instant::now() < deadline,
            "the restarted Redis never answered"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let before = dump(&mut server.conn());
    run("buyer", &["buy", "--item", "1", "--user", "newcomer"]).fails_with(FENCED);
    assert_eq!(
        dump(&mut server.conn()),
        before,
        "a fenced buy wrote to Redis"
    );

    let report = run("operator", &["reconcile", "--fence"])
        .json()
        .succeeds()
        .json();
    let fence = &report["items"][0]["fence"];
    assert_eq!(fence["before"], "fenced", "{report}");
    assert_eq!(fence["units_reapplied"], 0, "{report}");
    assert_eq!(fence["reopened"], true, "{report}");
    run("buyer", &["buy", "--item", "1", "--user", "newcomer"]).succeeds();
    run("buyer", &["buy", "--item", "1", "--user", "early"]).fails_with(DUPLICATE);
}

#[test]
fn a_bucketed_item_on_a_restarted_redis_is_fenced_and_stays_fenced_while_an_order_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let port = support::free_port();
    let start = || {
        RedisServer::options()
            .port(port)
            .dir(dir.path())
            .args(&["--appendonly", "yes", "--appendfsync", "always"])
            .start()
    };
    let mut server = start();
    let file = campaign("fence")
        .per_user_limit(1)
        .item("1", STOCK)
        .named("x")
        .buckets(4)
        .write();
    let roles = apply_roles(&server, &file);
    let run = |role: &str, args: &[&str]| as_role(&file, &roles, role, port, args);
    run("operator", &["preheat"]).succeeds();
    run("buyer", &["buy", "--item", "1", "--user", "early"]).succeeds();
    run("consumer", &["consume", "--drain"]).succeeds();
    server.kill();
    let server = start();
    apply_roles(&server, &file);

    // Every bucket is held by another process now: a buy is refused at its
    // home bucket, nothing written, and no sweep takes units from any.
    let keys: Vec<String> = server.conn().keys("seckill:{fence:1*").unwrap();
    let dump_all = |conn: &mut redis::Connection| -> Vec<Value> {
        keys.iter()
            .map(|key| redis::cmd("DUMP").arg(key).query(conn).unwrap())
            .collect()
    };
    let before = dump_all(&mut server.conn());
    for user in ["newcomer", "early"] {
        run("buyer", &["buy", "--item", "1", "--user", user]).fails_with(FENCED);
    }
    assert_eq!(dump_all(&mut server.conn()), before, "a fenced buy wrote");
    // An order the database holds and no bucket does any more (as a write
    // the restart lost): a bucketed item's lost orders are not re-applied
    // yet (docs/failover.md, "Limits"): reconcile --fence says so and the
    // item stays fenced.
    let mut conn = server.conn();
    let streams: Vec<String> = keys
        .iter()
        .filter(|k| k.ends_with(":orders"))
        .cloned()
        .collect();
    let mut dropped = 0;
    for stream in &streams {
        let ids: Vec<(String, Vec<(String, String)>)> = redis::cmd("XRANGE")
            .arg(stream)
            .arg("-")
            .arg("+")
            .query(&mut conn)
            .unwrap();
        for (id, _) in ids {
            let n: i64 = redis::cmd("XDEL")
                .arg(stream)
                .arg(&id)
                .query(&mut conn)
                .unwrap();
            dropped += n;
        }
    }
    assert_eq!(dropped, 1, "the early order's entry in {streams:?}");
    let report = run("operator", &["reconcile", "--fence"])
        .json()
        .fails_with(seckill::model::exit_codes::DRIFT_FOUND)
        .json();
    let fence = &report["items"][0]["fence"];
    assert_eq!(fence["fenced"], true, "{report}");
    assert!(fence.to_string().contains("bucketed"), "{report}");
    run("buyer", &["buy", "--item", "1", "--user", "newcomer"]).fails_with(FENCED);
}
