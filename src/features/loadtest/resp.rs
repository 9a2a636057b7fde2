//! Hand-packed RESP commands for the load-test hot loop.
//!
//! `redis::Cmd` allocates a fresh argument list and output buffer per call.
//! At tens of thousands of requests per second per core that shows up next to
//! the syscalls, so the workers pack their commands once (`conversation`,
//! `template`) and hand the bytes to the event loop's sockets or to
//! `ConnectionLike::req_packed_command(s)`.

use anyhow::{Result, anyhow, bail};
use redis::Value;

/// Decimal digits of an integer, formatted on the stack.
pub(crate) struct Digits {
    bytes: [u8; 20],
    start: usize,
}

impl Digits {
    pub(crate) fn new(mut number: u64) -> Digits {
        let mut bytes = [0u8; 20];
        let mut start = bytes.len();
        loop {
            start -= 1;
            bytes[start] = b'0' + (number % 10) as u8;
            number /= 10;
            if number == 0 {
                break;
            }
        }
        Digits { bytes, start }
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes[self.start..]
    }
}

/// `*<count>\r\n`: the start of a command with `count` arguments.
pub(crate) fn array_header(buf: &mut Vec<u8>, count: usize) {
    buf.push(b'*');
    buf.extend_from_slice(Digits::new(count as u64).as_bytes());
    buf.extend_from_slice(b"\r\n");
}

/// One bulk-string argument made of `parts` written back to back.
pub(crate) fn bulk(buf: &mut Vec<u8>, parts: &[&[u8]]) {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    buf.push(b'$');
    buf.extend_from_slice(Digits::new(len as u64).as_bytes());
    buf.extend_from_slice(b"\r\n");
    for part in parts {
        buf.extend_from_slice(part);
    }
    buf.extend_from_slice(b"\r\n");
}

/// A whole command whose arguments are all known up front.
pub(crate) fn command(args: &[&[u8]]) -> Vec<u8> {
    let mut buf = Vec::new();
    array_header(&mut buf, args.len());
    for arg in args {
        bulk(&mut buf, &[arg]);
    }
    buf
}

/// An integer reply (or nil); Redis errors become errors naming the command.
pub(crate) fn int_or_nil(reply: Value, what: &str) -> Result<Option<i64>> {
    match reply {
        Value::Nil => Ok(None),
        Value::Int(n) => Ok(Some(n)),
        Value::BulkString(text) => std::str::from_utf8(&text)
            .ok()
            .and_then(|t| t.parse().ok())
            .map(Some)
            .ok_or_else(|| {
                anyhow!(
                    "{what} answered a non-integer {:?}",
                    String::from_utf8_lossy(&text)
                )
            }),
        Value::ServerError(error) => Err(anyhow!("{what} failed: {error:?}")),
        other => bail!("{what} answered {other:?}"),
    }
}

pub(crate) fn expect_ok(reply: Value, what: &str) -> Result<()> {
    match reply {
        Value::Okay => Ok(()),
        Value::ServerError(error) => Err(anyhow!("{what} failed: {error:?}")),
        other => bail!("{what} answered {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_like_redis_rs() {
        let ours = command(&[b"EVALSHA", b"abc", b"1", b"seckill-loadtest:{c:i}:stock"]);
        let theirs = redis::cmd("EVALSHA")
            .arg("abc")
            .arg(1)
            .arg("seckill-loadtest:{c:i}:stock")
            .get_packed_command();
        assert_eq!(ours, theirs);
        let mut joined = Vec::new();
        array_header(&mut joined, 1);
        bulk(&mut joined, &[b"u", Digits::new(1_234_567).as_bytes()]);
        assert_eq!(joined, redis::cmd("u1234567").get_packed_command());
        assert_eq!(Digits::new(0).as_bytes(), b"0");
        assert_eq!(
            Digits::new(u64::MAX).as_bytes(),
            u64::MAX.to_string().as_bytes()
        );
    }
}
