//! The shipped campaign files, mutated thousands of times (bytes dropped,
//! hostile tokens inserted, lines duplicated and swapped): the parser never
//! panics, a refusal is always a usage error (exit 2), and a file it accepts
//! still satisfies every documented bound. A sample goes through the real
//! binary against a real Redis: a refused file never touches Redis.

use crate::support;

use std::path::Path;
use std::time::Duration;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use seckill::model::campaign::{Campaign, MAX_DURATION, MAX_PER_USER_LIMIT, MAX_STOCK};
use seckill::{model::error, model::exit_codes};
use support::RedisServer;
use support::spec::seckill;

const SHIPPED: [&str; 4] = [
    "campaigns/moutai.yaml",
    "campaigns/concert.yaml",
    "campaigns/iphone.yaml",
    "campaigns/concert-seats.yaml",
];

/// Text that tends to break YAML parsers and validators.
const TOKENS: &[&str] = &[
    "&a ",
    "*a",
    "<<: *a\n",
    "!!binary ",
    "!include x\n",
    "? ",
    ": ",
    "- ",
    "\t",
    "\"",
    "'",
    "[",
    "]",
    "{",
    "}",
    ",",
    "#",
    "|\n",
    ">-\n",
    "---\n",
    "...\n",
    "%YAML 1.2\n",
    "\u{feff}",
    "\0",
    "é",
    "99999999999999999999",
    "-9223372036854775808",
    "9223372036854775807",
    "1e400",
    "-1",
    "0",
    "0x10",
    "1.5",
    ".nan",
    "~",
    "null",
    "1000000000years",
    "9999999h",
    "0ns",
    "100000001",
    "10001",
    "2026-02-30T10:00:00Z",
    "9999-12-31T23:59:59Z",
    "0000-01-01T00:00:00Z",
    "{window: 1y, max_requests: 1}",
    "items: []\n",
    "\n  - { id: \"1\", name: n, price: \"1\", stock: 1 }\n",
];

#[derive(Debug, Clone)]
enum Mutation {
    /// Remove `len` bytes at a relative position.
    Delete(f64, usize),
    /// Insert a token at a relative position.
    Insert(f64, usize),
    /// Overwrite one byte.
    Byte(f64, u8),
    /// Repeat one line.
    DuplicateLine(f64),
    /// Swap two lines.
    SwapLines(f64, f64),
    /// Replace the value of a `key: value` line (the first such line at or after
    /// a relative position) with a token: how a typo in one field looks.
    ReplaceValue(f64, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (0.0..1.0f64, 1..40usize).prop_map(|(at, len)| Mutation::Delete(at, len)),
        (0.0..1.0f64, 0..TOKENS.len()).prop_map(|(at, t)| Mutation::Insert(at, t)),
        (0.0..1.0f64, any::<u8>()).prop_map(|(at, b)| Mutation::Byte(at, b)),
        (0.0..1.0f64).prop_map(Mutation::DuplicateLine),
        (0.0..1.0f64, 0.0..1.0f64).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        (0.0..1.0f64, 0..TOKENS.len()).prop_map(|(at, t)| Mutation::ReplaceValue(at, t)),
    ]
}

fn mutated_file() -> impl Strategy<Value = (usize, Vec<Mutation>)> {
    (0..SHIPPED.len(), prop::collection::vec(mutation(), 1..6))
}

fn index(at: f64, len: usize) -> usize {
    ((at * len as f64) as usize).min(len)
}

fn apply(original: &[u8], mutations: &[Mutation]) -> Vec<u8> {
    let mut bytes = original.to_vec();
    for m in mutations {
        match *m {
            Mutation::Delete(at, len) => {
                let start = index(at, bytes.len());
                let end = (start + len).min(bytes.len());
                bytes.drain(start..end);
            }
            Mutation::Insert(at, t) => {
                let at = index(at, bytes.len());
                bytes.splice(at..at, TOKENS[t].bytes());
            }
            Mutation::Byte(at, b) => {
                if !bytes.is_empty() {
                    let at = index(at, bytes.len() - 1);
                    bytes[at] = b;
                }
            }
            Mutation::ReplaceValue(at, t) => {
                let mut lines: Vec<Vec<u8>> =
                    bytes.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
                let start = index(at, lines.len() - 1);
                let found = (start..lines.len()).find_map(|i| {
                    lines[i]
                        .windows(2)
                        .position(|w| w == b": ")
                        .map(|p| (i, p + 2))
                });
                if let Some((i, value_at)) = found {
                    lines[i].truncate(value_at);
                    lines[i].extend_from_slice(TOKENS[t].as_bytes());
                }
                bytes = lines.join(&b'\n');
            }
            Mutation::DuplicateLine(at) | Mutation::SwapLines(at, _) => {
                let mut lines: Vec<Vec<u8>> =
                    bytes.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
                let i = index(at, lines.len() - 1);
                match *m {
                    Mutation::SwapLines(_, other) => {
                        let j = index(other, lines.len() - 1);
                        lines.swap(i, j);
                    }
                    _ => {
                        let line = lines[i].clone();
                        lines.insert(i, line);
                    }
                }
                bytes = lines.join(&b'\n');
            }
        }
    }
    bytes
}

/// Load one mutated file in-process: Ok within every bound, or a usage error.
fn check_in_process(path: &Path) -> Result<(), TestCaseError> {
    match Campaign::load(path) {
        Ok(campaign) => {
            prop_assert!(!campaign.items.is_empty());
            prop_assert!((1..=MAX_PER_USER_LIMIT as u32).contains(&campaign.per_user_limit));
            prop_assert!(campaign.keep_after_end <= MAX_DURATION);
            if let Some(rate) = campaign.rate_limit {
                prop_assert!(rate.window <= MAX_DURATION && rate.window.as_millis() >= 1);
            }
            for item in &campaign.items {
                prop_assert!((1..=MAX_STOCK).contains(&item.stock));
                prop_assert!(item.price_cents >= 0);
            }
            if let (Some(start), Some(end)) = (campaign.starts_at_ms, campaign.ends_at_ms) {
                prop_assert!(end > start);
            }
            if let (Some(end), Some(expire)) = (campaign.ends_at_ms, campaign.expire_at_ms()) {
                prop_assert!(expire >= end, "expiry wrapped: {expire} < {end}");
            }
        }
        Err(e) => {
            prop_assert_eq!(error::exit_code_for(&e), exit_codes::USAGE_ERROR, "{:#}", e);
        }
    }
    Ok(())
}

#[test]
fn mutated_shipped_campaigns_never_panic_and_are_refused_as_usage_errors() {
    let originals: Vec<Vec<u8>> = SHIPPED.iter().map(|p| std::fs::read(p).unwrap()).collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mutated.yaml");
    let mut runner = TestRunner::new(Config {
        cases: 3000,
        failure_persistence: None,
        ..Config::default()
    });
    let accepted = std::cell::Cell::new(0u32);
    runner
        .run(&mutated_file(), |(file, mutations)| {
            std::fs::write(&path, apply(&originals[file], &mutations)).unwrap();
            accepted.set(accepted.get() + u32::from(Campaign::load(&path).is_ok()));
            check_in_process(&path)
        })
        .unwrap();
    // Some mutants stay valid, so the bounds on accepted files are exercised too.
    assert!(accepted.get() > 0);
}

#[test]
fn mutated_campaigns_refused_by_the_binary_never_touch_redis() {
    let server = RedisServer::start();
    let mut conn = server.conn();
    let originals: Vec<Vec<u8>> = SHIPPED.iter().map(|p| std::fs::read(p).unwrap()).collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mutated.yaml");
    let mut runner = TestRunner::deterministic();
    let (mut refused, mut accepted) = (0, 0);
    let unchanged = (0..SHIPPED.len()).map(|file| (file, Vec::new()));
    let mutated = (0..40).map(|_| mutated_file().new_tree(&mut runner).unwrap().current());
    for (file, mutations) in unchanged.chain(mutated) {
        std::fs::write(&path, apply(&originals[file], &mutations)).unwrap();
        let connections_before = connections_received(&mut conn);
        let ran = seckill(&["preheat"])
            .args(&["-c", path.to_str().unwrap()])
            .redis(&server)
            .json()
            .current_dir(dir.path())
            .within(Duration::from_secs(30))
            .runs();
        let stderr = ran.stderr();
        assert!(!stderr.contains("panicked"), "{mutations:?}: {stderr}");
        match ran.code() {
            exit_codes::USAGE_ERROR => {
                refused += 1;
                let dbsize: i64 = redis::cmd("DBSIZE").query(&mut conn).unwrap();
                assert_eq!(dbsize, 0, "{mutations:?}: {stderr}");
                // Our own INFO connection is the only one since the last look.
                assert_eq!(
                    connections_received(&mut conn),
                    connections_before,
                    "a refused file connected to Redis: {mutations:?}: {stderr}"
                );
            }
            exit_codes::SUCCESS => {
                accepted += 1;
                let () = redis::cmd("FLUSHALL").query(&mut conn).unwrap();
            }
            other => panic!("{mutations:?}: exit {other:?}: {stderr}"),
        }
    }
    assert!(
        refused > 0 && accepted > 0,
        "refused {refused}, accepted {accepted}"
    );
}

fn connections_received(conn: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("stats").query(conn).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("total_connections_received:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap()
}
