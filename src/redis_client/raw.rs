//! A bare RESP2 layer for a standalone, plain-TCP Redis: open a connection
//! (blocking, to AUTH and SELECT), then either hand its socket to the load
//! test's event loop or keep it as a blocking connection whose replies are
//! read whole and parsed by a parser of the caller's (the order streams'
//! pages go straight into entries, `domain::orders::wire`).
//!
//! Why not redis-rs's sync `Connection` on these paths: measured side by side
//! against `redis-benchmark` on a 2-core machine where client and server
//! share the cores, it cost the load-test client 15–20% of the server's
//! throughput (every blocking read on a socket with `SO_RCVTIMEO` arms and
//! cancels a kernel timer, and its reply reader zeroes a fresh buffer region
//! per read); and its reply parser took half of `consume`'s and `reconcile`'s
//! CPU on 1000-entry stream pages (about 5 µs per entry; [`parse`] takes
//! about 1.4 and the stream parser well under one). The load test's sockets
//! have no socket timeout (its event loop gives up when Redis stops
//! answering); the blocking ones keep the response timeout. TLS, Unix
//! sockets and Cluster targets keep using redis-rs.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use redis::{ConnectionLike, ErrorKind, RedisError, RedisResult, Value};

use crate::redis_client::conn::PlainTcp;

/// Initial read buffer; grows only for a reply larger than this.
const BUFFER_BYTES: usize = 16 * 1024;

/// One blocking connection speaking RESP2.
pub(crate) struct RawConnection {
    stream: TcpStream,
    buffer: Vec<u8>,
    /// Unparsed bytes are `buffer[start..end]`.
    start: usize,
    end: usize,
    db: i64,
    open: bool,
}

impl RawConnection {
    /// Connect, authenticate and select the database of `target`. The setup
    /// runs before the load-test watchdog starts, so it has socket timeouts of
    /// its own (`response_timeout`), cleared once the connection is ready.
    pub(crate) fn connect(
        target: &PlainTcp,
        connect_timeout: Duration,
        response_timeout: Duration,
    ) -> Result<RawConnection> {
        let connection = RawConnection::open(target, connect_timeout, response_timeout)?;
        connection
            .stream
            .set_read_timeout(None)
            .and_then(|()| connection.stream.set_write_timeout(None))
            .context("cannot clear the socket timeouts")?;
        Ok(connection)
    }

    /// [`RawConnection::connect`] for blocking use: the socket keeps
    /// `response_timeout` on every read and write, so a silent server is an
    /// error, never a hang.
    pub(crate) fn open(
        target: &PlainTcp,
        connect_timeout: Duration,
        response_timeout: Duration,
    ) -> Result<RawConnection> {
        let address = (target.host.as_str(), target.port)
            .to_socket_addrs()
            .with_context(|| format!("cannot resolve {}", target.host))?
            .next()
            .ok_or_else(|| anyhow!("{} resolves to no address", target.host))?;
        let stream = TcpStream::connect_timeout(&address, connect_timeout).with_context(|| {
            format!("cannot connect to Redis at {}:{}", target.host, target.port)
        })?;
        stream.set_nodelay(true).context("cannot set TCP_NODELAY")?;
        stream
            .set_read_timeout(Some(response_timeout))
            .and_then(|()| stream.set_write_timeout(Some(response_timeout)))
            .context("cannot set the socket timeouts")?;
        let mut connection = RawConnection {
            stream,
            buffer: vec![0; BUFFER_BYTES],
            start: 0,
            end: 0,
            db: target.db,
            open: true,
        };
        if let Some(password) = &target.password {
            let mut auth = redis::cmd("AUTH");
            if let Some(user) = &target.username {
                auth.arg(user);
            }
            let () = auth
                .arg(password)
                .query(&mut connection)
                .with_context(|| format!("AUTH at {}:{} failed", target.host, target.port))?;
        }
        if target.db != 0 {
            let () = redis::cmd("SELECT")
                .arg(target.db)
                .query(&mut connection)
                .with_context(|| {
                    format!(
                        "SELECT {} at {}:{} failed",
                        target.db, target.host, target.port
                    )
                })?;
        }
        Ok(connection)
    }

    /// The socket, authenticated and on the right database, for the event loop.
    pub(crate) fn into_stream(self) -> TcpStream {
        self.stream
    }

    /// Send `packed` (one command) and parse its reply with `parse_reply`,
    /// which sees the whole reply at once and answers what it made of it and
    /// the bytes it took. An error reply is returned as the error, whatever
    /// `parse_reply` would have made of it.
    pub(crate) fn request_with<T>(
        &mut self,
        packed: &[u8],
        parse_reply: impl FnOnce(&[u8]) -> RedisResult<Option<(T, usize)>>,
    ) -> RedisResult<T> {
        self.send(packed)?;
        self.read_with(parse_reply)
    }

    /// [`RawConnection::request_with`] for `packed` holding 1 + `then`
    /// commands sent at once (one round trip): the first reply parsed with
    /// `parse_first`, the others as values.
    pub(crate) fn pipeline_with<T>(
        &mut self,
        packed: &[u8],
        parse_first: impl FnOnce(&[u8]) -> RedisResult<Option<(T, usize)>>,
        then: usize,
    ) -> RedisResult<(T, Vec<Value>)> {
        self.send(packed)?;
        let first = self.read_with(parse_first)?;
        let rest = (0..then)
            .map(|_| self.read_value()?.extract_error())
            .collect::<RedisResult<Vec<Value>>>()?;
        Ok((first, rest))
    }

    fn read_with<T>(
        &mut self,
        parse_reply: impl FnOnce(&[u8]) -> RedisResult<Option<(T, usize)>>,
    ) -> RedisResult<T> {
        let length = self.fill_reply()?;
        let reply = &self.buffer[self.start..self.start + length];
        let parsed = if reply.first() == Some(&b'-') {
            Err(redis::parse_redis_value(reply)?
                .extract_error()
                .err()
                .unwrap_or_else(|| protocol_error("an error reply that is no error")))
        } else {
            match parse_reply(reply) {
                Ok(Some((value, used))) if used == length => Ok(value),
                Ok(_) => Err(protocol_error("a Redis reply of an unexpected shape")),
                Err(e) => Err(e),
            }
        };
        self.consume(length);
        if parsed.is_err() {
            // What follows an unexpected reply cannot be trusted.
            self.open = false;
        }
        parsed
    }

    fn read_value(&mut self) -> RedisResult<Value> {
        let length = self.fill_reply()?;
        let value = parse(&self.buffer[self.start..self.start + length])?
            .map(|(value, _)| value)
            .ok_or_else(|| protocol_error("a Redis reply that ends early"));
        self.consume(length);
        value
    }

    fn consume(&mut self, length: usize) {
        self.start += length;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Read until the buffer holds one whole reply; returns its length. The
    /// reply is measured without being built, so a large one arriving in
    /// many reads is parsed once, not once per read.
    fn fill_reply(&mut self) -> RedisResult<usize> {
        let mut scan = Scan::start();
        loop {
            if let Some(length) = reply_len_from(&self.buffer[self.start..self.end], &mut scan)? {
                return Ok(length);
            }
            if self.end == self.buffer.len() {
                if self.start > 0 {
                    self.buffer.copy_within(self.start..self.end, 0);
                    self.end -= self.start;
                    self.start = 0;
                } else {
                    let bigger = self.buffer.len() * 2;
                    self.buffer.resize(bigger, 0);
                }
            }
            let read = self.stream.read(&mut self.buffer[self.end..]);
            match read {
                Ok(0) => {
                    self.open = false;
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "Redis closed the connection",
                    )
                    .into());
                }
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.open = false;
                    return Err(e.into());
                }
            }
        }
    }

    fn send(&mut self, packed: &[u8]) -> RedisResult<()> {
        self.stream.write_all(packed).map_err(|e| {
            self.open = false;
            e.into()
        })
    }
}

impl ConnectionLike for RawConnection {
    fn req_packed_command(&mut self, cmd: &[u8]) -> RedisResult<Value> {
        self.send(cmd)?;
        self.read_value()?.extract_error()
    }

    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        self.send(cmd)?;
        let mut replies = Vec::with_capacity(count);
        for index in 0..offset + count {
            let value = self.read_value()?;
            if index >= offset {
                replies.push(value);
            }
        }
        Ok(replies)
    }

    fn get_db(&self) -> i64 {
        self.db
    }

    fn check_connection(&mut self) -> bool {
        redis::cmd("PING").query::<String>(self).is_ok()
    }

    fn is_open(&self) -> bool {
        self.open
    }
}

pub(crate) fn protocol_error(what: &'static str) -> RedisError {
    RedisError::from((ErrorKind::Parse, what))
}

/// Position of the `\r\n` ending the line that starts at `data[0]`.
pub(crate) fn line_end(data: &[u8]) -> Option<usize> {
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
pub(crate) fn parse_int(digits: &[u8]) -> RedisResult<i64> {
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

/// How far [`reply_len_from`] has measured a reply that is still arriving.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scan {
    /// Bytes measured (whole elements only).
    at: usize,
    /// Elements still owed after those.
    owed: u64,
}

impl Scan {
    /// At the start of a reply.
    pub(crate) fn start() -> Scan {
        Scan { at: 0, owed: 1 }
    }
}

/// The length of the one RESP2 reply at the front of `data`, `Ok(None)` while
/// it is incomplete, going on from `scan`, which it leaves at the first
/// element not complete yet: a large reply arriving in many reads is measured
/// once. Nothing is built (an iterative count of the items still owed, so a
/// deep reply cannot exhaust the stack).
pub(crate) fn reply_len_from(data: &[u8], scan: &mut Scan) -> RedisResult<Option<usize>> {
    while scan.owed > 0 {
        let at = scan.at;
        let Some(end) = line_end(&data[at..]) else {
            return Ok(None);
        };
        if end == 0 {
            return Err(protocol_error("empty line in a Redis reply"));
        }
        let line = &data[at + 1..at + end];
        let mut next = at + end + 2;
        let mut owed = scan.owed - 1;
        match data[at] {
            b'+' | b'-' | b':' => {}
            b'$' => {
                let length = parse_int(line)?;
                if length >= 0 {
                    next += length as usize + 2;
                    if data.len() < next {
                        return Ok(None);
                    }
                }
            }
            b'*' => owed += parse_int(line)?.max(0) as u64,
            _ => return Err(protocol_error("unknown RESP type in a Redis reply")),
        }
        *scan = Scan { at: next, owed };
    }
    Ok(Some(scan.at))
}

/// Parse one RESP2 reply from the front of `data`: `Ok(None)` when it is not
/// complete yet, else the value and how many bytes it took.
pub(crate) fn parse(data: &[u8]) -> RedisResult<Option<(Value, usize)>> {
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

    /// Setup (AUTH, SELECT) runs before the load test's watchdog: against a
    /// server that accepts and never answers it must give up by itself.
    #[test]
    fn setup_gives_up_on_a_server_that_never_answers() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let held =
            std::thread::spawn(move || listener.incoming().take(2).flatten().collect::<Vec<_>>());
        for (password, db) in [(Some("pw".to_string()), 0), (None, 3)] {
            let target = PlainTcp {
                host: "127.0.0.1".into(),
                port,
                username: None,
                password,
                db,
            };
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let result = RawConnection::connect(
                    &target,
                    Duration::from_millis(300),
                    Duration::from_millis(300),
                );
                let _ = tx.send(result.err().map(|e| format!("{e:#}")));
            });
            let error = rx
                .recv_timeout(Duration::from_secs(20))
                .expect("connection setup hung on a silent server")
                .expect("setup against a silent server must fail");
            assert!(error.contains(&format!("127.0.0.1:{port}")), "{error}");
        }
        drop(held);
    }

    #[test]
    fn a_reply_is_measured_once_however_it_arrives() {
        let reply = b"*2\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nk\r\n$0\r\n\r\n*-1\r\n+OK\r\n";
        let whole = reply.len() - 5;
        assert_eq!(
            reply_len_from(reply, &mut Scan::start()).unwrap(),
            Some(whole),
            "the first reply only"
        );
        for cut in 0..whole {
            assert_eq!(
                reply_len_from(&reply[..cut], &mut Scan::start()).unwrap(),
                None
            );
            // Measured in two reads: the first leaves the scan where it stopped.
            let mut scan = Scan::start();
            assert_eq!(reply_len_from(&reply[..cut], &mut scan).unwrap(), None);
            assert_eq!(
                reply_len_from(reply, &mut scan).unwrap(),
                Some(whole),
                "cut {cut}"
            );
        }
        assert!(reply_len_from(b"?x\r\n", &mut Scan::start()).is_err());
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
}
