//! Builders that make a test read like the spec it checks:
//!
//! ```ignore
//! let report = seckill(&["reconcile"]).campaign(&file).redis_url(&down).json().fails_with(1).json();
//! ```
//!
//! The binary runs with a clean environment (no `SECKILL_*`, no `COLUMNS`)
//! so a developer's shell never changes what a test sees.

use std::io::Read;
use std::process::{Command, Output, Stdio};

use super::{CampaignFile, RedisServer};

/// `seckill ARGS...`, not run yet.
pub struct Run {
    command: Command,
    args: Vec<String>,
}

/// `seckill` with these arguments (the subcommand and its flags).
pub fn seckill(args: &[&str]) -> Run {
    let mut command = Command::new(assert_cmd::cargo::cargo_bin("seckill"));
    for name in [
        "SECKILL_CAMPAIGN",
        "SECKILL_REDIS_URL",
        "SECKILL_REDIS_CLUSTER",
        "SECKILL_ORDERS_DB",
        "COLUMNS",
    ] {
        command.env_remove(name);
    }
    Run {
        command,
        args: args.iter().map(|a| a.to_string()).collect(),
    }
}

impl Run {
    /// `-c FILE`.
    pub fn campaign(mut self, file: &CampaignFile) -> Run {
        self.command.arg("-c").arg(&file.path);
        self
    }

    /// Against this test server.
    pub fn redis(self, server: &RedisServer) -> Run {
        self.redis_url(&server.url())
    }

    /// Against this Redis URL (e.g. one where nothing listens).
    pub fn redis_url(mut self, url: &str) -> Run {
        self.command.env("SECKILL_REDIS_URL", url);
        self
    }

    /// `--format json`.
    pub fn json(mut self) -> Run {
        self.command.args(["--format", "json"]);
        self
    }

    /// As if on a terminal this many columns wide.
    pub fn columns(mut self, width: u16) -> Run {
        self.command.env("COLUMNS", width.to_string());
        self
    }

    /// Run it; it must exit 0.
    pub fn succeeds(self) -> Ran {
        self.fails_with(0)
    }

    /// Run it; it must exit with `code`.
    pub fn fails_with(mut self, code: i32) -> Ran {
        let shown = self.shown();
        let output = self.command.args(&self.args).output().expect("run seckill");
        let ran = Ran { shown, output };
        assert_eq!(ran.code(), code, "{}", ran.describe());
        ran
    }

    /// Run it with its stdout closed before it writes (a reader that exited,
    /// like `| head -c 10` after ten bytes); returns (exit code, stderr).
    pub fn with_stdout_closed(mut self) -> (i32, String) {
        let mut child = self
            .command
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn seckill");
        drop(child.stdout.take());
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .expect("stderr")
            .read_to_string(&mut stderr)
            .expect("read stderr");
        let status = child.wait().expect("wait for seckill");
        (status.code().unwrap_or(-1), stderr)
    }

    fn shown(&self) -> String {
        let mut words: Vec<String> = vec!["seckill".into()];
        words.extend(
            self.command
                .get_args()
                .map(|a| a.to_string_lossy().into_owned()),
        );
        words.extend(self.args.iter().cloned());
        words.join(" ")
    }
}

/// A finished run.
pub struct Ran {
    shown: String,
    output: Output,
}

impl Ran {
    /// The exit code (-1 when killed by a signal).
    pub fn code(&self) -> i32 {
        self.output.status.code().unwrap_or(-1)
    }

    /// Stdout as text.
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }

    /// Stderr as text.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }

    /// Stdout as the JSON envelope; its `exit_code` must be the process's.
    pub fn json(&self) -> serde_json::Value {
        let value: serde_json::Value = serde_json::from_slice(&self.output.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", self.describe()));
        assert_eq!(value["schema"], 1, "{}", self.describe());
        assert_eq!(value["exit_code"], self.code(), "{}", self.describe());
        value
    }

    fn describe(&self) -> String {
        format!(
            "`{}` exited {}\nstdout:\n{}\nstderr:\n{}",
            self.shown,
            self.code(),
            self.stdout(),
            self.stderr()
        )
    }
}
