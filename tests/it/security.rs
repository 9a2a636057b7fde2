//! Least privilege: the `ACL SETUSER` lines of `docs/security.md`, created on
//! a real Redis exactly as written there. Each subcommand works with its role
//! and fails (NOPERM, nothing changed) outside it; the dangerous direct
//! commands fail for every role that must not have them.

use crate::support;

use redis::Commands;
use seckill::exit_codes;
use support::{RedisServer, campaign_file, seckill};

const CAMPAIGN: &str = r#"
campaign: moutai-1111
items:
  - { id: "1001", name: x, price: "1.00", stock: 100 }
orders:
  store: sqlite://orders.db
"#;

const BASE: &str = "seckill:{moutai-1111:1001}";

/// The `ACL SETUSER` lines of docs/security.md: (user, password, arguments).
fn documented_roles() -> Vec<(String, String, Vec<String>)> {
    let doc = std::fs::read_to_string("docs/security.md").unwrap();
    let roles: Vec<_> = doc
        .lines()
        .filter_map(|l| l.strip_prefix("ACL SETUSER "))
        .map(|rest| {
            let args: Vec<String> = rest.split_whitespace().map(String::from).collect();
            let password = args
                .iter()
                .find_map(|a| a.strip_prefix('>'))
                .unwrap()
                .to_string();
            (args[0].clone(), password, args)
        })
        .collect();
    assert_eq!(roles.len(), 3, "docs/security.md must define three roles");
    roles
}

/// Create the documented users; returns the URL of each role by name.
fn create_roles(server: &RedisServer) -> impl Fn(&str) -> String {
    let mut conn = server.conn();
    let mut urls = Vec::new();
    for (user, password, args) in documented_roles() {
        // Selectors are written `(... ...)` in the doc: one argument each.
        let mut joined: Vec<String> = Vec::new();
        let mut open: Option<String> = None;
        for arg in args {
            match open.take() {
                Some(mut s) => {
                    s.push(' ');
                    s.push_str(&arg);
                    if arg.ends_with(')') {
                        joined.push(s);
                    } else {
                        open = Some(s);
                    }
                }
                None if arg.starts_with('(') && !arg.ends_with(')') => open = Some(arg),
                None => joined.push(arg),
            }
        }
        let () = redis::cmd("ACL")
            .arg("SETUSER")
            .arg(&joined)
            .query(&mut conn)
            .unwrap_or_else(|e| panic!("ACL SETUSER {user}: {e}"));
        urls.push((
            user.trim_start_matches("seckill-").to_string(),
            format!("redis://{user}:{password}@127.0.0.1:{}/0", server.port),
        ));
    }
    move |role: &str| {
        urls.iter()
            .find(|(name, _)| name == role)
            .unwrap_or_else(|| panic!("no role {role}"))
            .1
            .clone()
    }
}

fn as_role(file: &support::CampaignFile, url: &str, args: &[&str]) -> std::process::Output {
    seckill(&file.path, url)
        .current_dir(file.dir.path())
        .args(args)
        .output()
        .unwrap()
}

fn assert_allowed(file: &support::CampaignFile, url: &str, args: &[&str]) {
    let output = as_role(file, url, args);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{url} {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Refused for lack of permission, and the state is unchanged.
fn assert_denied(file: &support::CampaignFile, server: &RedisServer, url: &str, args: &[&str]) {
    let before = state(server);
    let output = as_role(file, url, args);
    let stderr = String::from_utf8_lossy(&output.stderr).to_lowercase();
    assert_eq!(
        output.status.code(),
        Some(exit_codes::RUNTIME_ERROR),
        "{url} {args:?}: {stderr}"
    );
    assert!(
        stderr.contains("noperm") || stderr.contains("can't run this command"),
        "{args:?}: {stderr}"
    );
    assert_eq!(before, state(server), "{args:?} changed something");
}

/// Stock, buyers, stream length, meta: what a denied command must not change.
fn state(server: &RedisServer) -> (Option<i64>, i64, i64, Vec<String>) {
    let mut conn = server.conn();
    let stock: Option<i64> = conn.get(format!("{BASE}:stock")).unwrap();
    let buyers: i64 = conn.hlen(format!("{BASE}:buyers")).unwrap();
    let stream: i64 = conn.xlen(format!("{BASE}:orders")).unwrap();
    let mut meta: Vec<String> = conn.hkeys(format!("{BASE}:meta")).unwrap();
    meta.sort();
    (stock, buyers, stream, meta)
}

fn direct(url: &str, cmd: &mut redis::Cmd) -> redis::RedisResult<redis::Value> {
    let mut conn = redis::Client::open(url).unwrap().get_connection().unwrap();
    cmd.query(&mut conn)
}

fn poison_id(reply: &redis::RedisResult<redis::Value>) -> String {
    match reply {
        Ok(redis::Value::BulkString(id)) => String::from_utf8(id.clone()).unwrap(),
        other => panic!("{other:?}"),
    }
}

fn assert_noperm(url: &str, what: &str, cmd: &mut redis::Cmd) {
    let error = direct(url, cmd).expect_err(what);
    assert_eq!(error.code(), Some("NOPERM"), "{what}: {error}");
}

#[test]
fn each_role_runs_its_subcommands_and_nothing_else() {
    let server = RedisServer::start();
    let url = create_roles(&server);
    let (buyer, consumer, operator) = (url("buyer"), url("consumer"), url("operator"));
    let file = campaign_file(CAMPAIGN);

    // Nobody but the operator prepares the sale.
    assert_denied(&file, &server, &buyer, &["preheat"]);
    assert_denied(&file, &server, &consumer, &["preheat"]);
    assert_allowed(&file, &operator, &["preheat"]);
    assert_allowed(&file, &operator, &["shutdown-switch", "status"]);

    // The buyer buys; the others cannot.
    assert_allowed(&file, &buyer, &["buy", "--item", "1001", "--user", "b1"]);
    assert_allowed(&file, &buyer, &["buy", "--item", "1001", "--user", "b2"]);
    assert_denied(
        &file,
        &server,
        &consumer,
        &["buy", "--item", "1001", "--user", "c"],
    );

    // The buyer cannot stop, reset, drain or audit the sale.
    assert_denied(&file, &server, &buyer, &["shutdown-switch", "on"]);
    assert_denied(&file, &server, &buyer, &["init", "--yes"]);
    assert_denied(&file, &server, &buyer, &["consume", "--drain"]);
    assert_denied(&file, &server, &buyer, &["reconcile"]);
    assert_denied(&file, &server, &consumer, &["shutdown-switch", "on"]);
    assert_denied(&file, &server, &consumer, &["reconcile"]);

    // The consumer drains and claims, dead-lettering what is not an order
    // (an entry only the operator could have written).
    let poison = direct(
        &operator,
        redis::cmd("XADD")
            .arg(format!("{BASE}:orders"))
            .arg("*")
            .arg("junk")
            .arg("1"),
    );
    assert!(poison.is_ok(), "{poison:?}");
    assert_allowed(&file, &consumer, &["consume", "--drain"]);
    assert_allowed(&file, &consumer, &["pending-claim", "--min-idle", "0s"]);
    let dead: i64 = server.conn().xlen(format!("{BASE}:dead")).unwrap();
    assert_eq!(dead, 1, "the consumer could not dead-letter");
    let () = server.conn().del(format!("{BASE}:dead")).unwrap();
    let _: i64 = server
        .conn()
        .xdel(format!("{BASE}:orders"), &[poison_id(&poison)])
        .unwrap();
    assert_allowed(&file, &operator, &["reconcile"]);
    assert_allowed(
        &file,
        &operator,
        &["shutdown-switch", "on", "--reason", "t"],
    );
    assert_allowed(&file, &operator, &["shutdown-switch", "off"]);
    assert_allowed(&file, &operator, &["init", "--yes"]);

    // Direct commands outside each role.
    assert_noperm(
        &buyer,
        "buyer DEL stock",
        redis::cmd("DEL").arg(format!("{BASE}:stock")),
    );
    assert_noperm(
        &buyer,
        "buyer SET stock",
        redis::cmd("SET").arg(format!("{BASE}:stock")).arg(999),
    );
    assert_noperm(
        &buyer,
        "buyer reopens the sale",
        redis::cmd("HSET")
            .arg(format!("{BASE}:meta"))
            .arg("closed")
            .arg("0"),
    );
    assert_noperm(
        &buyer,
        "buyer XADD dead letters",
        redis::cmd("XADD")
            .arg(format!("{BASE}:dead"))
            .arg("*")
            .arg("f")
            .arg("v"),
    );
    assert_noperm(
        &buyer,
        "buyer DECRBY another campaign",
        redis::cmd("DECRBY").arg("seckill:{other:1}:stock").arg(1),
    );
    assert_noperm(
        &consumer,
        "consumer XADD an order",
        redis::cmd("XADD")
            .arg(format!("{BASE}:orders"))
            .arg("*")
            .arg("f")
            .arg("v"),
    );
    assert_noperm(
        &consumer,
        "consumer DEL",
        redis::cmd("DEL").arg(format!("{BASE}:orders")),
    );
    assert_noperm(
        &consumer,
        "consumer GET stock",
        redis::cmd("GET").arg(format!("{BASE}:stock")),
    );
    assert_noperm(&operator, "operator FLUSHALL", &mut redis::cmd("FLUSHALL"));
    assert_noperm(
        &operator,
        "operator CONFIG",
        redis::cmd("CONFIG").arg("GET").arg("dir"),
    );
    assert_noperm(&operator, "operator KEYS", redis::cmd("KEYS").arg("*"));
    assert_noperm(
        &operator,
        "operator another campaign",
        redis::cmd("GET").arg("seckill:{other:1}:stock"),
    );
}

#[test]
fn the_operator_role_runs_the_load_test() {
    let server = RedisServer::start();
    let url = create_roles(&server);
    let file = campaign_file(CAMPAIGN);
    assert_allowed(
        &file,
        &url("operator"),
        &[
            "loadtest",
            "--variant",
            "all",
            "--threads",
            "2",
            "--requests",
            "50",
            "--stock",
            "5",
        ],
    );
    assert_denied(
        &file,
        &server,
        &url("buyer"),
        &[
            "loadtest",
            "--variant",
            "v3",
            "--threads",
            "2",
            "--requests",
            "50",
            "--stock",
            "5",
        ],
    );
}
