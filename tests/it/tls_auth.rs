//! The connection layer against servers that demand more: a password (ACL
//! default user) and TLS with a private CA (`rediss://` + `--tls-ca-cert`).

use crate::support;

use std::time::Duration;

use seckill::model::exit_codes::{DUPLICATE, RUNTIME_ERROR, SUCCESS};
use support::RedisServer;
use support::certs::{private_ca, self_signed_ca};
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

#[test]
fn rediss_with_a_private_ca_works_and_an_untrusted_server_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let certs = private_ca(d);

    let server = RedisServer::options()
        .tls(&certs.cert, &certs.key, &certs.ca)
        .start();
    let port = server.port;
    let file = secure().write();
    let url = format!("rediss://localhost:{port}/0");
    let ca = certs.ca.clone();
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
    let other = self_signed_ca(d, "some-other-ca");
    let stderr = with_ca(&other, &url, &["buy", "--item", "1", "--user", "v"])
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
