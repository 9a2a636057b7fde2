//! The regions' mover as a service: `seckill regions rebalance --watch
//! --metrics-listen ADDR` serves every item's `seckill_region_*` families
//! over every region and its own counters at `/metrics`, and `/healthz`
//! answers 200 while every region answers. A region that hangs (its
//! redis-server stopped with SIGSTOP) is named by `/healthz` (503), shown
//! unreadable by a scrape that still answers within the response timeout,
//! and outlived by the mover, which moves stock again once it is back.

use std::time::{Duration, Instant};

use crate::status::{http_get, promtool_check, sample};
use crate::support::orders::{terminate, wait_exit, wait_until};
use crate::support::spec::seckill;
use crate::support::{CampaignFile, Frozen, KillOnDrop, RedisServer, campaign_file, free_port};

/// Two regions, `a` holding 6 units of each item and `b` 4.
fn two_regions(a: &RedisServer, b: &RedisServer) -> CampaignFile {
    campaign_file(&format!(
        "campaign: rsvc\nper_user_limit: 1\nregions:\n  \
         a: {{ redis: \"redis://127.0.0.1:{}/0\", share: 6 }}\n  \
         b: {{ redis: \"redis://127.0.0.1:{}/0\", share: 4 }}\n\
         items:\n  \
         - {{ id: \"1\", name: One, price: \"1.00\", stock: 10 }}\n  \
         - {{ id: \"2\", name: Two, price: \"1.00\", stock: 10 }}\n",
        a.port, b.port
    ))
}

/// GET `path`, and how long it took to answer.
fn timed_get(port: u16, path: &str) -> (String, String, Duration) {
    let started = Instant::now();
    let (status, _, body) =
        http_get(port, path).unwrap_or_else(|e| panic!("GET {path} did not answer: {e}"));
    (status, body, started.elapsed())
}

fn series(name: &str, item: &str, region: &str) -> String {
    format!("{name}{{campaign=\"rsvc\",item=\"{item}\",region=\"{region}\"}}")
}

fn up(region: &str) -> String {
    format!("seckill_region_up{{campaign=\"rsvc\",region=\"{region}\"}}")
}

/// Users whose home region is `region`, as `seckill regions home` says.
fn users_at_home_in(file: &CampaignFile, region: &str, count: usize) -> Vec<String> {
    let candidates: Vec<String> = (0..64).map(|n| format!("u{n}")).collect();
    let mut args = vec!["regions", "home", "--format", "json"];
    args.extend(candidates.iter().map(String::as_str));
    let said = seckill(&args).campaign(file).succeeds().json();
    let homes = said["homes"]
        .as_array()
        .or_else(|| said["data"]["homes"].as_array())
        .unwrap_or_else(|| panic!("no homes in {said}"));
    let found: Vec<String> = homes
        .iter()
        .filter(|h| h["home"] == region)
        .map(|h| h["user"].as_str().unwrap().to_string())
        .take(count)
        .collect();
    assert_eq!(found.len(), count, "{said}");
    found
}

#[test]
fn the_mover_serves_every_regions_books_and_names_a_region_that_hangs() {
    let (a, b) = (RedisServer::start(), RedisServer::start());
    let file = two_regions(&a, &b);
    seckill(&["preheat"]).campaign(&file).succeeds();
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let log = |ext: &str| std::fs::File::create(file.dir.path().join(format!("mover.{ext}")));
    let mut mover = KillOnDrop(
        seckill(&[
            "--response-timeout",
            "1s",
            "--connect-timeout",
            "1s",
            "regions",
            "rebalance",
            "--watch",
            "--interval",
            "100ms",
            "--wait-timeout",
            "500ms",
            "--metrics-listen",
            &listen,
        ])
        .campaign(&file)
        .spawn_with_output(log("out").unwrap(), log("err").unwrap()),
    );
    let mover_log = || std::fs::read_to_string(file.dir.path().join("mover.err")).unwrap();

    // Every item's books over both regions, read afresh, and the mover's own.
    let mut text = String::new();
    wait_until("the mover's first round in /metrics", || {
        text = http_get(port, "/metrics").map(|r| r.2).unwrap_or_default();
        text.contains("seckill_last_success_timestamp_seconds{campaign=\"rsvc\",command=\"regions_rebalance\"}")
    });
    promtool_check(&text);
    for item in ["1", "2"] {
        assert_eq!(
            sample(&text, &series("seckill_region_stock_left", item, "a")),
            6.0
        );
        assert_eq!(
            sample(&text, &series("seckill_region_stock_left", item, "b")),
            4.0
        );
        assert_eq!(
            sample(&text, &series("seckill_region_fenced", item, "a")),
            0.0
        );
        let item_labels = format!("{{campaign=\"rsvc\",item=\"{item}\"}}");
        assert_eq!(
            sample(&text, &format!("seckill_region_breaches{item_labels}")),
            0.0
        );
    }
    assert_eq!(sample(&text, &up("a")), 1.0);
    assert_eq!(sample(&text, &up("b")), 1.0);
    for counter in [
        "seckill_regions_mover_rounds_total",
        "seckill_regions_mover_transfers_total",
        "seckill_regions_mover_units_moved_total",
        "seckill_regions_mover_units_settled_total",
        "seckill_regions_mover_left_in_transit_total",
    ] {
        assert!(
            text.contains(&format!("# TYPE {counter} counter")),
            "{counter}: {text}"
        );
    }
    assert!(
        sample(
            &text,
            "seckill_regions_mover_rounds_total{campaign=\"rsvc\"}"
        ) >= 1.0
    );
    assert!(text.contains("seckill_build_info{"), "{text}");
    let (status, body, _) = timed_get(port, "/healthz");
    assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
    assert!(
        body.contains(&a.port.to_string()) && body.contains(&b.port.to_string()),
        "{body}"
    );

    // Region a hangs for three seconds: a scrape first, then the probe.
    let frozen = Frozen::new(&mut a.conn());
    let stalled = Instant::now();
    // Within the response timeout (1s), and some slack for a loaded host:
    // reading on the page's thread cost one timeout per read (two passes).
    let (status, text, took) = timed_get(port, "/metrics");
    assert_eq!(status, "HTTP/1.1 200 OK", "{text}");
    assert!(
        took < Duration::from_millis(1800),
        "/metrics took {took:?}: {text}"
    );
    promtool_check(&text);
    assert_eq!(sample(&text, &up("a")), 0.0, "{text}");
    assert_eq!(sample(&text, &up("b")), 1.0, "{text}");
    // b is read; a is unreadable, a breach of the books until it answers.
    assert_eq!(
        sample(&text, &series("seckill_region_stock_left", "1", "b")),
        4.0
    );
    assert!(
        !text.contains(&series("seckill_region_stock_left", "1", "a")),
        "{text}"
    );
    assert!(
        sample(
            &text,
            "seckill_region_breaches{campaign=\"rsvc\",item=\"1\"}"
        ) >= 1.0
    );
    // The probe names it, at once (its own check of every region).
    let (status, body, took) = timed_get(port, "/healthz");
    assert_eq!(status, "HTTP/1.1 503 Service Unavailable", "{body}");
    assert!(
        body.contains("region a") && !body.contains("region b"),
        "{body}"
    );
    assert!(took < Duration::from_millis(1800), "/healthz took {took:?}");
    std::thread::sleep(Duration::from_secs(3).saturating_sub(stalled.elapsed()));
    assert!(
        mover.0.try_wait().unwrap().is_none(),
        "the mover exited while a region hung: {}",
        mover_log()
    );
    drop(frozen);
    wait_until("the mover's log names the region", || {
        mover_log().contains("region a unreadable")
    });

    wait_until("/healthz is 200 again", || {
        http_get(port, "/healthz").is_ok_and(|(status, _, _)| status == "HTTP/1.1 200 OK")
    });
    // A move still works: b sells out, and the mover pulls from a.
    for user in users_at_home_in(&file, "b", 4) {
        seckill(&["--region", "b", "buy", "--item", "1", "--user", &user])
            .campaign(&file)
            .succeeds();
    }
    wait_until("the mover moved stock from a to b", || {
        let Ok((_, _, text)) = http_get(port, "/metrics") else {
            return false;
        };
        let moved = sample(
            &text,
            "seckill_regions_mover_units_moved_total{campaign=\"rsvc\"}",
        );
        moved >= 1.0
            && sample(&text, &series("seckill_region_stock_left", "1", "b")) >= 1.0
            && sample(&text, &series("seckill_region_stock_left", "1", "a")) < 6.0
            && sample(
                &text,
                "seckill_region_breaches{campaign=\"rsvc\",item=\"1\"}",
            ) == 0.0
    });
    assert!(mover.0.try_wait().unwrap().is_none(), "{}", mover_log());
    terminate(&mover.0);
    assert!(wait_exit(&mut mover.0).success(), "{}", mover_log());
}
