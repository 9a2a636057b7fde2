//! The load-test worker for a standalone plain-TCP Redis: one thread drives
//! many non-blocking connections from one `mio::Poll`.
//!
//! Why: with one blocking thread per connection every reply wakes a sleeping
//! thread, and on a machine where client and Redis share the cores those
//! wake-ups cost Redis the CPU it needs — 100 blocking threads reached 0.74–0.90×
//! redis-benchmark on the full buy script. An event loop collects many
//! replies per wake-up, as redis-benchmark does (see the verified-facts file
//! and docs/loadtest.md for the measurements). The hot path: a request's
//! bytes are copied from a template packed once (`template`), written at
//! once; replies are read until a short read and parsed in place.
//!
//! Each connection carries one request at a time (or one pipelined batch);
//! its [`Conversation`] says what to send after each reply. Closed loop: a
//! connection takes its next request as soon as it is free. Open loop: idle
//! connections take attempts when they are due (`schedule`); attempts due
//! while every connection is busy wait and go out late.
//!
//! Nothing can hang: when requests are in flight and no reply arrives for
//! the response timeout, the worker ends with an error.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::sync::Barrier;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};

use super::conversation::{Conversation, Next};
use super::measure::Tally;
use super::schedule::{Attempt, Source};
use super::{Job, Variant};
use crate::redis_client::conn::PlainTcp;
use crate::redis_client::raw::{self, RawConnection};

/// Initial read buffer per connection; grows only for a reply larger than this.
const BUFFER_BYTES: usize = 16 * 1024;
/// Longest sleep in `poll`, so the stall check runs even when nothing happens.
const TICK: Duration = Duration::from_millis(100);

/// One non-blocking connection and the request it is carrying.
struct Connection {
    stream: TcpStream,
    conversation: Conversation,
    /// The current write, `out[written..]` still to go.
    out: Vec<u8>,
    written: usize,
    /// Unparsed reply bytes are `input[start..end]`.
    input: Vec<u8>,
    start: usize,
    end: usize,
    /// Requests in flight on this connection, oldest first.
    attempts: VecDeque<Attempt>,
    /// A retry waiting for its pause to end (lock).
    wake_at: Option<Instant>,
}

impl Connection {
    /// Write as much of `out` as the socket takes now; the rest on the next writable event.
    fn flush(&mut self) -> Result<()> {
        while self.written < self.out.len() {
            match self.stream.write(&self.out[self.written..]) {
                Ok(0) => bail!("Redis closed the connection"),
                Ok(n) => self.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e).context("cannot send to Redis"),
            }
        }
        Ok(())
    }

    fn send(&mut self) -> Result<()> {
        self.written = 0;
        self.flush()
    }

    /// Read what has arrived, until a short read (the socket is drained).
    fn fill(&mut self) -> Result<()> {
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
                Ok(0) => bail!("Redis closed the connection"),
                Ok(n) => {
                    self.end += n;
                    if self.end < self.input.len() {
                        return Ok(());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e).context("cannot read from Redis"),
            }
        }
    }

    /// The next complete reply in the input buffer, if any.
    fn next_reply(&mut self) -> Result<Option<redis::Value>> {
        let Some((value, used)) = raw::parse(&self.input[self.start..self.end])? else {
            return Ok(None);
        };
        self.start += used;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        Ok(Some(value))
    }
}

/// Run one event-loop worker over `count` connections until the variant's
/// attempts are done. Always reaches the start line, even when connecting fails.
pub(crate) fn work(
    target: &PlainTcp,
    connect_timeout: Duration,
    count: usize,
    worker: usize,
    job: &Job<'_>,
    start_line: &Barrier,
) -> Result<Tally> {
    let setup = setup(target, connect_timeout, count, job.variant, job);
    start_line.wait();
    let (mut poll, mut connections) = setup?;
    let tally = Tally::new()?;
    let start = Instant::now();
    let source = Source::new(
        job.plan.settings.pace,
        job.plan.settings.requests,
        &job.issued,
        worker,
        job.workers,
        start,
    );
    drive(&mut poll, &mut connections, source, tally, job)
}

fn setup(
    target: &PlainTcp,
    connect_timeout: Duration,
    count: usize,
    variant: Variant,
    job: &Job<'_>,
) -> Result<(Poll, Vec<Connection>)> {
    let poll = Poll::new().context("cannot create an event loop (epoll)")?;
    let mut connections = Vec::with_capacity(count);
    for index in 0..count {
        // Setup (AUTH, SELECT) gives up after the response timeout too.
        let std_stream =
            RawConnection::connect(target, connect_timeout, job.stall_limit)?.into_stream();
        std_stream
            .set_nonblocking(true)
            .context("cannot make a socket non-blocking")?;
        let mut stream = TcpStream::from_std(std_stream);
        poll.registry()
            .register(
                &mut stream,
                Token(index),
                Interest::READABLE | Interest::WRITABLE,
            )
            .context("cannot register a socket with the event loop")?;
        connections.push(Connection {
            stream,
            conversation: Conversation::new(variant, job.plan),
            out: Vec::with_capacity(512 * job.batch_limit),
            written: 0,
            input: vec![0; BUFFER_BYTES],
            start: 0,
            end: 0,
            attempts: VecDeque::with_capacity(job.batch_limit),
            wake_at: None,
        });
    }
    Ok((poll, connections))
}

/// The loop itself.
fn drive(
    poll: &mut Poll,
    connections: &mut [Connection],
    mut source: Source<'_>,
    mut tally: Tally,
    job: &Job<'_>,
) -> Result<Tally> {
    let mut events = Events::with_capacity(connections.len().max(16));
    let mut idle: Vec<usize> = (0..connections.len()).rev().collect();
    let mut batch = Vec::with_capacity(job.batch_limit);
    let mut numbers = Vec::with_capacity(job.batch_limit);
    // Connections waiting for a reply, and those pausing before a retry.
    let mut awaiting = 0usize;
    let mut sleeping = 0usize;
    let mut last_reply = Instant::now();
    loop {
        let now = Instant::now();
        while let Some(&index) = idle.last() {
            batch.clear();
            source.take(now, job.batch_limit, &mut batch);
            if batch.is_empty() {
                break;
            }
            idle.pop();
            if awaiting == 0 {
                last_reply = now;
            }
            awaiting += 1;
            let connection = &mut connections[index];
            numbers.clear();
            numbers.extend(batch.iter().map(|a| a.number));
            connection.conversation.begin(&numbers, &mut connection.out);
            for attempt in &batch {
                tally.sent(attempt);
            }
            connection.attempts.extend(batch.iter().copied());
            connection.send()?;
        }
        if awaiting == 0 && sleeping == 0 && source.exhausted() {
            break;
        }

        let mut timeout = TICK;
        if !idle.is_empty()
            && let Some(due) = source.due_at()
        {
            // epoll waits whole milliseconds, rounded up: a sub-millisecond
            // wait would send up to 1 ms late and charge that to Redis in the
            // corrected latency. Wait the whole milliseconds in epoll and
            // sleep the rest precisely when no reply can arrive meanwhile.
            let wait = due.saturating_duration_since(now);
            let whole_ms = Duration::from_millis(wait.as_millis() as u64);
            if !whole_ms.is_zero() {
                timeout = timeout.min(whole_ms);
            } else if awaiting == 0 && sleeping == 0 {
                std::thread::sleep(wait);
                continue;
            } else {
                timeout = timeout.min(wait);
            }
        }
        if sleeping > 0 {
            for connection in connections.iter() {
                if let Some(wake_at) = connection.wake_at {
                    timeout = timeout.min(wake_at.saturating_duration_since(now));
                }
            }
        }
        match poll.poll(&mut events, Some(timeout)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).context("the event loop failed (epoll_wait)"),
        }
        let now = Instant::now();
        let mut answered = 0u64;
        for event in events.iter() {
            let index = event.token().0;
            let connection = &mut connections[index];
            if event.is_writable() {
                connection.flush()?;
            }
            if !(event.is_readable() || event.is_read_closed() || event.is_error()) {
                continue;
            }
            connection.fill()?;
            last_reply = now;
            while let Some(reply) = connection.next_reply()? {
                match connection.conversation.reply(
                    reply,
                    &mut connection.out,
                    &mut tally.counts,
                )? {
                    Next::Pending => {}
                    Next::Finished => {
                        let Some(attempt) = connection.attempts.pop_front() else {
                            bail!("Redis sent a reply nobody asked for");
                        };
                        tally.answered(&attempt, now)?;
                        answered += 1;
                        if connection.attempts.is_empty() {
                            awaiting -= 1;
                            idle.push(index);
                        }
                    }
                    Next::Send { .. } => connection.send()?,
                    Next::SendAfter { pause, .. } => {
                        connection.wake_at = Some(now + pause);
                        awaiting -= 1;
                        sleeping += 1;
                    }
                }
            }
        }
        if answered > 0 {
            job.done.fetch_add(answered, Ordering::Relaxed);
        }
        if sleeping > 0 {
            for connection in connections.iter_mut() {
                if connection.wake_at.is_some_and(|at| at <= now) {
                    connection.wake_at = None;
                    sleeping -= 1;
                    if awaiting == 0 {
                        last_reply = now;
                    }
                    awaiting += 1;
                    connection.send()?;
                }
            }
        }
        if awaiting > 0 && now.duration_since(last_reply) > job.stall_limit {
            bail!(
                "Redis answered nothing for {}: the load test gave up",
                humantime::format_duration(job.stall_limit)
            );
        }
    }
    tally.dropped = source.dropped();
    Ok(tally)
}

/// Split `connections` over `workers` as evenly as possible.
pub(crate) fn share(connections: usize, workers: usize, worker: usize) -> usize {
    connections / workers + usize::from(worker < connections % workers)
}
