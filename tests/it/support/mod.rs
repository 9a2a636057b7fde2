//! Test harness: real servers, started by the tests themselves.
//!
//! `RedisServer` runs a throwaway `redis-server` on a free loopback port with
//! persistence off, waits until it answers PING, and kills it on drop.

pub mod cluster;
pub mod http;
pub mod mariadb;
pub mod orders;
pub mod serve;
pub mod spec;

use std::net::TcpListener;
use std::path::PathBuf;
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

/// A child process killed when the test ends, pass or fail.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A redis-server frozen with SIGSTOP (a replica that stops acknowledging),
/// resumed with SIGCONT on drop — even when an assertion fails meanwhile.
pub struct Frozen(String);

impl Frozen {
    /// Freeze the server `conn` is connected to (its pid from INFO server).
    pub fn new(conn: &mut redis::Connection) -> Frozen {
        let server: String = redis::cmd("INFO").arg("server").query(conn).unwrap();
        let pid = server
            .lines()
            .find_map(|l| l.strip_prefix("process_id:"))
            .expect("INFO server has process_id")
            .trim()
            .to_string();
        signal(&pid, "-STOP");
        Frozen(pid)
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        signal(&self.0, "-CONT");
    }
}

fn signal(pid: &str, sig: &str) {
    let status = Command::new("kill").args([sig, pid]).status().unwrap();
    assert!(status.success(), "kill {sig} {pid}");
}

/// Start a replica of `master` (`--replicaof`) and wait until the master
/// sees it online.
pub fn start_replica_of(master: &RedisServer) -> RedisServer {
    let replica = RedisServer::start_with(&["--replicaof", "127.0.0.1", &master.port.to_string()]);
    let mut m = master.conn();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let info: String = redis::cmd("INFO").arg("replication").query(&mut m).unwrap();
        if info.contains("connected_slaves:1") && info.contains("state=online") {
            return replica;
        }
        assert!(
            Instant::now() < deadline,
            "the replica never synced: {info}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
