//! Commands that could mislead the operator who trusts them, or reopen a sale
//! (issue 9, point 4). Each test reproduced the defect before its fix.

use crate::support::orders::sqlite_order_ids;
use crate::support::spec::{Run, campaign, seckill};
use crate::support::{CampaignFile, RedisServer};

use seckill::model::exit_codes::{PREHEAT_REFUSED, RUNTIME_ERROR, USAGE_ERROR};

/// One item of 10 units, orders in `orders.db`.
fn sale() -> CampaignFile {
    campaign("c").item("1", 10).named("Bottle").write()
}

fn run(file: &CampaignFile, server: &RedisServer, args: &[&str]) -> Run {
    seckill(args).campaign(file).redis(server)
}

fn buy(file: &CampaignFile, server: &RedisServer, user: &str) {
    run(file, server, &["buy", "--item", "1", "--user", user]).succeeds();
}

#[test]
fn init_does_not_silently_turn_a_kill_switch_off() {
    let server = RedisServer::start();
    let file = sale();
    run(&file, &server, &["preheat"]).succeeds();
    run(
        &file,
        &server,
        &["shutdown-switch", "on", "--reason", "fraud"],
    )
    .succeeds();
    // No sales, but the switch is ON: a reset would reopen the sale.
    let refused = run(&file, &server, &["init"]).fails_with(USAGE_ERROR);
    assert!(
        refused
            .stderr()
            .contains("kill switch is ON for item 1 (fraud)"),
        "{}",
        refused.describe()
    );
    let status = run(&file, &server, &["shutdown-switch", "status"])
        .json()
        .runs()
        .json();
    assert_eq!(
        status["items"][0]["closed"], true,
        "refused init changed nothing"
    );
    let table = run(&file, &server, &["init", "--yes"]).succeeds().stdout();
    assert!(table.contains("was ON (fraud), now off"), "{table}");
}

#[test]
fn init_says_how_many_order_rows_remain_and_purges_them_only_when_told_which_campaign() {
    let server = RedisServer::start();
    let file = sale();
    run(&file, &server, &["preheat"]).succeeds();
    for user in ["a", "b", "c"] {
        buy(&file, &server, user);
    }
    run(&file, &server, &["consume", "--drain"]).succeeds();
    let db = file.dir.path().join("orders.db");
    assert_eq!(sqlite_order_ids(&db).len(), 3);
    // A sale that has just sold is closed before a reset (else --purge-orders is asked for).
    run(&file, &server, &["shutdown-switch", "on"]).succeeds();

    let report = run(&file, &server, &["init", "--yes"])
        .json()
        .succeeds()
        .json();
    assert_eq!(report["order_rows_in_database"], 3);
    let text = run(&file, &server, &["init", "--yes"]).runs().stdout();
    assert!(
        text.contains("still holds 3 order row(s) of campaign c"),
        "{text}"
    );
    assert!(text.contains("--purge-orders c"), "{text}");

    // The confirmation is the campaign id itself.
    let refused = run(
        &file,
        &server,
        &["init", "--yes", "--purge-orders", "other"],
    )
    .fails_with(USAGE_ERROR);
    assert!(
        refused
            .stderr()
            .contains("--purge-orders other does not name campaign c"),
        "{}",
        refused.describe()
    );
    assert_eq!(sqlite_order_ids(&db).len(), 3);
    let report = run(&file, &server, &["init", "--yes", "--purge-orders", "c"])
        .json()
        .succeeds()
        .json();
    assert_eq!(report["order_rows_purged"], 3);
    assert_eq!(report["order_rows_in_database"], 0);
    assert!(sqlite_order_ids(&db).is_empty());
    // After a purge, reconcile balances the fresh campaign.
    run(&file, &server, &["reconcile"]).succeeds();
}

#[test]
fn reconcile_never_creates_an_order_database() {
    let server = RedisServer::start();
    let file = sale();
    run(&file, &server, &["preheat"]).succeeds();
    let typo = file.dir.path().join("ordres.db");
    let refused = run(
        &file,
        &server,
        &[
            "reconcile",
            "--orders-db",
            &format!("sqlite://{}", typo.display()),
        ],
    )
    .fails_with(RUNTIME_ERROR);
    assert!(
        refused.stderr().contains("no such database"),
        "{}",
        refused.describe()
    );
    assert!(!typo.exists(), "reconcile created {}", typo.display());
}

#[test]
fn preheat_says_what_it_wrote_and_never_offers_a_refused_force() {
    let server = RedisServer::start();
    let file = sale();
    run(&file, &server, &["preheat"]).succeeds();
    // Twice: nothing written, and it says so.
    let text = run(&file, &server, &["preheat"]).succeeds().stdout();
    assert!(!text.contains("preheated"), "{text}");
    assert!(text.contains("nothing written"), "{text}");
    assert!(text.contains("1 item unchanged"), "{text}");
    // The stock edited, no sales yet: --force would work, and is offered.
    let edited = campaign("c").item("1", 12).named("Bottle").write();
    let text = run(&edited, &server, &["preheat"]).succeeds().stdout();
    assert!(
        text.contains("10 → 12") && text.contains("`preheat --force`"),
        "no sales yet: --force would work: {text}"
    );

    buy(&file, &server, "a");
    let text = run(&edited, &server, &["preheat"]).runs().stdout();
    assert!(
        !text.contains("--force"),
        "--force is refused once sold: {text}"
    );
    assert!(text.contains("init --yes"), "{text}");

    let text = run(&file, &server, &["preheat", "--force"])
        .fails_with(PREHEAT_REFUSED)
        .stdout();
    assert_ne!(PREHEAT_REFUSED, RUNTIME_ERROR);
    assert!(!text.contains("preheated"), "{text}");
}
