//! RESP2, the Redis protocol, as the engine speaks it: commands packed by
//! hand and replies read in place.
//!
//! `redis::Cmd` allocates a fresh argument list and output buffer per call.
//! At tens of thousands of requests per second per core that shows up next
//! to the syscalls, so scenarios pack their commands once (`command`, a
//! [`crate::Template`]) and the engine writes the bytes to its sockets.
//! Replies are parsed straight from the read buffer into redis-rs's
//! [`Value`], so a caller's typed reply parsers read them as they read
//! redis-rs's own.
//!
//! [`Resp`]'s framing is `#[inline]`, as in `wire`: it runs on every reply.
//!
//! May import: scenario.

use anyhow::{Result, anyhow, bail};
use redis::{ErrorKind, RedisError, RedisResult, Value};

use crate::scenario::Protocol;

/// RESP2 replies, framed for the engine.
pub struct Resp;

impl Protocol for Resp {
    type Reply = Value;

    #[inline]
    fn parse(input: &[u8]) -> Result<Option<(Value, usize)>> {
        Ok(parse(input)?)
    }
}

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
pub fn array_header(buf: &mut Vec<u8>, count: usize) {
    buf.push(b'*');
    buf.extend_from_slice(Digits::new(count as u64).as_bytes());
    buf.extend_from_slice(b"\r\n");
}

/// One bulk-string argument made of `parts` written back to back.
pub fn bulk(buf: &mut Vec<u8>, parts: &[&[u8]]) {
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
pub fn command(args: &[&[u8]]) -> Vec<u8> {
    let mut buf = Vec::new();
    array_header(&mut buf, args.len());
    for arg in args {
        bulk(&mut buf, &[arg]);
    }
    buf
}

/// An integer reply (or nil); Redis errors become errors naming the command.
pub fn int_or_nil(reply: Value, what: &str) -> Result<Option<i64>> {
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

/// An `OK` reply; Redis errors become errors naming the command.
pub fn expect_ok(reply: Value, what: &str) -> Result<()> {
    match reply {
        Value::Okay => Ok(()),
        Value::ServerError(error) => Err(anyhow!("{what} failed: {error:?}")),
        other => bail!("{what} answered {other:?}"),
    }
}

fn protocol_error(what: &'static str) -> RedisError {
    RedisError::from((ErrorKind::Parse, what))
}

/// Position of the `\r\n` ending the line that starts at `data[0]`.
fn line_end(data: &[u8]) -> Option<usize> {
    let mut from = 0;
    loop {
        let cr = from + data[from..].iter().position(|&b| b == b'\r')?;
        match data.get(cr + 1) {
            Some(b'\n') => return Some(cr),
            Some(_) => from = cr + 1,
            None => return None,
        }
    }
}

/// A RESP integer (lengths, counts, `:` replies): optional `-`, 1 to 18 digits.
fn parse_int(digits: &[u8]) -> RedisResult<i64> {
    let (negative, body) = match digits.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, digits),
    };
    if body.is_empty() || body.len() > 18 || !body.iter().all(u8::is_ascii_digit) {
        return Err(protocol_error("invalid integer in a Redis reply"));
    }
    let n = body.iter().fold(0i64, |n, &d| n * 10 + i64::from(d - b'0'));
    Ok(if negative { -n } else { n })
}

/// Parse one RESP2 reply from the front of `data`: `Ok(None)` when it is not
/// complete yet, else the value and how many bytes it took.
pub fn parse(data: &[u8]) -> RedisResult<Option<(Value, usize)>> {
    let Some(end) = line_end(data) else {
        return Ok(None);
    };
    if end == 0 {
        return Err(protocol_error("empty line in a Redis reply"));
    }
    let line = &data[1..end];
    let after = end + 2;
    let value = match data[0] {
        b'+' if line == b"OK" => Value::Okay,
        b'+' => Value::SimpleString(String::from_utf8_lossy(line).into_owned()),
        // Errors are rare: let redis-rs turn the line into its typed server error.
        b'-' => redis::parse_redis_value(&data[..after])?,
        b':' => Value::Int(parse_int(line)?),
        b'$' => {
            let length = parse_int(line)?;
            if length < 0 {
                Value::Nil
            } else {
                let length = length as usize;
                if data.len() < after + length + 2 {
                    return Ok(None);
                }
                let body = data[after..after + length].to_vec();
                return Ok(Some((Value::BulkString(body), after + length + 2)));
            }
        }
        b'*' => {
            let count = parse_int(line)?;
            if count < 0 {
                Value::Nil
            } else {
                // The count comes from the wire: cap what is reserved before the items arrive.
                let mut items = Vec::with_capacity((count as usize).min(1024));
                let mut used = after;
                for _ in 0..count {
                    match parse(&data[used..])? {
                        Some((item, took)) => {
                            items.push(item);
                            used += took;
                        }
                        None => return Ok(None),
                    }
                }
                return Ok(Some((Value::Array(items), used)));
            }
        }
        _ => return Err(protocol_error("unknown RESP type in a Redis reply")),
    };
    Ok(Some((value, after)))
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

    #[test]
    fn replies_parse_whole_or_not_at_all() {
        let reply = b"*3\r\n$2\r\nok\r\n$0\r\n\r\n:-1\r\n";
        let (value, used) = parse(reply).unwrap().unwrap();
        assert_eq!(used, reply.len());
        assert_eq!(
            value,
            Value::Array(vec![
                Value::BulkString(b"ok".to_vec()),
                Value::BulkString(vec![]),
                Value::Int(-1)
            ])
        );
        for cut in 0..reply.len() {
            assert!(parse(&reply[..cut]).unwrap().is_none(), "cut at {cut}");
        }
        assert_eq!(parse(b"+OK\r\n").unwrap().unwrap().0, Value::Okay);
        assert_eq!(parse(b"$-1\r\n").unwrap().unwrap().0, Value::Nil);
        assert_eq!(parse(b"*-1\r\n").unwrap().unwrap().0, Value::Nil);
        let error = parse(b"-NOSCRIPT No matching script\r\n")
            .unwrap()
            .unwrap()
            .0;
        assert!(error.extract_error().is_err());
        assert!(parse(b"?\r\n").is_err());
        assert!(parse(b"\r\n").is_err());
    }

    #[test]
    fn integer_and_ok_replies_name_the_command_when_they_are_not() {
        assert_eq!(int_or_nil(Value::Int(-3), "DECR").unwrap(), Some(-3));
        assert_eq!(int_or_nil(Value::Nil, "GET").unwrap(), None);
        assert_eq!(
            int_or_nil(Value::BulkString(b"12".to_vec()), "GET").unwrap(),
            Some(12)
        );
        let wrong = int_or_nil(Value::BulkString(b"x".to_vec()), "GET").unwrap_err();
        assert!(wrong.to_string().contains("GET answered a non-integer"));
        expect_ok(Value::Okay, "WATCH").unwrap();
        let error = parse(b"-ERR no\r\n").unwrap().unwrap().0;
        assert!(
            expect_ok(error, "WATCH")
                .unwrap_err()
                .to_string()
                .starts_with("WATCH failed")
        );
    }
}
