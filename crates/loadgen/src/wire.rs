//! What the one worker loop (`worker`) sends through and reads from: a
//! [`Wire`] of numbered connections ("lanes"). Two wires:
//!
//! - [`SocketWire`]: many non-blocking sockets in one `mio::Poll`. Why: with
//!   one blocking thread per connection every reply wakes a sleeping
//!   thread, and on a machine where client and server share the cores those
//!   wake-ups cost the server the CPU it needs — 100 blocking threads
//!   reached 0.74–0.90× redis-benchmark on the full buy script. An event
//!   loop collects many replies per wake-up, as redis-benchmark does
//!   (docs/loadtest.md has the measurements). A request's bytes are written
//!   at once (the rest, rarely, when the socket is writable again); replies
//!   are read until a short read and parsed in place.
//! - [`BlockingWire`]: one [`BlockingLink`] of the caller's (TLS, Unix
//!   sockets, Cluster routing), one round trip per write.
//!
//! What runs per request is `#[inline]`: the loop is compiled in the
//! caller's crate, and a call across the crate boundary per reply cost the
//! engine about 9% more instructions per request than when it lived inside
//! `seckill` (callgrind, `loadtest --variant v3`).
//!
//! May import: engine, scenario.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::marker::PhantomData;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};

use crate::engine::{BlockingLink, MAX_PEERS};
use crate::scenario::Protocol;

/// Initial read buffer per connection; grows only for a reply larger than this.
const BUFFER_BYTES: usize = 16 * 1024;

/// Numbered connections the worker loop writes to and reads from.
pub(crate) trait Wire {
    type Reply;

    /// Write `bytes` on `lane`; `replies` is how many replies they bring.
    fn send(&mut self, lane: usize, bytes: &[u8], replies: usize) -> Result<()>;

    /// Wait at most `timeout` for replies; the lanes with news go into `ready`.
    fn poll(&mut self, timeout: Duration, ready: &mut Vec<usize>) -> Result<()>;

    /// The next whole reply that arrived on `lane`; an error once the lane
    /// failed and every reply that came before the failure was taken.
    fn next_reply(&mut self, lane: usize) -> Result<Option<Self::Reply>>;

    /// Open `lane` again after a failure or a close.
    fn reopen(&mut self, lane: usize) -> Result<()>;

    /// Send and read `lane`'s next request through `peer` (opening a
    /// connection to it when the lane has none yet).
    fn aim(&mut self, lane: usize, peer: usize) -> Result<()>;
}

/// One non-blocking socket.
struct Socket {
    stream: TcpStream,
    /// What the socket did not take yet, sent on its next writable event.
    backlog: Vec<u8>,
    /// Unparsed reply bytes are `input[start..end]`.
    input: Vec<u8>,
    start: usize,
    end: usize,
    /// Why the socket failed, told once its earlier replies are taken.
    failure: Option<anyhow::Error>,
}

impl Socket {
    fn new(stream: TcpStream) -> Socket {
        Socket {
            stream,
            backlog: Vec::new(),
            input: vec![0; BUFFER_BYTES],
            start: 0,
            end: 0,
            failure: None,
        }
    }

    /// Write `bytes` now, as far as the socket takes them; keep the rest.
    #[inline]
    fn write(&mut self, bytes: &[u8], peer: &str) -> Result<()> {
        if !self.backlog.is_empty() {
            self.backlog.extend_from_slice(bytes);
            return self.flush(peer);
        }
        let mut written = 0;
        while written < bytes.len() {
            match self.stream.write(&bytes[written..]) {
                Ok(0) => bail!("{peer} closed the connection"),
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.backlog.extend_from_slice(&bytes[written..]);
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e).with_context(|| format!("cannot send to {peer}")),
            }
        }
        Ok(())
    }

    /// Write as much of the backlog as the socket takes now.
    fn flush(&mut self, peer: &str) -> Result<()> {
        let mut written = 0;
        while written < self.backlog.len() {
            match self.stream.write(&self.backlog[written..]) {
                Ok(0) => bail!("{peer} closed the connection"),
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e).with_context(|| format!("cannot send to {peer}")),
            }
        }
        self.backlog.drain(..written);
        Ok(())
    }

    /// Read what has arrived, until a short read (the socket is drained).
    #[inline]
    fn fill(&mut self, peer: &str) -> Result<()> {
        loop {
            if self.end == self.input.len() {
                if self.start > 0 {
                    self.input.copy_within(self.start..self.end, 0);
                    self.end -= self.start;
                    self.start = 0;
                } else {
                    let bigger = self.input.len() * 2;
                    self.input.resize(bigger, 0);
                }
            }
            match self.stream.read(&mut self.input[self.end..]) {
                Ok(0) => bail!("{peer} closed the connection"),
                Ok(n) => {
                    self.end += n;
                    if self.end < self.input.len() {
                        return Ok(());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e).with_context(|| format!("cannot read from {peer}")),
            }
        }
    }
}

/// Many non-blocking sockets driven from one `mio::Poll` (a socket's token
/// is `lane * MAX_PEERS + peer`). A lane keeps one socket per peer, opened
/// before the clock starts and kept alive, so a scenario moving between
/// peers pays no connect per request (one again after a failure or close).
pub(crate) struct SocketWire<'a, P> {
    poll: Poll,
    events: Events,
    /// Each lane's sockets by peer: `None` until the lane is first aimed there.
    sockets: Vec<Vec<Option<Socket>>>,
    /// The peer each lane writes to and reads from now.
    aimed: Vec<usize>,
    connect: &'a (dyn Fn(usize) -> Result<std::net::TcpStream> + Sync),
    peer: &'a str,
    protocol: PhantomData<P>,
}

impl<'a, P: Protocol> SocketWire<'a, P> {
    /// `count` lanes, each with a socket to every one of `peers` from
    /// `connect` (so no request waits for a connect), registered with a
    /// fresh event loop; every lane aimed at peer 0.
    pub(crate) fn open(
        connect: &'a (dyn Fn(usize) -> Result<std::net::TcpStream> + Sync),
        count: usize,
        peers: usize,
        peer: &'a str,
    ) -> Result<SocketWire<'a, P>> {
        if peers > MAX_PEERS {
            bail!("at most {MAX_PEERS} peers ({peers} given)");
        }
        let poll = Poll::new().context("cannot create an event loop (epoll)")?;
        let mut wire = SocketWire {
            poll,
            events: Events::with_capacity(count.max(16)),
            sockets: Vec::with_capacity(count),
            aimed: vec![0; count],
            connect,
            peer,
            protocol: PhantomData,
        };
        for lane in 0..count {
            let mut kept = Vec::with_capacity(peers);
            for to in 0..peers {
                kept.push(Some(Socket::new(wire.connected(lane, to)?)));
            }
            wire.sockets.push(kept);
        }
        Ok(wire)
    }

    /// A new connection to `peer`, non-blocking and registered for `lane`.
    fn connected(&self, lane: usize, peer: usize) -> Result<TcpStream> {
        let stream = (self.connect)(peer)?;
        stream
            .set_nonblocking(true)
            .context("cannot make a socket non-blocking")?;
        let mut stream = TcpStream::from_std(stream);
        self.poll
            .registry()
            .register(
                &mut stream,
                Token(lane * MAX_PEERS + peer),
                Interest::READABLE | Interest::WRITABLE,
            )
            .context("cannot register a socket with the event loop")?;
        Ok(stream)
    }

    /// The socket `lane` is aimed at (opened when it was aimed).
    #[inline]
    fn current(&mut self, lane: usize) -> &mut Socket {
        let peer = self.aimed[lane];
        self.sockets[lane][peer]
            .as_mut()
            .expect("a lane is aimed only at a socket it opened")
    }
}

impl<P: Protocol> Wire for SocketWire<'_, P> {
    type Reply = P::Reply;

    #[inline]
    fn send(&mut self, lane: usize, bytes: &[u8], _replies: usize) -> Result<()> {
        let peer = self.peer;
        self.current(lane).write(bytes, peer)
    }

    fn poll(&mut self, timeout: Duration, ready: &mut Vec<usize>) -> Result<()> {
        ready.clear();
        match self.poll.poll(&mut self.events, Some(timeout)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(()),
            Err(e) => return Err(e).context("the event loop failed (epoll_wait)"),
        }
        for event in self.events.iter() {
            let (lane, peer) = (event.token().0 / MAX_PEERS, event.token().0 % MAX_PEERS);
            let Some(socket) = self.sockets[lane].get_mut(peer).and_then(Option::as_mut) else {
                continue;
            };
            if event.is_writable()
                && !socket.backlog.is_empty()
                && let Err(error) = socket.flush(self.peer)
            {
                socket.failure.get_or_insert(error);
            }
            // A socket the lane is not aimed at carries no request: what it
            // says (a close) is kept for when the lane comes back to it.
            let aimed = peer == self.aimed[lane];
            if event.is_readable() || event.is_read_closed() || event.is_error() {
                if let Err(error) = socket.fill(self.peer) {
                    socket.failure.get_or_insert(error);
                }
                if aimed {
                    ready.push(lane);
                }
            } else if socket.failure.is_some() && aimed {
                ready.push(lane);
            }
        }
        Ok(())
    }

    #[inline]
    fn next_reply(&mut self, lane: usize) -> Result<Option<P::Reply>> {
        let socket = self.current(lane);
        match P::parse(&socket.input[socket.start..socket.end])? {
            Some((reply, used)) => {
                socket.start += used;
                if socket.start == socket.end {
                    socket.start = 0;
                    socket.end = 0;
                }
                Ok(Some(reply))
            }
            None => match socket.failure.take() {
                Some(error) => Err(error),
                None => Ok(None),
            },
        }
    }

    fn reopen(&mut self, lane: usize) -> Result<()> {
        let peer = self.aimed[lane];
        self.replace(lane, peer)
    }

    fn aim(&mut self, lane: usize, peer: usize) -> Result<()> {
        if peer >= MAX_PEERS {
            bail!("at most {MAX_PEERS} peers (asked for peer {peer})");
        }
        if peer == self.aimed[lane] {
            return Ok(());
        }
        // A kept socket that failed while idle (the server closed it) is
        // opened again rather than handed a request it would lose.
        let usable = self.sockets[lane]
            .get(peer)
            .and_then(Option::as_ref)
            .is_some_and(|s| s.failure.is_none() && s.start == s.end);
        if !usable {
            self.replace(lane, peer)?;
        }
        self.aimed[lane] = peer;
        Ok(())
    }
}

impl<P: Protocol> SocketWire<'_, P> {
    /// A fresh socket for `lane` to `peer`, the old one (if any) closed.
    fn replace(&mut self, lane: usize, peer: usize) -> Result<()> {
        let kept = &mut self.sockets[lane];
        if kept.len() <= peer {
            kept.resize_with(peer + 1, || None);
        }
        // The old socket leaves the event loop before its token is reused.
        if let Some(mut old) = kept[peer].take() {
            let _ = self.poll.registry().deregister(&mut old.stream);
        }
        let stream = self.connected(lane, peer)?;
        self.sockets[lane][peer] = Some(Socket::new(stream));
        Ok(())
    }
}

/// One blocking link: a write is sent, and its replies read, on the next poll.
pub(crate) struct BlockingWire<R> {
    link: Box<dyn BlockingLink<R>>,
    pending: Vec<u8>,
    replies: usize,
    inbox: VecDeque<R>,
}

impl<R> BlockingWire<R> {
    pub(crate) fn new(link: Box<dyn BlockingLink<R>>) -> BlockingWire<R> {
        BlockingWire {
            link,
            pending: Vec::new(),
            replies: 0,
            inbox: VecDeque::new(),
        }
    }
}

impl<R> Wire for BlockingWire<R> {
    type Reply = R;

    fn send(&mut self, _lane: usize, bytes: &[u8], replies: usize) -> Result<()> {
        self.pending.extend_from_slice(bytes);
        self.replies += replies;
        Ok(())
    }

    fn poll(&mut self, timeout: Duration, ready: &mut Vec<usize>) -> Result<()> {
        ready.clear();
        if self.pending.is_empty() {
            // Nothing to send: wait for the next attempt or the end of a pause.
            std::thread::sleep(timeout);
            return Ok(());
        }
        self.link
            .round_trip(&self.pending, self.replies, &mut self.inbox)?;
        self.pending.clear();
        self.replies = 0;
        ready.push(0);
        Ok(())
    }

    fn next_reply(&mut self, _lane: usize) -> Result<Option<R>> {
        Ok(self.inbox.pop_front())
    }

    fn reopen(&mut self, _lane: usize) -> Result<()> {
        Err(anyhow!("a blocking link cannot be opened again"))
    }

    fn aim(&mut self, _lane: usize, peer: usize) -> Result<()> {
        if peer != 0 {
            bail!("a blocking link reaches one peer (asked for peer {peer})");
        }
        Ok(())
    }
}
