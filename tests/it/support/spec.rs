//! Builders that make a test read like the spec it checks:
//!
//! ```ignore
//! let report = seckill(&["reconcile"]).campaign(&file).redis_url(&down).json().fails_with(1).json();
//! ```
//!
//! The binary runs with a clean environment (no `SECKILL_*`, no `COLUMNS`)
//! so a developer's shell never changes what a test sees.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::cluster::RedisCluster;
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

    /// More arguments after those given to [`seckill`].
    pub fn args<S: AsRef<str>>(mut self, args: &[S]) -> Run {
        self.args
            .extend(args.iter().map(|a| a.as_ref().to_string()));
        self
    }

    /// Arguments that are not UTF-8 (what a shell passes for `$'\xff'`),
    /// before those of [`seckill`].
    pub fn raw_args(mut self, args: &[&std::ffi::OsStr]) -> Run {
        self.command.args(args);
        self
    }

    /// An environment variable for the run.
    pub fn env(mut self, name: &str, value: &str) -> Run {
        self.command.env(name, value);
        self
    }

    /// Run it whatever it exits with (for tests that look at the code themselves).
    pub fn runs(mut self) -> Ran {
        let shown = self.shown();
        let output = self.command.args(&self.args).output().expect("run seckill");
        Ran { shown, output }
    }

    /// Start it without waiting (a long-running command: consume, expire
    /// --loop, status --watch); stdout and stderr are piped.
    pub fn spawn(mut self) -> std::process::Child {
        self.command
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn seckill")
    }

    /// Run it; it must exit 0.
    pub fn succeeds(self) -> Ran {
        self.fails_with(0)
    }

    /// Run it; it must exit with `code` (use the names of
    /// `seckill::model::exit_codes`, e.g. `fails_with(SOLD_OUT)`).
    pub fn fails_with(self, code: i32) -> Ran {
        let ran = self.runs();
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

    /// Without this environment variable (e.g. `USER`, to see what the
    /// command falls back to).
    pub fn env_remove(mut self, name: &str) -> Run {
        self.command.env_remove(name);
        self
    }

    /// Run it in `dir` (a relative `-c FILE` or `sqlite://` path is read from there).
    pub fn current_dir(mut self, dir: impl AsRef<Path>) -> Run {
        self.command.current_dir(dir);
        self
    }

    /// Against this test cluster: `--cluster` with its seed URLs.
    pub fn cluster(mut self, cluster: &RedisCluster) -> Run {
        self.command.arg("--cluster");
        self.redis_url(&cluster.urls())
    }

    /// Start it and go on meanwhile (freeze Redis, kill it at a chosen
    /// moment); its stdout and stderr are read as it writes them, so it never
    /// blocks on a full pipe. See [`Running`].
    pub fn start(mut self) -> Running {
        let shown = self.shown();
        let mut child = self
            .command
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn seckill");
        let stdout = read_all(child.stdout.take().expect("stdout"));
        let stderr = read_all(child.stderr.take().expect("stderr"));
        Running {
            shown,
            child: Some(child),
            stdout: Some(stdout),
            stderr: Some(stderr),
        }
    }

    /// [`Run::runs`], killed if it still runs after `limit` (then it fails,
    /// showing what it printed): a hang fails the test instead of stalling the suite.
    pub fn runs_within(self, limit: Duration) -> Ran {
        self.start().finish_within(limit)
    }

    /// Give up on it after `limit`, failing the test (a run that could hang
    /// on a frozen or unreachable server); then `.succeeds()` and the like.
    pub fn within(self, limit: Duration) -> Within {
        Within { run: self, limit }
    }

    /// [`Run::fails_with`], killed after `limit` (see [`Run::runs_within`]).
    pub fn fails_with_within(self, code: i32, limit: Duration) -> Ran {
        self.runs_within(limit).must_exit(code)
    }

    /// Start it without waiting, its stdout and stderr going to `stdout` and
    /// `stderr` (log files of a background `consume`, `status --watch`).
    pub fn spawn_with_output(
        mut self,
        stdout: impl Into<Stdio>,
        stderr: impl Into<Stdio>,
    ) -> std::process::Child {
        self.command
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .expect("spawn seckill")
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

    /// What ran and what it printed, for assertion messages.
    pub fn describe(&self) -> String {
        format!(
            "`{}` exited {}\nstdout:\n{}\nstderr:\n{}",
            self.shown,
            self.code(),
            self.stdout(),
            self.stderr()
        )
    }

    /// The raw output, for helpers that take a [`std::process::Output`].
    pub fn output(&self) -> &Output {
        &self.output
    }

    fn must_exit(self, code: i32) -> Ran {
        assert_eq!(self.code(), code, "{}", self.describe());
        self
    }
}

/// A campaign file as a test needs it, written from a builder so the test
/// says only what matters to it (inline YAML stays where the YAML itself is
/// under test):
///
/// ```ignore
/// let file = campaign("c").item("1", 40).buckets(4).per_user_limit(2).write();
/// ```
///
/// Defaults: no window, `keep_after_end: 2h`, `per_user_limit: 1`, no rate
/// limit, `orders.store: sqlite://orders.db` (next to the file); an item is
/// named `Item <id>` and costs `1.00`.
#[derive(Debug, Clone)]
pub struct CampaignSpec {
    id: String,
    items: Vec<ItemSpec>,
    fields: Vec<(String, String)>,
    orders_store: Option<String>,
}

#[derive(Debug, Clone)]
struct ItemSpec {
    id: String,
    name: String,
    price: String,
    stock: i64,
    buckets: Option<u32>,
    waiting_room: Option<String>,
}

/// A campaign with id `id` and no item yet.
pub fn campaign(id: &str) -> CampaignSpec {
    CampaignSpec {
        id: id.to_string(),
        items: Vec::new(),
        fields: vec![("keep_after_end".into(), "2h".into())],
        orders_store: Some("sqlite://orders.db".into()),
    }
}

impl CampaignSpec {
    /// Add item `id` with `stock` units.
    pub fn item(mut self, id: &str, stock: i64) -> CampaignSpec {
        self.items.push(ItemSpec {
            id: id.to_string(),
            name: format!("Item {id}"),
            price: "1.00".into(),
            stock,
            buckets: None,
            waiting_room: None,
        });
        self
    }

    fn last(&mut self) -> &mut ItemSpec {
        self.items
            .last_mut()
            .expect("call .item(id, stock) before setting an item's fields")
    }

    /// The last item's display name.
    pub fn named(mut self, name: &str) -> CampaignSpec {
        self.last().name = name.to_string();
        self
    }

    /// The last item's price, as the file writes it (`"1499.00"`).
    pub fn price(mut self, price: &str) -> CampaignSpec {
        self.last().price = price.to_string();
        self
    }

    /// Split the last item's stock into `n` buckets (docs/buckets.md).
    pub fn buckets(mut self, n: u32) -> CampaignSpec {
        self.last().buckets = Some(n);
        self
    }

    /// The last item's waiting room, as YAML (`"{ mode: rate, admit_rate: 100/s }"`);
    /// campaign-wide: `.field("waiting_room", ...)` (docs/waiting-room.md).
    pub fn room(mut self, yaml: &str) -> CampaignSpec {
        self.last().waiting_room = Some(yaml.to_string());
        self
    }

    /// Set a top-level field to a YAML value as written (`"2h"`, `"3"`,
    /// `"{ window: 1s, max_requests: 10 }"`), replacing an earlier one.
    pub fn field(mut self, name: &str, value: &str) -> CampaignSpec {
        self.fields.retain(|(n, _)| n != name);
        self.fields.push((name.to_string(), value.to_string()));
        self
    }

    /// `per_user_limit: n`.
    pub fn per_user_limit(self, n: u32) -> CampaignSpec {
        self.field("per_user_limit", &n.to_string())
    }

    /// `rate_limit: { window, max_requests }`.
    pub fn rate_limit(self, window: &str, max_requests: u32) -> CampaignSpec {
        self.field(
            "rate_limit",
            &format!("{{ window: {window}, max_requests: {max_requests} }}"),
        )
    }

    /// `starts_at` this far from now (negative: in the past), RFC 3339.
    pub fn starts_in(self, seconds: i64) -> CampaignSpec {
        self.field("starts_at", &rfc3339_from_now(seconds))
    }

    /// `ends_at` this far from now (negative: in the past), RFC 3339.
    pub fn ends_in(self, seconds: i64) -> CampaignSpec {
        self.field("ends_at", &rfc3339_from_now(seconds))
    }

    /// `keep_after_end`.
    pub fn keep_after_end(self, duration: &str) -> CampaignSpec {
        self.field("keep_after_end", duration)
    }

    /// `payment_timeout` (a reservation campaign, docs/reservations.md).
    pub fn payment_timeout(self, duration: &str) -> CampaignSpec {
        self.field("payment_timeout", duration)
    }

    /// `redis: URL`.
    pub fn redis(self, url: &str) -> CampaignSpec {
        self.field("redis", url)
    }

    /// `orders.store: URL`, or no `orders:` section with `None`.
    pub fn orders_store(mut self, url: Option<&str>) -> CampaignSpec {
        self.orders_store = url.map(str::to_string);
        self
    }

    /// The file's text.
    pub fn yaml(&self) -> String {
        let mut text = format!("campaign: {}\n", self.id);
        for (name, value) in &self.fields {
            text.push_str(&format!("{name}: {value}\n"));
        }
        text.push_str("items:\n");
        for item in &self.items {
            text.push_str(&format!(
                "  - id: \"{}\"\n    name: {}\n    price: \"{}\"\n    stock: {}\n",
                item.id, item.name, item.price, item.stock
            ));
            if let Some(n) = item.buckets {
                text.push_str(&format!("    buckets: {n}\n"));
            }
            if let Some(room) = &item.waiting_room {
                text.push_str(&format!("    waiting_room: {room}\n"));
            }
        }
        if let Some(store) = &self.orders_store {
            text.push_str(&format!("orders:\n  store: {store}\n"));
        }
        text
    }

    /// Write it to `<tmp>/campaign.yaml`.
    pub fn write(&self) -> CampaignFile {
        super::campaign_file(&self.yaml())
    }
}

fn rfc3339_from_now(seconds: i64) -> String {
    let at = chrono::Utc::now() + chrono::Duration::seconds(seconds);
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// A run started with [`Run::start`], killed on drop unless finished.
pub struct Running {
    shown: String,
    child: Option<Child>,
    stdout: Option<JoinHandle<Vec<u8>>>,
    stderr: Option<JoinHandle<Vec<u8>>>,
}

impl Running {
    /// The process (to poll `try_wait`, kill it, read its pid).
    pub fn child(&mut self) -> &mut Child {
        self.child.as_mut().expect("not finished yet")
    }

    /// Wait until it exits, whatever the code.
    pub fn finish(self) -> Ran {
        self.finish_within(Duration::MAX)
    }

    /// [`Running::finish`]; a run still going after `limit` is killed and
    /// fails the test, showing what it printed.
    pub fn finish_within(mut self, limit: Duration) -> Ran {
        let mut child = self.child.take().expect("not finished yet");
        let deadline = Instant::now().checked_add(limit);
        let mut hung = false;
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for seckill") {
                break status;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                hung = true;
                let _ = child.kill();
                break child.wait().expect("wait for seckill");
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let collect = |reader: Option<JoinHandle<Vec<u8>>>| {
            reader.expect("read once").join().expect("pipe reader")
        };
        let output = Output {
            status,
            stdout: collect(self.stdout.take()),
            stderr: collect(self.stderr.take()),
        };
        let ran = Ran {
            shown: std::mem::take(&mut self.shown),
            output,
        };
        assert!(!hung, "did not exit within {limit:?}: {}", ran.describe());
        ran
    }

    /// Wait until it exits; it must exit with `code`.
    pub fn fails_with(self, code: i32) -> Ran {
        self.finish().must_exit(code)
    }

    /// Wait until it exits; it must exit 0.
    pub fn succeeds(self) -> Ran {
        self.fails_with(0)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Everything `pipe` yields until it closes, read on a thread of its own.
fn read_all(mut pipe: impl Read + Send + 'static) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        bytes
    })
}

/// A run with a time limit ([`Run::within`]).
pub struct Within {
    run: Run,
    limit: Duration,
}

impl Within {
    /// Run it whatever it exits with ([`Run::runs_within`]).
    pub fn runs(self) -> Ran {
        self.run.runs_within(self.limit)
    }

    /// Run it; it must exit 0.
    pub fn succeeds(self) -> Ran {
        self.fails_with(0)
    }

    /// Run it; it must exit with `code`.
    pub fn fails_with(self, code: i32) -> Ran {
        self.run.fails_with_within(code, self.limit)
    }
}
