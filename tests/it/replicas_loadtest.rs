//! `loadtest --variant full --wait-replicas N` against a standalone Redis with
//! a real replica: every buy is followed by WAIT on its connection (event
//! loop, pipelined). With the replica online every sale is `ok`; with it
//! frozen (SIGSTOP, no acknowledgements) every sale is `unreplicated` — and
//! the books stay exact either way: an unreplicated buy sold its unit.

use crate::support;

use serde_json::Value;
use support::{Frozen, RedisServer, campaign_file, json, seckill};

const CAMPAIGN: &str = "campaign: rlt\nper_user_limit: 1\nitems:\n  \
    - { id: \"1\", name: x, price: \"1.00\", stock: 5 }\n";

fn int(report: &Value, field: &str) -> i64 {
    report[field]
        .as_i64()
        .unwrap_or_else(|| panic!("{field} is not an integer in {report}"))
}

#[test]
fn every_buy_waits_and_unreplicated_buys_still_count_as_sold() {
    let master = RedisServer::start();
    let replica = support::start_replica_of(&master);
    let file = campaign_file(CAMPAIGN);
    let run = |args: &str| {
        seckill(&file.path, &master.url())
            .args(["loadtest", "--variant", "full", "--wait-replicas", "1"])
            .args(args.split_whitespace())
            .output()
            .unwrap()
    };
    let full = |args: &str| {
        let output = run(&format!("--format json {args}"));
        assert!(output.status.success(), "{output:?}");
        json(&output)["variants"][0].clone()
    };

    let replicated =
        full("--wait-timeout 2s --connections 8 --pipeline 4 --requests 400 --stock 50");
    let frozen = Frozen::new(&mut replica.conn());
    let unreplicated = full("--wait-timeout 100ms --connections 4 --requests 40 --stock 10");
    let csv = run("--wait-timeout 50ms --connections 2 --requests 6 --stock 2 --format csv");
    let wide = run("--wait-timeout 50ms --connections 2 --requests 6 --stock 2 --wide");
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

    let text = String::from_utf8_lossy(&csv.stdout);
    let mut lines = text.lines().map(|l| l.split(',').collect::<Vec<_>>());
    let (header, row) = (lines.next().unwrap(), lines.next().unwrap());
    let column = header
        .iter()
        .position(|h| *h == "\"unreplicated\"")
        .unwrap();
    assert_eq!(row[column], "\"2\"", "{text}");
    let table = String::from_utf8_lossy(&wide.stdout);
    assert!(table.contains("unreplicated"), "{table}");
    assert!(table.contains("WAIT for 1 replica(s)"), "{table}");
}

#[test]
fn wait_replicas_needs_the_full_variant() {
    let server = RedisServer::start();
    let file = campaign_file(CAMPAIGN);
    let output = seckill(&file.path, &server.url())
        .args(["loadtest", "--variant", "v3", "--wait-replicas", "1"])
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(seckill::model::exit_codes::USAGE_ERROR)
    );
    assert!(String::from_utf8_lossy(&output.stderr).contains("full variant only"));
}
