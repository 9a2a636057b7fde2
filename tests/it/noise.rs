//! Nothing said for nothing (issue 25, item 24): the environment's Redis
//! warning only when it really sends the command elsewhere, once, and never
//! under `-q`; `-q` silences every line for people (log, retry, warning) but
//! never the JSON a script asked for nor the error that ends the command;
//! `-q -q` is `-q`. And the loops' last words carry their log lines'
//! timestamp (item 26).

use std::time::Duration;

use crate::support::orders::{terminate, wait_exit};
use crate::support::spec::{campaign, seckill};
use crate::support::{RedisServer, free_port};

const ENV_WARNING: &str = "SECKILL_REDIS_URL sends this command to";

/// `2026-12-01T19:46:06.919Z seckill …`: a log line's timestamp in front.
fn timestamped(line: &str) -> bool {
    let Some((stamp, _)) = line.split_once(' ') else {
        return false;
    };
    stamp.len() == 24 && stamp.ends_with('Z') && chrono::DateTime::parse_from_rfc3339(stamp).is_ok()
}

#[test]
fn the_environment_naming_the_files_server_another_way_is_no_override() {
    let server = RedisServer::start();
    let port = server
        .url()
        .split(':')
        .nth(2)
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let file = campaign("noise")
        .redis(&format!("redis://127.0.0.1:{port}/0"))
        .item("1", 5)
        .write();
    // The same server, spelled without the database.
    let ran = seckill(&["status"])
        .campaign(&file)
        .redis_url(&format!("redis://127.0.0.1:{port}"))
        .runs();
    assert!(!ran.stderr().contains(ENV_WARNING), "{}", ran.describe());

    // Another database of it is another place: said once, and not under -q.
    let elsewhere = format!("redis://127.0.0.1:{port}/3");
    let ran = seckill(&["status"])
        .campaign(&file)
        .redis_url(&elsewhere)
        .runs();
    assert_eq!(
        ran.stderr().matches(ENV_WARNING).count(),
        1,
        "{}",
        ran.describe()
    );
    let ran = seckill(&["-q", "status"])
        .campaign(&file)
        .redis_url(&elsewhere)
        .runs();
    assert!(!ran.stderr().contains(ENV_WARNING), "{}", ran.describe());
}

#[test]
fn quiet_json_is_still_written_and_quiet_may_be_repeated() {
    let server = RedisServer::start();
    let file = campaign("noise").item("1", 5).write();
    let run = |args: &[&str]| seckill(args).campaign(&file).redis(&server);
    run(&["-q", "-q", "preheat"]).succeeds();
    let ran = run(&["buy", "--item", "1", "--user", "a", "-q"])
        .json()
        .succeeds();
    assert_eq!(ran.json()["outcome"], "ok", "{}", ran.describe());
    let ran = run(&["status", "-q", "--quiet"]).json().succeeds();
    assert_eq!(ran.json()["command"], "status", "{}", ran.describe());
    let text = run(&["status", "-q", "--format", "prometheus"])
        .succeeds()
        .stdout();
    assert!(text.contains("seckill_stock_left"), "{text}");
    // Tables still say nothing on success.
    assert_eq!(run(&["-q", "status"]).succeeds().stdout(), "");
    assert_eq!(run(&["-v", "-v", "status"]).succeeds().code(), 0);
}

/// A consumer whose database does not answer logs a retry line per attempt;
/// under `-q` it says nothing until the error that ends it, said once, with
/// the timestamp its log lines would have had.
#[test]
fn quiet_silences_retry_lines_but_not_the_last_error() {
    let server = RedisServer::start();
    let file = campaign("noise").item("1", 5).write();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let nowhere = format!("mysql://seckill:x@127.0.0.1:{}/orders", free_port());
    for quiet in [false, true] {
        let mut args = vec!["consume", "--orders-db", &nowhere];
        if quiet {
            args.push("-q");
        }
        let mut child = seckill(&args).campaign(&file).redis(&server).spawn();
        std::thread::sleep(Duration::from_millis(1500));
        terminate(&child);
        let status = wait_exit(&mut child);
        let mut stderr = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
        assert!(!status.success(), "{stderr}");
        let retries = stderr.lines().filter(|l| l.contains("retrying")).count();
        if quiet {
            assert_eq!(retries, 0, "{stderr}");
            assert_eq!(stderr.lines().count(), 1, "only the last error:\n{stderr}");
        } else {
            assert!(retries >= 1, "{stderr}");
        }
        let last = stderr.lines().last().unwrap_or_default();
        assert!(last.contains("seckill: error:"), "{stderr}");
        assert!(
            timestamped(last),
            "the last error has no timestamp:\n{stderr}"
        );
        assert_eq!(stderr.matches("seckill: error:").count(), 1, "{stderr}");
    }
}

/// A loop that ends on an error says it with the timestamp of its other lines.
#[test]
fn a_loops_fatal_line_is_timestamped_like_its_log() {
    let server = RedisServer::start();
    let file = campaign("noise").item("1", 5).write();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = busy.local_addr().unwrap().to_string();
    let ran = seckill(&["expire", "--loop", "--metrics-listen", &taken])
        .campaign(&file)
        .redis(&server)
        .fails_with(1);
    let stderr = ran.stderr();
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(lines.len() >= 2, "{}", ran.describe());
    assert!(lines.iter().all(|l| timestamped(l)), "{}", ran.describe());
    assert!(
        lines
            .last()
            .unwrap()
            .contains("seckill: error: cannot listen"),
        "{}",
        ran.describe()
    );
}
