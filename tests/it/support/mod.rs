//! Test harness: real servers, started by the tests themselves.
//!
//! `RedisServer` runs a throwaway `redis-server` on a free loopback port with
//! persistence off, waits until it answers PING, and kills it on drop.

pub mod cluster;
pub mod mariadb;
pub mod orders;
pub mod spec;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// A free TCP port on 127.0.0.1 (bound then released; the race is tolerable in tests).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind 127.0.0.1:0")
        .local_addr()
        .expect("local addr")
        .port()
}

/// A private redis-server, killed on drop.
pub struct RedisServer {
    child: Child,
    pub port: u16,
    _dir: TempDir,
}

impl RedisServer {
    /// Start redis-server on a free port and wait until it answers.
    pub fn start() -> RedisServer {
        Self::start_with(&[])
    }

    /// Start with extra `redis-server` arguments (e.g. `["--maxmemory", "1mb"]`).
    pub fn start_with(extra: &[&str]) -> RedisServer {
        for _attempt in 0..5 {
            let port = free_port();
            let dir = tempfile::tempdir().expect("tempdir");
            let child = Command::new("redis-server")
                .args([
                    "--port",
                    &port.to_string(),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                ])
                .args(["--appendonly", "no", "--dir"])
                .arg(dir.path())
                .args(extra)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("redis-server must be installed (apt-get install redis-server)");
            let mut server = RedisServer {
                child,
                port,
                _dir: dir,
            };
            if server.wait_ready(Duration::from_secs(5)) {
                return server;
            }
            let _ = server.child.kill();
        }
        panic!("redis-server did not start on a free port after 5 attempts");
    }

    fn wait_ready(&mut self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            // Any reply, even NOAUTH from a server with a password, means it is up.
            if let Ok(client) = redis::Client::open(self.url())
                && let Ok(mut conn) = client.get_connection_with_timeout(Duration::from_millis(200))
                && match redis::cmd("PING").query::<String>(&mut conn) {
                    Ok(_) => true,
                    Err(e) => !e.is_io_error(),
                }
            {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// `redis://127.0.0.1:PORT/0`
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// A fresh connection with timeouts.
    pub fn conn(&self) -> redis::Connection {
        let client = redis::Client::open(self.url()).expect("client");
        let conn = client
            .get_connection_with_timeout(Duration::from_secs(2))
            .expect("connect to test redis");
        conn.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        conn
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A campaign file written into a temp dir that lives as long as the value.
pub struct CampaignFile {
    pub dir: TempDir,
    pub path: PathBuf,
}

/// Write `yaml` to `<tmp>/campaign.yaml`.
pub fn campaign_file(yaml: &str) -> CampaignFile {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("campaign.yaml");
    std::fs::write(&path, yaml).expect("write campaign");
    CampaignFile { dir, path }
}

/// The real `seckill` binary with a clean environment pointing at `redis_url`.
pub fn seckill(campaign: &Path, redis_url: &str) -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("seckill").expect("binary");
    cmd.env_remove("SECKILL_CAMPAIGN")
        .env_remove("SECKILL_REDIS_CLUSTER")
        .env_remove("SECKILL_ORDERS_DB")
        .env_remove("COLUMNS")
        .env("SECKILL_REDIS_URL", redis_url)
        .arg("-c")
        .arg(campaign);
    cmd
}

/// Parse a command's stdout as JSON.
pub fn json(output: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// A child process killed when the test ends, pass or fail.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
