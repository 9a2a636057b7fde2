//! Hostile input, bounded: campaign paths that are not files, files too big
//! to be campaigns, user ids counted in bytes, passwords in every URL shape,
//! and servers that accept a connection but never answer. Each must end at
//! once with a named error and exit code, never hang, never leak a secret.

use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use seckill::model::exit_codes::{RUNTIME_ERROR, USAGE_ERROR};

use crate::support::spec::{CampaignSpec, Run, campaign, seckill};
use crate::support::{RedisServer, campaign_file};

/// One item of 3 units, orders in `orders.db`.
fn hostile() -> CampaignSpec {
    campaign("hostile").item("1", 3).named("x")
}

/// Longest any of these commands may take before the test calls it a hang.
const HANG: Duration = Duration::from_secs(30);

fn preheat(campaign: &std::path::Path) -> Run {
    seckill(&[
        "--redis",
        "redis://127.0.0.1:1/0",
        "-c",
        campaign.to_str().unwrap(),
        "preheat",
    ])
}

fn assert_refused(run: Run, needle: &str) {
    let stderr = run.fails_with_within(USAGE_ERROR, HANG).stderr();
    assert!(stderr.contains(needle), "expected {needle:?} in: {stderr}");
}

#[test]
fn a_campaign_path_that_is_not_a_regular_file_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("campaign.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    // Nobody ever writes to the FIFO: opening it for reading would block forever.
    assert_refused(preheat(&fifo), "is not a regular file");
    // /dev/zero never ends: reading it would take all memory.
    assert_refused(
        preheat(std::path::Path::new("/dev/zero")),
        "/dev/zero is not a regular file",
    );
    assert_refused(preheat(dir.path()), "is not a regular file");
}

#[test]
fn a_campaign_file_over_the_size_cap_is_refused_before_it_is_read() {
    // The file's size is under test: the campaign's text, padded.
    let text = hostile().yaml();
    let cap = seckill::model::campaign::MAX_FILE_BYTES;
    let file = campaign_file(&format!("{text}\n# {}\n", "x".repeat(cap as usize)));
    assert_refused(
        preheat(&file.path),
        &format!("larger than the {cap}-byte limit of a campaign file"),
    );
    // Just under the cap still loads.
    let fits = campaign_file(&format!(
        "{text}# {}\n",
        "x".repeat(cap as usize - text.len() - 3)
    ));
    assert_eq!(std::fs::metadata(&fits.path).unwrap().len(), cap);
    seckill::model::campaign::Campaign::load(&fits.path).unwrap();
}

#[test]
fn the_user_id_limit_is_worded_in_bytes() {
    let file = hostile().write();
    let buy = |extra: &[&str]| {
        seckill(&["buy", "--item", "1"])
            .campaign(&file)
            .redis_url("redis://127.0.0.1:1/0")
            .args(extra)
    };
    // 100 characters, 200 bytes: over the limit because the limit counts bytes.
    assert_refused(buy(&["--user", &"é".repeat(100)]), "must be 1..128 bytes");
    assert_refused(
        buy(&["--user", "u", "--request-id", &"é".repeat(65)]),
        "--request-id must be 1..128 bytes",
    );
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
    let file = hostile().write();
    for (url, cluster) in secret_urls(server.port) {
        for args in [
            &["buy", "--item", "1", "--user", "u"][..],
            &["preheat"][..],
            &["shutdown-switch", "status"][..],
        ] {
            let mut run = seckill(&[]).campaign(&file).redis_url(&url);
            if cluster {
                run = run.args(&["--cluster"]);
            }
            let ran = run
                .args(args)
                .args(&["--connect-timeout", "300ms", "--response-timeout", "300ms"])
                .runs_within(HANG);
            let shown = format!("{}{}", ran.stdout(), ran.stderr());
            assert_ne!(ran.code(), 0, "{url}: {shown}");
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
    let file = hostile().write();
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
            let mut run = seckill(&[])
                .campaign(&file)
                .redis_url(url)
                .current_dir(file.dir.path());
            if *cluster {
                run = run.args(&["--cluster"]);
            }
            // A runtime error: it gave up.
            let stderr = run
                .args(args)
                .args(&["--connect-timeout", "300ms", "--response-timeout", "300ms"])
                .fails_with_within(RUNTIME_ERROR, HANG)
                .stderr();
            assert!(stderr.contains(&format!("127.0.0.1:{p}")), "{stderr}");
            assert!(!stderr.contains("pw@"), "{stderr}");
        }
    }
}
