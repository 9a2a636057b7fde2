//! Commands that could mislead the operator who trusts them, or reopen a sale
//! (issue 9, point 4). Each test reproduced the defect before its fix.

use crate::support::orders::sqlite_order_ids;
use crate::support::{CampaignFile, RedisServer, campaign_file, json, seckill};

fn campaign() -> CampaignFile {
    campaign_file(
        "campaign: c\nitems:\n  - id: \"1\"\n    name: Bottle\n    price: \"1.00\"\n    stock: 10\norders:\n  store: sqlite://orders.db\n",
    )
}

fn buy(file: &CampaignFile, server: &RedisServer, user: &str) {
    seckill(&file.path, &server.url())
        .args(["buy", "--item", "1", "--user", user])
        .assert()
        .success();
}

#[test]
fn init_does_not_silently_turn_a_kill_switch_off() {
    let server = RedisServer::start();
    let file = campaign();
    seckill(&file.path, &server.url())
        .arg("preheat")
        .assert()
        .success();
    seckill(&file.path, &server.url())
        .args(["shutdown-switch", "on", "--reason", "fraud"])
        .assert()
        .success();
    // No sales, but the switch is ON: a reset would reopen the sale.
    seckill(&file.path, &server.url())
        .arg("init")
        .assert()
        .code(seckill::model::exit_codes::USAGE_ERROR)
        .stderr(predicates::str::contains(
            "kill switch is ON for item 1 (fraud)",
        ));
    let output = seckill(&file.path, &server.url())
        .args(["shutdown-switch", "status", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(
        json(&output)["items"][0]["closed"],
        true,
        "refused init changed nothing"
    );
    let output = seckill(&file.path, &server.url())
        .args(["init", "--yes"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let table = String::from_utf8(output.stdout).unwrap();
    assert!(table.contains("was ON (fraud), now off"), "{table}");
}

#[test]
fn init_says_how_many_order_rows_remain_and_purges_them_only_when_told_which_campaign() {
    let server = RedisServer::start();
    let file = campaign();
    seckill(&file.path, &server.url())
        .arg("preheat")
        .assert()
        .success();
    for user in ["a", "b", "c"] {
        buy(&file, &server, user);
    }
    seckill(&file.path, &server.url())
        .args(["consume", "--drain"])
        .assert()
        .success();
    let db = file.dir.path().join("orders.db");
    assert_eq!(sqlite_order_ids(&db).len(), 3);

    let output = seckill(&file.path, &server.url())
        .args(["init", "--yes", "--format", "json"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(json(&output)["order_rows_in_database"], 3);
    let output = seckill(&file.path, &server.url())
        .args(["init", "--yes"])
        .output()
        .unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.contains("still holds 3 order row(s) of campaign c"),
        "{text}"
    );
    assert!(text.contains("--purge-orders c"), "{text}");

    // The confirmation is the campaign id itself.
    seckill(&file.path, &server.url())
        .args(["init", "--yes", "--purge-orders", "other"])
        .assert()
        .code(seckill::model::exit_codes::USAGE_ERROR)
        .stderr(predicates::str::contains(
            "--purge-orders other does not name campaign c",
        ));
    assert_eq!(sqlite_order_ids(&db).len(), 3);
    let output = seckill(&file.path, &server.url())
        .args(["init", "--yes", "--purge-orders", "c", "--format", "json"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let report = json(&output);
    assert_eq!(report["order_rows_purged"], 3);
    assert_eq!(report["order_rows_in_database"], 0);
    assert!(sqlite_order_ids(&db).is_empty());
    // After a purge, reconcile balances the fresh campaign.
    seckill(&file.path, &server.url())
        .arg("reconcile")
        .assert()
        .success();
}

#[test]
fn reconcile_never_creates_an_order_database() {
    let server = RedisServer::start();
    let file = campaign();
    seckill(&file.path, &server.url())
        .arg("preheat")
        .assert()
        .success();
    let typo = file.dir.path().join("ordres.db");
    seckill(&file.path, &server.url())
        .args([
            "reconcile",
            "--orders-db",
            &format!("sqlite://{}", typo.display()),
        ])
        .assert()
        .code(seckill::model::exit_codes::RUNTIME_ERROR)
        .stderr(predicates::str::contains("no such database"));
    assert!(!typo.exists(), "reconcile created {}", typo.display());
}

#[test]
fn preheat_says_what_it_wrote_and_never_offers_a_refused_force() {
    let server = RedisServer::start();
    let file = campaign();
    seckill(&file.path, &server.url())
        .arg("preheat")
        .assert()
        .success();
    // Twice: nothing written, and it says so.
    let output = seckill(&file.path, &server.url())
        .arg("preheat")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(!text.contains("preheated"), "{text}");
    assert!(text.contains("nothing written"), "{text}");
    assert!(
        text.contains("--force to overwrite"),
        "no sales yet: --force would work: {text}"
    );

    buy(&file, &server, "a");
    let output = seckill(&file.path, &server.url())
        .arg("preheat")
        .output()
        .unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        !text.contains("--force"),
        "--force is refused once sold: {text}"
    );
    assert!(text.contains("init --yes"), "{text}");

    let output = seckill(&file.path, &server.url())
        .args(["preheat", "--force"])
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(seckill::model::exit_codes::PREHEAT_REFUSED),
        "{output:?}"
    );
    assert_ne!(
        seckill::model::exit_codes::PREHEAT_REFUSED,
        seckill::model::exit_codes::RUNTIME_ERROR
    );
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(!text.contains("preheated"), "{text}");
}
