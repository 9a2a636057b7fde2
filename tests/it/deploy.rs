//! What `deploy/` ships works with this build.
//!
//! - The Prometheus mixin: the recording rules and the alerts pass `promtool
//!   check rules`, and their unit tests (`promtool test rules`) evaluate
//!   every recording rule and fire and clear every alert; every alert has a
//!   severity and a `runbook_url` naming a section of docs/guide.md that
//!   exists; every loop the sale needs has a per-campaign absent rule.
//! - The rules and the Grafana dashboard use only series this build exports
//!   — each found in a real scrape of `consume --metrics-listen`, of
//!   `serve`'s /metrics, of the regions' mover (`regions rebalance --watch
//!   --metrics-listen`) and of `status --format prometheus` (one sale, and
//!   one over two regions) — or recorded
//!   by the mixin (the dashboard reads only recorded item series), and the
//!   redis_exporter series the guide names.
//! - A real Prometheus loading the mixin and scraping two consumers and a
//!   serve says the stock left once, where the raw series add up twice, and
//!   puts SeckillConsumerAbsent for that campaign in pending once both
//!   consumers are gone.
//! - Every systemd unit's command line parses with the real command line,
//!   the ports come from the campaign's environment file only (one per
//!   service, so a second campaign on the host takes its own), a missing
//!   port is refused by name, and `systemd-analyze verify` accepts them.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::time::Duration;

use clap::Parser;
use seckill::cli::Cli;

use crate::status::{consume_with_metrics, scrape_until};
use crate::support::orders::{buy_many, terminate, wait_exit, wait_until};
use crate::support::serve::Serve;
use crate::support::spec::{campaign, seckill};
use crate::support::{RedisServer, free_port};

const RECORDING: &str = "deploy/prometheus/seckill-recording.yml";
const ALERTS: &str = "deploy/prometheus/seckill-alerts.yml";
const RECORDING_TESTS: &str = "deploy/prometheus/seckill-recording.test.yml";
const ALERT_TESTS: &str = "deploy/prometheus/seckill-alerts.test.yml";
const DASHBOARD: &str = "deploy/grafana/seckill.json";

/// The loops a sale needs running beside it, by their `command` label.
const LOOPS: [&str; 3] = ["consume", "expire", "queue_admit"];

/// The redis_exporter series the node alerts read (docs/guide.md names them).
const REDIS_EXPORTER: [&str; 3] = [
    "redis_evicted_keys_total",
    "redis_master_link_up",
    "redis_connected_slaves",
];

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

/// A YAML file as JSON values.
fn yaml(path: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every rule of a rule file.
fn rules(path: &str) -> Vec<serde_json::Value> {
    yaml(path)["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["rules"].as_array().unwrap().clone())
        .collect()
}

/// The names the recording rules define.
fn records() -> BTreeSet<String> {
    rules(RECORDING)
        .iter()
        .map(|r| r["record"].as_str().unwrap().to_string())
        .collect()
}

/// GitHub's anchors of the headings of a Markdown file.
fn anchors(path: &str) -> BTreeSet<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with('#') && l.contains("# "))
        .map(|l| {
            l.trim_start_matches('#')
                .trim()
                .to_lowercase()
                .chars()
                .filter_map(|c| match c {
                    ' ' => Some('-'),
                    c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

#[test]
fn the_mixin_passes_promtool_and_every_rule_and_alert_is_tested() {
    for file in ["seckill-recording.yml", "seckill-alerts.yml"] {
        let checked = promtool(&["check", "rules", file]);
        assert!(checked.contains("SUCCESS"), "{checked}");
    }
    for file in ["seckill-recording.test.yml", "seckill-alerts.test.yml"] {
        let tested = promtool(&["test", "rules", file]);
        assert!(tested.contains("SUCCESS"), "{tested}");
    }

    // Each recording rule is evaluated by a test.
    let recording_tests = std::fs::read_to_string(RECORDING_TESTS).unwrap();
    let records = records();
    assert!(records.len() >= 30, "{records:?}");
    for record in &records {
        assert!(
            recording_tests.contains(&format!("- expr: {record}\n"))
                || recording_tests.contains(&format!("- expr: {record}{{")),
            "{record} has no promql_expr_test in {RECORDING_TESTS}"
        );
    }

    // Each alert's checks, in order: it must be seen firing and, later, cleared.
    let alert_tests = std::fs::read_to_string(ALERT_TESTS).unwrap();
    let alerts = rules(ALERTS);
    assert!(alerts.len() >= 20, "{alerts:?}");
    let guide = anchors("docs/guide.md");
    for alert in &alerts {
        let name = alert["alert"].as_str().unwrap();
        let mut fired = false;
        let mut cleared_after = false;
        let mut lines = alert_tests.lines();
        while let Some(line) = lines.next() {
            if line.trim() != format!("alertname: {name}") {
                continue;
            }
            if lines.next().unwrap_or_default().trim() == "exp_alerts: []" {
                cleared_after |= fired;
            } else {
                fired = true;
            }
        }
        assert!(
            fired && cleared_after,
            "{name}: fired {fired}, cleared afterwards {cleared_after}"
        );
        let severity = alert["labels"]["severity"].as_str().unwrap_or_default();
        assert!(
            ["info", "warning", "critical"].contains(&severity),
            "{name}: severity {severity:?}"
        );
        let runbook = alert["annotations"]["runbook_url"]
            .as_str()
            .unwrap_or_else(|| panic!("{name} has no runbook_url"));
        let anchor = runbook
            .strip_prefix("docs/guide.md#")
            .unwrap_or_else(|| panic!("{name}: runbook_url {runbook} is not a guide section"));
        assert!(
            guide.contains(anchor),
            "{name}: docs/guide.md has no section #{anchor}"
        );
    }

    // Every loop the sale needs has an absent rule per campaign: the campaigns
    // that need it, unless one is scraped for that campaign.
    for command in LOOPS {
        let selector = format!("seckill_last_success_timestamp_seconds{{command=\"{command}\"}}");
        let absent = alerts.iter().find(|a| {
            let expr = a["expr"].as_str().unwrap();
            expr.contains(&selector) && expr.contains("unless on (campaign)")
        });
        let Some(absent) = absent else {
            panic!("no per-campaign absent rule for {command}");
        };
        assert_eq!(absent["labels"]["severity"], "critical", "{absent}");
    }
}

/// The metric names in a PromQL expression, quoted strings left out.
fn metric_names(expr: &str) -> BTreeSet<String> {
    let mut unquoted = String::new();
    let mut quoted = false;
    for c in expr.chars() {
        if c == '"' {
            quoted = !quoted;
        } else if !quoted {
            unquoted.push(c);
        }
    }
    unquoted
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .filter(|word| word.contains("seckill_") || word.starts_with("redis_"))
        .map(str::to_string)
        .collect()
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
    let text = std::fs::read_to_string(DASHBOARD).unwrap();
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

/// A campaign with every kind of item: reservations, an end, a bucketed item
/// behind a room, a seat item.
fn every_kind(id: &str) -> crate::support::CampaignFile {
    let yaml = campaign(id)
        .payment_timeout("1h")
        .ends_in(3600)
        .item("1", 20)
        .item("2", 20)
        .buckets(2)
        .room("{ mode: rate, admit_rate: 100/s }")
        .yaml();
    let seats = "  - id: hall\n    name: Hall\n    seats:\n      sections:\n        \
                 - { id: A, rows: 2, seats_per_row: 5, tier: vip, price: \"10\" }\norders:\n";
    crate::support::campaign_file(&yaml.replacen("orders:\n", seats, 1))
}

#[test]
fn the_rules_and_the_dashboard_use_only_series_this_build_exports() {
    let server = RedisServer::start();
    let file = every_kind("dash");
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
    let consumed = scrape_until(port, "consume stored both orders", |text| {
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
    let serve = Serve::start(&file, &server.url(), false, &[]);
    crate::support::http::buy(serve.addr, "1", "c", "r-c");
    let served = crate::support::http::get(serve.addr, "/metrics").body;
    crate::status::promtool_check(&served);
    // serve says which build answers and whether it reaches Redis, like every service.
    assert!(
        served.contains("seckill_redis_up{campaign=\"dash\"} 1\n"),
        "{served}"
    );
    assert!(served.contains("seckill_build_info{version=\""), "{served}");

    // A sale over two regions: its textfile and its mover's /metrics.
    let (region_textfile, mover) = regions_scrapes();

    let (from_consume, from_serve) = (families(&consumed), families(&served));
    let (from_regions, from_mover) = (families(&region_textfile), families(&mover));
    // The item families are in both; the rest are the consumer's own. The
    // regions' families are in the mover's too.
    for (status, scrape, name) in [
        (&textfile, &from_consume, "consume"),
        (&region_textfile, &from_mover, "regions rebalance"),
    ] {
        for family in &families(status) {
            assert!(
                scrape.contains(family),
                "{family} is in status but not in {name}'s /metrics"
            );
        }
    }
    let from_status: BTreeSet<String> = families(&textfile).union(&from_regions).cloned().collect();
    let exported: BTreeSet<String> = from_consume
        .iter()
        .chain(&from_serve)
        .chain(&from_mover)
        .flat_map(|f| {
            // A histogram's samples carry suffixes.
            ["", "_bucket", "_sum", "_count"].map(|s| format!("{f}{s}"))
        })
        .collect();
    let records = records();
    let check = |what: &str, name: &str| {
        if name.contains(':') {
            assert!(
                records.contains(name),
                "{what}: {name} is recorded by no rule of {RECORDING}"
            );
        } else if name.starts_with("redis_") {
            assert!(
                REDIS_EXPORTER.contains(&name),
                "{what}: {name} is not one of the redis_exporter series the guide names"
            );
        } else {
            assert!(
                exported.contains(name),
                "{what}: {name} is in no real scrape of consume, serve or status"
            );
        }
    };
    let mut used_raw = BTreeSet::new();
    for rule in rules(RECORDING).iter().chain(&rules(ALERTS)) {
        let name = rule["record"]
            .as_str()
            .or(rule["alert"].as_str())
            .unwrap()
            .to_string();
        for metric in metric_names(rule["expr"].as_str().unwrap()) {
            check(&name, &metric);
            used_raw.insert(metric);
        }
    }
    let mut dashboard = BTreeSet::new();
    for query in dashboard_queries() {
        for metric in metric_names(&query) {
            check("the dashboard", &metric);
            dashboard.insert(metric);
        }
    }
    // The dashboard reads item state only through the deduplicating rules:
    // a raw item gauge summed over two consumers and the textfile counts it three times.
    for family in &from_status {
        assert!(
            !dashboard.contains(family) || family == "seckill_build_info",
            "the dashboard reads the raw item series {family}: use its campaign_item: record"
        );
    }
    assert!(dashboard.len() >= 30, "{dashboard:?}");
    // Every family any process exports is read by a rule or the dashboard.
    for family in from_consume.iter().chain(&from_serve).chain(&from_mover) {
        let read = used_raw.iter().chain(&dashboard).any(|name| {
            name == family
                || name.strip_suffix("_bucket") == Some(family)
                || name.contains(&format!(":{family}:"))
        });
        assert!(read, "{family} is exported and neither recorded nor shown");
    }
}

/// `status --format prometheus` of a preheated sale over two regions, and a
/// scrape of its mover (`regions rebalance --watch --metrics-listen`) after
/// its first round.
fn regions_scrapes() -> (String, String) {
    let (a, b) = (RedisServer::start(), RedisServer::start());
    let file = crate::support::campaign_file(&format!(
        "campaign: dash-regions\nregions:\n  \
         a: {{ redis: \"redis://127.0.0.1:{}/0\", share: 6 }}\n  \
         b: {{ redis: \"redis://127.0.0.1:{}/0\", share: 4 }}\n\
         items:\n  - {{ id: \"1\", name: One, price: \"1.00\", stock: 10 }}\n",
        a.port, b.port
    ));
    seckill(&["preheat"]).campaign(&file).succeeds();
    // Every family has a sample: b fenced (as its fence marks a slot after a
    // failover), so a move a → b stays in transit (exit 23).
    let meta = seckill::model::keys::ItemKeys::live("dash-regions", "1").meta;
    let _: i64 = redis::cmd("HSET")
        .arg(&[meta.as_str(), "fenced", "1"])
        .query(&mut b.conn())
        .unwrap();
    seckill(&[
        "regions", "move", "--item", "1", "--from", "a", "--to", "b", "--units", "2",
    ])
    .campaign(&file)
    .fails_with(seckill::model::exit_codes::IN_TRANSIT);
    let textfile = seckill(&["status", "--format", "prometheus"])
        .campaign(&file)
        .succeeds()
        .stdout();
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut mover = crate::support::KillOnDrop(
        seckill(&[
            "regions",
            "rebalance",
            "--watch",
            "--metrics-listen",
            &listen,
        ])
        .campaign(&file)
        .spawn_with_output(std::process::Stdio::null(), std::process::Stdio::null()),
    );
    let scraped = scrape_until(port, "the regions mover's first round", |text| {
        text.contains("command=\"regions_rebalance\"")
            && text.contains("seckill_region_in_transit_units{")
    });
    terminate(&mover.0);
    assert!(wait_exit(&mut mover.0).success());
    crate::status::promtool_check(&scraped);
    (textfile, scraped)
}

/// A Prometheus of the test's own on a free port, loading the mixin and
/// scraping `targets` every 500 ms; killed on drop.
struct Prometheus {
    child: std::process::Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    fn start(targets: &[u16]) -> Prometheus {
        let dir = tempfile::tempdir().unwrap();
        let here = std::env::current_dir().unwrap();
        let targets: Vec<String> = targets.iter().map(|p| format!("'127.0.0.1:{p}'")).collect();
        let config = format!(
            "global:\n  scrape_interval: 500ms\n  scrape_timeout: 400ms\n  evaluation_interval: 500ms\n\
             rule_files:\n  - {}\n  - {}\n\
             scrape_configs:\n  - job_name: seckill\n    static_configs:\n      - targets: [{}]\n",
            here.join(RECORDING).display(),
            here.join(ALERTS).display(),
            targets.join(", ")
        );
        let config_path = dir.path().join("prometheus.yml");
        std::fs::write(&config_path, config).unwrap();
        let port = free_port();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("prometheus must be installed (scripts/install-servers.sh installs it)");
        Prometheus {
            child,
            port,
            _dir: dir,
        }
    }

    /// The samples of an instant query: labels → value.
    fn query(&self, promql: &str) -> BTreeMap<String, f64> {
        let encoded: String = promql
            .bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect();
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], self.port));
        let path = format!("/api/v1/query?query={encoded}");
        let Ok(answer) = crate::support::http::send(addr, "GET", &path, &[], b"") else {
            return BTreeMap::new();
        };
        if answer.status != 200 {
            return BTreeMap::new();
        }
        let body = match answer.header("Transfer-Encoding") {
            Some("chunked") => unchunked(&answer.body),
            _ => answer.body.clone(),
        };
        let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
        answer["data"]["result"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|sample| {
                let mut labels: Vec<String> = sample["metric"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .filter(|(k, _)| *k != "__name__")
                    .map(|(k, v)| format!("{k}={}", v.as_str().unwrap()))
                    .collect();
                labels.sort();
                let value = sample["value"][1].as_str().unwrap().parse().unwrap();
                (labels.join(","), value)
            })
            .collect()
    }
}

/// A chunked HTTP body, put back together.
fn unchunked(mut body: &str) -> String {
    let mut whole = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        whole.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    whole
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_real_prometheus_with_the_mixin_counts_an_item_once_however_many_export_it() {
    let server = RedisServer::start();
    let file = campaign("twice").item("1", 40).write();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    buy_many(&server, &file, "1", "u", 7);
    // Two consumers of one campaign, as two hosts run them.
    let (mut first, first_port) = consume_with_metrics(&file, &server);
    let (mut second, second_port) = consume_with_metrics(&file, &server);
    for port in [first_port, second_port] {
        scrape_until(port, "a consumer's metrics", |t| {
            t.contains("seckill_stock_left{campaign=\"twice\",item=\"1\"} 33\n")
        });
    }
    let serve = Serve::start(&file, &server.url(), false, &[]);
    let prometheus = Prometheus::start(&[first_port, second_port, serve.addr.port()]);
    let item = "campaign=twice,item=1";
    wait_until("Prometheus recorded the item", || {
        prometheus
            .query("campaign_item:seckill_stock_left:max")
            .get(item)
            == Some(&33.0)
            && prometheus
                .query("sum by (campaign, item) (seckill_stock_left)")
                .get(item)
                == Some(&66.0)
    });
    // The series the dashboard reads say the truth; the raw sum was twice it.
    assert_eq!(
        prometheus
            .query("campaign_item:seckill_sold_units:max")
            .get(item),
        Some(&7.0)
    );
    // serve's counters are recorded too (a rate needs two scrapes).
    wait_until("serve's round trips recorded", || {
        prometheus
            .query("campaign:seckill_serve_redis_round_trips:rate1m")
            .contains_key("campaign=twice")
    });
    // Both consumers run: no absent alert for the campaign.
    let absent = "ALERTS{alertname=\"SeckillConsumerAbsent\",campaign=\"twice\"}";
    std::thread::sleep(Duration::from_secs(2));
    assert!(prometheus.query(absent).is_empty());
    for consumer in [&mut first, &mut second] {
        terminate(consumer);
        assert!(wait_exit(consumer).success());
    }
    wait_until("SeckillConsumerAbsent pending for the campaign", || {
        prometheus.query(absent).keys().any(|labels| {
            labels.contains("alertstate=pending") && labels.contains("campaign=twice")
        })
    });
}

/// `KEY=value` lines of `Environment=` and of the example environment files.
fn unit_field<'a>(unit: &'a str, key: &str) -> Vec<&'a str> {
    unit.lines()
        .filter_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
        .collect()
}

/// The example environment of one campaign: the shared file and the role's.
fn example_env(role: &str) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    for file in [
        "CAMPAIGN.env.example".to_string(),
        format!("CAMPAIGN.{role}.env.example"),
    ] {
        let text = std::fs::read_to_string(format!("deploy/systemd/env/{file}"))
            .unwrap_or_else(|e| panic!("deploy/systemd/env/{file}: {e}"));
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && l.contains('='))
        {
            let (key, value) = line.split_once('=').unwrap();
            env.insert(key.to_string(), value.to_string());
        }
    }
    env
}

/// The service units of `deploy/systemd`, by file name.
fn service_units() -> Vec<(String, String)> {
    let mut units: Vec<(String, String)> = std::fs::read_dir("deploy/systemd")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "service"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    units.sort();
    units
}

/// `ExecStart=` of `unit` as systemd would run it for `instance` with `env`:
/// `${KEY}` one word, `$KEY` split on spaces.
fn exec_start(unit: &str, instance: &str, env: &BTreeMap<String, String>) -> Vec<String> {
    let [exec] = unit_field(unit, "ExecStart")[..] else {
        panic!("one ExecStart: {unit}");
    };
    let line = exec.replace("%i", instance).replace("%H", "host-1");
    let mut words = Vec::new();
    for word in line.split_whitespace() {
        if let Some(key) = word.strip_prefix("${").and_then(|w| w.strip_suffix('}')) {
            words.push(env.get(key).cloned().unwrap_or_default());
        } else if let Some(key) = word.strip_prefix('$') {
            words.extend(
                env.get(key)
                    .into_iter()
                    .flat_map(|v| v.split_whitespace().map(str::to_string).collect::<Vec<_>>()),
            );
        } else {
            words.push(word.to_string());
        }
    }
    words
}

#[test]
fn every_systemd_unit_runs_a_command_line_that_parses_on_ports_of_its_campaign() {
    let units = service_units();
    let names: Vec<&str> = units.iter().map(|(n, _)| n.as_str()).collect();
    for needed in [
        "seckill-consume@.service",
        "seckill-expire@.service",
        "seckill-queue-admit@.service",
        "seckill-serve@.service",
    ] {
        assert!(names.contains(&needed), "no {needed}: {names:?}");
    }
    // Two campaigns on one host: the second's example ports are the next block.
    let mut listening: BTreeMap<String, String> = BTreeMap::new();
    for (campaign, shift) in [("moutai", 0), ("cups", 10)] {
        for (name, unit) in &units {
            let role = unit
                .lines()
                .filter_map(|l| l.strip_prefix("EnvironmentFile=/etc/seckill/%i."))
                .find_map(|rest| rest.strip_suffix(".env"))
                .unwrap_or_else(|| panic!("{name}: no role environment file"));
            assert!(
                unit.contains("EnvironmentFile=/etc/seckill/%i.env\n"),
                "{name}: the campaign's environment file, required"
            );
            // No port of its own: every instance would take the same one.
            assert!(
                unit_field(unit, "Environment").is_empty(),
                "{name}: a default in Environment= applies to every campaign"
            );
            let mut env = example_env(role);
            for value in env.values_mut() {
                if let Some((host, port)) = value.rsplit_once(':')
                    && let Ok(port) = port.parse::<u16>()
                    && !value.contains('/')
                {
                    *value = format!("{host}:{}", port + shift);
                }
            }
            let mut words = exec_start(unit, campaign, &env);
            assert_eq!(words[0], "/usr/local/bin/seckill", "{name}");
            words[0] = "seckill".to_string();
            if let Err(error) = Cli::try_parse_from(&words) {
                panic!("{name}: `{}` does not parse:\n{error}", words.join(" "));
            }
            if unit_field(unit, "Type") != ["simple"] {
                continue;
            }
            assert_eq!(unit_field(unit, "Restart"), ["on-failure"], "{name}");
            assert_eq!(unit_field(unit, "KillSignal"), ["SIGTERM"], "{name}");
            let flag = if words.contains(&"serve".to_string()) {
                "--listen"
            } else {
                "--metrics-listen"
            };
            let at = words
                .iter()
                .position(|w| w == flag)
                .unwrap_or_else(|| panic!("{name}: no {flag}: no /healthz, no /metrics"));
            let address = words[at + 1].clone();
            let port = address.rsplit(':').next().unwrap().to_string();
            if let Some(other) = listening.insert(port.clone(), format!("{name} of {campaign}")) {
                panic!("{name} of {campaign} and {other} both listen on port {port}");
            }
            // A campaign file without the port is refused at start, naming it.
            let [pre] = unit_field(unit, "ExecStartPre")[..] else {
                panic!("{name}: one ExecStartPre checking the port");
            };
            let script = pre
                .strip_prefix("/bin/sh -c '")
                .and_then(|s| s.strip_suffix('\''))
                .unwrap()
                .replace("$$", "$")
                .replace("%i", campaign);
            let variable = words_variable(unit, flag);
            let missing = Command::new("/bin/sh")
                .args(["-c", &script])
                .env_remove(&variable)
                .output()
                .unwrap();
            let said = String::from_utf8_lossy(&missing.stderr);
            assert!(
                !missing.status.success()
                    && said.contains(&variable)
                    && said.contains(&format!("/etc/seckill/{campaign}.env")),
                "{name}: {said}"
            );
            let set = Command::new("/bin/sh")
                .args(["-c", &script])
                .env(&variable, &address)
                .status()
                .unwrap();
            assert!(set.success(), "{name}: refused a set {variable}");
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
            .filter(|p| p.is_file())
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

/// The variable `${NAME}` that follows `flag` in `unit`'s ExecStart.
fn words_variable(unit: &str, flag: &str) -> String {
    let exec = unit_field(unit, "ExecStart")[0];
    let after = exec.split(&format!("{flag} ")).nth(1).unwrap();
    after
        .split_whitespace()
        .next()
        .unwrap()
        .trim_start_matches("${")
        .trim_end_matches('}')
        .to_string()
}
