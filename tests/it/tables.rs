//! Issue 25, item 21: the tables of `expire`, `doctor`, `acl --apply` and
//! `loadtest` (`--target`, `--variant queue`, `--buckets`) as a person
//! reads them in a real 80 × 24 terminal (tmux): every line the program
//! wrote fits 80 columns (measured before the terminal wraps it), the facts
//! that matter are on screen, and the detail is under `-v` or in JSON.

use crate::support::check_of;
use std::time::Duration;

use crate::support::serve::Serve;
use crate::support::spec::{campaign, seckill};
use crate::support::{CampaignFile, RedisServer};
use crate::terminal::Tmux;

/// Columns a line takes on a terminal: CJK ideographs and full-width forms two.
fn columns(line: &str) -> usize {
    line.chars()
        .map(|c| match u32::from(c) {
            0x1100..=0x115F
            | 0x2E80..=0xA4CF
            | 0xAC00..=0xD7A3
            | 0xF900..=0xFAFF
            | 0xFE30..=0xFE4F
            | 0xFF00..=0xFF60
            | 0xFFE0..=0xFFE6 => 2,
            _ => 1,
        })
        .sum()
}

/// Run `args` in an 80 × 24 terminal until it exits with `code`; the lines
/// it wrote (each checked to fit 80 columns), without the exit marker.
fn at_80x24(file: &CampaignFile, redis_url: &str, args: &[&str], code: i32) -> Vec<String> {
    let term = Tmux::run(file, redis_url, args);
    let screen = term.until("the command ends", |s| s.contains("EXITED "));
    let written = term.as_written();
    assert!(
        written.contains(&format!("EXITED {code}")),
        "`{}` exits {code}:\n{screen}",
        args.join(" ")
    );
    let lines: Vec<String> = written
        .lines()
        .take_while(|l| !l.starts_with("EXITED "))
        .map(|l| l.trim_end().to_string())
        .collect();
    for line in &lines {
        assert!(
            columns(line) <= 80,
            "`{}`: a line of {} columns:\n{line}\n\n{}",
            args.join(" "),
            columns(line),
            lines.join("\n")
        );
    }
    lines
}

/// The line starting with `start` (a row of a list).
fn row<'a>(lines: &'a [String], start: &str) -> &'a str {
    lines
        .iter()
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no line starting {start:?}:\n{}", lines.join("\n")))
}

/// Whether `lines` say `text`, however they are wrapped.
fn says(lines: &[String], text: &str) -> bool {
    let all = lines.join(" ");
    words(&all).join(" ").contains(&words(text).join(" "))
}

/// The words of a line.
fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// Before: 91 columns (`not released (no stock key)`). Now ITEM and four
/// figures, right-aligned; the long item id whole.
#[test]
fn expire_fits_80_columns() {
    let server = RedisServer::start();
    let file = campaign("tables-expire")
        .payment_timeout("1s")
        .item("1001", 5)
        .item("max-1t-gold-2026-desert-edition", 5)
        .write();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    for (item, user) in [
        ("1001", "a"),
        ("1001", "b"),
        ("max-1t-gold-2026-desert-edition", "c"),
    ] {
        seckill(&["buy", "--item", item, "--user", user])
            .campaign(&file)
            .redis(&server)
            .succeeds();
    }
    std::thread::sleep(Duration::from_millis(1500));
    let lines = at_80x24(&file, &server.url(), &["expire"], 0);
    assert_eq!(
        words(row(&lines, "ITEM")),
        ["ITEM", "RELEASED", "UNITS", "CALLS", "STUCK"]
    );
    assert_eq!(words(row(&lines, "1001 ")), ["1001", "2", "2", "1", "0"]);
    let long = row(&lines, "max-1t-gold-2026-desert-edition ");
    assert_eq!(words(long)[1..], ["1", "1", "1", "0"]);
    // Figures end under their header's end.
    let header = row(&lines, "ITEM");
    assert_eq!(
        long.find(" 1 ").map(|at| at + 1),
        header.find("RELEASED").map(|at| at + "RELEASED".len() - 1),
        "{}",
        lines.join("\n")
    );
    assert!(
        says(&lines, "STUCK: due but not released (no stock key)"),
        "the short headers are explained: {}",
        lines.join("\n")
    );
}

/// A password file for `role` beside the campaign file.
fn password(file: &CampaignFile, role: &str) -> String {
    let path = file.dir.path().join(format!("{role}.pw"));
    std::fs::write(&path, format!("{role}-password\n")).unwrap();
    path.display().to_string()
}

/// Before: a 92–100-column proof table of 40–90 rows per role. Now per role
/// a line of totals and a line of what was proven; every check under -v.
#[test]
fn acl_apply_is_a_summary_per_role_and_every_check_under_v() {
    let server = RedisServer::start();
    let file = campaign("tables-acl")
        .payment_timeout("1h")
        .item("1", 10)
        .write();
    for role in ["buyer", "consumer", "operator"] {
        let pw = password(&file, role);
        let args = ["acl", "--role", role, "--password-file", &pw, "--apply"];
        let report = seckill(&args)
            .campaign(&file)
            .redis(&server)
            .json()
            .succeeds()
            .json();
        let checks = report["users"][0]["checks"].as_array().unwrap().len();
        let lines = at_80x24(&file, &server.url(), &args, 0);
        let said = lines.join("\n");
        assert!(
            lines.len() <= 6,
            "{role}: a summary of a few lines:\n{said}"
        );
        let total = format!("seckill-{role} written on 127.0.0.1:{}: ", server.port);
        assert!(
            row(&lines, &total).ends_with(&format!("{checks} of {checks} checks as expected")),
            "{said}"
        );
        assert!(
            row(&lines, &format!("  {role}: allowed ")).contains(" commands, "),
            "{said}"
        );
        assert!(!said.contains("WRONG"), "{said}");
        assert!(said.contains("add -v, or --format json"), "{said}");
        if role == "buyer" {
            let mut verbose = args.to_vec();
            // The trace -v writes on stderr is not the table.
            verbose.extend(["-v", "2>/dev/null"]);
            let lines = at_80x24(&file, &server.url(), &verbose, 0);
            assert_eq!(
                words(row(&lines, "command HSCAN :buyers ")),
                ["command", "HSCAN", ":buyers", "allowed", "ok", "allowed"]
            );
            assert!(
                row(&lines, "script pay ").contains(" denied "),
                "{}",
                lines.join("\n")
            );
        }
    }
}

/// A standalone Redis as the guide sets it up: AOF always, maxmemory,
/// noeviction, and a replica set the same way, the operator's user on both.
fn healthy_standalone() -> (RedisServer, RedisServer) {
    let durable = [
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--maxmemory",
        "256mb",
    ];
    let master = RedisServer::start_with(&durable);
    let port = master.port.to_string();
    let mut replica_args = vec!["--replicaof", "127.0.0.1", &port];
    replica_args.extend(durable);
    let replica = RedisServer::start_with(&replica_args);
    crate::support::orders::wait_until("the replica is online", || {
        let info: String = redis::cmd("INFO")
            .arg("replication")
            .query(&mut master.conn())
            .unwrap();
        info.contains("state=online")
    });
    (master, replica)
}

/// Before: 50–60 lines (details wrapped in a boxed table, a cell listing
/// every stream key). Now one line per check; a healthy standalone sale's
/// whole verdict fits one 80 × 24 screen; `-v` and JSON keep every detail.
#[test]
fn doctor_is_one_line_per_check_and_fits_one_screen_when_healthy() {
    let (master, replica) = healthy_standalone();
    let file = campaign("tables-doctor")
        .starts_in(3600)
        .ends_in(7200)
        .keep_after_end("26h")
        .item("1", 100)
        .named("53度飞天茅台 500ml 酱香型白酒 礼盒装 the long edition")
        .item("2", 800)
        .buckets(8)
        .write();
    let pw = password(&file, "operator");
    for server in [&master, &replica] {
        seckill(&[
            "acl",
            "--role",
            "operator",
            "--password-file",
            &pw,
            "--apply",
        ])
        .campaign(&file)
        .redis(server)
        .succeeds();
    }
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&master)
        .succeeds();
    // The order database's schema, as consume creates it on its first start.
    seckill(&["consume", "--drain"])
        .campaign(&file)
        .redis(&master)
        .succeeds();
    let args = ["doctor", "--user", "seckill-operator"];
    let report = seckill(&args)
        .campaign(&file)
        .redis(&master)
        .json()
        .succeeds()
        .json();
    let checks = report["checks"].as_array().unwrap();
    let lines = at_80x24(&file, &master.url(), &args, 0);
    let said = lines.join("\n");
    assert!(lines.len() <= 24, "{} lines:\n{said}", lines.len());
    assert!(
        said.contains("GO: nothing found that would wreck the sale"),
        "{said}"
    );
    assert_eq!(words(row(&lines, "CHECK ")), ["CHECK", "VERDICT", "SEEN"]);
    for check in checks {
        let name = check["check"].as_str().unwrap();
        let verdict = check["verdict"].as_str().unwrap();
        assert_eq!(verdict, "ok", "{name} in a healthy sale: {report}");
        assert_eq!(
            lines
                .iter()
                .filter(|l| l.starts_with(&format!("{name} ")))
                .count(),
            1,
            "one line for {name}:\n{said}"
        );
    }
    // Nine order streams (a plain item, eight buckets): summed up.
    assert_eq!(
        words(row(&lines, "consumer_group "))[1..],
        ["ok", "9", "streams,", "group", "ok"],
        "{said}"
    );
    let (_, listed) = check_of(&report, "consumer_group");
    assert_eq!(listed, "9 stream(s) have the orders-db group", "{report}");
    // -v: every detail whole, wrapped under its column.
    let mut verbose = args.to_vec();
    // The trace -v writes on stderr is not the table.
    verbose.extend(["-v", "2>/dev/null"]);
    let lines = at_80x24(&file, &master.url(), &verbose, 0);
    let said = lines.join(" ");
    // (Memory, lags, clocks and countdowns move between two runs.)
    let steady = checks.iter().filter(|c| {
        !["memory", "replicas", "clock", "window"].contains(&c["check"].as_str().unwrap())
    });
    for check in steady {
        let detail = check["detail"].as_str().unwrap();
        let detail: Vec<&str> = detail.split_whitespace().collect();
        assert!(
            words(&said)
                .windows(detail.len())
                .any(|w| w == detail.as_slice()),
            "{detail:?} whole under -v:\n{}",
            lines.join("\n")
        );
    }
}

/// A problem the table had to cut is spelled out in full below it, with
/// what to do.
#[test]
fn doctor_spells_out_each_problem_below_the_table() {
    let server = RedisServer::start();
    let file = campaign("tables-doctor-no-go").item("1", 10).write();
    let lines = at_80x24(&file, &server.url(), &["doctor"], 8);
    let said = lines.join("\n");
    assert!(
        said.starts_with("Redis ") || said.contains("NO-GO"),
        "{said}"
    );
    let persistence = row(&lines, "persistence ");
    assert_eq!(words(persistence)[1], "FAIL", "{said}");
    assert!(
        says(
            &lines,
            "FAIL persistence: set appendonly yes and appendfsync always"
        ),
        "{said}"
    );
    // Not preheated: the group is missing on the item's stream, named in full.
    assert_eq!(
        words(row(&lines, "consumer_group "))[1..],
        ["WARN", "no", "group", "yet", "on", "1", "of", "1", "stream"],
        "{said}"
    );
    assert!(
        says(
            &lines,
            "consumer_group: no consumer group yet on 1 (seckill:{tables-doctor-no-go:1}:orders)"
        ),
        "{said}"
    );
}

/// Before: 88–91 columns (`--target`: the latency cell), 97 (`--variant
/// queue`), 82 (`--buckets`: the per-bucket table). Now a record of
/// `label  value` lines and lists whose figures stay whole.
#[test]
fn loadtest_reports_fit_80_columns() {
    let server = RedisServer::start();
    let file = campaign("tables-loadtest-target-with-a-long-campaign-id")
        .item("1001", 200)
        .write();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let serve = Serve::start(&file, &server.url(), false, &[]);
    let target = format!("http://{}", serve.addr);
    let lines = at_80x24(
        &file,
        &server.url(),
        &[
            "loadtest",
            "--target",
            &target,
            "--rehearsal",
            "--requests",
            "600",
            "--connections",
            "8",
            "--rate",
            "2000",
        ],
        0,
    );
    let said = lines.join("\n");
    assert_eq!(
        words(row(&lines, "succeeded ")),
        ["succeeded", "200"],
        "{said}"
    );
    assert_eq!(
        words(row(&lines, "sold out ")),
        ["sold", "out", "400"],
        "{said}"
    );
    assert_eq!(
        words(row(&lines, "HTTP statuses ")),
        ["HTTP", "statuses", "200", "200,", "410", "400"],
        "{said}"
    );
    assert_eq!(
        words(row(&lines, "LATENCY ms ")),
        ["LATENCY", "ms", "P50", "P90", "P99", "P99.9", "MAX"],
        "{said}"
    );
    assert_eq!(words(row(&lines, "corrected ")).len(), 6, "{said}");
    assert_eq!(words(row(&lines, "service ")).len(), 6, "{said}");
    drop(serve);

    let rehearsal = RedisServer::start();
    let room = campaign("tables-loadtest-queue-with-a-long-campaign-id")
        .item("1001", 100)
        .room("{ mode: rate, admit_rate: 200/s, admission_ttl: 2m }")
        .write();
    let lines = at_80x24(
        &room,
        &rehearsal.url(),
        &[
            "loadtest",
            "--variant",
            "queue",
            "--users",
            "300",
            "--stock",
            "100",
        ],
        0,
    );
    let said = lines.join("\n");
    assert_eq!(
        words(row(&lines, "verdict ")),
        ["verdict", "exact"],
        "{said}"
    );
    assert!(
        row(&lines, "buys ").ends_with(" ok · 200 sold out"),
        "{said}"
    );
    assert!(says(&lines, "impostors refused"), "{said}");
    assert!(
        row(&lines, "kendall τ-b ").contains(" arrival vs admission"),
        "{said}"
    );

    let lines = at_80x24(
        &file,
        &rehearsal.url(),
        &[
            "loadtest",
            "--buckets",
            "8",
            "--variant",
            "full",
            "--requests",
            "400",
            "--stock",
            "200",
        ],
        0,
    );
    let said = lines.join("\n");
    assert_eq!(
        words(row(&lines, "BUCKET ")),
        [
            "BUCKET", "SLOT", "INITIAL", "FINAL", "ORDERS", "MOVED", "OUT", "MOVED", "IN"
        ],
        "{said}"
    );
    assert_eq!(
        words(row(&lines, "verdict ")),
        ["verdict", "exact"],
        "{said}"
    );
}
