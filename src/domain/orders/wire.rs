//! Reading order streams fast: a connection for the hot readers (`consume`'s
//! reader thread, `reconcile`'s stream walk) whose stream replies are parsed
//! straight from the wire into [`RawEntry`]s.
//!
//! On a standalone Redis over plain TCP that is the bare RESP2 connection of
//! `redis_client::raw`; everything else (TLS, a Unix socket, a Cluster) is
//! the ordinary connection, whose replies go through `redis::Value` as
//! before. Measured on 1000-entry pages of real orders (`scripts/bench-consume.sh`,
//! perf): redis-rs's reply parser took about half of consume's and
//! reconcile's CPU; reading the same pages here costs a small fraction of it.
//! Both give the same entries (tested here on one reply both ways).

use anyhow::Result;
use redis::{Cmd, ConnectionLike, RedisResult, Value};

use super::entry::{RawEntry, parse_entries, parse_read_reply};
use crate::redis_client::conn::{Conn, RedisTarget};
use crate::redis_client::raw::{RawConnection, line_end, parse_int, protocol_error};

/// Streams with their entries, as XREADGROUP returns them.
pub(crate) type Streams = Vec<(String, Vec<RawEntry>)>;

/// A connection that reads stream replies into entries.
pub(crate) trait ReadsStreams: ConnectionLike + Sized {
    /// A new connection to `target`.
    fn open(target: &RedisTarget) -> Result<Self>;
    /// Whether it talks to a Redis Cluster (one call per item's slot).
    fn is_cluster(&self) -> bool;
    /// Run `cmd`, whose reply is a list of entries (XRANGE).
    fn entries(&mut self, cmd: &Cmd) -> Result<Vec<RawEntry>>;
    /// Run `cmd`, whose reply is streams with their entries (XREADGROUP).
    fn streams(&mut self, cmd: &Cmd) -> Result<Streams>;
    /// Run `cmd` (a list of entries) and `then` (any reply), in one round
    /// trip where the connection can.
    fn entries_then(&mut self, cmd: &Cmd, then: &Cmd) -> Result<(Vec<RawEntry>, Value)> {
        let entries = self.entries(cmd)?;
        Ok((entries, then.query(self)?))
    }
}

impl ReadsStreams for Conn {
    fn open(target: &RedisTarget) -> Result<Conn> {
        target.connect()
    }

    fn is_cluster(&self) -> bool {
        Conn::is_cluster(self)
    }

    fn entries(&mut self, cmd: &Cmd) -> Result<Vec<RawEntry>> {
        let reply: Value = cmd.query(self)?;
        parse_entries(&reply)
    }

    fn streams(&mut self, cmd: &Cmd) -> Result<Streams> {
        let reply: Value = cmd.query(self)?;
        parse_read_reply(&reply)
    }
}

/// The raw connection where the target allows it, else the ordinary one.
pub(crate) enum ReadConn {
    Raw(RawConnection),
    Client(Conn),
}

impl ReadsStreams for ReadConn {
    fn open(target: &RedisTarget) -> Result<ReadConn> {
        Ok(match target.plain_tcp() {
            Some(plain) => ReadConn::Raw(RawConnection::open(
                &plain,
                target.connect_timeout(),
                target.response_timeout(),
            )?),
            None => ReadConn::Client(target.connect()?),
        })
    }

    fn is_cluster(&self) -> bool {
        matches!(self, ReadConn::Client(conn) if conn.is_cluster())
    }

    fn entries(&mut self, cmd: &Cmd) -> Result<Vec<RawEntry>> {
        match self {
            ReadConn::Raw(raw) => Ok(raw.request_with(&cmd.get_packed_command(), entry_list)?),
            ReadConn::Client(conn) => conn.entries(cmd),
        }
    }

    fn streams(&mut self, cmd: &Cmd) -> Result<Streams> {
        match self {
            ReadConn::Raw(raw) => Ok(raw.request_with(&cmd.get_packed_command(), stream_list)?),
            ReadConn::Client(conn) => conn.streams(cmd),
        }
    }

    fn entries_then(&mut self, cmd: &Cmd, then: &Cmd) -> Result<(Vec<RawEntry>, Value)> {
        let ReadConn::Raw(raw) = self else {
            // A cluster connection does not pipeline: one after the other.
            let entries = self.entries(cmd)?;
            return Ok((entries, then.query(self)?));
        };
        let mut packed = cmd.get_packed_command();
        packed.extend(then.get_packed_command());
        let (entries, mut rest) = raw.pipeline_with(&packed, entry_list, 1)?;
        Ok((entries, rest.pop().unwrap_or(Value::Nil)))
    }
}

impl ReadConn {
    fn inner(&mut self) -> &mut dyn ConnectionLike {
        match self {
            ReadConn::Raw(raw) => raw,
            ReadConn::Client(conn) => conn,
        }
    }

    fn inner_ref(&self) -> &dyn ConnectionLike {
        match self {
            ReadConn::Raw(raw) => raw,
            ReadConn::Client(conn) => conn,
        }
    }
}

/// Every call goes to the connection inside (a cluster's routes by command).
impl ConnectionLike for ReadConn {
    fn req_packed_command(&mut self, cmd: &[u8]) -> RedisResult<Value> {
        self.inner().req_packed_command(cmd)
    }

    fn req_packed_commands(&mut self, cmd: &[u8], at: usize, n: usize) -> RedisResult<Vec<Value>> {
        self.inner().req_packed_commands(cmd, at, n)
    }

    fn req_command(&mut self, cmd: &Cmd) -> RedisResult<Value> {
        self.inner().req_command(cmd)
    }

    fn get_db(&self) -> i64 {
        self.inner_ref().get_db()
    }

    fn supports_pipelining(&self) -> bool {
        self.inner_ref().supports_pipelining()
    }

    fn check_connection(&mut self) -> bool {
        self.inner().check_connection()
    }

    fn is_open(&self) -> bool {
        self.inner_ref().is_open()
    }
}

/// A cursor over one whole RESP2 reply.
struct Wire<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Wire<'a> {
    /// The next line of type `kind` (its text after the type byte).
    fn line(&mut self, kind: u8) -> RedisResult<&'a [u8]> {
        let rest = &self.data[self.at..];
        let end = line_end(rest).ok_or_else(|| protocol_error("a stream reply that ends early"))?;
        if rest.first() != Some(&kind) {
            return Err(protocol_error("a stream reply of an unexpected shape"));
        }
        self.at += end + 2;
        Ok(&rest[1..end])
    }

    /// `*<n>`: the count, `None` for a nil array.
    fn array(&mut self) -> RedisResult<Option<usize>> {
        let n = parse_int(self.line(b'*')?)?;
        Ok((n >= 0).then_some(n as usize))
    }

    /// `$<n>` and its bytes.
    fn bulk(&mut self) -> RedisResult<&'a [u8]> {
        let n = parse_int(self.line(b'$')?)?;
        let n = usize::try_from(n).map_err(|_| protocol_error("a nil where a string belongs"))?;
        let body = self
            .data
            .get(self.at..self.at + n)
            .ok_or_else(|| protocol_error("a stream reply that ends early"))?;
        self.at += n + 2;
        Ok(body)
    }

    fn text(&mut self) -> RedisResult<String> {
        String::from_utf8(self.bulk()?.to_vec())
            .map_err(|_| protocol_error("a stream key or id that is not UTF-8"))
    }

    /// `[id, [field, value, ...] | nil]`.
    fn entry(&mut self) -> RedisResult<RawEntry> {
        if self.array()? != Some(2) {
            return Err(protocol_error("a stream entry that is not [id, fields]"));
        }
        let id = self.text()?;
        let Some(flat) = self.array()? else {
            return Ok(RawEntry {
                id,
                fields: Vec::new(),
                deleted: true,
            });
        };
        let mut fields = Vec::with_capacity(flat / 2);
        for _ in 0..flat / 2 {
            let name = self.bulk()?.to_vec();
            fields.push((name, self.bulk()?.to_vec()));
        }
        if flat % 2 == 1 {
            self.bulk()?;
        }
        Ok(RawEntry {
            id,
            fields,
            deleted: false,
        })
    }

    fn entries(&mut self) -> RedisResult<Vec<RawEntry>> {
        let count = self.array()?.unwrap_or(0);
        // The count comes from the wire: cap what is reserved up front.
        let mut entries = Vec::with_capacity(count.min(10_000));
        for _ in 0..count {
            entries.push(self.entry()?);
        }
        Ok(entries)
    }
}

/// An XRANGE reply: the entries and the bytes they took.
fn entry_list(data: &[u8]) -> RedisResult<Option<(Vec<RawEntry>, usize)>> {
    let mut wire = Wire { data, at: 0 };
    let entries = wire.entries()?;
    Ok(Some((entries, wire.at)))
}

/// An XREADGROUP reply (RESP2): `[[key, entries], ...]`, nil when nothing came.
fn stream_list(data: &[u8]) -> RedisResult<Option<(Streams, usize)>> {
    let mut wire = Wire { data, at: 0 };
    let count = wire.array()?.unwrap_or(0);
    let mut streams = Vec::with_capacity(count.min(10_000));
    for _ in 0..count {
        if wire.array()? != Some(2) {
            return Err(protocol_error(
                "an XREADGROUP stream that is not [key, entries]",
            ));
        }
        let key = wire.text()?;
        streams.push((key, wire.entries()?));
    }
    Ok(Some((streams, wire.at)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One XREADGROUP reply with an entry, a deleted entry and a non-UTF-8 field.
    const REPLY: &[u8] = b"*1\r\n*2\r\n$1\r\nk\r\n*2\r\n\
        *2\r\n$3\r\n1-1\r\n*4\r\n$8\r\norder_id\r\n$2\r\no1\r\n$1\r\n\xff\r\n$0\r\n\r\n\
        *2\r\n$3\r\n1-2\r\n*-1\r\n";

    #[test]
    fn the_wire_and_redis_rs_read_the_same_entries() {
        let (fast, used) = stream_list(REPLY).unwrap().unwrap();
        assert_eq!(used, REPLY.len());
        let value = redis::parse_redis_value(REPLY).unwrap();
        assert_eq!(fast, parse_read_reply(&value).unwrap());
        assert_eq!(fast[0].1[0].field("order_id"), Some(&b"o1"[..]));
        assert!(fast[0].1[1].deleted);
        let nothing = b"*-1\r\n";
        assert_eq!(stream_list(nothing).unwrap().unwrap(), (Vec::new(), 5));
        let (list, _) = entry_list(b"*0\r\n").unwrap().unwrap();
        assert!(list.is_empty());
    }

    #[test]
    fn a_reply_of_another_shape_is_an_error_not_a_guess() {
        assert!(stream_list(b":1\r\n").is_err());
        assert!(entry_list(b"*1\r\n$3\r\n1-1\r\n").is_err());
        assert!(entry_list(b"*1\r\n*2\r\n$3\r\n1-1\r\n").is_err());
    }
}
