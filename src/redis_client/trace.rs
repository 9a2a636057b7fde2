//! `-v` / `SECKILL_DEBUG=1`: every Redis command on stderr, with the node
//! that served it and how long it took, for "why is this slow / refused /
//! on that node?" without a packet capture:
//!
//! ```text
//! seckill: trace: EVALSHA buy seckill:{moutai-1111:1001}:meta slot 6210 on 127.0.0.1:21002: ok in 0.41 ms
//! ```
//!
//! A command is shown by its name (with the subcommand of `XINFO`,
//! `XGROUP`, `SCRIPT`, ...), a script by its name — never its body — and its
//! first key with that key's cluster slot. No other argument is shown:
//! values, passwords (`AUTH`, `HELLO`, `ACL SETUSER`) and user data stay out
//! of logs. On a cluster the node is the slot's master in the connection's
//! slot map as last read (a redirect followed after the line was written
//! shows as the next command's node).
//!
//! Off, the hook in `conn.rs` costs one relaxed atomic load per command.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use redis::{Cmd, RedisResult};

use crate::model::layout::key_slot;
use crate::redis_client::cluster::ClusterConn;
use crate::redis_client::cluster::command::unpack;
use crate::redis_client::scripts::ALL;

static ENABLED: AtomicBool = AtomicBool::new(false);

/// The standalone server's address (its display form), from the first connect.
static STANDALONE: OnceLock<String> = OnceLock::new();

/// Turn tracing on for this process (`-v`, `SECKILL_DEBUG=1`).
pub(crate) fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// Whether `-v` is on.
pub(crate) fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// A line of the trace on stderr.
pub(crate) fn say(line: impl std::fmt::Display) {
    if enabled() {
        crate::util::output::say(format!("seckill: trace: {line}"));
    }
}

/// A connection to `display` (from `source`) opened: said once per process.
pub(crate) fn connected(display: &str, source: &dyn std::fmt::Display, cluster: bool) {
    if !enabled() {
        return;
    }
    if STANDALONE.set(display.to_string()).is_ok() {
        let kind = if cluster {
            "cluster seed nodes"
        } else {
            "Redis"
        };
        say(format!("{kind} {display} ({source})"));
    }
}

/// A request being traced: what it is, and when it was sent.
pub(crate) struct Traced {
    described: Vec<String>,
    started: Instant,
}

/// A packed command (or a pipeline of them) is about to be sent; `cluster`
/// is the cluster connection (for the slot's master), `None` on a single
/// server. `None` when tracing is off.
pub(crate) fn packed(cluster: Option<&ClusterConn>, bytes: &[u8]) -> Option<Traced> {
    if !enabled() {
        return None;
    }
    Some(start(cluster, &unpack(bytes)))
}

/// [`packed`] for one command not packed yet.
pub(crate) fn command(cluster: Option<&ClusterConn>, cmd: &Cmd) -> Option<Traced> {
    if !enabled() {
        return None;
    }
    let words: Vec<Vec<u8>> = cmd
        .args_iter()
        .map(|arg| match arg {
            redis::Arg::Simple(bytes) => bytes.to_vec(),
            _ => b"0".to_vec(),
        })
        .collect();
    Some(start(cluster, &[words]))
}

fn start(cluster: Option<&ClusterConn>, commands: &[Vec<Vec<u8>>]) -> Traced {
    let mut described = Vec::with_capacity(commands.len());
    for words in commands {
        described.push(describe(cluster, words));
    }
    Traced {
        described,
        started: Instant::now(),
    }
}

/// The request of `traced` got `result`: its line(s) on stderr.
pub(crate) fn finish<T>(traced: Option<Traced>, result: &RedisResult<T>) {
    let Some(Traced { described, started }) = traced else {
        return;
    };
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    let outcome = match result {
        Ok(_) => "ok".to_string(),
        Err(error) => format!("failed: {}", error.to_string().replace('\n', " ")),
    };
    match described.as_slice() {
        [one] => say(format!("{one}: {outcome} in {ms:.2} ms")),
        many => {
            for line in many {
                say(format!("{line} (pipeline of {})", many.len()));
            }
            say(format!(
                "pipeline of {}: {outcome} in {ms:.2} ms",
                many.len()
            ));
        }
    }
}

/// `EVALSHA buy seckill:{c:1}:meta slot 6210 on 127.0.0.1:6379`.
fn describe(cluster: Option<&ClusterConn>, words: &[Vec<u8>]) -> String {
    let text = |i: usize| {
        words
            .get(i)
            .map(|w| String::from_utf8_lossy(w).into_owned())
    };
    let name = text(0).unwrap_or_default().to_uppercase();
    let mut shown = name.clone();
    let key = match name.as_str() {
        "EVALSHA" | "EVALSHA_RO" => {
            let sha = text(1).unwrap_or_default();
            let script = ALL
                .iter()
                .find(|spec| spec.sha().eq_ignore_ascii_case(&sha))
                .map_or("(unknown script)", |spec| spec.name());
            shown.push(' ');
            shown.push_str(script);
            let numkeys: usize = text(2).and_then(|n| n.parse().ok()).unwrap_or(0);
            (numkeys > 0).then(|| text(3)).flatten()
        }
        "XREADGROUP" | "XREAD" => words
            .iter()
            .position(|w| w.eq_ignore_ascii_case(b"STREAMS"))
            .and_then(|at| text(at + 1)),
        "SCRIPT" | "CLIENT" | "ACL" | "CONFIG" | "CLUSTER" | "COMMAND" | "FUNCTION" | "XINFO"
        | "XGROUP" | "OBJECT" | "MEMORY" | "SLOWLOG" => {
            let sub = text(1).unwrap_or_default().to_uppercase();
            shown.push(' ');
            if name == "SCRIPT" && sub == "LOAD" {
                // The body never: the script's name instead.
                let body = words.get(2).map(|w| w.as_slice()).unwrap_or_default();
                let script = ALL
                    .iter()
                    .find(|spec| spec.source.as_bytes() == body)
                    .map_or("(a script)", |spec| spec.name());
                shown.push_str(&format!("{sub} {script}"));
            } else {
                shown.push_str(&sub);
            }
            matches!(name.as_str(), "XINFO" | "XGROUP" | "OBJECT" | "MEMORY")
                .then(|| text(2))
                .flatten()
        }
        "PING" | "TIME" | "AUTH" | "HELLO" | "SELECT" | "INFO" | "WAIT" | "READONLY" | "MULTI"
        | "EXEC" | "DISCARD" | "DBSIZE" | "SCAN" | "FLUSHALL" | "FLUSHDB" | "ROLE" | "KEYS"
        | "RANDOMKEY" | "LASTSAVE" | "QUIT" | "RESET" => None,
        _ => text(1),
    };
    match key {
        Some(key) => {
            let slot = key_slot(&key);
            format!(
                "{shown} {key} slot {slot} on {}",
                node_of(cluster, Some(slot))
            )
        }
        None => format!("{shown} on {}", node_of(cluster, None)),
    }
}

/// The node serving `slot`: the standalone server, or the slot's master.
fn node_of(cluster: Option<&ClusterConn>, slot: Option<u16>) -> String {
    let Some(cluster) = cluster else {
        return STANDALONE
            .get()
            .cloned()
            .unwrap_or_else(|| "Redis".to_string());
    };
    slot.and_then(|slot| cluster.master_of(slot))
        .unwrap_or_else(|| "a cluster master".to_string())
}
