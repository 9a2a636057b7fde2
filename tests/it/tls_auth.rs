//! The connection layer against servers that demand more: a password (ACL
//! default user) and TLS with a private CA (`rediss://` + `--tls-ca-cert`).

use crate::support;

use std::process::{Command, Stdio};
use std::time::Duration;

use seckill::model::exit_codes::{DUPLICATE, RUNTIME_ERROR, SUCCESS};
use support::RedisServer;
use support::spec::{CampaignSpec, campaign, seckill};

/// One item of 3 units, no order store.
fn secure() -> CampaignSpec {
    campaign("secure")
        .item("1", 3)
        .named("x")
        .orders_store(None)
}

/// Longest a command may take before the test calls it a hang.
const HANG: Duration = Duration::from_secs(30);

#[test]
fn a_password_in_the_url_authenticates_and_never_shows_in_errors() {
    let server = RedisServer::start_with(&["--requirepass", "s3cret-pw"]);
    let file = secure().write();
    let good = format!("redis://:s3cret-pw@127.0.0.1:{}/0", server.port);
    let run = |args: &[&str], url: &str| seckill(args).campaign(&file).redis_url(url);
    run(&["preheat"], &good).succeeds();
    run(&["buy", "--item", "1", "--user", "u"], &good).succeeds();
    let bad = format!("redis://default:wrong-pw@127.0.0.1:{}/0", server.port);
    let stderr = run(&["preheat"], &bad).fails_with(RUNTIME_ERROR).stderr();
    assert!(
        stderr.contains(&format!("127.0.0.1:{}", server.port)),
        "{stderr}"
    );
    assert!(!stderr.contains("wrong-pw"), "{stderr}");
}

fn openssl(dir: &std::path::Path, args: &[&str]) {
    let status = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("openssl must be installed");
    assert!(status.success(), "openssl {args:?} failed");
}

#[test]
fn rediss_with_a_private_ca_works_and_an_untrusted_server_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    openssl(
        d,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=seckill-test-ca",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
        ],
    );
    openssl(
        d,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=localhost",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
        ],
    );
    std::fs::write(
        d.join("san.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\n",
    )
    .unwrap();
    openssl(
        d,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "san.ext",
            "-out",
            "server.crt",
        ],
    );

    let server = RedisServer::options()
        .tls(
            &d.join("server.crt"),
            &d.join("server.key"),
            &d.join("ca.crt"),
        )
        .start();
    let port = server.port;
    let file = secure().write();
    let url = format!("rediss://localhost:{port}/0");
    let ca = d.join("ca.crt");
    let with_ca = |ca: &std::path::Path, url: &str, args: &[&str]| {
        seckill(&["--tls-ca-cert", ca.to_str().unwrap()])
            .campaign(&file)
            .redis_url(url)
            .args(args)
    };
    with_ca(&ca, &url, &["preheat"]).fails_with_within(SUCCESS, HANG);
    with_ca(&ca, &url, &["buy", "--item", "1", "--user", "u"]).fails_with_within(SUCCESS, HANG);
    with_ca(&ca, &url, &["buy", "--item", "1", "--user", "u"]).fails_with_within(DUPLICATE, HANG);
    // Without our CA the system trust store does not know this server.
    let stderr = seckill(&["preheat"])
        .campaign(&file)
        .redis_url(&url)
        .fails_with_within(RUNTIME_ERROR, HANG)
        .stderr();
    assert!(
        stderr.contains(&format!("localhost:{port} (TLS)")),
        "{stderr}"
    );

    // A CA that did not sign the server's certificate: refused, never trusted.
    openssl(
        d,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=some-other-ca",
            "-keyout",
            "other.key",
            "-out",
            "other.crt",
        ],
    );
    let stderr = with_ca(
        &d.join("other.crt"),
        &url,
        &["buy", "--item", "1", "--user", "v"],
    )
    .fails_with_within(RUNTIME_ERROR, HANG)
    .stderr();
    assert!(stderr.to_lowercase().contains("certificate"), "{stderr}");

    // No plaintext fallback: rediss:// to a server that speaks only plain
    // RESP fails, although a plain connection would have worked.
    let plain = RedisServer::start();
    with_ca(
        &ca,
        &format!("rediss://127.0.0.1:{}/0", plain.port),
        &["preheat"],
    )
    .fails_with_within(RUNTIME_ERROR, HANG);
    let keys: Vec<String> = redis::Commands::keys(&mut plain.conn(), "*").unwrap();
    assert!(
        keys.is_empty(),
        "rediss:// fell back to plaintext: {keys:?}"
    );
}
