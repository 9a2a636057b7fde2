//! "A real session" in the README runs as shown: every `$ ...` line is run
//! by `sh` (at `COLUMNS=80`) against a throwaway Redis, from a copy of `campaigns/`, and must
//! exit with the code shown (`(exit code N)`, else 0) and print every line
//! shown under it. Order and request ids, times and the port vary and are
//! compared as placeholders; table rows compare cell by cell.

use std::path::Path;
use std::process::Command;

use crate::support::RedisServer;

struct Step {
    command: String,
    expected: Vec<String>,
    code: i32,
}

fn session(readme: &str) -> Vec<Step> {
    let section = &readme[readme.find("## A real session").expect("section")..];
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
        let time = t.len() >= 20 && t.as_bytes()[4] == b'-' && t.contains('T') && t.ends_with('Z');
        if ulid {
            "<id>".into()
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

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

#[test]
fn the_readme_session_runs_as_shown() {
    let readme = std::fs::read_to_string("README.md").unwrap();
    let steps = session(&readme);
    assert!(steps.len() >= 10, "the session lost its commands");
    let server = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    copy_dir(Path::new("campaigns"), &dir.path().join("campaigns"));
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_seckill")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for step in &steps {
        let output = Command::new("sh")
            .arg("-c")
            .arg(&step.command)
            .current_dir(dir.path())
            .env("PATH", &path)
            .env_remove("SECKILL_CAMPAIGN")
            .env_remove("SECKILL_ORDERS_DB")
            .env_remove("SECKILL_OPERATOR")
            .env_remove("SECKILL_FORMAT")
            .env_remove("SECKILL_REDIS_CLUSTER")
            .env("SECKILL_REDIS_URL", server.url())
            // The README shows tables at 80 columns.
            .env("COLUMNS", "80")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(
            output.status.code(),
            Some(step.code),
            "README: `$ {}` exits {:?}, shown as {}\n{stdout}{}",
            step.command,
            output.status.code(),
            step.code,
            String::from_utf8_lossy(&output.stderr)
        );
        let printed: Vec<String> = stdout.lines().map(normalize).collect();
        for line in &step.expected {
            assert!(
                printed.contains(&normalize(line)),
                "README: `$ {}` does not print\n{line}\nbut\n{stdout}",
                step.command
            );
        }
    }
}
