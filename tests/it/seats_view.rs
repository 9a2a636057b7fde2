//! The operator's and the shop's view of a seat item (docs/seats.md, "The
//! seat map and the seat page"), on a real Redis with real buys:
//!
//! - `status --map A` draws each seat sold or held at its row and number,
//!   every line within 80 columns; `--map` on an item without seats or an
//!   unknown section is a usage error (2); status JSON and Prometheus count
//!   every seat of a section once (free + held + sold + blocked = rows ×
//!   seats per row).
//! - `serve`'s `GET /v1/items/{item}/seats?section=A` shows a seat `seckill
//!   buy` sold within its 100 ms snapshot plus a read, reads Redis at most
//!   about once per 100 ms however many views come, and answers 404/400 in
//!   the error shape for what it cannot show.

use std::time::{Duration, Instant};

use crate::support::http;
use crate::support::serve::Serve;
use crate::support::spec::seckill;
use crate::support::{CampaignFile, RedisServer, campaign_file, preheat};

/// A hall of two sections (A 50 × 40 vip, B 4 × 10 with a blocked block),
/// a plain item beside it, holds paid within 5 minutes.
fn hall() -> CampaignFile {
    campaign_file(
        "campaign: seats-view\n\
         keep_after_end: 2h\n\
         per_user_limit: 8\n\
         payment_timeout: 5m\n\
         items:\n  \
           - id: hall-a\n    \
             name: Hall A\n    \
             seats:\n      \
               sections:\n        \
                 - { id: A, rows: 50, seats_per_row: 40, tier: vip, price: \"1880\" }\n        \
                 - { id: B, rows: 4, seats_per_row: 10, tier: standard, price: \"380\", blocked: [\"B-1-1..B-1-4\"] }\n  \
           - { id: plain, name: Plain, price: \"1.00\", stock: 10 }\n\
         orders:\n  store: sqlite://orders.db\n",
    )
}

/// `seckill buy` of these seats for `user`; the order id.
fn buy_seats(file: &CampaignFile, server: &RedisServer, user: &str, seats: &str) -> String {
    let answer = seckill(&["buy", "--item", "hall-a", "--user", user, "--seats", seats])
        .campaign(file)
        .redis(server)
        .json()
        .succeeds()
        .json();
    answer["order_id"].as_str().unwrap().to_string()
}

/// The byte of seat (row, seat), 1-based, in a map drawn by `status --map`.
fn mark_at(map: &str, row: u32, seat: u32) -> char {
    let prefix = format!("row {row:>4} |");
    let line = map
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no row {row} in\n{map}"));
    line[prefix.len()..].chars().nth(seat as usize - 1).unwrap()
}

#[test]
fn the_seat_map_shows_each_seat_at_its_row_and_number_within_80_columns() {
    let server = RedisServer::start();
    let file = hall();
    preheat(&file, &server);
    let paid = buy_seats(&file, &server, "ann", "A-12-7,A-12-8");
    buy_seats(&file, &server, "bob", "A-50-40");
    seckill(&["pay", "--order", &paid])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    // A best-available block: the front row's first four seats.
    seckill(&["buy", "--item", "hall-a", "--user", "cat", "--qty", "4"])
        .args(&["--section", "A"])
        .campaign(&file)
        .redis(&server)
        .succeeds();

    let map = seckill(&["status", "--item", "hall-a", "--map", "A"])
        .campaign(&file)
        .redis(&server)
        .succeeds()
        .stdout();
    for line in map.lines() {
        assert!(line.chars().count() <= 80, "{} columns: {line}", line.len());
    }
    assert_eq!(map.lines().filter(|l| l.starts_with("row ")).count(), 50);
    assert_eq!((mark_at(&map, 12, 7), mark_at(&map, 12, 8)), ('s', 's'));
    assert_eq!((mark_at(&map, 12, 6), mark_at(&map, 12, 9)), ('.', '.'));
    assert_eq!(mark_at(&map, 50, 40), 'h', "{map}");
    for seat in 1..=4 {
        assert_eq!(mark_at(&map, 1, seat), 'h', "{map}");
    }
    assert_eq!(mark_at(&map, 1, 5), '.');
    assert!(
        map.contains("section A (vip): 1993 free · 5 held · 2 sold · 0 blocked"),
        "{map}"
    );
    // The ruler: 10 ends over seat 10.
    let ruler = map.lines().find(|l| l.starts_with("seat ")).unwrap();
    assert_eq!(&ruler[10..][8..10], "10", "{ruler}");

    // B's blocked seats, drawn as such.
    let b = seckill(&["status", "--item", "hall-a", "--map", "B"])
        .campaign(&file)
        .redis(&server)
        .succeeds()
        .stdout();
    assert!(b.contains("row    1 |xxxx......|"), "{b}");

    // The JSON of a map carries the state string and the lines.
    let json = seckill(&["status", "--item", "hall-a", "--map", "A"])
        .campaign(&file)
        .redis(&server)
        .json()
        .succeeds()
        .json();
    let state = json["section"]["state"].as_str().unwrap();
    assert_eq!(state.len(), 2000);
    assert_eq!(&state[11 * 40 + 6..11 * 40 + 8], "ss");
    assert_eq!(json["map"].as_array().unwrap().len(), 52);
}

#[test]
fn a_map_of_an_item_without_seats_or_of_an_unknown_section_is_a_usage_error() {
    let server = RedisServer::start();
    let file = hall();
    preheat(&file, &server);
    let plain = seckill(&["status", "--item", "plain", "--map", "A"])
        .campaign(&file)
        .redis(&server)
        .fails_with(2);
    assert!(
        plain.stderr().contains("item plain has no seats"),
        "{}",
        plain.stderr()
    );
    let unknown = seckill(&["status", "--item", "hall-a", "--map", "C"])
        .campaign(&file)
        .redis(&server)
        .fails_with(2);
    assert!(
        unknown
            .stderr()
            .contains("has no section \"C\"; its sections are A, B"),
        "{}",
        unknown.stderr()
    );
    // --map needs --item.
    seckill(&["status", "--map", "A"])
        .campaign(&file)
        .redis(&server)
        .fails_with(2);
}

#[test]
fn status_counts_every_seat_of_a_section_once_in_json_the_table_and_prometheus() {
    let server = RedisServer::start();
    let file = hall();
    preheat(&file, &server);
    let paid = buy_seats(&file, &server, "ann", "A-1-1,A-1-2,A-1-3");
    buy_seats(&file, &server, "bob", "A-2-1");
    buy_seats(&file, &server, "cat", "B-2-1,B-2-2");
    seckill(&["pay", "--order", &paid])
        .campaign(&file)
        .redis(&server)
        .succeeds();

    let json = seckill(&["status", "--item", "hall-a"])
        .campaign(&file)
        .redis(&server)
        .json()
        .succeeds()
        .json();
    let sections = json["items"][0]["sections"].as_array().unwrap().clone();
    assert_eq!(sections.len(), 2, "{json}");
    let figures = |s: &serde_json::Value| {
        ["free", "held", "sold", "blocked", "seats"].map(|k| s[k].as_u64().unwrap())
    };
    for s in &sections {
        let [free, held, sold, blocked, seats] = figures(s);
        let geometry = s["rows"].as_u64().unwrap() * s["seats_per_row"].as_u64().unwrap();
        assert_eq!(free + held + sold + blocked, geometry, "{s}");
        assert_eq!(seats, geometry, "{s}");
    }
    assert_eq!(figures(&sections[0]), [1996, 1, 3, 0, 2000]);
    assert_eq!(figures(&sections[1]), [34, 2, 0, 4, 40]);

    let table = seckill(&["status", "--item", "hall-a"])
        .campaign(&file)
        .redis(&server)
        .succeeds()
        .stdout();
    let row = |section: &str| -> Vec<String> {
        table
            .lines()
            .map(str::split_whitespace)
            .map(|words| words.map(str::to_string).collect::<Vec<_>>())
            .find(|words| words.first().map(String::as_str) == Some(section))
            .unwrap_or_else(|| panic!("no row for section {section}:\n{table}"))
    };
    assert_eq!(row("A"), ["A", "vip", "1996", "1", "3", "0", "2000"]);
    assert_eq!(row("B"), ["B", "standard", "34", "2", "0", "4", "40"]);
    assert!(table.contains("SECTION  TIER"), "{table}");

    let text = seckill(&["status", "--format", "prometheus"])
        .campaign(&file)
        .redis(&server)
        .succeeds()
        .stdout();
    crate::status::promtool_check(&text);
    let seats = |section: &str, state: &str| -> u64 {
        let prefix = format!(
            "seckill_seats{{campaign=\"seats-view\",item=\"hall-a\",section=\"{section}\",state=\"{state}\"}} "
        );
        text.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("no {prefix} in\n{text}"))
            .parse()
            .unwrap()
    };
    assert_eq!(
        ["free", "held", "sold", "blocked"].map(|state| seats("A", state)),
        [1996, 1, 3, 0]
    );
    assert_eq!(
        ["free", "held", "sold", "blocked"].map(|state| seats("B", state)),
        [34, 2, 0, 4]
    );
    assert!(!text.contains("item=\"plain\",section="), "{text}");
}

/// GET calls Redis ran since its start.
fn gets(server: &RedisServer) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut server.conn())
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("cmdstat_get:calls="))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse().unwrap())
}

fn page(serve: &Serve, section: &str) -> serde_json::Value {
    let answer = http::get(
        serve.addr,
        &format!("/v1/items/hall-a/seats?section={section}"),
    );
    assert_eq!(answer.status, 200, "{}", answer.body);
    answer.json()
}

#[test]
fn the_seat_page_shows_a_sold_seat_within_its_snapshot_and_reads_redis_once_per_100_ms() {
    let server = RedisServer::start();
    let file = hall();
    preheat(&file, &server);
    // The cache's own refresh reads nothing in the test's window.
    let serve = Serve::start(&file, &server.url(), false, &["--recheck", "60s"]);

    let first = page(&serve, "A");
    assert_eq!(first["section"], "A");
    assert_eq!(first["tier"], "vip");
    assert_eq!(first["price"], "1880.00");
    assert_eq!(
        (first["rows"].as_u64(), first["seats_per_row"].as_u64()),
        (Some(50), Some(40))
    );
    assert_eq!(first["free"], 2000);
    assert_eq!(first["state"].as_str().unwrap(), ".".repeat(2000));

    // A seat sold through the command line shows within the snapshot's 100 ms.
    buy_seats(&file, &server, "ann", "A-3-5");
    let sold_at = Instant::now();
    let shown = loop {
        let page = page(&serve, "A");
        if page["state"].as_str().unwrap().as_bytes()[2 * 40 + 4] == b'h' {
            break sold_at.elapsed();
        }
        assert!(
            sold_at.elapsed() < Duration::from_secs(2),
            "A-3-5 not shown after 2 s: {page}"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    eprintln!("seats_view: a sold seat showed on the page {shown:?} after the buy");
    assert!(shown < Duration::from_millis(400), "{shown:?}");

    // Rapid views from 8 clients at once: Redis reads at most about one
    // per 100 ms per section (concurrent stale views wait for one read).
    let before = gets(&server);
    let started = Instant::now();
    let views: usize = std::thread::scope(|scope| {
        let clients: Vec<_> = (0..8)
            .map(|client| {
                let serve = &serve;
                scope.spawn(move || {
                    let mut views = 0;
                    while started.elapsed() < Duration::from_millis(1000) {
                        let section = ["A", "B"][(client + views) % 2];
                        assert_eq!(page(serve, section)["section"], section);
                        views += 1;
                    }
                    views
                })
            })
            .collect();
        clients.into_iter().map(|c| c.join().unwrap()).sum()
    });
    let took = started.elapsed();
    let read = gets(&server) - before;
    // Each section at most once per 100 ms of the run, plus the first read.
    let allowed = 2 * (took.as_millis() as u64 / 100 + 1);
    eprintln!("seats_view: {views} views in {took:?}, {read} GETs (at most {allowed})");
    assert!(
        views >= 40,
        "only {views} views in {took:?}: too few to tell"
    );
    assert!(read <= allowed, "{read} GETs for {views} views in {took:?}");
    assert!(read >= 2, "{read} GETs: the snapshots were never refreshed");
}

#[test]
fn the_seat_page_refuses_what_it_cannot_show_in_the_error_shape() {
    let server = RedisServer::start();
    let file = hall();
    preheat(&file, &server);
    let serve = Serve::start(&file, &server.url(), false, &[]);
    for (path, status, kind) in [
        ("/v1/items/nope/seats?section=A", 404, "unknown_item"),
        ("/v1/items/plain/seats?section=A", 404, "no_seats"),
        ("/v1/items/hall-a/seats?section=Z", 404, "unknown_section"),
        ("/v1/items/hall-a/seats", 400, "bad_request"),
    ] {
        let answer = http::get(serve.addr, path);
        assert_eq!(answer.status, status, "{path}: {}", answer.body);
        let body = answer.json();
        assert_eq!(body["error"]["kind"], kind, "{path}: {body}");
        assert!(
            !body["error"]["message"].as_str().unwrap().is_empty(),
            "{body}"
        );
    }
    // Blocked seats are on the page as such.
    let b = page(&serve, "B");
    assert_eq!(&b["state"].as_str().unwrap()[..5], "xxxx.");
    assert_eq!(
        (b["blocked"].as_u64(), b["free"].as_u64()),
        (Some(4), Some(36))
    );
}
