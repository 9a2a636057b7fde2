//! A private MariaDB server for tests: `mariadb-install-db` into a temp
//! datadir, `mariadbd` on a free loopback port, a real database and a real
//! password user (`seckill`), killed on drop. Works as root on a clean
//! machine with no system MariaDB service running; `stop` / `restart`
//! simulate an outage on the same port and data.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use tempfile::TempDir;

use super::free_port;

/// Database and user the tests connect as.
pub const DATABASE: &str = "seckill_orders";
const USER: &str = "seckill";
const PASSWORD: &str = "s3cret-pw";

/// A running private MariaDB.
pub struct MariaDb {
    child: Option<Child>,
    pub port: u16,
    dir: TempDir,
    server_binary: PathBuf,
}

/// Find an installed program in PATH or the sbin directories (root's PATH may lack them).
fn find_program(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    dirs.extend(["/usr/sbin", "/usr/local/sbin", "/usr/bin", "/sbin"].map(PathBuf::from));
    names
        .iter()
        .flat_map(|name| dirs.iter().map(move |dir| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

impl MariaDb {
    /// Install a datadir, start the server, create the database and user.
    pub fn start() -> MariaDb {
        let server_binary = find_program(&["mariadbd", "mysqld"]).unwrap_or_else(|| {
            panic!("mariadbd not found: these tests run a real MariaDB (apt-get install -y mariadb-server)")
        });
        let install =
            find_program(&["mariadb-install-db", "mysql_install_db"]).unwrap_or_else(|| {
                panic!("mariadb-install-db not found: apt-get install -y mariadb-server")
            });
        let dir = tempfile::tempdir().expect("tempdir for MariaDB");
        // Its own temp dir: with the default /tmp, a temp table of the
        // bootstrap once vanished on this shared machine and the install failed.
        std::fs::create_dir(dir.path().join("tmp")).expect("MariaDB temp dir");
        // The bootstrap failed once in a few hundred runs on this shared
        // machine (a vanished temp file); a fresh datadir and a second try is
        // cheaper than a red CI run, and a real failure still fails three times.
        let mut failures = String::new();
        for _attempt in 0..3 {
            let _ = std::fs::remove_dir_all(dir.path().join("data"));
            let output = Command::new(&install)
                .arg("--no-defaults")
                .arg(format!("--datadir={}", dir.path().join("data").display()))
                .arg(format!("--tmpdir={}", dir.path().join("tmp").display()))
                .args([
                    "--auth-root-authentication-method=normal",
                    "--user=root",
                    "--skip-test-db",
                ])
                .output()
                .expect("run mariadb-install-db");
            if output.status.success() {
                failures.clear();
                break;
            }
            failures.push_str(&format!(
                "{}{}\n",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        assert!(
            failures.is_empty(),
            "mariadb-install-db failed three times:\n{failures}"
        );
        let mut server = MariaDb {
            child: None,
            port: 0,
            dir,
            server_binary,
        };
        for _attempt in 0..5 {
            server.port = free_port();
            if server.launch() {
                server.create_database();
                return server;
            }
        }
        panic!(
            "mariadbd did not start after 5 attempts; its log:\n{}",
            server.error_log()
        );
    }

    fn launch(&mut self) -> bool {
        let data = self.dir.path().join("data");
        let child = Command::new(&self.server_binary)
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!(
                "--tmpdir={}",
                self.dir.path().join("tmp").display()
            ))
            .arg(format!("--port={}", self.port))
            .arg(format!(
                "--socket={}",
                self.dir.path().join("mariadb.sock").display()
            ))
            .arg(format!(
                "--pid-file={}",
                self.dir.path().join("mariadb.pid").display()
            ))
            .arg(format!("--log-error={}", self.log_path().display()))
            .args([
                "--bind-address=127.0.0.1",
                "--user=root",
                "--skip-name-resolve",
                "--skip-log-bin",
                "--innodb-buffer-pool-size=64M",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn mariadbd");
        self.child = Some(child);
        self.wait_ready(Duration::from_secs(60))
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("mariadb.err")
    }

    /// The server's error log (for failure messages).
    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    fn root_opts(&self) -> mysql::Opts {
        mysql::OptsBuilder::new()
            .ip_or_hostname(Some("127.0.0.1"))
            .tcp_port(self.port)
            .user(Some("root"))
            .tcp_connect_timeout(Some(Duration::from_secs(1)))
            .into()
    }

    fn wait_ready(&mut self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(_)) = child.try_wait()
            {
                return false;
            }
            if mysql::Conn::new(self.root_opts()).is_ok() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }

    fn create_database(&self) {
        let mut root = mysql::Conn::new(self.root_opts()).expect("connect as root");
        for statement in [
            format!("CREATE DATABASE {DATABASE}"),
            format!("CREATE USER '{USER}'@'127.0.0.1' IDENTIFIED BY '{PASSWORD}'"),
            format!("GRANT ALL ON {DATABASE}.* TO '{USER}'@'127.0.0.1'"),
        ] {
            root.query_drop(&statement)
                .unwrap_or_else(|e| panic!("{statement}: {e}"));
        }
    }

    /// `mysql://seckill:PASSWORD@127.0.0.1:PORT/seckill_orders`
    pub fn url(&self) -> String {
        format!(
            "mysql://{USER}:{PASSWORD}@127.0.0.1:{}/{DATABASE}",
            self.port
        )
    }

    /// The password in the URL (tests check it is never printed).
    pub fn password(&self) -> &'static str {
        PASSWORD
    }

    /// A connection as the test user.
    pub fn conn(&self) -> mysql::Conn {
        mysql::Conn::new(mysql::Opts::from_url(&self.url()).expect("url"))
            .expect("connect to MariaDB")
    }

    /// A connection as root (server-wide settings such as `SET GLOBAL`).
    pub fn root_conn(&self) -> mysql::Conn {
        mysql::Conn::new(self.root_opts()).expect("connect to MariaDB as root")
    }

    /// Stop the server (an outage); the data stays for `restart`.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Start it again on the same port with the same data.
    pub fn restart(&mut self) {
        assert!(
            self.launch(),
            "mariadbd did not restart; its log:\n{}",
            self.error_log()
        );
    }
}

impl Drop for MariaDb {
    fn drop(&mut self) {
        self.stop();
    }
}
