//! The binary from outside: stdout, stderr and exit status of every
//! subcommand of the core toolkit, and every documented exit code.

use crate::support;

use std::io::Read;
use std::net::TcpListener;
use std::time::Duration;

use seckill::model::exit_codes::{
    CLOSED, DUPLICATE, ENDED, NOT_PREHEATED, NOT_STARTED, PREHEAT_REFUSED, RATE_LIMITED,
    RUNTIME_ERROR, SOLD_OUT, SUCCESS, USAGE_ERROR,
};
use support::spec::{CampaignSpec, Run, campaign, seckill};
use support::{CampaignFile, RedisServer};

/// Two items (2 and 5 units), one per user, 4 requests an hour; with
/// `stock_1001` units of the first.
fn moutai(stock_1001: i64) -> CampaignSpec {
    campaign("moutai-test")
        .per_user_limit(1)
        .rate_limit("1h", 4)
        .item("1001", stock_1001)
        .named("飞天茅台")
        .price("1499.00")
        .item("1002", 5)
        .named("小茅")
        .price("99.9")
        .orders_store(None)
}

/// `seckill ARGS` on `file` against `server`.
fn on(file: &CampaignFile, server: &RedisServer, args: &[&str]) -> Run {
    seckill(args).campaign(file).redis(server)
}

/// Longest a command may take before the test calls it a hang.
const HANG: Duration = Duration::from_secs(30);

#[test]
fn every_buy_outcome_has_its_exit_code() {
    let server = RedisServer::start();
    let file = moutai(2).write();
    let buy = |user: &str, code: i32| {
        on(&file, &server, &["buy", "--item", "1001", "--user", user])
            .json()
            .fails_with(code)
            .json()
    };
    let out = buy("early", NOT_PREHEATED);
    assert_eq!(out["outcome"], "not_preheated");

    on(&file, &server, &["preheat"]).succeeds();
    let first = buy("alice", SUCCESS);
    assert_eq!(first["outcome"], "ok");
    assert_eq!(first["stock_left"], 1);
    let dup = buy("alice", DUPLICATE);
    assert_eq!(dup["outcome"], "duplicate");
    assert_eq!(
        dup["order_id"], first["order_id"],
        "duplicate names the existing order"
    );
    for _ in 0..2 {
        on(
            &file,
            &server,
            &["buy", "--item", "1001", "--user", "alice"],
        )
        .json()
        .runs()
        .json();
    }
    buy("alice", RATE_LIMITED);
    buy("bob", SUCCESS);
    let sold = buy("carol", SOLD_OUT);
    assert_eq!(sold["stock_left"], 0);

    on(
        &file,
        &server,
        &[
            "shutdown-switch",
            "on",
            "--item",
            "1002",
            "--reason",
            "rehearsal",
        ],
    )
    .succeeds();
    let closed = on(&file, &server, &["buy", "--item", "1002", "--user", "dave"])
        .json()
        .fails_with(CLOSED)
        .json();
    assert_eq!(closed["outcome"], "closed");

    let window = campaign("windows")
        .starts_in(3600)
        .item("1", 1)
        .named("x")
        .orders_store(None)
        .write();
    on(&window, &server, &["preheat"]).succeeds();
    on(&window, &server, &["buy", "--item", "1", "--user", "u"]).fails_with(NOT_STARTED);

    let ended = campaign("ended")
        .ends_in(-60)
        .item("1", 1)
        .named("x")
        .orders_store(None)
        .write();
    on(&ended, &server, &["preheat"]).succeeds();
    on(&ended, &server, &["buy", "--item", "1", "--user", "u"]).fails_with(ENDED);
}

#[test]
fn usage_errors_exit_2_with_a_reason() {
    let server = RedisServer::start();
    let file = moutai(2).write();
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
        let stderr = on(&file, &server, args).fails_with(USAGE_ERROR).stderr();
        assert!(
            stderr.contains(expected),
            "{args:?}: expected {expected:?} in {stderr}"
        );
    }
}

#[test]
fn preheat_never_clobbers_and_twice_changes_nothing() {
    let server = RedisServer::start();
    let file = moutai(2).write();
    let preheat = |extra: &[&str]| {
        on(&file, &server, &["preheat"])
            .args(extra)
            .json()
            .succeeds()
            .json()["items"]
            .as_array()
            .unwrap()
            .clone()
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
    on(&file, &server, &["buy", "--item", "1001", "--user", "u1"]).succeeds();
    let bigger = moutai(50).write();
    let kept = on(&bigger, &server, &["preheat"]).json().runs().json();
    assert_eq!(kept["items"][0]["status"], "kept");
    assert_eq!(kept["items"][0]["redis_stock_before"], 1);
    assert_eq!(kept["items"][0]["file_stock"], 50);
    let table = on(&bigger, &server, &["preheat"]).runs().stdout();
    // The item has sales: --force would be refused, so it is not offered.
    assert!(
        table.contains("2 → 50")
            && table.contains("have sales; `init --yes`")
            && !table.contains("`preheat --force`"),
        "{table}"
    );

    // --force refuses an item that has sales, overwrites one that has none.
    let forced = on(&bigger, &server, &["preheat", "--force"])
        .json()
        .runs()
        .json();
    assert_eq!(forced["items"][0]["status"], "has_sales");
    assert_eq!(forced["items"][0]["redis_stock_after"], 1);
    assert_eq!(forced["items"][1]["status"], "overwritten");
}

#[test]
fn init_resets_but_refuses_to_erase_sales_without_yes() {
    let server = RedisServer::start();
    let file = moutai(2).write();
    on(&file, &server, &["init"]).succeeds();
    on(&file, &server, &["buy", "--item", "1001", "--user", "u1"]).succeeds();
    on(&file, &server, &["shutdown-switch", "on"]).succeeds();
    let stderr = on(&file, &server, &["init"])
        .fails_with(USAGE_ERROR)
        .stderr();
    assert!(
        stderr.contains("already has sales on 1001 (1 buyers, 1 orders): pass --yes"),
        "{stderr}"
    );

    // Closed, its order is still not stored: the campaign id is typed
    // (`--yes` alone refuses to delete it, issue 25 item 39).
    on(&file, &server, &["init", "--yes"]).fails_with(USAGE_ERROR);
    let out = on(
        &file,
        &server,
        &["init", "--yes", "--purge-orders", "moutai-test"],
    )
    .json()
    .succeeds()
    .json();
    assert_eq!(out["items"][0]["stock"], 2);
    assert!(
        out["items"][0]["keys_deleted"].as_u64().unwrap() >= 5,
        "{out}"
    );
    // Fresh state: switch off, stock back, the same user may buy again.
    on(&file, &server, &["buy", "--item", "1001", "--user", "u1"]).succeeds();
}

#[test]
fn shutdown_switch_status_shows_state_reason_and_stock() {
    let server = RedisServer::start();
    let file = moutai(2).write();
    on(&file, &server, &["preheat"]).succeeds();
    on(
        &file,
        &server,
        &["shutdown-switch", "on", "--reason", "payment system down"],
    )
    .succeeds();
    let status = on(&file, &server, &["shutdown-switch", "status"])
        .json()
        .succeeds()
        .json();
    for item in status["items"].as_array().unwrap() {
        assert_eq!(item["closed"], true);
        assert_eq!(item["reason"], "payment system down");
        assert!(item["switched_at"].as_str().unwrap().ends_with('Z'));
    }
    assert_eq!(status["items"][1]["stock_left"], 5);
    on(
        &file,
        &server,
        &["shutdown-switch", "off", "--item", "1002"],
    )
    .succeeds();
    let table = on(&file, &server, &["shutdown-switch", "status"])
        .runs()
        .stdout();
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
    let file = moutai(2).write();
    let port = support::free_port();
    let url = format!("redis://admin:hunter2@127.0.0.1:{port}/0");
    let stderr = seckill(&["buy", "--item", "1001", "--user", "u"])
        .campaign(&file)
        .redis_url(&url)
        .fails_with_within(RUNTIME_ERROR, HANG)
        .stderr();
    assert!(
        stderr.contains(&format!("cannot connect to Redis at 127.0.0.1:{port}")),
        "{stderr}"
    );
    assert!(stderr.contains("refused"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");
}

#[test]
fn a_server_that_never_answers_times_out_instead_of_hanging() {
    let file = moutai(2).write();
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
    let stderr = seckill(&["--response-timeout", "300ms", "--connect-timeout", "300ms"])
        .args(&["buy", "--item", "1001", "--user", "u"])
        .campaign(&file)
        .redis_url(&format!("redis://127.0.0.1:{port}/0"))
        .fails_with_within(RUNTIME_ERROR, HANG)
        .stderr();
    assert!(stderr.contains(&format!("127.0.0.1:{port}")), "{stderr}");
}

#[test]
fn flags_work_before_or_after_the_subcommand() {
    let server = RedisServer::start();
    let file = moutai(2).write();
    let report = seckill(&[
        "--format",
        "json",
        "preheat",
        "--redis",
        &server.url(),
        "-c",
        file.path.to_str().unwrap(),
    ])
    .succeeds()
    .json();
    assert_eq!(report["items"][0]["item"], "1001");
}

#[test]
fn help_never_shows_the_passwords_in_the_environment() {
    for sub in ["buy", "consume", "reconcile", "loadtest"] {
        let help = seckill(&[sub, "--help"])
            .redis_url("redis://u:redis-secret@h:1/0")
            .env("SECKILL_ORDERS_DB", "mysql://app:db-secret@db:3306/x")
            .succeeds()
            .stdout();
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
    let file = moutai(2).write();
    on(&file, &server, &["preheat"]).succeeds();
    for user in ["a", "b"] {
        on(&file, &server, &["buy", "--item", "1001", "--user", user]).succeeds();
    }
    // The stock key vanishes (evicted, deleted by hand); the sales remain.
    let mut conn = server.conn();
    let () = redis::cmd("DEL")
        .arg("seckill:{moutai-test:1001}:stock")
        .query(&mut conn)
        .unwrap();
    let refused = on(&file, &server, &["preheat"])
        .json()
        .fails_with(PREHEAT_REFUSED);
    let report = refused.json();
    assert_eq!(report["items"][0]["status"], "stock_missing");
    assert_eq!(report["items"][1]["status"], "kept");
    assert!(refused.stderr().contains("refused item(s) 1001"));
    let stock: Option<i64> = redis::cmd("GET")
        .arg("seckill:{moutai-test:1001}:stock")
        .query(&mut conn)
        .unwrap();
    assert_eq!(stock, None, "nothing written");
    on(&file, &server, &["buy", "--item", "1001", "--user", "c"]).fails_with(NOT_PREHEATED);
}

#[test]
fn update_meta_extends_a_live_sale_without_touching_its_stock() {
    let server = RedisServer::start();
    // keep_after_end as the default of a file that does not say (1h).
    let extend = |ends_in: i64| {
        campaign("extend")
            .ends_in(ends_in)
            .keep_after_end("1h")
            .item("1", 5)
            .named("x")
            .orders_store(None)
            .write()
    };
    let ended = extend(-60);
    on(&ended, &server, &["preheat"]).succeeds();
    let buy = |file: &CampaignFile, code: i32| {
        on(file, &server, &["buy", "--item", "1", "--user", "a"]).fails_with(code);
    };
    buy(&ended, ENDED);

    let extended = extend(2 * 3600);
    let plain = on(&extended, &server, &["preheat"]).json().runs().json();
    assert_eq!(
        plain["items"][0]["status"], "kept",
        "a plain preheat changes nothing"
    );
    buy(&extended, ENDED);

    let updated = on(&extended, &server, &["preheat", "--update-meta"])
        .json()
        .succeeds()
        .json();
    assert_eq!(updated["items"][0]["status"], "meta_updated");
    buy(&extended, SUCCESS);
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
