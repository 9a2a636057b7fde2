//! The Redis process behind a connection, for the failover fence
//! (docs/failover.md, "The fence").
//!
//! A buy script compares the `run_id` preheat recorded in the item's meta
//! with the run_id of the process that runs it. Reading `INFO` inside every
//! call costs ~3 µs of Redis time; instead the call carries the run_id as its
//! last ARGV, filled in here, by the connection the call goes out on, with
//! the run_id read once on that very connection (`INFO server`). A TCP
//! connection never changes process: a restart, a promoted replica or a
//! restore is a new connection, which reads its own. The domain writes the
//! placeholder [`NODE_PLACEHOLDER`]; a connection that does not fill it in
//! (a pipeline, the load test's raw sockets, a role refused `INFO`) sends it
//! as it is, and the script, which takes only 40 hex digits as a run_id,
//! reads `INFO` itself: slower, never wrong.
//!
//! May import: nothing of the crate.

use std::sync::Arc;

use redis::aio::MultiplexedConnection;
use redis::{Arg, Cmd, RedisResult};

/// The run_id of the process behind an async connection, read when it was
/// opened; `None` when INFO was refused to this user.
pub(crate) type RunId = Option<Arc<str>>;

/// The run_id of the process behind `connection` (`None`: INFO refused to
/// this user, and the scripts read it themselves).
pub(crate) async fn run_id_on(connection: &mut MultiplexedConnection) -> RunId {
    let info: RedisResult<String> = info_server().query_async(connection).await;
    info.ok().as_deref().and_then(run_id_of).map(Arc::from)
}

/// `cmd` with the run_id of its connection in place of the placeholder,
/// when it waits for one and the run_id is known.
pub(crate) fn filled_in(cmd: &Cmd, run_id: &RunId) -> Option<Cmd> {
    match run_id {
        Some(run_id) if wants_run_id(cmd) => Some(with_run_id(cmd, run_id)),
        _ => None,
    }
}

/// What a call sends as its `node` ARGV for its connection to fill in.
pub const NODE_PLACEHOLDER: &str = "?node";

/// The run_id in an `INFO server` reply.
pub(crate) fn run_id_of(info: &str) -> Option<String> {
    info.lines()
        .find_map(|line| line.strip_prefix("run_id:"))
        .map(|id| id.trim().to_string())
        .filter(|id| id.len() == 40 && id.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// `INFO server`, the command that says which process answers.
pub(crate) fn info_server() -> Cmd {
    let mut cmd = redis::cmd("INFO");
    cmd.arg("server");
    cmd
}

/// Whether `cmd` is a script call whose last argument waits for the run_id.
pub(crate) fn wants_run_id(cmd: &Cmd) -> bool {
    let mut args = cmd.args_iter();
    let is_script = matches!(args.next(), Some(Arg::Simple(name))
        if name.eq_ignore_ascii_case(b"EVALSHA") || name.eq_ignore_ascii_case(b"EVAL"));
    is_script
        && matches!(args.last(), Some(Arg::Simple(last)) if last == NODE_PLACEHOLDER.as_bytes())
}

/// `cmd` with its last argument (the placeholder) replaced by `run_id`.
pub(crate) fn with_run_id(cmd: &Cmd, run_id: &str) -> Cmd {
    let count = cmd.args_iter().len();
    let mut filled = Cmd::new();
    for (index, arg) in cmd.args_iter().enumerate() {
        match arg {
            Arg::Simple(_) if index + 1 == count => filled.arg(run_id),
            Arg::Simple(bytes) => filled.arg(bytes),
            _ => filled.cursor_arg(0),
        };
    }
    filled
}

/// The packed form of a script call that waits for the run_id: its last
/// bulk string is the placeholder.
fn packed_tail() -> Vec<u8> {
    format!("${}\r\n{NODE_PLACEHOLDER}\r\n", NODE_PLACEHOLDER.len()).into_bytes()
}

/// Whether packed bytes are one script call waiting for the run_id.
pub(crate) fn packed_wants_run_id(bytes: &[u8]) -> bool {
    let script = |name: &[u8]| {
        let head = format!("\r\n${}\r\n", name.len());
        bytes
            .iter()
            .position(|&b| b == b'\r')
            .and_then(|end| bytes.get(end..end + head.len() + name.len()))
            .is_some_and(|found| {
                found.starts_with(head.as_bytes()) && found[head.len()..].eq_ignore_ascii_case(name)
            })
    };
    bytes.starts_with(b"*")
        && bytes.ends_with(&packed_tail())
        && (script(b"EVALSHA") || script(b"EVAL"))
}

/// Packed bytes of [`packed_wants_run_id`] with the placeholder replaced.
pub(crate) fn packed_with_run_id(bytes: &[u8], run_id: &str) -> Vec<u8> {
    let kept = bytes.len() - packed_tail().len();
    let mut filled = bytes[..kept].to_vec();
    filled.extend_from_slice(format!("${}\r\n{run_id}\r\n", run_id.len()).as_bytes());
    filled
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN_ID: &str = "0123456789abcdef0123456789abcdef01234567";

    fn evalsha(last: &str) -> Cmd {
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg("abc")
            .arg(1)
            .arg("{c:1}:meta")
            .arg("alice")
            .arg(last);
        cmd
    }

    #[test]
    fn only_a_script_call_ending_in_the_placeholder_is_filled() {
        assert!(wants_run_id(&evalsha(NODE_PLACEHOLDER)));
        assert!(!wants_run_id(&evalsha("alice")));
        let mut get = redis::cmd("GET");
        get.arg(NODE_PLACEHOLDER);
        assert!(!wants_run_id(&get));
        let filled = with_run_id(&evalsha(NODE_PLACEHOLDER), RUN_ID);
        assert_eq!(
            filled.get_packed_command(),
            evalsha(RUN_ID).get_packed_command()
        );
    }

    #[test]
    fn packed_calls_are_filled_alike() {
        let packed = evalsha(NODE_PLACEHOLDER).get_packed_command();
        assert!(packed_wants_run_id(&packed));
        assert_eq!(
            packed_with_run_id(&packed, RUN_ID),
            evalsha(RUN_ID).get_packed_command()
        );
        assert!(!packed_wants_run_id(&evalsha("x").get_packed_command()));
        let mut set = redis::cmd("SET");
        set.arg("k").arg(NODE_PLACEHOLDER);
        assert!(!packed_wants_run_id(&set.get_packed_command()));
    }

    #[test]
    fn the_run_id_is_read_from_info_server() {
        let info =
            format!("# Server\r\nredis_version:7.0.15\r\nrun_id:{RUN_ID}\r\ntcp_port:6379\r\n");
        assert_eq!(run_id_of(&info).as_deref(), Some(RUN_ID));
        assert_eq!(run_id_of("# Server\r\nrun_id:xyz\r\n"), None);
    }
}
