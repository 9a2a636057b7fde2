//! The one output path from outside: the JSON envelope (also when a command
//! fails), a closed stdout, the `seckill: error:` voice, and tables that fit
//! an 80-column terminal without cutting an id in two.

use crate::support::spec::{campaign, seckill};
use crate::support::{CampaignFile, RedisServer, free_port};

use seckill::model::exit_codes;

/// Long names (and, below, a long reason), so every table has something to wrap.
fn sale() -> CampaignFile {
    campaign("fit-80-columns-launch")
        .per_user_limit(1)
        .item("1001", 3)
        .named("53度飞天茅台 500ml 酱香型白酒 礼盒装")
        .price("1499.00")
        .item("max-1t-gold-2026", 2)
        .named("iPhone 17 Pro Max 1TB Desert Gold limited edition")
        .price("9999")
        .orders_store(None)
        .write()
}

#[test]
fn reconcile_against_a_redis_that_is_down_still_prints_the_envelope_and_exits_1() {
    let file = sale();
    let down = format!("redis://127.0.0.1:{}/0", free_port());
    let ran = seckill(&["reconcile"])
        .campaign(&file)
        .redis_url(&down)
        .json()
        .fails_with(exit_codes::RUNTIME_ERROR);
    let envelope = ran.json();
    assert_eq!(envelope["command"], "reconcile");
    assert_eq!(envelope["campaign"], "fit-80-columns-launch");
    assert_eq!(envelope["error"]["kind"], "runtime_error");
    let message = envelope["error"]["message"].as_str().unwrap();
    assert!(message.contains("cannot connect to Redis"), "{message}");
    // One voice on stderr, the cause said once.
    let stderr = ran.stderr();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("seckill: error: cannot connect"),
        "{stderr}"
    );
    assert!(
        !message.contains("refused: Connection refused"),
        "{message}"
    );
}

#[test]
fn a_usage_error_under_json_is_an_envelope_too() {
    let file = sale();
    let envelope = seckill(&["buy", "--item", "nope", "--user", "u1"])
        .campaign(&file)
        .redis_url("redis://127.0.0.1:1/0")
        .json()
        .fails_with(exit_codes::USAGE_ERROR)
        .json();
    assert_eq!(envelope["error"]["kind"], "usage_error");
    assert_eq!(envelope["redis"], serde_json::Value::Null);
    // A flag the command line parser refuses gets one as well.
    let refused = seckill(&["reconcile", "--bogus"])
        .campaign(&file)
        .json()
        .fails_with(exit_codes::USAGE_ERROR)
        .json();
    assert_eq!(refused["command"], "reconcile");
    assert_eq!(
        refused["error"]["message"],
        "unexpected argument '--bogus' found"
    );
}

#[test]
fn every_report_is_the_same_envelope() {
    let server = RedisServer::start();
    let file = sale();
    let preheat = seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .json()
        .succeeds()
        .json();
    assert_eq!(preheat["items"][1]["status"], "loaded");
    assert_eq!(preheat["error"], serde_json::Value::Null);
    let buy = seckill(&["buy", "--item", "1001", "--user", "u1"])
        .campaign(&file)
        .redis(&server)
        .json()
        .succeeds()
        .json();
    assert_eq!(
        (&buy["command"], &buy["outcome"], &buy["stock_left"]),
        (&"buy".into(), &"ok".into(), &2.into())
    );
    let again = seckill(&["buy", "--item", "1001", "--user", "u1"])
        .campaign(&file)
        .redis(&server)
        .json()
        .fails_with(exit_codes::DUPLICATE)
        .json();
    // An outcome is not an error: the exit code says duplicate, `error` is null.
    assert_eq!(again["error"], serde_json::Value::Null);
    assert_eq!(again["order_id"], buy["order_id"]);
}

#[test]
fn a_closed_stdout_ends_quietly_with_the_exit_code_it_would_have_had() {
    let server = RedisServer::start();
    let file = sale();
    let (code, stderr) = seckill(&["shutdown-switch", "status"])
        .campaign(&file)
        .redis(&server)
        .with_stdout_closed();
    assert_eq!((code, stderr.as_str()), (exit_codes::SUCCESS, ""));
    let (code, stderr) = seckill(&["buy", "--item", "1001", "--user", "u1"])
        .campaign(&file)
        .redis(&server)
        .json()
        .with_stdout_closed();
    assert_eq!((code, stderr.as_str()), (exit_codes::NOT_PREHEATED, ""));
    let (code, stderr) = seckill(&[
        "loadtest",
        "--variant",
        "v3",
        "--threads",
        "1",
        "--requests",
        "50",
        "--stock",
        "10",
    ])
    .campaign(&file)
    .redis(&server)
    .json()
    .with_stdout_closed();
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(code, exit_codes::SUCCESS, "{stderr}");
}

/// Every line of `table` fits `width`, and every token is whole on one line.
fn assert_fits(command: &str, table: &str, width: usize, tokens: &[&str]) {
    for line in table.lines() {
        let columns: usize = line
            .chars()
            .map(|c| if c > '\u{2E80}' { 2 } else { 1 })
            .sum();
        assert!(
            columns <= width,
            "{command}: a line of {columns} columns:\n{line}\n{table}"
        );
    }
    for token in tokens {
        assert!(
            table.lines().any(|line| line.contains(token)),
            "{command}: {token:?} is split or missing:\n{table}"
        );
    }
}

#[test]
fn every_table_fits_80_columns_without_splitting_an_id() {
    let server = RedisServer::start();
    let file = sale();
    let at_80 = |args: &[&str], code: i32| {
        seckill(args)
            .campaign(&file)
            .redis(&server)
            .columns(80)
            .fails_with(code)
            .stdout()
    };
    let fit = |command: &str, table: String, tokens: &[&str]| {
        assert_fits(command, &table, 80, tokens);
    };
    let preheated = at_80(&["preheat"], exit_codes::SUCCESS);
    fit("preheat", preheated, &["max-1t-gold-2026", "loaded"]);
    let kept = at_80(&["preheat"], exit_codes::SUCCESS);
    fit("preheat again", kept, &["2 items unchanged"]);
    let bought = seckill(&["buy", "--item", "max-1t-gold-2026", "--user", "u1"])
        .campaign(&file)
        .redis(&server)
        .json()
        .succeeds()
        .json();
    let order_id = bought["order_id"].as_str().unwrap().to_string();
    let request_id = "a-request-id-a-shopper-copies-to-retry-2026-11-11";
    let buy = at_80(
        &[
            "buy",
            "--item",
            "max-1t-gold-2026",
            "--user",
            "u2",
            "--request-id",
            request_id,
        ],
        exit_codes::SUCCESS,
    );
    fit("buy", buy, &[request_id, "max-1t-gold-2026"]);
    let duplicate = at_80(
        &["buy", "--item", "max-1t-gold-2026", "--user", "u1"],
        exit_codes::DUPLICATE,
    );
    fit("buy duplicate", duplicate, &[&order_id, "duplicate"]);
    let switched = at_80(
        &[
            "shutdown-switch",
            "on",
            "--reason",
            "payment gateway down since 10:02, waiting for the provider's all-clear",
        ],
        exit_codes::SUCCESS,
    );
    fit(
        "shutdown-switch",
        switched,
        &["max-1t-gold-2026", "ON (closed)"],
    );
    let status = at_80(&["shutdown-switch", "status"], exit_codes::SUCCESS);
    let stamp = status
        .split_whitespace()
        .find(|w| w.ends_with('Z') && w.contains('T'))
        .unwrap_or_else(|| panic!("no switched-at timestamp whole on a line:\n{status}"))
        .to_string();
    fit("shutdown-switch status", status, &[&stamp, "provider's"]);
    let db = format!("sqlite://{}", file.dir.path().join("orders.db").display());
    let consumed = at_80(
        &["consume", "--drain", "--orders-db", &db],
        exit_codes::SUCCESS,
    );
    fit("consume", consumed, &["max-1t-gold-2026"]);
    let claimed = at_80(
        &["pending-claim", "--min-idle", "0s", "--orders-db", &db],
        exit_codes::SUCCESS,
    );
    fit("pending-claim", claimed, &["max-1t-gold-2026"]);
    let reconciled = at_80(&["reconcile", "--orders-db", &db], exit_codes::SUCCESS);
    fit("reconcile", reconciled, &["max-1t-gold-2026", "balanced"]);
    let watched = at_80(&["status"], exit_codes::SUCCESS);
    fit("status", watched, &["max-1t-gold-2026", "orders-db:"]);
    // A sale that is selling is reset only with its id typed (`--purge-orders`).
    let reset = at_80(
        &["init", "--yes", "--purge-orders", "fit-80-columns-launch"],
        exit_codes::SUCCESS,
    );
    fit("init", reset, &["max-1t-gold-2026"]);
}

#[test]
fn a_retry_log_line_says_each_cause_once() {
    use crate::support::orders::{log_of, spawn_seckill, terminate, wait_exit, wait_until};
    let server = RedisServer::start();
    let file = sale();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let db = format!("sqlite://{}", file.dir.path().join("orders.db").display());
    let mut consumer = spawn_seckill(
        &file,
        &server.url(),
        &[],
        &["consume", "--orders-db", &db],
        "consume",
    );
    wait_until("the consumer started", || {
        log_of(&file, "consume").contains("consumer ")
    });
    drop(server);
    wait_until("two failed reads", || {
        log_of(&file, "consume").matches("retrying in").count() >= 2
    });
    terminate(&consumer);
    wait_exit(&mut consumer);
    let log = log_of(&file, "consume");
    for line in log.lines().filter(|l| l.contains("retrying in")) {
        let causes: Vec<&str> = line.split(": ").skip(2).collect();
        for pair in causes.windows(2) {
            assert!(
                !pair[0].starts_with(pair[1]) && !pair[1].starts_with(pair[0]),
                "a cause said twice:\n{line}"
            );
        }
    }
}

/// `--version --format json` is JSON, for the scripts that record which build ran a sale.
#[test]
fn the_version_is_json_when_asked() {
    let out = crate::support::spec::seckill(&["--version", "--format", "json"])
        .succeeds()
        .stdout();
    let json: serde_json::Value = serde_json::from_str(&out).expect(&out);
    assert!(
        json["version"].as_str().unwrap().starts_with("0."),
        "{json}"
    );
}
