//! The kill switch's audit: who flipped it (`--by`, `SECKILL_OPERATOR`, else
//! the OS account from the password database, never "unknown") and a capped
//! history per item, newest first, shown by `shutdown-switch status --history`.

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
fn each_flip_names_who_and_the_history_keeps_the_last_twenty() {
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
    let flips = history(&file, &server);
    assert_eq!(
        flips.len(),
        seckill::domain::kill_switch::HISTORY_CAP as usize
    );
    assert_eq!(flips[0]["reason"], "flip 21");
    assert_eq!(flips[19]["reason"], "flip 2");
    // Capped in Redis, not only when read.
    let kept: i64 = redis::cmd("LLEN")
        .arg(seckill::model::keys::ItemKeys::live("audit", "1").switch_log)
        .query(&mut server.conn())
        .unwrap();
    assert_eq!(kept, 20);

    let table = run(&file, &server, &["shutdown-switch", "status", "--history"])
        .runs()
        .stdout();
    assert!(
        table.contains("last 20 flip(s) of item 1, newest first"),
        "{table}"
    );
    assert!(table.contains("flip 21"), "{table}");

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
