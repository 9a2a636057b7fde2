//! What `deploy/` ships works with this build: the alert rules pass
//! `promtool check rules` and their unit tests (`promtool test rules`, every
//! alert fired and cleared), the rules and the Grafana dashboard use only
//! series the binary exports — each found in a real scrape of `consume
//! --metrics-listen` and of `status --format prometheus` — and every
//! systemd unit's command line parses with the real command line.

use std::collections::BTreeSet;
use std::process::Command;

use clap::Parser;
use seckill::cli::Cli;

use crate::status::{consume_with_metrics, scrape_until};
use crate::support::RedisServer;
use crate::support::orders::{terminate, wait_exit};
use crate::support::spec::{campaign, seckill};

fn promtool(args: &[&str]) -> String {
    let output = Command::new("promtool")
        .args(args)
        .current_dir("deploy/prometheus")
        .output()
        .expect("promtool must be installed (scripts/install-servers.sh installs prometheus)");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "promtool {args:?}:\n{text}");
    text
}

#[test]
fn the_alert_rules_pass_promtool_and_every_alert_fires_and_clears_in_their_tests() {
    let checked = promtool(&["check", "rules", "seckill-rules.yml"]);
    assert!(checked.contains("SUCCESS"), "{checked}");
    let tested = promtool(&["test", "rules", "seckill-rules.test.yml"]);
    assert!(tested.contains("SUCCESS"), "{tested}");

    let rules = std::fs::read_to_string("deploy/prometheus/seckill-rules.yml").unwrap();
    let tests = std::fs::read_to_string("deploy/prometheus/seckill-rules.test.yml").unwrap();
    let alerts: Vec<&str> = rules
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- alert: "))
        .collect();
    assert!(alerts.len() >= 10, "{alerts:?}");
    // Each alert's checks, in order: it must be seen firing and, later, cleared.
    for alert in &alerts {
        let mut fired = false;
        let mut cleared_after = false;
        let mut lines = tests.lines().peekable();
        while let Some(line) = lines.next() {
            if line.trim() != format!("alertname: {alert}") {
                continue;
            }
            let expected = lines.next().unwrap_or_default().trim();
            if expected == "exp_alerts: []" {
                cleared_after |= fired;
            } else {
                fired = true;
            }
        }
        assert!(
            fired && cleared_after,
            "{alert}: fired {fired}, cleared afterwards {cleared_after}"
        );
    }
}

/// Every `seckill_*` name in `text`.
fn series_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("seckill_") {
        let name: String = rest[at..]
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        rest = &rest[at + name.len()..];
        names.insert(name);
    }
    names
}

/// The families (`# TYPE name`) of an exposition text.
fn families(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|l| l.split(' ').next().unwrap().to_string())
        .collect()
}

/// The `expr` of every dashboard target and the templating queries.
fn dashboard_queries() -> Vec<String> {
    let text = std::fs::read_to_string("deploy/grafana/seckill.json").unwrap();
    let dashboard: serde_json::Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    let mut queries = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            queries.push(target["expr"].as_str().unwrap().to_string());
        }
    }
    for variable in dashboard["templating"]["list"].as_array().unwrap() {
        if let Some(query) = variable["query"]["query"].as_str() {
            queries.push(query.to_string());
        }
    }
    queries
}

#[test]
fn the_dashboard_and_the_rules_use_only_series_a_real_scrape_has() {
    let server = RedisServer::start();
    // A reservation campaign with an end and a bucketed item: every family has a series.
    let file = campaign("dash")
        .payment_timeout("1h")
        .ends_in(3600)
        .item("1", 20)
        .item("2", 20)
        .buckets(2)
        .write();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    for user in ["a", "b"] {
        seckill(&["buy", "--item", "1", "--user", user])
            .campaign(&file)
            .redis(&server)
            .succeeds();
    }
    let (mut consumer, port) = consume_with_metrics(&file, &server);
    let scrape = scrape_until(port, "consume stored both orders", |text| {
        text.contains("seckill_orders_stored_total{campaign=\"dash\",item=\"1\"} 2\n")
            && text.contains("seckill_last_success_timestamp_seconds{")
    });
    let textfile = seckill(&["status", "--format", "prometheus"])
        .campaign(&file)
        .redis(&server)
        .succeeds()
        .stdout();
    terminate(&consumer);
    assert!(wait_exit(&mut consumer).success());
    let (served, written) = (families(&scrape), families(&textfile));
    // The item families are in both; the rest are the consumer's own.
    for family in &written {
        assert!(
            served.contains(family),
            "{family} is in status but not in consume's /metrics"
        );
    }
    let dashboard: BTreeSet<String> = dashboard_queries()
        .iter()
        .flat_map(|q| series_names(q))
        .collect();
    assert!(dashboard.len() >= 15, "{dashboard:?}");
    let rules: BTreeSet<String> = std::fs::read_to_string("deploy/prometheus/seckill-rules.yml")
        .unwrap()
        .lines()
        .filter_map(|l| l.trim().strip_prefix("expr: "))
        .flat_map(series_names)
        .collect();
    for (what, names) in [("the dashboard", &dashboard), ("the rules", &rules)] {
        for name in names {
            assert!(
                served.contains(name),
                "{what}: {name} is not in a real scrape of consume --metrics-listen"
            );
        }
    }
    // What status writes for the textfile collector is all the dashboard's item panels need.
    for name in [
        "seckill_stock_left",
        "seckill_sold_units",
        "seckill_stream_lag",
        "seckill_dead_letters",
        "seckill_kill_switch",
        "seckill_consumer_idle_seconds",
        "seckill_reservation_units",
    ] {
        assert!(dashboard.contains(name) && written.contains(name), "{name}");
    }
}

/// `KEY=value` of `Environment=` lines, for `${KEY}` in `ExecStart=`.
fn unit_field<'a>(unit: &'a str, key: &str) -> Vec<&'a str> {
    unit.lines()
        .filter_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
        .collect()
}

#[test]
fn every_systemd_unit_runs_a_command_line_that_parses() {
    let mut units: Vec<_> = std::fs::read_dir("deploy/systemd")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "service"))
        .collect();
    units.sort();
    assert!(units.len() >= 4, "{units:?}");
    for path in &units {
        let unit = std::fs::read_to_string(path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy();
        let [exec] = unit_field(&unit, "ExecStart")[..] else {
            panic!("{name}: one ExecStart");
        };
        let mut line = exec.replace("%i", "moutai").replace("%H", "host-1");
        for assignment in unit_field(&unit, "Environment") {
            let (key, value) = assignment.split_once('=').unwrap();
            line = line.replace(&format!("${{{key}}}"), value);
        }
        assert!(!line.contains('$') && !line.contains('%'), "{name}: {line}");
        let mut words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(words[0], "/usr/local/bin/seckill", "{name}");
        words[0] = "seckill";
        if let Err(error) = Cli::try_parse_from(&words) {
            panic!("{name}: `{line}` does not parse:\n{error}");
        }
        if unit_field(&unit, "Type") == ["simple"] {
            assert_eq!(unit_field(&unit, "Restart"), ["on-failure"], "{name}");
            assert_eq!(unit_field(&unit, "KillSignal"), ["SIGTERM"], "{name}");
            assert!(words.contains(&"--metrics-listen"), "{name}: no /healthz");
        }
    }
    let consume = std::fs::read_to_string("deploy/systemd/seckill-consume@.service").unwrap();
    assert!(
        consume.contains(" consume --consumer %H-%i "),
        "a stable consumer name per host and instance"
    );
    // systemd's own reading of the units, where systemd is installed.
    if Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_ok()
    {
        let dir = tempfile::tempdir().unwrap();
        for path in std::fs::read_dir("deploy/systemd")
            .unwrap()
            .map(|e| e.unwrap().path())
        {
            let text = std::fs::read_to_string(&path)
                .unwrap()
                .replace("/usr/local/bin/seckill", env!("CARGO_BIN_EXE_seckill"));
            let name = path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .replace('@', "@moutai");
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        let files: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        let output = Command::new("systemd-analyze")
            .args(["verify", "--man=no"])
            .args(&files)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success() && said.trim().is_empty(),
            "systemd-analyze verify:\n{said}"
        );
    }
}
