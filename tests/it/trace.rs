//! `-v` / `SECKILL_DEBUG=1`: where each setting came from, then every Redis
//! command on stderr — script by name, first key, its slot and the node that
//! serves it, latency — and never a script body, a value or a password.

use crate::support::RedisServer;
use crate::support::cluster::RedisCluster;
use crate::support::spec::{campaign, seckill};
use seckill::model::layout::key_slot;

#[test]
fn verbose_says_where_settings_came_from_and_traces_each_command() {
    let server = RedisServer::start();
    let file = campaign("tr").item("1", 5).write();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let quiet = seckill(&["status", "--check"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    for verbose in [
        seckill(&["-v", "status", "--check"])
            .campaign(&file)
            .redis(&server),
        seckill(&["status", "--check"])
            .campaign(&file)
            .redis(&server)
            .env("SECKILL_DEBUG", "1"),
    ] {
        let ran = verbose.succeeds();
        assert_eq!(ran.stdout(), quiet.stdout(), "stdout is the same with -v");
        let stderr = ran.stderr();
        let port = server.port;
        for line in [
            "seckill: trace: setting --connect-timeout = 2s (default)".to_string(),
            "seckill: trace: setting --check = true (command line)".to_string(),
            format!(
                "seckill: trace: setting --redis = redis://127.0.0.1:{port}/0 (environment SECKILL_REDIS_URL)"
            ),
            format!("seckill: trace: Redis 127.0.0.1:{port} (URL from SECKILL_REDIS_URL)"),
        ] {
            assert!(
                stderr.lines().any(|l| l == line),
                "no {line:?} in\n{stderr}"
            );
        }
        let meta = "seckill:{tr:1}:meta";
        let script = format!(
            "seckill: trace: EVALSHA item_status {meta} slot {} on 127.0.0.1:{port}: ok in ",
            key_slot(meta)
        );
        let traced = stderr
            .lines()
            .find(|l| l.starts_with(&script))
            .unwrap_or_else(|| panic!("{stderr}"));
        assert!(traced.ends_with(" ms"), "{traced}");
        assert!(
            stderr.contains("seckill: trace: XINFO CONSUMERS seckill:{tr:1}:orders slot "),
            "{stderr}"
        );
        assert!(
            !stderr.contains("redis.call"),
            "a script body was shown:\n{stderr}"
        );
    }
}

#[test]
fn verbose_never_shows_a_password_or_a_value() {
    let server = RedisServer::start_with(&["--requirepass", "pw-never-shown"]);
    let url = format!("redis://:pw-never-shown@127.0.0.1:{}/0", server.port);
    let file = campaign("tr").item("1", 5).write();
    let run = |args: &[&str]| seckill(args).campaign(&file).redis_url(&url);
    let preheat = run(&["-v", "preheat"]).succeeds();
    let buy = run(&["-v", "buy", "--item", "1", "--user", "alice-the-shopper"]).succeeds();
    for ran in [preheat, buy] {
        let stderr = ran.stderr();
        assert!(stderr.contains("seckill: trace: "), "{stderr}");
        assert!(
            !stderr.contains("pw-never-shown"),
            "a password in the trace:\n{stderr}"
        );
        // The command line says who buys; the commands sent never carry it.
        let commands = stderr
            .lines()
            .filter(|l| !l.starts_with("seckill: trace: setting "));
        for line in commands {
            assert!(
                !line.contains("alice-the-shopper"),
                "a value in the trace: {line}"
            );
        }
    }
}

#[test]
fn on_a_cluster_the_trace_names_the_slots_master() {
    let cluster = RedisCluster::start();
    let file = campaign("trc").item("1", 5).item("2", 5).write();
    seckill(&["preheat"])
        .campaign(&file)
        .cluster(&cluster)
        .succeeds();
    let stderr = seckill(&["-v", "buy", "--item", "2", "--user", "u"])
        .campaign(&file)
        .cluster(&cluster)
        .succeeds()
        .stderr();
    let meta = "seckill:{trc:2}:meta";
    let (master, _) = cluster.master_and_replicas_of(meta);
    let expected = format!(
        "seckill: trace: EVALSHA buy {meta} slot {} on 127.0.0.1:{master}: ok in ",
        key_slot(meta)
    );
    assert!(
        stderr.lines().any(|l| l.starts_with(&expected)),
        "no {expected:?} in\n{stderr}"
    );
    assert!(
        stderr.contains("seckill: trace: cluster seed nodes "),
        "{stderr}"
    );
}
