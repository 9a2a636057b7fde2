//! The sessions of the README and of the operator's guide run as shown:
//! every block listed in `SESSIONS` (the first ```` ```text ```` block under
//! its heading) is run line by line — every `$ ...` line by `sh` (at
//! `COLUMNS=80`) against a throwaway Redis whose URL is in
//! `SECKILL_REDIS_URL`, from a copy of `campaigns/` — and must exit with the
//! code shown (`(exit code N)`, else 0) and print every line shown under it:
//! on stderr for a line that starts `seckill: `, else on stdout. Order and
//! request ids, times (and a JSON answer's `…_ms` fields), a ticket room's
//! tickets and instance key ids (16 hex digits), and the port vary and are
//! compared as placeholders;
//! table rows compare cell by cell. A line ending in ` &` is started in the
//! background (and waited for until its `--listen` port answers); `kill %1`
//! sends it SIGTERM and expects exit 0. The serve session's port 8080 is
//! replaced by a free one. Every block of those files that shows a `$ `
//! line is in `SESSIONS`, and the README stays at most 400 lines.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::support::RedisServer;

struct Step {
    command: String,
    expected: Vec<String>,
    code: i32,
}

/// Every block the README and the guide show as a session: (file, heading).
const SESSIONS: &[(&str, &str)] = &[
    ("README.md", "## A real session"),
    (
        "docs/guide.md",
        "## 3. One Redis user per job: `seckill acl`",
    ),
    ("docs/guide.md", "## 4. Go / no-go: `seckill doctor`"),
    ("docs/guide.md", "## 5. Preheat"),
    (
        "docs/guide.md",
        "## 6. Open the shop's door: `seckill serve`",
    ),
    ("docs/guide.md", "### The waiting room"),
    (
        "docs/guide.md",
        "### A ticket room: joins answered by `serve`",
    ),
    (
        "docs/guide.md",
        "### Limits above the item: one per customer, two per ID",
    ),
    ("docs/guide.md", "## 9. The kill switch"),
    ("docs/guide.md", "## 12. Every night: `reconcile` in cron"),
    ("docs/guide.md", "## 13. After the sale: `init`"),
    ("docs/guide.md", "## 14. One sale in two regions"),
    ("docs/guide.md", "## 15. A concert: seats, holds, payment"),
];

/// The steps of the first ```` ```text ```` block under the line `heading` of `file`.
fn session(file: &str, heading: &str) -> Vec<Step> {
    let text = std::fs::read_to_string(file).unwrap();
    let start = text
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("{file}: no heading {heading:?}"));
    let section = &text[start..];
    let block = &section[section.find("```text\n").expect("block") + 8..];
    let block = &block[..block.find("```").expect("block end")];
    let mut steps: Vec<Step> = Vec::new();
    for line in block.lines() {
        if let Some(command) = line.strip_prefix("$ ") {
            steps.push(Step {
                command: command.to_string(),
                expected: Vec::new(),
                code: 0,
            });
        } else if let Some(step) = steps.last_mut() {
            if let Some(code) = line
                .strip_prefix("(exit code ")
                .and_then(|c| c.strip_suffix(')'))
            {
                step.code = code.parse().expect("exit code");
            } else if !line.trim().is_empty() {
                step.expected.push(line.to_string());
            }
        }
    }
    steps
}

/// Ids, times and the port become placeholders; a table row becomes its cells.
fn normalize(line: &str) -> String {
    let token = |t: &str| -> String {
        let ulid = t.len() == 26
            && t.bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase());
        // RFC 3339 in UTC (`…Z`) or at the campaign file's offset (`…+08:00`).
        let bytes = t.as_bytes();
        let offset = bytes.len() > 6
            && matches!(bytes[bytes.len() - 6], b'+' | b'-')
            && bytes[bytes.len() - 3] == b':';
        let time = t.len() >= 20
            && t.as_bytes()[4] == b'-'
            && t.contains('T')
            && (t.ends_with('Z') || offset);
        let instance_key =
            t.len() == 16 && t.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if ulid {
            "<id>".into()
        } else if instance_key {
            "<key>".into()
        } else if t.starts_with('{') {
            ticket_fields_inside(&ids_inside(t))
        } else if time {
            "<time>".into()
        } else if t.starts_with("127.0.0.1:") {
            "<host:port>".into()
        } else {
            t.to_string()
        }
    };
    let words = |text: &str| {
        text.split_whitespace()
            .map(token)
            .collect::<Vec<_>>()
            .join(" ")
    };
    if line.contains('┆') {
        line.trim()
            .trim_matches('│')
            .split('┆')
            .map(words)
            .collect::<Vec<_>>()
            .join(" | ")
    } else {
        words(line)
    }
}

/// `text` with every order id (26 of `[0-9A-Z]` between non-alphanumerics,
/// as in a JSON answer) as `<id>`.
fn ids_inside(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < bytes.len() {
        let run = bytes[i..]
            .iter()
            .take_while(|b| b.is_ascii_digit() || b.is_ascii_uppercase())
            .count();
        let bounded = |at: usize| bytes.get(at).is_none_or(|b| !b.is_ascii_alphanumeric());
        if run == 26 && (i == 0 || bounded(i - 1)) && bounded(i + 26) {
            out.push_str("<id>");
            i += 26;
        } else {
            out.push(bytes[i] as char);
            i += 1;
        }
    }
    out
}

/// `text` (a JSON answer) with a ticket room's varying fields as
/// placeholders: the ticket's text, and every `…_ms` number (times, and the
/// wait derived from them).
fn ticket_fields_inside(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('"') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        if let Some(after) = rest.strip_prefix("\"ticket\":\"") {
            out.push_str("\"ticket\":\"<ticket>\"");
            rest = after.find('"').map_or("", |end| &after[end + 1..]);
        } else if let Some(end) = rest[1..].find('"') {
            let name = &rest[..end + 2];
            out.push_str(name);
            rest = &rest[end + 2..];
            if name.ends_with("_ms\"")
                && let Some(value) = rest.strip_prefix(':')
            {
                let digits = value
                    .bytes()
                    .take_while(|b| b.is_ascii_digit() || *b == b'-')
                    .count();
                if digits > 0 {
                    out.push_str(":<ms>");
                    rest = &value[digits..];
                }
            }
        } else {
            break;
        }
    }
    out.push_str(rest);
    out
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// Run the session under `heading` of `file`: at least `least` commands,
/// with port `shown` (if any) replaced by a free one.
fn runs_as_shown(file: &str, heading: &str, least: usize, shown: Option<&str>) {
    assert!(
        SESSIONS.contains(&(file, heading)),
        "{file}: {heading:?} is not in SESSIONS"
    );
    let steps = session(file, heading);
    assert!(
        steps.len() >= least,
        "{file}: the session under {heading:?} lost its commands"
    );
    let port = crate::support::free_port().to_string();
    run_session(file, &steps, shown.map(|shown| (shown, port.as_str())));
}

#[test]
fn the_readme_session_runs_as_shown() {
    runs_as_shown("README.md", "## A real session", 10, None);
}

#[test]
fn the_guide_serve_session_runs_as_shown() {
    runs_as_shown(
        "docs/guide.md",
        "## 6. Open the shop's door: `seckill serve`",
        8,
        Some("8080"),
    );
}

#[test]
fn the_guide_acl_session_runs_as_shown() {
    runs_as_shown(
        "docs/guide.md",
        "## 3. One Redis user per job: `seckill acl`",
        2,
        None,
    );
}

#[test]
fn the_guide_doctor_session_runs_as_shown() {
    runs_as_shown(
        "docs/guide.md",
        "## 4. Go / no-go: `seckill doctor`",
        4,
        None,
    );
}

#[test]
fn the_guide_preheat_session_runs_as_shown() {
    runs_as_shown("docs/guide.md", "## 5. Preheat", 3, None);
}

#[test]
fn the_guide_waiting_room_session_runs_as_shown() {
    runs_as_shown("docs/guide.md", "### The waiting room", 5, None);
}

#[test]
fn the_guide_ticket_room_session_runs_as_shown() {
    runs_as_shown(
        "docs/guide.md",
        "### A ticket room: joins answered by `serve`",
        12,
        Some("8080"),
    );
}

#[test]
fn the_guide_limits_session_runs_as_shown() {
    runs_as_shown(
        "docs/guide.md",
        "### Limits above the item: one per customer, two per ID",
        9,
        None,
    );
}

#[test]
fn the_guide_kill_switch_session_runs_as_shown() {
    runs_as_shown("docs/guide.md", "## 9. The kill switch", 6, None);
}

#[test]
fn the_guide_reconcile_session_runs_as_shown() {
    runs_as_shown(
        "docs/guide.md",
        "## 12. Every night: `reconcile` in cron",
        9,
        None,
    );
}

/// The regions session runs against two throwaway servers put in place of
/// the ports `campaigns/moutai-regions.yaml` names (a campaign with regions
/// refuses `SECKILL_REDIS_URL`).
#[test]
fn the_guide_regions_session_runs_as_shown() {
    runs_as_shown("docs/guide.md", "## 14. One sale in two regions", 7, None);
}

#[test]
fn the_guide_concert_session_runs_as_shown() {
    runs_as_shown(
        "docs/guide.md",
        "## 15. A concert: seats, holds, payment",
        10,
        None,
    );
}

#[test]
fn the_guide_init_session_runs_as_shown() {
    runs_as_shown("docs/guide.md", "## 13. After the sale: `init`", 6, None);
}

/// A session nobody runs would drift: every ```` ```text ```` block of the
/// README and the guide with a `$ ` line must be the first text block under
/// a heading of `SESSIONS`.
#[test]
fn every_session_shown_is_one_the_tests_run() {
    let mut found = 0;
    for file in ["README.md", "docs/guide.md"] {
        let text = std::fs::read_to_string(file).unwrap();
        let mut heading = String::new();
        let mut blocks_under_heading = 0;
        let mut fence: Option<(String, bool)> = None;
        for line in text.lines() {
            match &mut fence {
                None if line.starts_with("```") => {
                    fence = Some((line.to_string(), false));
                }
                None if line.starts_with('#') => {
                    heading = line.to_string();
                    blocks_under_heading = 0;
                }
                None => {}
                Some((opening, shows_a_command)) => {
                    if line.starts_with("```") {
                        if opening == "```text" {
                            blocks_under_heading += 1;
                            if *shows_a_command {
                                found += 1;
                                assert!(
                                    SESSIONS.contains(&(file, heading.as_str()))
                                        && blocks_under_heading == 1,
                                    "{file}: a block under {heading:?} shows `$ ` commands \
                                     that no test runs: make it the first text block of a \
                                     heading in SESSIONS"
                                );
                            }
                        }
                        fence = None;
                    } else if line.starts_with("$ ") {
                        *shows_a_command = true;
                    }
                }
            }
        }
    }
    assert_eq!(
        found,
        SESSIONS.len(),
        "a heading of SESSIONS shows no session"
    );
}

#[test]
fn the_readme_is_at_most_400_lines() {
    let lines = std::fs::read_to_string("README.md")
        .unwrap()
        .lines()
        .count();
    assert!(
        lines <= 400,
        "README.md has {lines} lines: the guide (docs/guide.md), the design notes \
         (docs/) and the man pages hold the rest"
    );
}

/// Run `steps` in order on one throwaway Redis; `port`: (shown, used).
fn run_session(file: &str, steps: &[Step], port: Option<(&str, &str)>) {
    let server = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    copy_dir(Path::new("campaigns"), &dir.path().join("campaigns"));
    let regions = steps
        .iter()
        .any(|step| step.command.contains("moutai-regions.yaml"));
    let region_servers = regions.then(|| {
        let servers = [RedisServer::start(), RedisServer::start()];
        let path = dir.path().join("campaigns/moutai-regions.yaml");
        let text = std::fs::read_to_string(&path).unwrap();
        let text = text
            .replace("127.0.0.1:6391", &format!("127.0.0.1:{}", servers[0].port))
            .replace("127.0.0.1:6392", &format!("127.0.0.1:{}", servers[1].port));
        std::fs::write(&path, text).unwrap();
        servers
    });
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_seckill")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let shell = |command: &str| {
        let mut sh = Command::new("sh");
        sh.arg("-c")
            .arg(command)
            .current_dir(dir.path())
            .env("PATH", &path)
            .env_remove("SECKILL_CAMPAIGN")
            .env_remove("SECKILL_ORDERS_DB")
            .env_remove("SECKILL_OPERATOR")
            .env_remove("SECKILL_FORMAT")
            .env_remove("SECKILL_REDIS_CLUSTER")
            .env_remove("SECKILL_REGION")
            .env("SECKILL_REDIS_URL", server.url())
            // The README and the guide show tables at 80 columns.
            .env("COLUMNS", "80");
        if region_servers.is_some() {
            sh.env_remove("SECKILL_REDIS_URL");
        }
        sh
    };
    let mut background: Option<Background> = None;
    for step in steps {
        let command = match port {
            Some((shown, used)) => step.command.replace(shown, used),
            None => step.command.clone(),
        };
        if let Some(started) = command.strip_suffix(" &") {
            let child = shell(&format!("exec {started}"))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let listen = port.map(|(_, used)| used.to_string());
            background = Some(Background::started(child, listen.as_deref()));
            continue;
        }
        if command == "kill %1" {
            let mut started = background.take().expect("`kill %1` with nothing started");
            let _ = Command::new("kill")
                .args(["-TERM", &started.0.id().to_string()])
                .status();
            let status = started.0.wait().unwrap();
            assert_eq!(
                status.code(),
                Some(0),
                "{file}: the `&` command exits {status}"
            );
            continue;
        }
        let output = shell(&command).output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(step.code),
            "{file}: `$ {}` exits {:?}, shown as {}\n{stdout}{stderr}",
            step.command,
            output.status.code(),
            step.code,
        );
        let printed: Vec<String> = stdout.lines().map(normalize).collect();
        let said: Vec<String> = stderr.lines().map(normalize).collect();
        for line in &step.expected {
            let (stream, name) = if line.starts_with("seckill: ") {
                (&said, "stderr")
            } else {
                (&printed, "stdout")
            };
            let expected = normalize(line);
            assert!(
                stream.iter().any(|printed| same_line(&expected, printed)),
                "{file}: `$ {}` does not print on {name}\n{line}\nbut\n{stdout}{stderr}",
                step.command
            );
        }
    }
    assert!(background.is_none(), "a `&` command was never stopped");
}

/// `printed` as the document shows it: word for word, where a word `N–M`
/// (an en dash between two numbers) stands for any number from N to M — a
/// figure the document says may vary (keys that expire on their own).
fn same_line(expected: &str, printed: &str) -> bool {
    let (expected, printed): (Vec<&str>, Vec<&str>) = (
        expected.split_whitespace().collect(),
        printed.split_whitespace().collect(),
    );
    expected.len() == printed.len()
        && expected.iter().zip(&printed).all(|(e, p)| {
            e == p
                || e.split_once('–').is_some_and(|(low, high)| {
                    match (low.parse::<i64>(), high.parse::<i64>(), p.parse::<i64>()) {
                        (Ok(low), Ok(high), Ok(n)) => (low..=high).contains(&n),
                        _ => false,
                    }
                })
        })
}

/// A command the session started with `&`, killed if the test fails.
struct Background(std::process::Child);

impl Background {
    /// Wait until `port` (if any) accepts connections.
    fn started(child: std::process::Child, port: Option<&str>) -> Background {
        let background = Background(child);
        if let Some(port) = port {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while std::net::TcpStream::connect(format!("127.0.0.1:{port}")).is_err() {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the `&` command never listened on {port}"
                );
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        background
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
