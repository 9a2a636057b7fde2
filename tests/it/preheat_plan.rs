//! Issue 25 item 22: the preheat plan as one table, like `terraform plan`.
//! Before: 60 lines of unchanged `kept … --force to overwrite` rows, the
//! same advice repeated per item and field, `per_user_limit changed: file
//! 1 · Redis 2` after applying (read as "Redis still holds 2"), and a room
//! shown as `20/1000ms ttl 120000ms` for a file that says `20/s`, `2m`.

use crate::support::RedisServer;
use crate::support::spec::{CampaignSpec, campaign, seckill};

/// `n` items, a rate room and a per-user limit.
fn many(n: usize, limit: u32, rate: &str) -> CampaignSpec {
    let mut spec = campaign("plan").per_user_limit(limit).field(
        "waiting_room",
        &format!("{{ mode: rate, admit_rate: {rate}, admission_ttl: 2m }}"),
    );
    for i in 0..n {
        spec = spec.item(&format!("sku-{i}"), 100);
    }
    spec
}

fn widths_fit(text: &str) {
    for line in text.lines() {
        assert!(
            line.chars().count() <= 80,
            "a line over 80 columns:\n{line}\nin\n{text}"
        );
    }
}

#[test]
fn the_plan_shows_only_what_differs_in_the_files_units_and_what_redis_holds_after() {
    let server = RedisServer::start();
    let file = many(20, 1, "20/s").write();
    let run = |args: &[&str]| seckill(args).campaign(&file).redis(&server).columns(80);
    run(&["preheat"]).succeeds();

    // Unchanged: one line, no row per item.
    let again = run(&["preheat"]).succeeds().stdout();
    widths_fit(&again);
    assert!(
        again.contains("all 20 items unchanged: Redis holds what the file says"),
        "{again}"
    );
    assert!(!again.contains("--force to overwrite"), "{again}");
    assert!(again.lines().count() <= 3, "{again}");

    // Edited: one row per field for all items, values as the file writes them.
    std::fs::write(&file.path, many(20, 2, "30/s").yaml()).unwrap();
    let plan = run(&["preheat"]).succeeds().stdout();
    widths_fit(&plan);
    assert!(plan.lines().count() <= 14, "{plan}");
    let row = |text: &str, field: &str| {
        text.lines()
            .find(|l| l.contains(&format!(" {field} ")))
            .unwrap_or_else(|| panic!("no {field} row in\n{text}"))
            .to_string()
    };
    let limit = row(&plan, "per_user_limit");
    assert!(
        limit.contains("all 20 items") && limit.contains("1 → 2") && limit.contains("not applied"),
        "{plan}"
    );
    let rate = row(&plan, "waiting_room.admit_rate");
    assert!(rate.contains("20/s → 30/s"), "{plan}");
    assert!(
        !plan.contains("1000ms") && !plan.contains("120000ms"),
        "{plan}"
    );
    assert_eq!(plan.matches("--update-meta").count(), 1, "{plan}");
    assert!(plan.contains("Redis → file"), "{plan}");

    // Applied: the right-hand value is what Redis holds now, and it says so.
    let applied = run(&["preheat", "--update-meta"]).succeeds().stdout();
    widths_fit(&applied);
    let limit = row(&applied, "per_user_limit");
    assert!(
        limit.contains("1 → 2") && limit.contains("applied"),
        "{applied}"
    );
    assert!(
        applied.contains("was → now")
            && applied.contains("Redis now holds the values on the right"),
        "{applied}"
    );
    let held: String = redis::cmd("HGET")
        .arg("seckill:{plan:sku-0}:meta")
        .arg("per_user_limit")
        .query(&mut server.conn())
        .unwrap();
    assert_eq!(held, "2");
    let again = run(&["preheat"]).succeeds().stdout();
    assert!(again.contains("all 20 items unchanged"), "{again}");

    // JSON keeps every field of every item, in machine units.
    let json = run(&["preheat", "--dry-run"]).json().succeeds().json();
    let fields = json["items"][0]["fields"].as_array().unwrap();
    let field = |name: &str| {
        fields
            .iter()
            .find(|f| f["field"] == name)
            .unwrap_or_else(|| panic!("no {name} in {json}"))
            .clone()
    };
    for name in [
        "stock",
        "name",
        "price",
        "per_user_limit",
        "rate_limit",
        "starts_at",
        "ends_at",
        "keys_expire_at",
        "waiting_room.admit_rate",
        "waiting_room.admission_ttl",
    ] {
        field(name);
    }
    assert_eq!(field("waiting_room.admission_ttl")["file"], 120_000);
    assert_eq!(
        field("waiting_room.admit_rate")["redis"],
        serde_json::json!({"count": 30, "per_ms": 1000})
    );
    assert_eq!(field("price")["file"], 100);
    assert_eq!(field("per_user_limit")["differs"], false);
}
