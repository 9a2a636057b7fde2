//! The connection layer against servers that demand more: a password (ACL
//! default user) and TLS with a private CA (`rediss://` + `--tls-ca-cert`).

use crate::support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use seckill::model::exit_codes;
use support::{RedisServer, campaign_file, seckill};

const CAMPAIGN: &str = r#"
campaign: secure
items:
  - { id: "1", name: x, price: "1.00", stock: 3 }
"#;

#[test]
fn a_password_in_the_url_authenticates_and_never_shows_in_errors() {
    let server = RedisServer::start_with(&["--requirepass", "s3cret-pw"]);
    let file = campaign_file(CAMPAIGN);
    let good = format!("redis://:s3cret-pw@127.0.0.1:{}/0", server.port);
    seckill(&file.path, &good).arg("preheat").assert().success();
    seckill(&file.path, &good)
        .args(["buy", "--item", "1", "--user", "u"])
        .assert()
        .code(0);
    let bad = format!("redis://default:wrong-pw@127.0.0.1:{}/0", server.port);
    let output = seckill(&file.path, &bad).arg("preheat").output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(exit_codes::RUNTIME_ERROR),
        "{stderr}"
    );
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

    let port = support::free_port();
    let _server = support::KillOnDrop(
        Command::new("redis-server")
            .current_dir(d)
            .args([
                "--port",
                "0",
                "--tls-port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
            ])
            .args([
                "--tls-cert-file",
                "server.crt",
                "--tls-key-file",
                "server.key",
            ])
            .args(["--tls-ca-cert-file", "ca.crt", "--tls-auth-clients", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server"),
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "TLS redis-server did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
    let file = campaign_file(CAMPAIGN);
    let url = format!("rediss://localhost:{port}/0");
    let ca = d.join("ca.crt");
    let trusted = |args: &[&str]| {
        let mut cmd = seckill(&file.path, &url);
        cmd.arg("--tls-ca-cert")
            .arg(&ca)
            .args(args)
            .timeout(Duration::from_secs(30));
        cmd
    };
    trusted(&["preheat"]).assert().success();
    trusted(&["buy", "--item", "1", "--user", "u"])
        .assert()
        .code(0);
    trusted(&["buy", "--item", "1", "--user", "u"])
        .assert()
        .code(exit_codes::DUPLICATE);
    // Without our CA the system trust store does not know this server.
    let output = seckill(&file.path, &url)
        .arg("preheat")
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(exit_codes::RUNTIME_ERROR),
        "{stderr}"
    );
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
    let output = seckill(&file.path, &url)
        .arg("--tls-ca-cert")
        .arg(d.join("other.crt"))
        .args(["buy", "--item", "1", "--user", "v"])
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(exit_codes::RUNTIME_ERROR),
        "{stderr}"
    );
    assert!(stderr.to_lowercase().contains("certificate"), "{stderr}");

    // No plaintext fallback: rediss:// to a server that speaks only plain
    // RESP fails, although a plain connection would have worked.
    let plain = RedisServer::start();
    let output = seckill(&file.path, &format!("rediss://127.0.0.1:{}/0", plain.port))
        .arg("--tls-ca-cert")
        .arg(&ca)
        .arg("preheat")
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(exit_codes::RUNTIME_ERROR),
        "{stderr}"
    );
    let keys: Vec<String> = redis::Commands::keys(&mut plain.conn(), "*").unwrap();
    assert!(
        keys.is_empty(),
        "rediss:// fell back to plaintext: {keys:?}"
    );
}
