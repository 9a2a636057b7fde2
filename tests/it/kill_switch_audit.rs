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
