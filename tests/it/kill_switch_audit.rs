//! The kill switch's audit: who flipped it (`--by`, `SECKILL_OPERATOR`, else
//! the OS account from the password database, never "unknown") and a capped
//! history per item, newest first, shown by `shutdown-switch status --history`.

use crate::support::{RedisServer, campaign_file, json, seckill};

const CAMPAIGN: &str =
    "campaign: audit\nitems:\n  - id: \"1\"\n    name: Bottle\n    price: \"1.00\"\n    stock: 5\n";

fn history(file: &std::path::Path, server: &RedisServer) -> Vec<serde_json::Value> {
    let output = seckill(file, &server.url())
        .args(["shutdown-switch", "status", "--history", "--format", "json"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    json(&output)["items"][0]["history"]
        .as_array()
        .expect("history array")
        .clone()
}

#[test]
fn each_flip_names_who_and_the_history_keeps_the_last_twenty() {
    let server = RedisServer::start();
    let file = campaign_file(CAMPAIGN);
    seckill(&file.path, &server.url())
        .arg("preheat")
        .assert()
        .success();
    seckill(&file.path, &server.url())
        .args([
            "shutdown-switch",
            "on",
            "--reason",
            "gateway down",
            "--by",
            "alice",
        ])
        .assert()
        .success();
    seckill(&file.path, &server.url())
        .env("SECKILL_OPERATOR", "bob")
        .args(["shutdown-switch", "off"])
        .assert()
        .success();
    // Neither flag nor variable, nor $USER: the password database names the account.
    seckill(&file.path, &server.url())
        .env_remove("SECKILL_OPERATOR")
        .env_remove("USER")
        .env_remove("LOGNAME")
        .args(["shutdown-switch", "on", "--reason", "bots"])
        .assert()
        .success();
    let account = std::process::Command::new("id")
        .arg("-un")
        .output()
        .unwrap();
    let account = String::from_utf8(account.stdout)
        .unwrap()
        .trim()
        .to_string();
    let flips = history(&file.path, &server);
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
        seckill(&file.path, &server.url())
            .args(["shutdown-switch", if n % 2 == 0 { "off" } else { "on" }])
            .args(["--reason", &format!("flip {n}"), "--by", "carol"])
            .assert()
            .success();
    }
    let flips = history(&file.path, &server);
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

    let table = seckill(&file.path, &server.url())
        .args(["shutdown-switch", "status", "--history"])
        .output()
        .unwrap();
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(
        table.contains("last 20 flip(s) of item 1, newest first"),
        "{table}"
    );
    assert!(table.contains("flip 21"), "{table}");

    seckill(&file.path, &server.url())
        .args(["shutdown-switch", "on", "--history"])
        .assert()
        .code(seckill::model::exit_codes::USAGE_ERROR);
}
