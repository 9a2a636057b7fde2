//! Hostile input, bounded: campaign paths that are not files, files too big
//! to be campaigns, user ids counted in bytes, passwords in every URL shape,
//! and servers that accept a connection but never answer. Each must end at
//! once with a named error and exit code, never hang, never leak a secret.

use crate::support;

use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use seckill::model::exit_codes;
use support::{RedisServer, campaign_file, seckill};

const CAMPAIGN: &str = r#"
campaign: hostile
items:
  - { id: "1", name: x, price: "1.00", stock: 3 }
orders:
  store: sqlite://orders.db
"#;

/// Longest any of these commands may take before the test calls it a hang.
const HANG: Duration = Duration::from_secs(30);

fn run_preheat(campaign: &std::path::Path) -> std::process::Output {
    assert_cmd::Command::cargo_bin("seckill")
        .unwrap()
        .env_remove("SECKILL_REDIS_URL")
        .args(["--redis", "redis://127.0.0.1:1/0", "-c"])
        .arg(campaign)
        .arg("preheat")
        .timeout(HANG)
        .output()
        .unwrap()
}

fn assert_refused(output: &std::process::Output, needle: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(exit_codes::USAGE_ERROR),
        "{stderr}"
    );
    assert!(stderr.contains(needle), "expected {needle:?} in: {stderr}");
}

#[test]
fn a_campaign_path_that_is_not_a_regular_file_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("campaign.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    // Nobody ever writes to the FIFO: opening it for reading would block forever.
    assert_refused(&run_preheat(&fifo), "is not a regular file");
    // /dev/zero never ends: reading it would take all memory.
    assert_refused(
        &run_preheat(std::path::Path::new("/dev/zero")),
        "/dev/zero is not a regular file",
    );
    assert_refused(&run_preheat(dir.path()), "is not a regular file");
}

#[test]
fn a_campaign_file_over_the_size_cap_is_refused_before_it_is_read() {
    let cap = seckill::model::campaign::MAX_FILE_BYTES;
    let file = campaign_file(&format!("{CAMPAIGN}\n# {}\n", "x".repeat(cap as usize)));
    assert_refused(
        &run_preheat(&file.path),
        &format!("larger than the {cap}-byte limit of a campaign file"),
    );
    // Just under the cap still loads.
    let fits = campaign_file(&format!(
        "{CAMPAIGN}# {}\n",
        "x".repeat(cap as usize - CAMPAIGN.len() - 3)
    ));
    assert_eq!(std::fs::metadata(&fits.path).unwrap().len(), cap);
    seckill::model::campaign::Campaign::load(&fits.path).unwrap();
}

#[test]
fn the_user_id_limit_is_worded_in_bytes() {
    let file = campaign_file(CAMPAIGN);
    // 100 characters, 200 bytes: over the limit because the limit counts bytes.
    let output = seckill(&file.path, "redis://127.0.0.1:1/0")
        .args(["buy", "--item", "1", "--user", &"é".repeat(100)])
        .output()
        .unwrap();
    assert_refused(&output, "must be 1..128 bytes");
    let output = seckill(&file.path, "redis://127.0.0.1:1/0")
        .args(["buy", "--item", "1", "--user", "u"])
        .args(["--request-id", &"é".repeat(65)])
        .output()
        .unwrap();
    assert_refused(&output, "--request-id must be 1..128 bytes");
}

/// URL shapes that carry the secret `pa,ss@w0rd`-like text somewhere.
fn secret_urls(port: u16) -> Vec<(String, bool)> {
    vec![
        // A comma in the password must not split a cluster URL list.
        (format!("redis://u:s3cr,et@127.0.0.1:{port}/0"), true),
        (
            format!("redis://u:s3cr,et@127.0.0.1:{port},redis://u:s3cr,et@127.0.0.1:1"),
            true,
        ),
        (format!("redis://u:s3cr,et@127.0.0.1:{port}/0"), false),
        (
            format!("redis://127.0.0.1:{port}/0?password=s3cr,et"),
            false,
        ),
        (format!("redis://127.0.0.1:{port}/0?pass=s3cr,et"), false),
        (
            format!("redis://127.0.0.1:{port}/?db=0&password=s3cr,et"),
            true,
        ),
        // Malformed: bad port, missing scheme separator, spaces, a bare token.
        (format!("redis://u:s3cr,et@127.0.0.1:{port}x/0"), false),
        ("redis//u:s3cr,et@127.0.0.1:1/0".to_string(), false),
        ("redis://u:s3cr et@127.0.0.1:1/0".to_string(), false),
        ("redis://s3cr,et@127.0.0.1:1/0".to_string(), false),
        ("redis://u:s3cr,et@[::1/0".to_string(), false),
        ("s3cr,et".to_string(), false),
    ]
}

#[test]
fn passwords_never_appear_in_any_output_for_any_url_shape() {
    let server = RedisServer::start_with(&["--requirepass", "other"]);
    let file = campaign_file(CAMPAIGN);
    for (url, cluster) in secret_urls(server.port) {
        for args in [
            &["buy", "--item", "1", "--user", "u"][..],
            &["preheat"][..],
            &["shutdown-switch", "status"][..],
        ] {
            let mut cmd = seckill(&file.path, &url);
            if cluster {
                cmd.arg("--cluster");
            }
            let output = cmd
                .args(args)
                .args(["--connect-timeout", "300ms", "--response-timeout", "300ms"])
                .timeout(HANG)
                .output()
                .unwrap();
            let shown = format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            assert_ne!(output.status.code(), Some(0), "{url}: {shown}");
            for fragment in ["s3cr", "et@", "cr,et"] {
                assert!(
                    !shown.contains(fragment),
                    "{url} ({args:?}) printed {fragment:?}: {shown}"
                );
            }
        }
    }
}

/// A TCP server that accepts every connection and never answers.
struct SilentServer {
    port: u16,
    _held: Arc<Mutex<Vec<TcpStream>>>,
}

impl SilentServer {
    fn start() -> SilentServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let held = Arc::new(Mutex::new(Vec::new()));
        let keep = Arc::clone(&held);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                keep.lock().unwrap().push(stream);
            }
        });
        SilentServer { port, _held: held }
    }
}

#[test]
fn every_command_gives_up_on_a_server_that_accepts_but_never_answers() {
    let silent = SilentServer::start();
    let file = campaign_file(CAMPAIGN);
    let p = silent.port;
    let urls = [
        (format!("redis://127.0.0.1:{p}/0"), false),
        (format!("redis://:pw@127.0.0.1:{p}/0"), false),
        (format!("redis://127.0.0.1:{p}/3"), false),
        (format!("redis://user:pw@127.0.0.1:{p}/0"), true),
    ];
    let commands: [&[&str]; 8] = [
        &["preheat"],
        &["init", "--yes"],
        &["buy", "--item", "1", "--user", "u"],
        &["shutdown-switch", "status"],
        &["consume", "--drain"],
        &["pending-claim"],
        &["reconcile"],
        &[
            "loadtest",
            "--variant",
            "v3",
            "--threads",
            "2",
            "--requests",
            "10",
        ],
    ];
    for (url, cluster) in &urls {
        for args in commands {
            let mut cmd = seckill(&file.path, url);
            if *cluster {
                cmd.arg("--cluster");
            }
            let output = cmd
                .current_dir(file.dir.path())
                .args(args)
                .args(["--connect-timeout", "300ms", "--response-timeout", "300ms"])
                .timeout(HANG)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(
                output.status.code(),
                Some(exit_codes::RUNTIME_ERROR),
                "{url} {args:?} did not give up with a runtime error: {stderr}"
            );
            assert!(stderr.contains(&format!("127.0.0.1:{p}")), "{stderr}");
            assert!(!stderr.contains("pw@"), "{stderr}");
        }
    }
}
