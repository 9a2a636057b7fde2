//! One hung node stops nothing (issue 25, item 4), on a real 3+3 Redis
//! Cluster, as the users `seckill acl` generates, through hangs (SIGSTOP:
//! TCP still accepts, nothing answers) rather than only kills:
//!
//! - a frozen replica, listed first among the seeds, delays no command of
//!   any role: the kill switch, `buy`, `status`, `campaigns`, `doctor`, and
//!   `serve` starting (the cluster never marks the replica failed here);
//! - a frozen master: the kill switch of the items on the other masters
//!   works while it hangs, and once the cluster promotes its replica,
//!   `serve` answers again within 2 s and the kill switch reaches the item
//!   that lived on the frozen master.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use seckill::model::keys::ItemKeys;

use crate::support::cluster::{ClusterRoles, RedisCluster, node};
use crate::support::http;
use crate::support::serve::Serve;
use crate::support::spec::{Ran, Run, campaign, seckill};

/// `seckill ARGS` as `role` on the cluster, its seeds listed from `first`.
pub(crate) fn as_role(roles: &ClusterRoles, role: &str, first: u16, args: &[&str]) -> Run {
    seckill(args)
        .env("SECKILL_REDIS_CLUSTER", "true")
        .redis_url(&roles.urls(role, first))
}

/// Run it (killed after 60 s), and how long it took.
pub(crate) fn timed(run: Run) -> (Ran, Duration) {
    let started = Instant::now();
    let ran = run.runs_within(Duration::from_secs(60));
    (ran, started.elapsed())
}

#[test]
fn a_frozen_replica_delays_no_command_of_any_role() {
    // The cluster would mark the replica failed after the node timeout and
    // stop listing it: a long one keeps it "alive", so clients meet it.
    let cluster = RedisCluster::start_with(1, Duration::from_secs(300));
    let file = campaign("hung").item("1", 100).per_user_limit(1).write();
    let roles = cluster.create_roles(&file);
    let (master, replica) = cluster.master_and_synced_replica(&ItemKeys::live("hung", "1").stock);
    as_role(&roles, "operator", master, &["preheat"])
        .campaign(&file)
        .succeeds();

    let frozen = cluster.freeze(replica);
    // The frozen replica is the first seed of every command.
    let connect = ["--connect-timeout", "3s", "--response-timeout", "3s"];
    let runs: [(&str, &[&str]); 6] = [
        ("operator", &["shutdown-switch", "on", "--reason", "drill"]),
        ("operator", &["shutdown-switch", "off"]),
        ("buyer", &["buy", "--item", "1", "--user", "alice"]),
        ("operator", &["status"]),
        ("operator", &["campaigns"]),
        ("operator", &["shutdown-switch", "status"]),
    ];
    for (role, args) in runs {
        let (ran, took) = timed(
            as_role(&roles, role, replica, args)
                .campaign(&file)
                .args(&connect),
        );
        eprintln!("{role} {args:?} with a frozen replica: {took:?}");
        assert_eq!(ran.code(), 0, "{args:?} as {role}: {}", ran.describe());
        assert!(
            took < Duration::from_secs(3),
            "{args:?} as {role} waited {took:?} (the frozen replica's timeout is 3s): {}",
            ran.describe()
        );
    }
    // doctor runs as an admin and checks every node (a failover promotes
    // replicas): it names the frozen one as not read, and still reads
    // every master, within one connect timeout.
    let (doctor, took) = timed(
        seckill(&["doctor", "--cluster", "--format", "json"])
            .campaign(&file)
            .redis_url(&cluster.urls_from(replica))
            .args(&connect),
    );
    eprintln!("doctor with a frozen replica: {took:?}");
    let report: serde_json::Value =
        serde_json::from_str(&doctor.stdout()).unwrap_or_else(|_| panic!("{}", doctor.describe()));
    let said = report.to_string();
    assert!(
        said.contains(&format!("127.0.0.1:{replica}")),
        "the frozen replica is named: {said}"
    );
    assert!(
        said.contains(&format!("master 127.0.0.1:{master}")),
        "the item's master was read: {said}"
    );
    assert!(took < Duration::from_secs(6), "{}", doctor.describe());

    // serve as the buyer starts and sells with the frozen replica first.
    let serve = Serve::start(&file, &roles.urls("buyer", replica), true, &connect);
    let sold = http::buy(serve.addr, "1", "bob", "b-1");
    assert_eq!(sold.status, 200, "{}", sold.body);
    drop(frozen);
    let denials = cluster.take_acl_denials();
    assert!(denials.is_empty(), "{}", denials.join("\n"));
}

/// When each answer came, whether Redis decided it (a 200, or after the
/// promotion a 503 `fenced`: the promoted replica is another Redis process,
/// docs/failover.md), and its body otherwise.
#[derive(Debug, Clone)]
struct Answered {
    sent: Instant,
    done: Instant,
    ok: bool,
    body: String,
}

/// How the hot item's master fails.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    /// SIGSTOP: TCP still accepts, nothing answers.
    Freeze,
    /// SIGKILL: connections refused.
    Kill,
}

#[test]
fn a_frozen_master_is_left_for_its_promoted_replica_within_two_seconds() {
    master_fails(Fault::Freeze);
}

#[test]
fn a_killed_master_is_left_for_its_promoted_replica_within_two_seconds() {
    master_fails(Fault::Kill);
}

/// The master of the item `serve` sells fails while shoppers buy: the
/// kill switch of an item on another master works meanwhile, a buy for the
/// failed master names it, and once the cluster promotes the replica (node
/// timeout 5 s) serve answers ok again within 2 s and the kill switch
/// reaches the item.
fn master_fails(fault: Fault) {
    let mut cluster = RedisCluster::start_with_replicas(1);
    // The item sold through serve lives on the master that fails; the
    // registry and a second item live elsewhere.
    let (hot, calm) = cluster.items_apart("fo");
    let file = campaign("fo")
        .item(&hot, 1_000_000)
        .item(&calm, 1_000_000)
        .write();
    let roles = cluster.create_roles(&file);
    let (master, replica) = cluster.master_and_synced_replica(&ItemKeys::live("fo", &hot).stock);
    as_role(&roles, "operator", master, &["preheat"])
        .campaign(&file)
        .succeeds();
    let serve = Serve::start(&file, &roles.urls("buyer", master), true, &[]);
    let warm = http::buy(serve.addr, &hot, "warm", "warm-1");
    assert_eq!(warm.status, 200, "{}", warm.body);

    // Shoppers keep buying the hot item, each answer timed.
    let answers = Arc::new(Mutex::new(Vec::<Answered>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let shoppers: Vec<_> = (0..4)
        .map(|t| {
            let (answers, stop, hot, addr) = (
                Arc::clone(&answers),
                Arc::clone(&stop),
                hot.clone(),
                serve.addr,
            );
            std::thread::spawn(move || {
                for n in 0.. {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let user = format!("s{t}-{n}");
                    let sent = Instant::now();
                    let answer = http::send(
                        addr,
                        "POST",
                        &format!("/v1/items/{hot}/buy"),
                        &[("Content-Type", "application/json")],
                        serde_json::json!({"user": user, "request_id": user})
                            .to_string()
                            .as_bytes(),
                    );
                    let (ok, body) = match answer {
                        Ok(answer) => (
                            answer.status == 200
                                || (answer.status == 503 && answer.body.contains("\"fenced\"")),
                            answer.body,
                        ),
                        Err(error) => (false, error.to_string()),
                    };
                    answers.lock().unwrap().push(Answered {
                        sent,
                        done: Instant::now(),
                        ok,
                        body,
                    });
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));

    let failed_at = Instant::now();
    let frozen = match fault {
        Fault::Freeze => Some(cluster.freeze(master)),
        Fault::Kill => {
            cluster.kill_node(master);
            None
        }
    };
    // A buy for the failed master names it (the frozen one within the
    // response timeout).
    let (buy, took) = timed(
        as_role(
            &roles,
            "buyer",
            replica,
            &["buy", "--item", &hot, "--user", "cli"],
        )
        .campaign(&file)
        .args(&["--response-timeout", "1s"]),
    );
    eprintln!(
        "{fault:?}: buy for the failed master: exit {} in {took:?}",
        buy.code()
    );
    assert_ne!(buy.code(), 0, "{}", buy.describe());
    assert!(
        buy.stderr().contains(&format!("127.0.0.1:{master}")),
        "{}",
        buy.describe()
    );
    // The kill switch of an item on another master works while one is down.
    for action in ["on", "off"] {
        let (ran, took) = timed(
            as_role(
                &roles,
                "operator",
                master,
                &["shutdown-switch", action, "--item", &calm],
            )
            .campaign(&file),
        );
        eprintln!("{fault:?}: shutdown-switch {action} --item {calm} meanwhile: {took:?}");
        assert_eq!(ran.code(), 0, "{}", ran.describe());
        assert!(
            took < Duration::from_secs(3),
            "{took:?}: {}",
            ran.describe()
        );
    }

    // The cluster promotes the replica (node timeout 5 s).
    let promoted_at = loop {
        let role: Option<Vec<redis::Value>> = node(replica)
            .ok()
            .and_then(|mut c| redis::cmd("ROLE").query(&mut c).ok());
        if let Some(role) = role
            && redis::from_redis_value_ref::<String>(&role[0])
                .ok()
                .as_deref()
                == Some("master")
        {
            break Instant::now();
        }
        assert!(
            failed_at.elapsed() < Duration::from_secs(40),
            "the replica was never promoted"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    // serve answers again: the first answer Redis decided (`fenced`: the
    // sale waits for reconcile --fence) of a request sent after the promotion.
    let back_at = loop {
        let first = answers
            .lock()
            .unwrap()
            .iter()
            .filter(|a| a.ok && a.sent >= promoted_at)
            .map(|a| a.done)
            .min();
        if let Some(done) = first {
            break done;
        }
        assert!(
            promoted_at.elapsed() < Duration::from_secs(30),
            "serve never answered ok after the promotion: {}",
            serve.log.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let recovered = back_at.duration_since(promoted_at);
    eprintln!(
        "{fault:?}: promotion {:?} after the failure; serve answered ok {recovered:?} after the promotion",
        promoted_at.duration_since(failed_at)
    );
    assert!(
        recovered < Duration::from_secs(2),
        "serve answered again {recovered:?} after the promotion"
    );
    // While it was down, serve's refusals named the master and said
    // nothing was sent, or that the outcome is unknown for those sent.
    let refusals: Vec<Answered> = answers
        .lock()
        .unwrap()
        .iter()
        .filter(|a| !a.ok && a.sent >= failed_at && a.done <= promoted_at)
        .cloned()
        .collect();
    assert!(!refusals.is_empty(), "no request met the failed master");
    for refusal in &refusals {
        assert!(
            refusal.body.contains(&format!("127.0.0.1:{master}"))
                && (refusal.body.contains("redis_unreachable")
                    || refusal.body.contains("outcome_unknown")),
            "{}",
            refusal.body
        );
    }
    let unsent = refusals
        .iter()
        .filter(|a| a.body.contains("redis_unreachable"))
        .count();
    eprintln!(
        "{fault:?}: {} refusals while it was down, {unsent} of them unsent (503), the slowest {:?}",
        refusals.len(),
        refusals
            .iter()
            .map(|a| a.done - a.sent)
            .max()
            .unwrap_or_default()
    );
    // The kill switch reaches the item that lived on the failed master.
    let (ran, took) = timed(
        as_role(
            &roles,
            "operator",
            master,
            &["shutdown-switch", "on", "--item", &hot],
        )
        .campaign(&file),
    );
    eprintln!("{fault:?}: shutdown-switch on --item {hot} after the promotion: {took:?}");
    assert_eq!(ran.code(), 0, "{}", ran.describe());
    stop.store(true, Ordering::SeqCst);
    for shopper in shoppers {
        shopper.join().unwrap();
    }
    drop(frozen);
}
