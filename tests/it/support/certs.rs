//! Certificates for the TLS tests, made by `openssl` in a test's directory:
//! a private CA, and a server certificate it signs for `localhost` and
//! `127.0.0.1` (`rediss://` servers, `https://` webhooks).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// `openssl ARGS` in `dir`, quietly; it must succeed.
pub fn openssl(dir: &Path, args: &[&str]) {
    let status = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("openssl must be installed");
    assert!(status.success(), "openssl {args:?} failed");
}

/// A CA of its own (`NAME.crt`, `NAME.key` in `dir`), trusted by nobody yet.
pub fn self_signed_ca(dir: &Path, name: &str) -> PathBuf {
    let (key, crt) = (format!("{name}.key"), format!("{name}.crt"));
    let subject = format!("/CN={name}");
    openssl(
        dir,
        &[
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", &subject,
            "-keyout", &key, "-out", &crt,
        ],
    );
    dir.join(crt)
}

/// A private CA and the server certificate it signed.
pub struct PrivateCa {
    /// The CA's certificate: what a client is told to trust.
    pub ca: PathBuf,
    /// The server's certificate, for `localhost` and `127.0.0.1`.
    pub cert: PathBuf,
    /// The server's private key.
    pub key: PathBuf,
}

/// `ca.crt`, and `server.crt`/`server.key` signed by it, in `dir`.
pub fn private_ca(dir: &Path) -> PrivateCa {
    let ca = self_signed_ca(dir, "ca");
    openssl(
        dir,
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
        dir.join("san.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\n",
    )
    .unwrap();
    openssl(
        dir,
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
    PrivateCa {
        ca,
        cert: dir.join("server.crt"),
        key: dir.join("server.key"),
    }
}
