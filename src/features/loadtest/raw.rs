//! The load test's bare RESP2 layer for a standalone, plain-TCP Redis: open a
//! connection (blocking, to AUTH and SELECT) and hand its socket to the event
//! loop; parse replies straight from the event loop's read buffer into
//! `redis::Value`.
//!
//! Why not redis-rs's sync `Connection` here: measured side by side against
//! `redis-benchmark` on a 2-core machine where client and server share the
//! cores, it cost the client 15–20% of the server's throughput. Every blocking
//! read on a socket with `SO_RCVTIMEO` arms and cancels a kernel timer, and its
//! reply reader zeroes a fresh buffer region per read. The sockets here have
//! no socket timeout: the event loop gives up when Redis stops answering.
//! TLS, Unix sockets and Cluster targets keep using redis-rs (`blocking`).

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
        connection
            .stream
            .set_read_timeout(None)
            .and_then(|()| connection.stream.set_write_timeout(None))
            .context("cannot clear the socket timeouts")?;
        Ok(connection)
    }

    /// The socket, authenticated and on the right database, for the event loop.
    pub(crate) fn into_stream(self) -> TcpStream {
        self.stream
    }

    fn read_value(&mut self) -> RedisResult<Value> {
        loop {
            if let Some((value, used)) = parse(&self.buffer[self.start..self.end])? {
                self.start += used;
                if self.start == self.end {
                    self.start = 0;
                    self.end = 0;
                }
                return Ok(value);
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

fn protocol_error(what: &'static str) -> RedisError {
    RedisError::from((ErrorKind::Parse, what))
}

/// Position of the `\r\n` ending the line that starts at `data[0]`.
fn line_end(data: &[u8]) -> Option<usize> {
    data.windows(2).position(|pair| pair == b"\r\n")
}

fn parse_int(digits: &[u8]) -> RedisResult<i64> {
    std::str::from_utf8(digits)
        .ok()
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| protocol_error("invalid integer in a Redis reply"))
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
