//! A real `seckill serve` for the tests: started on a free port (`--listen
//! 127.0.0.1:0`), its address read from its own log line, killed on drop.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::CampaignFile;

/// A running `seckill serve`.
pub struct Serve {
    child: Child,
    pub addr: SocketAddr,
    /// Everything it wrote to stderr so far.
    pub log: Arc<Mutex<String>>,
}

impl Serve {
    /// `seckill -c FILE serve --listen 127.0.0.1:0 EXTRA...` against `redis_url`
    /// (with `--cluster` when `cluster`), once it listens.
    pub fn start(file: &CampaignFile, redis_url: &str, cluster: bool, extra: &[&str]) -> Serve {
        let mut command = Command::new(assert_cmd::cargo::cargo_bin("seckill"));
        for name in [
            "SECKILL_CAMPAIGN",
            "SECKILL_REDIS_CLUSTER",
            "SECKILL_ORDERS_DB",
            "COLUMNS",
        ] {
            command.env_remove(name);
        }
        command
            .env("SECKILL_REDIS_URL", redis_url)
            .arg("-c")
            .arg(&file.path);
        if cluster {
            command.arg("--cluster");
        }
        let mut child = command
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn seckill serve");
        let stderr = child.stderr.take().expect("stderr");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let kept = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("listening on http://").nth(1)
                    && let Some(addr) = rest.split_whitespace().next()
                    && let Ok(addr) = addr.parse::<SocketAddr>()
                {
                    let _ = tx.send(addr);
                }
                let mut log = kept.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("serve did not listen: {}", log.lock().unwrap()));
        Serve { child, addr, log }
    }

    /// Send `signal` (`-TERM`, `-KILL`) and wait for the exit code.
    pub fn stop(mut self, signal: &str) -> Option<i32> {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args([signal, &pid]).status();
        let status = self.child.wait().expect("wait for serve");
        status.code()
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
