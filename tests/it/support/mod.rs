//! Test harness: real servers, started by the tests themselves.
//!
//! `RedisServer` runs a throwaway `redis-server` on a free loopback port with
//! persistence off, waits until it answers PING, and kills it on drop; every
//! test Redis starts there ([`RedisOptions`]: a fixed port and data dir, AOF,
//! TLS, a cluster node). [`preheat`] (and [`Preheat`]) is how a test
//! preheats its campaign through the binary.

pub mod certs;
pub mod cluster;
pub mod http;
pub mod mariadb;
pub mod orders;
pub mod serve;
pub mod spec;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use spec::{CampaignSpec, seckill};

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
    /// Its data directory, when the server owns it (see [`RedisOptions::dir`]).
    _dir: Option<TempDir>,
}

/// How to start a [`RedisServer`]: by default on a free loopback port, in a
/// fresh temp dir, persistence off.
#[derive(Debug, Default)]
pub struct RedisOptions {
    port: Option<u16>,
    dir: Option<PathBuf>,
    args: Vec<String>,
    tls: bool,
}

impl RedisOptions {
    /// Listen on `port` (a restart where the clients already point);
    /// otherwise on a free port, another one tried if it was taken meanwhile.
    pub fn port(mut self, port: u16) -> RedisOptions {
        self.port = Some(port);
        self
    }

    /// Keep the data in `dir`, which outlives the server (an AOF read again
    /// by a restart).
    pub fn dir(mut self, dir: &Path) -> RedisOptions {
        self.dir = Some(dir.to_path_buf());
        self
    }

    /// Extra `redis-server` arguments; they win over the defaults (e.g.
    /// `["--appendonly", "yes"]`).
    pub fn args(mut self, args: &[&str]) -> RedisOptions {
        self.args.extend(args.iter().map(|a| a.to_string()));
        self
    }

    /// Speak TLS only, on the port, with this certificate, key and CA
    /// (clients are not asked for certificates); ready once it accepts a
    /// connection, as a plain PING cannot reach it.
    pub fn tls(mut self, cert: &Path, key: &Path, ca: &Path) -> RedisOptions {
        for (flag, path) in [
            ("--tls-cert-file", cert),
            ("--tls-key-file", key),
            ("--tls-ca-cert-file", ca),
        ] {
            self.args.push(flag.to_string());
            self.args.push(path.to_string_lossy().into_owned());
        }
        self.args
            .extend(["--tls-auth-clients".to_string(), "no".to_string()]);
        self.tls = true;
        self
    }

    /// Start it and wait until it answers.
    pub fn start(self) -> RedisServer {
        // A free port may be taken between the probe and the bind: try another.
        let (attempts, limit) = match self.port {
            Some(_) => (1, Duration::from_secs(30)),
            None => (5, Duration::from_secs(10)),
        };
        for _attempt in 0..attempts {
            let port = self.port.unwrap_or_else(free_port);
            let owned = match self.dir {
                Some(_) => None,
                None => Some(tempfile::tempdir().expect("tempdir")),
            };
            let dir = match (&self.dir, &owned) {
                (Some(dir), _) => dir.as_path(),
                (None, owned) => owned.as_ref().expect("a temp dir").path(),
            };
            let listen = if self.tls {
                vec![
                    "--port".to_string(),
                    "0".into(),
                    "--tls-port".into(),
                    port.to_string(),
                ]
            } else {
                vec!["--port".to_string(), port.to_string()]
            };
            let child = Command::new("redis-server")
                .args(&listen)
                .args(["--bind", "127.0.0.1", "--save", ""])
                .args(["--appendonly", "no", "--dir"])
                .arg(dir)
                .args(&self.args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("redis-server must be installed (apt-get install redis-server)");
            let mut server = RedisServer {
                child,
                port,
                _dir: owned,
            };
            if server.wait_ready(limit, self.tls) {
                return server;
            }
            server.kill();
        }
        panic!(
            "redis-server did not start ({attempts} attempt(s), {:?})",
            self
        );
    }
}

impl RedisServer {
    /// Start redis-server on a free port and wait until it answers.
    pub fn start() -> RedisServer {
        RedisServer::options().start()
    }

    /// Start with extra `redis-server` arguments (e.g. `["--maxmemory", "1mb"]`).
    pub fn start_with(extra: &[&str]) -> RedisServer {
        RedisServer::options().args(extra).start()
    }

    /// A server other than the default one (see [`RedisOptions`]).
    pub fn options() -> RedisOptions {
        RedisOptions::default()
    }

    /// SIGKILL: no shutdown, no final fsync (a crash).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn wait_ready(&mut self, limit: Duration, tls: bool) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            if tls {
                if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                    return true;
                }
            } else if let Ok(client) = redis::Client::open(self.url())
                && let Ok(mut conn) = client.get_connection_with_timeout(Duration::from_millis(200))
                // Any reply, even NOAUTH from a server with a password, means
                // it is up; LOADING means its data is not read yet.
                && match redis::cmd("PING").query::<String>(&mut conn) {
                    Ok(_) => true,
                    Err(e) => !e.is_io_error() && e.code() != Some("LOADING"),
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
        self.kill();
    }
}

/// A campaign file written into a temp dir that lives as long as the value.
pub struct CampaignFile {
    pub dir: TempDir,
    pub path: PathBuf,
}

impl CampaignFile {
    /// A ticket room's secret (`--room-key-file`) written beside the file:
    /// its path.
    pub fn room_key_file(&self) -> String {
        let key = self.dir.path().join("room.key");
        std::fs::write(
            &key,
            "c2VjcmV0LW9mLWF0LWxlYXN0LTMyLWJ5dGVzLWZvci10ZXN0cw==\n",
        )
        .expect("room key file");
        key.display().to_string()
    }
}

/// Write `yaml` to `<tmp>/campaign.yaml`.
pub fn campaign_file(yaml: &str) -> CampaignFile {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("campaign.yaml");
    std::fs::write(&path, yaml).expect("write campaign");
    CampaignFile { dir, path }
}

/// `seckill preheat` of `file` on `server`; it must succeed.
pub fn preheat(file: &CampaignFile, server: &RedisServer) {
    Preheat::on(server).file(file);
}

/// A preheat with more to it than [`preheat`]: an emptied Redis first, a
/// time limit, the campaign file written from its spec.
pub struct Preheat<'a> {
    server: &'a RedisServer,
    flush: bool,
    limit: Option<Duration>,
}

impl<'a> Preheat<'a> {
    /// On this server.
    pub fn on(server: &'a RedisServer) -> Preheat<'a> {
        Preheat {
            server,
            flush: false,
            limit: None,
        }
    }

    /// `FLUSHALL` first: the sale starts from an empty Redis.
    pub fn flushed(mut self) -> Preheat<'a> {
        self.flush = true;
        self
    }

    /// A preheat still running after `limit` fails the test (a hang).
    pub fn within(mut self, limit: Duration) -> Preheat<'a> {
        self.limit = Some(limit);
        self
    }

    /// Preheat `file`; it must succeed.
    pub fn file(self, file: &CampaignFile) {
        if self.flush {
            let () = redis::cmd("FLUSHALL")
                .query(&mut self.server.conn())
                .expect("FLUSHALL");
        }
        let run = seckill(&["preheat"]).campaign(file).redis(self.server);
        match self.limit {
            Some(limit) => run.within(limit).succeeds(),
            None => run.succeeds(),
        };
    }

    /// Write the campaign file of `spec` and preheat it.
    pub fn spec(self, spec: &CampaignSpec) -> CampaignFile {
        let file = spec.write();
        self.file(&file);
        file
    }
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

/// `doctor --format json`'s check named `name` (its verdict and detail).
pub fn check_of(report: &serde_json::Value, name: &str) -> (String, String) {
    let check = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {report}"));
    (
        check["verdict"].as_str().unwrap().to_string(),
        check["detail"].as_str().unwrap().to_string(),
    )
}
