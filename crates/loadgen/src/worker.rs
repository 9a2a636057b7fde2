//! The one worker loop: every scenario's requests go out and come back
//! through it, over a wire of many non-blocking sockets or of one blocking
//! link (`wire`).
//!
//! Each connection ("lane") carries one request at a time (or one
//! pipelined batch); its [`Conversation`] says what to send after each
//! reply. Closed loop: a lane takes its next request as soon as it is free.
//! Open loop: idle lanes take attempts when they are due (`pace`); attempts
//! due while every lane is busy wait and go out late.
//!
//! A conversation may move between peers ([`Conversation::peer`], asked
//! before every send): the wire sends and reads that request through the
//! lane's connection to that peer.
//!
//! Nothing can hang: when requests are in flight and no reply arrives for
//! the plan's stall limit, the worker ends with an error.
//!
//! May import: engine, measure, pace, scenario, wire.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use crate::engine::{Plan, Shared, StartLine, Transport};
use crate::measure::Tally;
use crate::pace::{Attempt, Source};
use crate::scenario::{Conversation, Next, Protocol, Reply, Scenario};
use crate::wire::{BlockingWire, SocketWire, Wire};

/// Longest sleep in `poll`, so the stall check runs even when nothing happens.
const TICK: Duration = Duration::from_millis(100);

/// What one worker thread runs.
pub(crate) struct Job<'a, S> {
    pub(crate) scenario: &'a S,
    pub(crate) plan: &'a Plan,
    pub(crate) shared: &'a Shared,
    pub(crate) worker: usize,
    pub(crate) workers: usize,
}

/// Connect this worker's share of the connections, wait at the start line
/// (always reached, even when connecting fails), then run the loop until
/// the plan's attempts are done.
pub(crate) fn work<S: Scenario>(
    job: &Job<'_, S>,
    transport: Transport<'_, Reply<S>>,
    start_line: &StartLine,
) -> Result<Tally<S::Counts>> {
    match transport {
        Transport::Sockets(connect) => {
            let lanes = share(job.plan.connections, job.workers, job.worker);
            let peers = job.scenario.peers().max(1);
            let wire = SocketWire::<S::Protocol>::open(connect, lanes, peers, &job.plan.peer);
            start_line.arrive();
            let mut wire = wire?;
            if job.shared.abort.load(Ordering::SeqCst) {
                return Ok(Tally::new());
            }
            drive(job, &mut wire, lanes)
        }
        Transport::Blocking(connect) => {
            let link = connect();
            start_line.arrive();
            let mut wire = BlockingWire::new(link?);
            if job.shared.abort.load(Ordering::SeqCst) {
                return Ok(Tally::new());
            }
            drive(job, &mut wire, 1)
        }
    }
}

/// Split `connections` over `workers` as evenly as possible.
fn share(connections: usize, workers: usize, worker: usize) -> usize {
    connections / workers + usize::from(worker < connections % workers)
}

/// One connection's request state.
struct Lane<C> {
    conversation: C,
    /// The current write (a pause's follow-up waits here).
    out: Vec<u8>,
    /// Requests in flight on this lane, oldest first.
    attempts: VecDeque<Attempt>,
    /// A retry waiting for its pause to end, and the replies it brings.
    wake_at: Option<Instant>,
    wake_replies: usize,
    /// Open the connection again before its next use (it failed or was closed).
    broken: bool,
}

/// Which lanes are free, waiting or pausing, and what finished meanwhile.
struct Traffic {
    idle: Vec<usize>,
    /// Lanes waiting for a reply.
    awaiting: usize,
    /// Lanes pausing before a retry.
    sleeping: usize,
    /// Attempts finished (answered or lost) since the progress was last told.
    finished: u64,
}

impl Traffic {
    /// Lane `index` failed with `error`: the end of the run, unless the
    /// scenario survives failures — then the attempts it carried are lost
    /// (counted), and it is opened again before its next use.
    fn lose<C, T>(
        &mut self,
        index: usize,
        lane: &mut Lane<C>,
        error: anyhow::Error,
        survives: bool,
        tally: &mut Tally<T>,
    ) -> Result<()> {
        if !survives {
            return Err(error);
        }
        if lane.wake_at.take().is_some() {
            self.sleeping -= 1;
            self.idle.push(index);
        } else if !lane.attempts.is_empty() {
            self.awaiting -= 1;
            self.idle.push(index);
        }
        let lost = lane.attempts.len() as u64;
        lane.attempts.clear();
        tally.failed += lost;
        self.finished += lost;
        lane.broken = true;
        Ok(())
    }
}

/// The loop itself, over `lanes` connections of `wire`.
fn drive<S, W>(job: &Job<'_, S>, wire: &mut W, lanes: usize) -> Result<Tally<S::Counts>>
where
    S: Scenario,
    W: Wire<Reply = Reply<S>>,
{
    let (plan, shared) = (job.plan, job.shared);
    let batch_limit = job.scenario.batch_limit().max(1);
    let survives = job.scenario.survives_failures();
    let mut lanes: Vec<Lane<S::Conversation>> = (0..lanes)
        .map(|_| Lane {
            conversation: job.scenario.conversation(),
            out: Vec::with_capacity(512 * batch_limit),
            attempts: VecDeque::with_capacity(batch_limit),
            wake_at: None,
            wake_replies: 0,
            broken: false,
        })
        .collect();
    let mut tally: Tally<S::Counts> = Tally::new();
    let mut source = Source::new(
        plan.pace,
        plan.requests,
        &shared.issued,
        job.worker,
        job.workers,
        Instant::now(),
    );
    let mut traffic = Traffic {
        idle: (0..lanes.len()).rev().collect(),
        awaiting: 0,
        sleeping: 0,
        finished: 0,
    };
    let mut ready = Vec::with_capacity(lanes.len().max(16));
    let mut batch = Vec::with_capacity(batch_limit);
    let mut numbers = Vec::with_capacity(batch_limit);
    let mut last_reply = Instant::now();
    loop {
        let now = Instant::now();
        while let Some(&index) = traffic.idle.last() {
            batch.clear();
            source.take(now, batch_limit, &mut batch);
            if batch.is_empty() {
                break;
            }
            traffic.idle.pop();
            for attempt in &batch {
                tally.sent(attempt);
            }
            let lane = &mut lanes[index];
            if lane.broken {
                if let Err(error) = wire.reopen(index) {
                    if !survives {
                        return Err(error);
                    }
                    // No connection, no request: these attempts are lost too.
                    tally.failed += batch.len() as u64;
                    traffic.finished += batch.len() as u64;
                    traffic.idle.push(index);
                    continue;
                }
                lane.broken = false;
            }
            if traffic.awaiting == 0 {
                last_reply = now;
            }
            traffic.awaiting += 1;
            numbers.clear();
            numbers.extend(batch.iter().map(|a| a.number));
            lane.out.clear();
            let replies = lane.conversation.begin(&numbers, &mut lane.out);
            lane.attempts.extend(batch.iter().copied());
            let sent = wire
                .aim(index, lane.conversation.peer())
                .and_then(|()| wire.send(index, &lane.out, replies));
            if let Err(error) = sent {
                traffic.lose(index, lane, error, survives, &mut tally)?;
            }
        }
        if traffic.awaiting == 0 && traffic.sleeping == 0 && source.exhausted() {
            break;
        }

        let mut timeout = TICK;
        if !traffic.idle.is_empty()
            && let Some(due) = source.due_at()
        {
            // epoll waits whole milliseconds, rounded up: a sub-millisecond
            // wait would send up to 1 ms late and charge that to the server
            // in the corrected latency. Wait the whole milliseconds in epoll
            // and sleep the rest precisely when no reply can arrive meanwhile.
            let wait = due.saturating_duration_since(now);
            let whole_ms = Duration::from_millis(wait.as_millis() as u64);
            if !whole_ms.is_zero() {
                timeout = timeout.min(whole_ms);
            } else if traffic.awaiting == 0 && traffic.sleeping == 0 {
                std::thread::sleep(wait);
                continue;
            } else {
                timeout = timeout.min(wait);
            }
        }
        if traffic.sleeping > 0 {
            for lane in &lanes {
                if let Some(wake_at) = lane.wake_at {
                    timeout = timeout.min(wake_at.saturating_duration_since(now));
                }
            }
        }
        wire.poll(timeout, &mut ready)?;
        let now = Instant::now();
        for &index in &ready {
            last_reply = now;
            loop {
                let reply = match wire.next_reply(index) {
                    Ok(Some(reply)) => reply,
                    Ok(None) => break,
                    Err(error) => {
                        traffic.lose(index, &mut lanes[index], error, survives, &mut tally)?;
                        break;
                    }
                };
                let closes = S::Protocol::closes(&reply);
                let lane = &mut lanes[index];
                lane.out.clear();
                match lane
                    .conversation
                    .reply(reply, &mut lane.out, &mut tally.counts)?
                {
                    Next::Pending => {}
                    Next::Finished => {
                        let Some(attempt) = lane.attempts.pop_front() else {
                            bail!("{} sent a reply nobody asked for", plan.peer);
                        };
                        tally.answered(&attempt, now);
                        traffic.finished += 1;
                        if lane.attempts.is_empty() {
                            traffic.awaiting -= 1;
                            traffic.idle.push(index);
                        }
                    }
                    Next::Send { replies } => {
                        let sent = wire
                            .aim(index, lane.conversation.peer())
                            .and_then(|()| wire.send(index, &lane.out, replies));
                        if let Err(error) = sent {
                            traffic.lose(index, lane, error, survives, &mut tally)?;
                            break;
                        }
                    }
                    Next::SendAfter { pause, replies } => {
                        lane.wake_at = Some(now + pause);
                        lane.wake_replies = replies;
                        traffic.awaiting -= 1;
                        traffic.sleeping += 1;
                    }
                }
                if closes {
                    lane.broken = true;
                }
            }
        }
        if traffic.sleeping > 0 {
            for (index, lane) in lanes.iter_mut().enumerate() {
                if lane.wake_at.is_some_and(|at| at <= now) {
                    lane.wake_at = None;
                    traffic.sleeping -= 1;
                    if traffic.awaiting == 0 {
                        last_reply = now;
                    }
                    traffic.awaiting += 1;
                    let sent = wire
                        .aim(index, lane.conversation.peer())
                        .and_then(|()| wire.send(index, &lane.out, lane.wake_replies));
                    if let Err(error) = sent {
                        traffic.lose(index, lane, error, survives, &mut tally)?;
                    }
                }
            }
        }
        if traffic.finished > 0 {
            shared
                .finished
                .fetch_add(traffic.finished, Ordering::Relaxed);
            traffic.finished = 0;
        }
        if traffic.awaiting > 0 && now.duration_since(last_reply) > plan.stall_limit {
            bail!(
                "{} answered nothing for {}: the load test gave up",
                plan.peer,
                humantime::format_duration(plan.stall_limit)
            );
        }
    }
    if traffic.finished > 0 {
        shared
            .finished
            .fetch_add(traffic.finished, Ordering::Relaxed);
    }
    tally.dropped = source.dropped();
    Ok(tally)
}

#[cfg(test)]
mod tests {
    use super::share;

    #[test]
    fn connections_are_split_as_evenly_as_possible() {
        let shares: Vec<usize> = (0..3).map(|w| share(7, 3, w)).collect();
        assert_eq!(shares, [3, 2, 2]);
        assert_eq!((0..4).map(|w| share(4, 4, w)).sum::<usize>(), 4);
    }
}
