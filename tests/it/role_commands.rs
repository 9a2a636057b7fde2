//! The table of what each role sends outside its scripts is complete: each
//! role's subcommands run on a real Redis under `MONITOR` (as a user with
//! every command but `@admin`, so what `MONITOR` does not show is refused
//! and lands in `ACL LOG`), and every command they send outside a script —
//! with the kind of key it goes to — must be one the role's whole path
//! names. That path is read from `acl --apply`'s own checks (each "command"
//! check names a row of the table), so a subcommand that starts sending a
//! new command fails here until its role's table, and with it `acl --apply`
//! and `doctor`, know it.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::cluster::RedisCluster;
use crate::support::serve::Serve;
use crate::support::spec::{campaign, seckill};
use crate::support::{CampaignFile, KillOnDrop, RedisServer, http};

const CAMPAIGN: &str = "paths";

/// A plain item, a bucketed one and one behind a waiting room that takes
/// registrations, on a reservation campaign: every path a role walks.
fn sale() -> CampaignFile {
    let until = (chrono::Utc::now() + chrono::Duration::hours(1))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    campaign(CAMPAIGN)
        .payment_timeout("1s")
        .item("1", 3)
        .item("2", 6)
        .buckets(2)
        .item("3", 10)
        .room(&format!(
            "{{ mode: max_active, max_active: 5, admission_ttl: 1m, registration: {{ until: \"{until}\", per_device: 3 }} }}"
        ))
        .write()
}

/// (command, key kind) of each "command" check of the role's whole path,
/// as `acl --apply` proves it for a user of that role.
fn table(port: u16, file: &CampaignFile, role: &str) -> BTreeSet<(String, String)> {
    let password = file.dir.path().join("table.pw");
    std::fs::write(&password, "table-password\n").unwrap();
    let user = format!("table-{role}");
    let ran = seckill(&[
        "acl",
        "--role",
        role,
        "--user",
        &user,
        "--password-file",
        password.to_str().unwrap(),
        "--apply",
    ])
    .campaign(file)
    .redis_url(&format!("redis://127.0.0.1:{port}/0"))
    .json()
    .runs();
    let report = ran.json();
    let rows: BTreeSet<(String, String)> = report["users"][0]["checks"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", ran.describe()))
        .iter()
        .filter_map(|check| {
            Some((
                check["command"].as_str()?.to_string(),
                check["key"].as_str()?.to_string(),
            ))
        })
        .collect();
    assert!(rows.contains(&("PING".into(), String::new())), "{report}");
    let () = redis::cmd("ACL")
        .arg("DELUSER")
        .arg(&user)
        .query(&mut crate::support::cluster::node(port).unwrap())
        .map(|_: i64| ())
        .unwrap();
    rows
}

/// One command as `MONITOR` printed it, sent by a client (not inside a
/// script, not a master's replication stream to the node: the client is
/// then one of the nodes, `nodes`).
fn words_of(line: &str, nodes: &[u16]) -> Option<Vec<String>> {
    let rest = line.split_once("] ")?;
    let client = rest.0.rsplit(' ').next()?;
    if client == "lua" {
        return None;
    }
    if let Some(port) = client
        .rsplit(':')
        .next()
        .and_then(|p| p.parse::<u16>().ok())
        && nodes.contains(&port)
    {
        return None;
    }
    let mut words = Vec::new();
    let mut chars = rest.1.chars();
    while let Some(c) = chars.next() {
        if c != '"' {
            continue;
        }
        let mut word = String::new();
        while let Some(c) = chars.next() {
            match c {
                '\\' => {
                    if let Some(escaped) = chars.next() {
                        word.push(escaped);
                    }
                }
                '"' => break,
                c => word.push(c),
            }
        }
        words.push(word);
    }
    (!words.is_empty()).then_some(words)
}

/// `CMD` or `CMD SUB`, as the table names commands.
fn name_of(words: &[String]) -> String {
    let first = words[0].to_uppercase();
    let containers = [
        "ACL", "CLIENT", "CLUSTER", "COMMAND", "CONFIG", "MEMORY", "OBJECT", "SCRIPT", "XGROUP",
        "XINFO",
    ];
    match words.get(1) {
        Some(sub) if containers.contains(&first.as_str()) => {
            format!("{first} {}", sub.to_uppercase())
        }
        _ => first,
    }
}

/// (is a bucket's, name) of a key of the campaign; `registry` and
/// `loadtest:NAME` for the others.
fn kind_of(key: &str) -> (bool, String) {
    if key == "seckill:campaigns" {
        return (false, "registry".into());
    }
    let (prefix, rest) = key.split_once(":{").unwrap_or(("", key));
    let (tag, suffix) = rest.split_once("}:").unwrap_or(("", rest));
    let name = suffix.split(':').next().unwrap_or("").to_string();
    match prefix {
        "seckill-loadtest" => (false, format!("loadtest:{name}")),
        _ => (tag.contains('.'), name),
    }
}

/// Whether a row of the table covers this command on this key.
fn covered(rows: &BTreeSet<(String, String)>, command: &str, key: Option<(bool, String)>) -> bool {
    rows.iter().any(|(row_command, row_key)| {
        row_command == command
            && match &key {
                None => row_key.is_empty(),
                Some((bucket, name)) => {
                    row_key == name
                        || (*bucket && *row_key == format!("bucket:{name}"))
                        || (row_key == "*" && !name.contains(':') && name != "registry")
                        || (row_key == "loadtest:*" && name.starts_with("loadtest:"))
                }
            }
    })
}

/// (command, key kind) of what one subcommand sent outside scripts (and
/// was refused), run by `run`, on the nodes listening on `ports`.
type Sent = BTreeSet<(String, Option<(bool, String)>)>;

fn sent_by(ports: &[u16], run: impl FnOnce()) -> Sent {
    let admin = |port: u16| crate::support::cluster::node(port).unwrap();
    let mut monitors = Vec::new();
    let mut readers = Vec::new();
    for &port in ports {
        let () = redis::cmd("ACL")
            .arg("LOG")
            .arg("RESET")
            .query(&mut admin(port))
            .unwrap();
        let mut monitor = KillOnDrop(
            Command::new("redis-cli")
                .args(["-p", &port.to_string(), "monitor"])
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let mut lines = BufReader::new(monitor.0.stdout.take().unwrap()).lines();
        assert_eq!(lines.next().unwrap().unwrap().trim(), "OK");
        readers.push(std::thread::spawn(move || {
            lines.map_while(Result::ok).collect::<Vec<_>>()
        }));
        monitors.push(monitor);
    }
    run();
    std::thread::sleep(Duration::from_millis(300));
    drop(monitors);
    let mut conn = admin(ports[0]);
    let mut sent = BTreeSet::new();
    for reader in readers {
        for words in reader
            .join()
            .unwrap()
            .iter()
            .filter_map(|l| words_of(l, ports))
        {
            let command = name_of(&words);
            if command == "AUTH" || command == "HELLO" {
                continue;
            }
            let mut keys: Vec<String> = redis::cmd("COMMAND")
                .arg("GETKEYS")
                .arg(&words)
                .query(&mut conn)
                .unwrap_or_default();
            // A shard channel is named like a key of its slot (the sell-out
            // broadcast, docs/serve.md): the table names it by that key.
            if keys.is_empty() && matches!(command.as_str(), "SSUBSCRIBE" | "SPUBLISH") {
                keys = words.iter().skip(1).take(1).cloned().collect();
            }
            if keys.is_empty() {
                sent.insert((command.clone(), None));
            }
            for key in keys {
                sent.insert((command.clone(), Some(kind_of(&key))));
            }
        }
    }
    for &port in ports {
        let log: Vec<redis::Value> = redis::cmd("ACL")
            .arg("LOG")
            .query(&mut admin(port))
            .unwrap();
        for entry in log {
            let Ok(fields) = redis::from_redis_value::<Vec<(String, redis::Value)>>(entry) else {
                continue;
            };
            let object = fields
                .iter()
                .find(|(f, _)| f == "object")
                .and_then(|(_, v)| redis::from_redis_value::<String>(v.clone()).ok())
                .unwrap_or_default();
            sent.insert((object.to_uppercase().replace('|', " "), None));
        }
    }
    sent
}

/// Every command of `sent` that `rows` do not cover, said.
fn uncovered(
    role: &str,
    subcommand: &str,
    rows: &BTreeSet<(String, String)>,
    sent: &Sent,
) -> Vec<String> {
    sent.iter()
        .filter(|(command, _)| command != "EVALSHA")
        .filter(|(command, key)| !covered(rows, command, key.clone()))
        .map(|(command, key)| {
            format!(
                "{role} `{subcommand}` sends {command} {}",
                key.as_ref()
                    .map(|(bucket, name)| format!(
                        "on {}{name}",
                        if *bucket { "a bucket's " } else { "" }
                    ))
                    .unwrap_or_default()
            )
        })
        .collect()
}

#[test]
fn every_command_a_role_sends_outside_its_scripts_is_in_its_path() {
    let server = RedisServer::start();
    let file = sale();
    let mut conn = server.conn();
    let () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg(&["seen", "on", ">seen-pw", "+@all", "-@admin", "~*", "&*"])
        .query(&mut conn)
        .unwrap();
    let url = format!("redis://seen:seen-pw@127.0.0.1:{}/0", server.port);
    let run = |args: &[&str]| {
        let _ = seckill(args)
            .campaign(&file)
            .redis_url(&url)
            .current_dir(file.dir.path())
            .runs();
    };
    let tables: Vec<(&str, BTreeSet<(String, String)>)> = ["buyer", "consumer", "operator"]
        .into_iter()
        .map(|role| (role, table(server.port, &file, role)))
        .collect();
    let rows = |role: &str| &tables.iter().find(|(r, _)| *r == role).unwrap().1;
    let mut missing = Vec::new();
    let mut check = |role: &str, subcommand: &str, sent: Sent| {
        missing.extend(uncovered(role, subcommand, rows(role), &sent));
        sent
    };

    check(
        "operator",
        "preheat",
        sent_by(&[server.port], || run(&["preheat", "--require-durable"])),
    );
    check(
        "operator",
        "preheat",
        sent_by(&[server.port], || run(&["preheat"])),
    );
    for (item, user) in [("1", "b1"), ("2", "b2")] {
        check(
            "buyer",
            "buy",
            sent_by(&[server.port], || {
                run(&["buy", "--item", item, "--user", user])
            }),
        );
    }
    let waited = check(
        "buyer",
        "buy --wait-replicas",
        sent_by(&[server.port], || {
            run(&[
                "buy",
                "--item",
                "1",
                "--user",
                "w1",
                "--wait-replicas",
                "1",
                "--wait-timeout",
                "100ms",
            ])
        }),
    );
    check(
        "buyer",
        "register",
        sent_by(&[server.port], || {
            run(&[
                "register", "--user", "r1", "--device", "d1", "--ip", "10.0.0.1",
            ])
        }),
    );
    check(
        "buyer",
        "queue join",
        sent_by(&[server.port], || {
            run(&["queue", "join", "--item", "3", "--user", "r1"])
        }),
    );
    check(
        "buyer",
        "queue position",
        sent_by(&[server.port], || {
            run(&["queue", "position", "--item", "3", "--user", "r1"])
        }),
    );
    let served = check(
        "buyer",
        "serve",
        sent_by(&[server.port], || {
            let serve = Serve::start(&file, &url, false, &["--recheck", "100ms"]);
            http::buy(serve.addr, "1", "s1", "rs1");
            http::buy(serve.addr, "2", "s2", "rs2");
            http::get(serve.addr, "/v1/items/1/orders/s1");
            http::post(
                serve.addr,
                "/v1/items/3/register",
                &serde_json::json!({"user": "s3", "device": "d9", "ip": "10.1.1.1"}),
            );
            http::post(
                serve.addr,
                "/v1/items/3/queue",
                &serde_json::json!({"user": "s3"}),
            );
            http::get(serve.addr, "/v1/items/3/queue/s3");
            // Item 1 sold out: the cache reads its buyers, then refuses from memory.
            for user in ["s4", "s5", "s6"] {
                http::buy(serve.addr, "1", user, &format!("r{user}"));
            }
            std::thread::sleep(Duration::from_millis(400));
            http::buy(serve.addr, "1", "late", "rlate");
            http::get(serve.addr, "/healthz");
            serve.stop("-TERM");
        }),
    );
    check(
        "consumer",
        "consume --drain",
        sent_by(&[server.port], || run(&["consume", "--drain"])),
    );
    check(
        "consumer",
        "consume --metrics-listen",
        sent_by(&[server.port], || {
            let port = crate::support::free_port();
            let listen = format!("127.0.0.1:{port}");
            let mut consume = KillOnDrop(
                seckill(&["consume", "--metrics-listen", &listen])
                    .campaign(&file)
                    .redis_url(&url)
                    .current_dir(file.dir.path())
                    .spawn(),
            );
            let addr = listen.parse().unwrap();
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            while http::send(addr, "GET", "/metrics", &[], b"").is_err() {
                assert!(
                    std::time::Instant::now() < deadline,
                    "consume never listened"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
            http::get(addr, "/metrics");
            http::get(addr, "/healthz");
            let _ = Command::new("kill")
                .args(["-TERM", &consume.0.id().to_string()])
                .status();
            let _ = consume.0.wait();
        }),
    );
    check(
        "consumer",
        "pending-claim",
        sent_by(&[server.port], || {
            run(&["pending-claim", "--min-idle", "0s"])
        }),
    );
    for args in [
        &["status"][..],
        &["campaigns"],
        &["shutdown-switch", "status"],
        &["shutdown-switch", "on", "--reason", "t"],
        &["shutdown-switch", "off"],
        &["reconcile"],
        &["reconcile", "--repair"],
        &["rebalance"],
        &["dead-letter", "list"],
        &["expire"],
        &["queue", "status"],
        &["queue", "admit"],
        &["queue", "pause", "--item", "3"],
        &["queue", "resume", "--item", "3"],
        &["queue", "penalize", "--item", "3", "--user", "x", "--block"],
        &["shutdown-switch", "on"],
        &["init", "--yes", "--dry-run"],
        &["campaigns", "drop", CAMPAIGN, "--dry-run"],
        &["init", "--yes"],
        &["campaigns", "drop", CAMPAIGN, "--yes", "--force"],
    ] {
        check(
            "operator",
            &args.join(" "),
            sent_by(&[server.port], || run(args)),
        );
    }
    let () = redis::cmd("FLUSHALL").query(&mut conn).unwrap();
    check(
        "operator",
        "loadtest",
        sent_by(&[server.port], || {
            run(&[
                "loadtest",
                "--variant",
                "all",
                "--threads",
                "2",
                "--requests",
                "40",
                "--stock",
                "5",
            ])
        }),
    );
    assert!(
        missing.is_empty(),
        "commands sent outside scripts that the role's path (src/operator/acl/dryrun/path.rs) \
         does not name:\n{}",
        missing.join("\n")
    );
    // The paths were walked: serve's cache read a sold-out item's buyers,
    // and --wait-replicas waited.
    let buyers = Some((false, "buyers".to_string()));
    assert!(
        served.contains(&("HSCAN".to_string(), buyers)),
        "{served:?}"
    );
    assert!(waited.contains(&("WAIT".to_string(), None)), "{waited:?}");
}

/// On a cluster (with replicas) the roles' connections send the cluster
/// client's own commands too: the table's cluster rows must name them.
#[test]
fn the_cluster_clients_own_commands_are_in_every_roles_path() {
    let cluster = RedisCluster::start_with_replicas(1);
    let file = campaign(CAMPAIGN)
        .item("1", 5)
        .item("2", 6)
        .buckets(2)
        .write();
    for &port in &cluster.ports {
        let () = redis::cmd("ACL")
            .arg("SETUSER")
            .arg(&["seen", "on", ">seen-pw", "+@all", "-@admin", "~*", "&*"])
            .query(&mut crate::support::cluster::node(port).unwrap())
            .unwrap();
    }
    let urls: Vec<String> = cluster
        .ports
        .iter()
        .take(3)
        .map(|p| format!("redis://seen:seen-pw@127.0.0.1:{p}"))
        .collect();
    let url = urls.join(",");
    let run = |args: &[&str]| {
        let _ = seckill(args)
            .campaign(&file)
            .redis_url(&url)
            .args(&["--cluster"])
            .current_dir(file.dir.path())
            .runs();
    };
    let mut missing = Vec::new();
    let mut walked = Vec::new();
    for role in ["buyer", "consumer", "operator"] {
        let rows = table(cluster.ports[0], &file, role);
        assert!(
            rows.contains(&("CLUSTER SLOTS".to_string(), String::new())),
            "{role}: {rows:?}"
        );
        let runs: Vec<Vec<&str>> = match role {
            "operator" => vec![vec!["preheat"], vec!["status"]],
            "buyer" => vec![
                vec!["buy", "--item", "1", "--user", "c1"],
                vec!["buy", "--item", "2", "--user", "c2"],
            ],
            _ => vec![
                vec!["consume", "--drain"],
                vec!["pending-claim", "--min-idle", "0s"],
            ],
        };
        for args in runs {
            let sent = sent_by(&cluster.ports, || run(&args));
            missing.extend(uncovered(role, &args.join(" "), &rows, &sent));
            walked.extend(sent.into_iter().map(|(command, _)| command));
        }
    }
    assert!(
        missing.is_empty(),
        "commands sent outside scripts on a cluster that the role's path \
         (src/operator/acl/dryrun/path.rs) does not name:\n{}",
        missing.join("\n")
    );
    assert!(walked.iter().any(|c| c == "CLUSTER SLOTS"), "{walked:?}");
}
