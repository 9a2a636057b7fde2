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

/// In a real terminal (tmux at 80 × 24, no `COLUMNS`): the edited plan of
/// 20 items fits one screen, no line wider than the terminal.
#[test]
fn the_plan_fits_one_80_by_24_screen() {
    let server = RedisServer::start();
    let file = many(20, 1, "20/s").write();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    std::fs::write(&file.path, many(20, 2, "30/s").yaml()).unwrap();
    let socket = format!("seckill-plan-{}", std::process::id());
    let command = format!(
        "env -u COLUMNS -u LINES -u SECKILL_CAMPAIGN -u SECKILL_FORMAT SECKILL_REDIS_URL={} \
         {} -c {} preheat 2>/dev/null; echo EXITED $?; sleep 600",
        server.url(),
        env!("CARGO_BIN_EXE_seckill"),
        file.path.display()
    );
    let tmux = |args: &[&str]| {
        let out = std::process::Command::new("tmux")
            .args(["-L", &socket])
            .args(args)
            .output()
            .expect("tmux must be installed (apt-get install tmux)");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    tmux(&[
        "-f",
        "/dev/null",
        "new-session",
        "-d",
        "-x",
        "80",
        "-y",
        "24",
        &command,
    ]);
    let mut screen = String::new();
    crate::support::orders::wait_until("preheat's plan on the screen", || {
        screen = tmux(&["capture-pane", "-p"]);
        screen.contains("EXITED")
    });
    let everything = tmux(&["capture-pane", "-p", "-S", "-"]);
    tmux(&["kill-server"]);
    assert!(screen.contains("EXITED 0"), "{screen}");
    assert!(screen.contains("not applied"), "{screen}");
    assert!(screen.contains("20/s → 30/s"), "{screen}");
    assert_eq!(
        everything.trim_end().lines().count(),
        screen.trim_end().lines().count(),
        "the plan scrolled off one 80 × 24 screen:\n{everything}"
    );
    for line in screen.lines() {
        assert!(line.chars().count() <= 80, "{line}");
        assert!(!line.starts_with('┆'), "a wrapped row:\n{screen}");
    }
}
