//! The kill switch's audit: who flipped it (`--by`, `SECKILL_OPERATOR`, else
//! the OS account from the password database, never "unknown") and a capped
//! history per item (the last 1000 flips), newest first, shown a page at a
//! time by `shutdown-switch status --history [--limit N] [--skip N]`.

use crate::support::spec::{Run, campaign, seckill};
use crate::support::{CampaignFile, RedisServer};

use seckill::model::exit_codes::USAGE_ERROR;

fn audit() -> CampaignFile {
    campaign("audit")
        .item("1", 5)
        .named("Bottle")
        .orders_store(None)
        .write()
}

fn run(file: &CampaignFile, server: &RedisServer, args: &[&str]) -> Run {
    seckill(args).campaign(file).redis(server)
}

fn history(file: &CampaignFile, server: &RedisServer) -> Vec<serde_json::Value> {
    run(file, server, &["shutdown-switch", "status", "--history"])
        .json()
        .succeeds()
        .json()["items"][0]["history"]
        .as_array()
        .expect("history array")
        .clone()
}

#[test]
fn each_flip_names_who_and_the_history_keeps_flip_21_and_on() {
    let server = RedisServer::start();
    let file = audit();
    run(&file, &server, &["preheat"]).succeeds();
    run(
        &file,
        &server,
        &[
            "shutdown-switch",
            "on",
            "--reason",
            "gateway down",
            "--by",
            "alice",
        ],
    )
    .succeeds();
    run(&file, &server, &["shutdown-switch", "off"])
        .env("SECKILL_OPERATOR", "bob")
        .succeeds();
    // Neither flag nor variable, nor $USER: the password database names the account.
    run(
        &file,
        &server,
        &["shutdown-switch", "on", "--reason", "bots"],
    )
    .env_remove("SECKILL_OPERATOR")
    .env_remove("USER")
    .env_remove("LOGNAME")
    .succeeds();
    let account = std::process::Command::new("id")
        .arg("-un")
        .output()
        .unwrap();
    let account = String::from_utf8(account.stdout)
        .unwrap()
        .trim()
        .to_string();
    let flips = history(&file, &server);
    assert_eq!(flips.len(), 3);
    let by = flips[0]["by"].as_str().unwrap();
    assert!(by.starts_with(&format!("{account}@")), "{by}");
    assert!(!by.contains("unknown"), "{by}");
    assert_eq!(flips[0]["closed"], true);
    assert_eq!(flips[0]["reason"], "bots");
    assert_eq!(flips[1]["by"], "bob");
    assert_eq!(flips[1]["closed"], false);
    assert_eq!(flips[2]["by"], "alice");
    assert_eq!(flips[2]["reason"], "gateway down");
    assert!(flips[0]["at_ms"].as_i64().unwrap() >= flips[2]["at_ms"].as_i64().unwrap());

    for n in 0..22 {
        let reason = format!("flip {n}");
        run(
            &file,
            &server,
            &["shutdown-switch", if n % 2 == 0 { "off" } else { "on" }],
        )
        .args(&["--reason", &reason, "--by", "carol"])
        .succeeds();
    }
    // 25 flips: the default page shows the newest 20, all 25 are kept.
    let flips = history(&file, &server);
    assert_eq!(flips.len(), 20);
    assert_eq!(flips[0]["reason"], "flip 21");
    assert_eq!(flips[19]["reason"], "flip 2");
    let kept: i64 = redis::cmd("LLEN")
        .arg(seckill::model::keys::ItemKeys::live("audit", "1").switch_log)
        .query(&mut server.conn())
        .unwrap();
    assert_eq!(kept, 25);

    // The next page: flip 21 and on, down to the first flip of all.
    let page = run(
        &file,
        &server,
        &["shutdown-switch", "status", "--history", "--skip", "20"],
    )
    .json()
    .succeeds()
    .json();
    let older = page["items"][0]["history"].as_array().unwrap();
    assert_eq!(page["items"][0]["history_kept"], 25);
    let reasons: Vec<&str> = older
        .iter()
        .map(|f| f["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons, ["flip 1", "flip 0", "bots", "", "gateway down"]);
    assert_eq!(older[4]["by"], "alice");
    let all = run(
        &file,
        &server,
        &["shutdown-switch", "status", "--history", "--limit", "100"],
    )
    .json()
    .succeeds()
    .json();
    assert_eq!(all["items"][0]["history"].as_array().unwrap().len(), 25);

    let table = run(&file, &server, &["shutdown-switch", "status", "--history"])
        .runs()
        .stdout();
    assert!(
        table.contains("flips 1–20 of 25 of item 1, newest first; the next: --skip 20"),
        "{table}"
    );
    assert!(table.contains("flip 21"), "{table}");
    run(
        &file,
        &server,
        &["shutdown-switch", "status", "--limit", "5"],
    )
    .fails_with(USAGE_ERROR);
    run(
        &file,
        &server,
        &["shutdown-switch", "status", "--history", "--limit", "0"],
    )
    .fails_with(USAGE_ERROR);
    run(&file, &server, &["shutdown-switch", "on", "--history"]).fails_with(USAGE_ERROR);
}

/// A flip that finds the switch already so says since when, by whom and
/// why, before its own reason replaces that one; `--dry-run` writes nothing
/// and names what the flip would change.
#[test]
fn a_second_on_says_who_closed_it_first_and_a_dry_run_writes_nothing() {
    let server = RedisServer::start();
    let file = audit();
    run(&file, &server, &["preheat"]).succeeds();
    run(
        &file,
        &server,
        &[
            "shutdown-switch",
            "on",
            "--reason",
            "gateway down",
            "--by",
            "alice",
        ],
    )
    .succeeds();
    let second = run(
        &file,
        &server,
        &[
            "shutdown-switch",
            "on",
            "--reason",
            "campaign-wide stop",
            "--by",
            "bob",
        ],
    )
    .succeeds();
    let text = second.stdout();
    assert!(
        text.contains("already ON since")
            && text.contains("by alice")
            && text.contains("gateway down"),
        "{text}"
    );
    let json = run(
        &file,
        &server,
        &[
            "shutdown-switch",
            "on",
            "--reason",
            "third",
            "--by",
            "carol",
        ],
    )
    .json()
    .succeeds()
    .json();
    assert_eq!(json["items"][0]["already"]["by"], "bob", "{json}");
    assert_eq!(json["items"][0]["already"]["reason"], "campaign-wide stop");

    let dump = |server: &RedisServer| -> Vec<(String, Vec<u8>)> {
        let mut conn = server.conn();
        let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut conn).unwrap();
        keys.sort();
        keys.into_iter()
            .map(|k| {
                let d: Vec<u8> = redis::cmd("DUMP").arg(&k).query(&mut conn).unwrap();
                (k, d)
            })
            .collect()
    };
    let before = dump(&server);
    let dry = run(
        &file,
        &server,
        &["shutdown-switch", "off", "--dry-run", "--by", "dave"],
    )
    .json()
    .succeeds()
    .json();
    assert_eq!(dump(&server), before, "a dry run wrote to Redis");
    assert_eq!(dry["dry_run"], true);
    assert_eq!(dry["would_flip"], serde_json::json!(["1"]), "{dry}");
    assert_eq!(dry["items"][0]["closed"], true, "still ON after a dry run");
}

/// The history is trimmed at `HISTORY_CAP` (1000) flips by the script that
/// adds one: the oldest goes, the newest is kept.
#[test]
fn the_history_keeps_the_last_thousand_flips() {
    let server = RedisServer::start();
    let file = audit();
    run(&file, &server, &["preheat"]).succeeds();
    let log = seckill::model::keys::ItemKeys::live("audit", "1").switch_log;
    let cap = seckill::domain::kill_switch::HISTORY_CAP as usize;
    assert_eq!(cap, 1000);
    // A thousand older flips, as a busy day of automation would leave them.
    let older: Vec<String> = (0..cap)
        .map(|n| format!(r#"{{"closed":false,"reason":"old {n}","by":"cron","at_ms":"{n}"}}"#))
        .collect();
    let mut conn = server.conn();
    let _: () = redis::cmd("RPUSH")
        .arg(&log)
        .arg(&older)
        .query(&mut conn)
        .unwrap();
    run(
        &file,
        &server,
        &["shutdown-switch", "on", "--reason", "newest"],
    )
    .succeeds();
    let kept: Vec<String> = redis::cmd("LRANGE")
        .arg(&log)
        .arg(0)
        .arg(-1)
        .query(&mut conn)
        .unwrap();
    assert_eq!(kept.len(), cap);
    assert!(kept[0].contains("newest"), "{}", kept[0]);
    assert!(kept[cap - 1].contains("old 998"), "{}", kept[cap - 1]);
    let last_page = run(
        &file,
        &server,
        &["shutdown-switch", "status", "--history", "--skip", "990"],
    )
    .json()
    .succeeds()
    .json();
    assert_eq!(
        last_page["items"][0]["history"].as_array().unwrap().len(),
        10
    );
    assert_eq!(last_page["items"][0]["history_kept"], 1000);
}

/// `keep` is an argument like any other: refused before the script reads
/// or writes anything.
#[test]
fn set_switch_refuses_a_bad_keep_before_its_first_write() {
    let server = RedisServer::start();
    let file = audit();
    run(&file, &server, &["preheat"]).succeeds();
    let keys = seckill::model::keys::ItemKeys::live("audit", "1");
    let script = seckill(&["scripts", "show", "set_switch"])
        .succeeds()
        .stdout();
    let mut conn = server.conn();
    let before: Vec<u8> = redis::cmd("DUMP").arg(&keys.meta).query(&mut conn).unwrap();
    for keep in ["0", "x", "", "1.5"] {
        let refused = redis::cmd("EVAL")
            .arg(&script)
            .arg(2)
            .arg(&keys.meta)
            .arg(&keys.switch_log)
            .arg(&["1", "r", "mallory", "1", "", keep])
            .query::<redis::Value>(&mut conn)
            .expect_err("a bad keep is refused");
        assert!(
            refused.to_string().contains("set_switch: keep"),
            "{refused}"
        );
    }
    let after: Vec<u8> = redis::cmd("DUMP").arg(&keys.meta).query(&mut conn).unwrap();
    assert_eq!(before, after);
    let flips: i64 = redis::cmd("LLEN")
        .arg(&keys.switch_log)
        .query(&mut conn)
        .unwrap();
    assert_eq!(flips, 0);
}
