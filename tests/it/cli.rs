//! The binary from outside: stdout, stderr and exit status of every
//! subcommand of the core toolkit, and every documented exit code.

use crate::support;

use std::io::Read;
use std::net::TcpListener;
use std::time::Duration;

use seckill::model::exit_codes;
use support::{RedisServer, campaign_file, json, seckill};

const MOUTAI: &str = r#"
campaign: moutai-test
per_user_limit: 1
rate_limit: { window: 1h, max_requests: 4 }
items:
  - { id: "1001", name: 飞天茅台, price: "1499.00", stock: 2 }
  - { id: "1002", name: 小茅, price: "99.9", stock: 5 }
"#;

fn run(cmd: &mut assert_cmd::Command) -> (i32, serde_json::Value) {
    let output = cmd.output().unwrap();
    let code = output.status.code().expect("exited");
    (code, json(&output))
}

#[test]
fn every_buy_outcome_has_its_exit_code() {
    let server = RedisServer::start();
    let file = campaign_file(MOUTAI);
    let buy = |user: &str| {
        let mut cmd = seckill(&file.path, &server.url());
        cmd.args(["buy", "--item", "1001", "--user", user, "--format", "json"]);
        run(&mut cmd)
    };
    let (code, out) = buy("early");
    assert_eq!(
        (code, out["outcome"].as_str()),
        (exit_codes::NOT_PREHEATED, Some("not_preheated"))
    );

    seckill(&file.path, &server.url())
        .arg("preheat")
        .assert()
        .success();
    let (code, first) = buy("alice");
    assert_eq!(
        (code, first["outcome"].as_str()),
        (exit_codes::SUCCESS, Some("ok"))
    );
    assert_eq!(first["stock_left"], 1);
    let (code, dup) = buy("alice");
    assert_eq!(
        (code, dup["outcome"].as_str()),
        (exit_codes::DUPLICATE, Some("duplicate"))
    );
    assert_eq!(
        dup["order_id"], first["order_id"],
        "duplicate names the existing order"
    );
    buy("alice");
    buy("alice");
    let (code, _) = buy("alice");
    assert_eq!(code, exit_codes::RATE_LIMITED);
    assert_eq!(buy("bob").0, exit_codes::SUCCESS);
    let (code, sold) = buy("carol");
    assert_eq!(
        (code, sold["stock_left"].as_i64()),
        (exit_codes::SOLD_OUT, Some(0))
    );

    seckill(&file.path, &server.url())
        .args([
            "shutdown-switch",
            "on",
            "--item",
            "1002",
            "--reason",
            "rehearsal",
        ])
        .assert()
        .success();
    let mut cmd = seckill(&file.path, &server.url());
    cmd.args([
        "--format", "json", "buy", "--item", "1002", "--user", "dave",
    ]);
    let (code, closed) = run(&mut cmd);
    assert_eq!(
        (code, closed["outcome"].as_str()),
        (exit_codes::CLOSED, Some("closed"))
    );

    let window = campaign_file(
        r#"
campaign: windows
starts_at: 2099-01-01T00:00:00Z
items:
  - { id: "1", name: x, price: "1", stock: 1 }
"#,
    );
    seckill(&window.path, &server.url())
        .arg("preheat")
        .assert()
        .success();
    seckill(&window.path, &server.url())
        .args(["buy", "--item", "1", "--user", "u"])
        .assert()
        .code(exit_codes::NOT_STARTED);

    let ended_at = (chrono::Utc::now() - chrono::Duration::minutes(1)).to_rfc3339();
    let ended = campaign_file(&format!(
        "campaign: ended\nends_at: {ended_at}\nitems:\n  - {{ id: \"1\", name: x, price: \"1\", stock: 1 }}\n"
    ));
    seckill(&ended.path, &server.url())
        .arg("preheat")
        .assert()
        .success();
    seckill(&ended.path, &server.url())
        .args(["buy", "--item", "1", "--user", "u"])
        .assert()
        .code(exit_codes::ENDED);
}

#[test]
fn usage_errors_exit_2_with_a_reason() {
    let server = RedisServer::start();
    let file = campaign_file(MOUTAI);
    let cases: &[(&[&str], &str)] = &[
        (
            &["buy", "--item", "nope", "--user", "u"],
            "has no item \"nope\" (items: 1001, 1002)",
        ),
        (
            &["buy", "--item", "1001", "--user", "u", "--qty", "2"],
            "more than per_user_limit 1",
        ),
        (
            &["buy", "--item", "1001", "--user", ""],
            "--user \"\" must be 1..128 bytes",
        ),
        (
            &["buy", "--item", "1001", "--user", "u", "--qty", "0"],
            "0 is not in 1..=10000",
        ),
        (&["buy", "--item", "1001"], "--user <UID>"),
        (&["shutdown-switch", "sideways"], "invalid value 'sideways'"),
        (
            &["preheat", "--connect-timeout", "soon"],
            "invalid value 'soon'",
        ),
        (&["frobnicate"], "unrecognized subcommand"),
    ];
    for (args, expected) in cases {
        let output = seckill(&file.path, &server.url())
            .args(*args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(exit_codes::USAGE_ERROR),
            "{args:?}: {stderr}"
        );
        assert!(
            stderr.contains(expected),
            "{args:?}: expected {expected:?} in {stderr}"
        );
    }
}

#[test]
fn preheat_never_clobbers_and_twice_changes_nothing() {
    let server = RedisServer::start();
    let file = campaign_file(MOUTAI);
    let preheat = |extra: &[&str]| {
        let mut cmd = seckill(&file.path, &server.url());
        cmd.args(["preheat", "--format", "json"]).args(extra);
        let (code, out) = run(&mut cmd);
        assert_eq!(code, 0, "{out}");
        out["items"].as_array().unwrap().clone()
    };
    let dry = preheat(&["--dry-run"]);
    assert_eq!(dry[0]["status"], "loaded");
    assert_eq!(
        dry[0]["redis_stock_after"],
        serde_json::Value::Null,
        "dry run wrote nothing"
    );
    let mut conn = server.conn();
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut conn).unwrap();
    assert!(keys.is_empty(), "dry run wrote {keys:?}");

    let first = preheat(&[]);
    assert_eq!(first[0]["status"], "loaded");
    assert_eq!(first[0]["redis_stock_after"], 2);
    let second = preheat(&[]);
    assert_eq!(second[0]["status"], "kept");
    assert_eq!(second[1]["status"], "kept");

    // Stock changed in Redis (a sale) and the file edited: kept, both numbers reported.
    seckill(&file.path, &server.url())
        .args(["buy", "--item", "1001", "--user", "u1"])
        .assert()
        .success();
    let bigger = campaign_file(&MOUTAI.replace("stock: 2 }", "stock: 50 }"));
    let mut cmd = seckill(&bigger.path, &server.url());
    let (_, kept) = run(cmd.args(["preheat", "--format", "json"]));
    assert_eq!(kept["items"][0]["status"], "kept");
    assert_eq!(kept["items"][0]["redis_stock_before"], 1);
    assert_eq!(kept["items"][0]["file_stock"], 50);
    let table = seckill(&bigger.path, &server.url())
        .arg("preheat")
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&table.stdout);
    // The item has sales: --force would be refused, so it is not offered.
    assert!(
        table.contains("kept (Redis has 1, file says 50; the item has sales: `init --yes`"),
        "{table}"
    );

    // --force refuses an item that has sales, overwrites one that has none.
    let mut cmd = seckill(&bigger.path, &server.url());
    let (_, forced) = run(cmd.args(["preheat", "--force", "--format", "json"]));
    assert_eq!(forced["items"][0]["status"], "has_sales");
    assert_eq!(forced["items"][0]["redis_stock_after"], 1);
    assert_eq!(forced["items"][1]["status"], "overwritten");
}

#[test]
fn init_resets_but_refuses_to_erase_sales_without_yes() {
    let server = RedisServer::start();
    let file = campaign_file(MOUTAI);
    seckill(&file.path, &server.url())
        .arg("init")
        .assert()
        .success();
    seckill(&file.path, &server.url())
        .args(["buy", "--item", "1001", "--user", "u1"])
        .assert()
        .success();
    seckill(&file.path, &server.url())
        .args(["shutdown-switch", "on"])
        .assert()
        .success();
    let output = seckill(&file.path, &server.url())
        .arg("init")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(exit_codes::USAGE_ERROR));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("already has sales on 1001 (1 buyers, 1 orders): pass --yes"),
        "{stderr}"
    );

    let mut cmd = seckill(&file.path, &server.url());
    let (code, out) = run(cmd.args(["init", "--yes", "--format", "json"]));
    assert_eq!(code, 0);
    assert_eq!(out["items"][0]["stock"], 2);
    assert!(
        out["items"][0]["keys_deleted"].as_u64().unwrap() >= 5,
        "{out}"
    );
    // Fresh state: switch off, stock back, the same user may buy again.
    seckill(&file.path, &server.url())
        .args(["buy", "--item", "1001", "--user", "u1"])
        .assert()
        .success();
}

#[test]
fn shutdown_switch_status_shows_state_reason_and_stock() {
    let server = RedisServer::start();
    let file = campaign_file(MOUTAI);
    seckill(&file.path, &server.url())
        .arg("preheat")
        .assert()
        .success();
    seckill(&file.path, &server.url())
        .args(["shutdown-switch", "on", "--reason", "payment system down"])
        .assert()
        .success();
    let mut cmd = seckill(&file.path, &server.url());
    let (code, status) = run(cmd.args(["shutdown-switch", "status", "--format", "json"]));
    assert_eq!(code, 0);
    for item in status["items"].as_array().unwrap() {
        assert_eq!(item["closed"], true);
        assert_eq!(item["reason"], "payment system down");
        assert!(item["switched_at"].as_str().unwrap().ends_with('Z'));
    }
    assert_eq!(status["items"][1]["stock_left"], 5);
    seckill(&file.path, &server.url())
        .args(["shutdown-switch", "off", "--item", "1002"])
        .assert()
        .success();
    let table = seckill(&file.path, &server.url())
        .args(["shutdown-switch", "status"])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&table.stdout);
    // "off" never claims the sale is open: the window says that, on the Redis clock.
    assert!(
        table.contains("ON (closed)")
            && table.contains("┆ off ")
            && table.contains("open (no end)"),
        "{table}"
    );
}

#[test]
fn redis_down_is_a_runtime_error_naming_the_host_not_the_password() {
    let file = campaign_file(MOUTAI);
    let port = support::free_port();
    let url = format!("redis://admin:hunter2@127.0.0.1:{port}/0");
    let output = seckill(&file.path, &url)
        .args(["buy", "--item", "1001", "--user", "u"])
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(exit_codes::RUNTIME_ERROR),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("cannot connect to Redis at 127.0.0.1:{port}")),
        "{stderr}"
    );
    assert!(stderr.contains("refused"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");
}

#[test]
fn a_server_that_never_answers_times_out_instead_of_hanging() {
    let file = campaign_file(MOUTAI);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Accept connections and read forever without replying.
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut sink = [0u8; 1024];
                while matches!(stream.read(&mut sink), Ok(n) if n > 0) {}
            });
        }
    });
    let output = seckill(&file.path, &format!("redis://127.0.0.1:{port}/0"))
        .args(["--response-timeout", "300ms", "--connect-timeout", "300ms"])
        .args(["buy", "--item", "1001", "--user", "u"])
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(exit_codes::RUNTIME_ERROR),
        "{stderr}"
    );
    assert!(stderr.contains(&format!("127.0.0.1:{port}")), "{stderr}");
}

#[test]
fn flags_work_before_or_after_the_subcommand() {
    let server = RedisServer::start();
    let file = campaign_file(MOUTAI);
    let output = assert_cmd::Command::cargo_bin("seckill")
        .unwrap()
        .env_remove("SECKILL_REDIS_URL")
        .args([
            "--format",
            "json",
            "preheat",
            "--redis",
            &server.url(),
            "-c",
        ])
        .arg(&file.path)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(json(&output)["items"][0]["item"], "1001");
}

#[test]
fn help_never_shows_the_passwords_in_the_environment() {
    for sub in ["buy", "consume", "reconcile", "loadtest"] {
        let output = assert_cmd::Command::cargo_bin("seckill")
            .unwrap()
            .env("SECKILL_REDIS_URL", "redis://u:redis-secret@h:1/0")
            .env("SECKILL_ORDERS_DB", "mysql://app:db-secret@db:3306/x")
            .args([sub, "--help"])
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success());
        assert!(help.contains("SECKILL_REDIS_URL"), "{help}");
        assert!(
            !help.contains("redis-secret") && !help.contains("db-secret"),
            "{sub}: {help}"
        );
    }
}

#[test]
fn preheat_refuses_to_reload_stock_that_has_already_been_sold() {
    let server = RedisServer::start();
    let file = campaign_file(MOUTAI);
    seckill(&file.path, &server.url())
        .arg("preheat")
        .assert()
        .success();
    for user in ["a", "b"] {
        seckill(&file.path, &server.url())
            .args(["buy", "--item", "1001", "--user", user])
            .assert()
            .success();
    }
    // The stock key vanishes (evicted, deleted by hand); the sales remain.
    let mut conn = server.conn();
    let () = redis::cmd("DEL")
        .arg("seckill:{moutai-test:1001}:stock")
        .query(&mut conn)
        .unwrap();
    let output = seckill(&file.path, &server.url())
        .args(["preheat", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(exit_codes::PREHEAT_REFUSED));
    let report = json(&output);
    assert_eq!(report["items"][0]["status"], "stock_missing");
    assert_eq!(report["items"][1]["status"], "kept");
    assert!(String::from_utf8_lossy(&output.stderr).contains("refused item(s) 1001"));
    let stock: Option<i64> = redis::cmd("GET")
        .arg("seckill:{moutai-test:1001}:stock")
        .query(&mut conn)
        .unwrap();
    assert_eq!(stock, None, "nothing written");
    seckill(&file.path, &server.url())
        .args(["buy", "--item", "1001", "--user", "c"])
        .assert()
        .code(exit_codes::NOT_PREHEATED);
}

#[test]
fn update_meta_extends_a_live_sale_without_touching_its_stock() {
    let server = RedisServer::start();
    let item = "items:\n  - { id: \"1\", name: x, price: \"1\", stock: 5 }\n";
    let ended_at = (chrono::Utc::now() - chrono::Duration::minutes(1)).to_rfc3339();
    let ended = campaign_file(&format!("campaign: extend\nends_at: {ended_at}\n{item}"));
    seckill(&ended.path, &server.url())
        .arg("preheat")
        .assert()
        .success();
    let buy = |file: &support::CampaignFile, user: &str| {
        seckill(&file.path, &server.url())
            .args(["buy", "--item", "1", "--user", user])
            .output()
            .unwrap()
            .status
            .code()
    };
    assert_eq!(buy(&ended, "a"), Some(exit_codes::ENDED));

    let later = (chrono::Utc::now() + chrono::Duration::hours(2)).to_rfc3339();
    let extended = campaign_file(&format!("campaign: extend\nends_at: {later}\n{item}"));
    let mut cmd = seckill(&extended.path, &server.url());
    let (_, plain) = run(cmd.args(["preheat", "--format", "json"]));
    assert_eq!(
        plain["items"][0]["status"], "kept",
        "a plain preheat changes nothing"
    );
    assert_eq!(buy(&extended, "a"), Some(exit_codes::ENDED));

    let mut cmd = seckill(&extended.path, &server.url());
    let (code, updated) = run(cmd.args(["preheat", "--update-meta", "--format", "json"]));
    assert_eq!(code, 0);
    assert_eq!(updated["items"][0]["status"], "meta_updated");
    assert_eq!(buy(&extended, "a"), Some(exit_codes::SUCCESS));
    let mut conn = server.conn();
    let stock: i64 = redis::cmd("GET")
        .arg("seckill:{extend:1}:stock")
        .query(&mut conn)
        .unwrap();
    assert_eq!(stock, 4, "stock was kept, then one sold");
    let ttl: i64 = redis::cmd("PTTL")
        .arg("seckill:{extend:1}:stock")
        .query(&mut conn)
        .unwrap();
    assert!(
        ttl > 2 * 3_600_000,
        "expiry follows the new ends_at + keep_after_end: {ttl}"
    );
}
