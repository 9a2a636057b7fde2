//! `loadtest --variant full --wait-replicas N` against a standalone Redis with
//! a real replica: every buy is followed by WAIT on its connection (event
//! loop, pipelined). With the replica online every sale is `ok`; with it
//! frozen (SIGSTOP, no acknowledgements) every sale is `unreplicated` — and
//! the books stay exact either way: an unreplicated buy sold its unit.

use crate::support;

use seckill::model::exit_codes::USAGE_ERROR;
use serde_json::Value;
use support::spec::{campaign, seckill};
use support::{CampaignFile, Frozen, RedisServer};

fn rlt() -> CampaignFile {
    campaign("rlt").per_user_limit(1).item("1", 5).write()
}

fn int(report: &Value, field: &str) -> i64 {
    report[field]
        .as_i64()
        .unwrap_or_else(|| panic!("{field} is not an integer in {report}"))
}

#[test]
fn every_buy_waits_and_unreplicated_buys_still_count_as_sold() {
    let master = RedisServer::start();
    let replica = support::start_replica_of(&master);
    let file = rlt();
    let run = |args: &str| {
        let words: Vec<&str> = args.split_whitespace().collect();
        seckill(&["loadtest", "--variant", "full", "--wait-replicas", "1"])
            .args(&words)
            .campaign(&file)
            .redis(&master)
    };
    let full =
        |args: &str| run(&format!("--format json {args}")).succeeds().json()["variants"][0].clone();

    let replicated =
        full("--wait-timeout 2s --connections 8 --pipeline 4 --requests 400 --stock 50");
    let frozen = Frozen::new(&mut replica.conn());
    let unreplicated = full("--wait-timeout 100ms --connections 4 --requests 40 --stock 10");
    let csv = run("--wait-timeout 50ms --connections 2 --requests 6 --stock 2 --format csv").runs();
    let wide = run("--wait-timeout 50ms --connections 2 --requests 6 --stock 2 --wide").runs();
    drop(frozen);

    for (report, requests, stock) in [(&replicated, 400, 50), (&unreplicated, 40, 10)] {
        assert_eq!(report["wait_replicas"], 1, "{report}");
        assert_eq!(report["books_balance"], true, "{report}");
        assert_eq!(report["verdict"], "exact", "{report}");
        assert_eq!(int(report, "final_stock"), 0, "{report}");
        let sold = int(report, "succeeded") + int(report, "unreplicated");
        assert_eq!(sold, stock, "{report}");
        assert_eq!(int(report, "stream_len"), stock, "{report}");
        assert_eq!(
            sold + int(report, "sold_out") + int(report, "rejected"),
            requests,
            "{report}"
        );
    }
    assert_eq!(int(&replicated, "unreplicated"), 0, "{replicated}");
    assert_eq!(int(&unreplicated, "succeeded"), 0, "{unreplicated}");

    let text = csv.stdout();
    let mut lines = text.lines().map(|l| l.split(',').collect::<Vec<_>>());
    let (header, row) = (lines.next().unwrap(), lines.next().unwrap());
    let column = header
        .iter()
        .position(|h| *h == "\"unreplicated\"")
        .unwrap();
    assert_eq!(row[column], "\"2\"", "{text}");
    let table = wide.stdout();
    assert!(table.contains("unreplicated"), "{table}");
    assert!(table.contains("WAIT for 1 replica(s)"), "{table}");
}

#[test]
fn wait_replicas_needs_the_full_variant() {
    let server = RedisServer::start();
    let refused = seckill(&["loadtest", "--variant", "v3", "--wait-replicas", "1"])
        .campaign(&rlt())
        .redis(&server)
        .fails_with(USAGE_ERROR);
    assert!(refused.stderr().contains("full variant only"));
}
