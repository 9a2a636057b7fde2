//! Run a scenario: spread its connections over worker threads, connect them
//! all before the clock starts (the start line), let every worker run the
//! one worker loop (`worker`), report progress, merge what they measured.
//!
//! How the engine reaches the server is the caller's [`Transport`]: plain
//! TCP sockets, connected and ready (authenticated, database selected),
//! which each worker's event loop drives by the hundred; or blocking links
//! the caller's own client drives (TLS, Unix sockets, Cluster routing), one
//! per worker thread. Either way the same loop paces, sends, reads and
//! times.
//!
//! May import: histogram, measure, pace, scenario, worker.

use std::collections::VecDeque;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};

use crate::measure::Tally;
use crate::pace::Pace;
use crate::scenario::{Reply, Scenario};
use crate::worker;

/// Peers a [`Transport::Sockets`] run may spread over (a conversation's
/// [`crate::Conversation::peer`] is below it).
pub const MAX_PEERS: usize = 64;

/// How often the progress is reported.
const PROGRESS_EVERY: Duration = Duration::from_millis(50);

/// The knobs of a run, already validated.
#[derive(Debug, Clone)]
pub struct Plan {
    pub pace: Pace,
    /// Attempts (open loop: rate × duration).
    pub requests: u64,
    /// Connections, over all workers.
    pub connections: usize,
    /// Worker threads for [`Transport::Sockets`], each an event loop over
    /// its share of the connections; blocking links get one thread each.
    pub threads: usize,
    /// No reply for this long while requests are in flight ends the run.
    pub stall_limit: Duration,
    /// Who answers, as error messages name it ("Redis", "the target").
    pub peer: String,
}

/// A connection the caller's client drives, one request at a time.
pub trait BlockingLink<R> {
    /// Send `packed` (one or more commands) and append the `replies` replies it brings to `into`.
    fn round_trip(&mut self, packed: &[u8], replies: usize, into: &mut VecDeque<R>) -> Result<()>;
}

/// How the engine reaches the server (connecting is the caller's business).
pub enum Transport<'a, R> {
    /// Plain TCP sockets, connected and ready, to the peer numbered by the
    /// argument ([`crate::Conversation::peer`]; 0 when there is one): each
    /// worker thread's event loop drives its share of them, non-blocking.
    Sockets(&'a (dyn Fn(usize) -> Result<TcpStream> + Sync)),
    /// Links the caller's own client drives (TLS, Unix sockets, Cluster
    /// routing): one worker thread per link, blocking; one peer only.
    Blocking(&'a (dyn Fn() -> Result<Box<dyn BlockingLink<R>>> + Sync)),
}

impl<R> Clone for Transport<'_, R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R> Copy for Transport<'_, R> {}

/// What the caller sees of a run while it goes.
pub trait Observer {
    /// Every worker is connected and the clock has started.
    fn started(&mut self) {}
    /// Attempts finished so far (answered or lost), every 50 ms and at the end.
    fn progress(&mut self, _finished: u64) {}
}

/// An observer that looks away.
impl Observer for () {}

/// What a run measured.
#[derive(Debug)]
pub struct Measured<C> {
    /// Every worker's tally, merged.
    pub tally: Tally<C>,
    /// When the clock started (every worker connected).
    pub started: Instant,
    /// From the start to the last answer (not to when the workers were seen done).
    pub elapsed: Duration,
    /// Worker threads that ran.
    pub workers: usize,
}

/// Shared by the workers of one run.
#[derive(Default)]
pub(crate) struct Shared {
    /// Closed loop: request numbers handed out so far.
    pub(crate) issued: AtomicU64,
    /// Attempts finished so far (progress).
    pub(crate) finished: AtomicU64,
    /// Set when not every worker could be started: the others stop at the start line.
    pub(crate) abort: AtomicBool,
}

/// Every worker connects, then waits here until all have, so the clock
/// starts with every connection ready (and a worker that failed to connect
/// arrives all the same).
#[derive(Default)]
pub(crate) struct StartLine {
    /// Workers arrived, and whether they may go.
    state: Mutex<(usize, bool)>,
    signal: Condvar,
}

impl StartLine {
    /// A worker arrives and waits for the start.
    pub(crate) fn arrive(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.0 += 1;
        self.signal.notify_all();
        while !state.1 {
            state = self.signal.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Wait until `workers` have arrived, then let them go.
    fn release(&self, workers: usize) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while state.0 < workers {
            state = self.signal.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        state.1 = true;
        self.signal.notify_all();
    }
}

/// Run `scenario` as `plan` says over `transport`; `observer` hears of the
/// start and the progress. A worker's error (a connection that failed, a
/// reply the scenario refused, a stall) is the run's.
pub fn run<S: Scenario>(
    scenario: &S,
    plan: &Plan,
    transport: Transport<'_, Reply<S>>,
    observer: &mut dyn Observer,
) -> Result<Measured<S::Counts>> {
    let connections = plan.connections.max(1);
    let workers = match transport {
        Transport::Sockets(_) => plan.threads.clamp(1, connections),
        Transport::Blocking(_) => connections,
    };
    let shared = Shared::default();
    let start_line = StartLine::default();
    let (outcomes, started) = std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(workers);
        let mut refused = None;
        for index in 0..workers {
            let job = worker::Job {
                scenario,
                plan,
                shared: &shared,
                worker: index,
                workers,
            };
            let start_line = &start_line;
            let spawned = std::thread::Builder::new()
                .name(format!("loadtest-{index}"))
                .spawn_scoped(scope, move || worker::work(&job, transport, start_line));
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(error) => {
                    refused = Some(error);
                    shared.abort.store(true, Ordering::SeqCst);
                    break;
                }
            }
        }
        start_line.release(handles.len());
        let started = Instant::now();
        if refused.is_none() {
            observer.started();
        }
        while !handles.iter().all(|h| h.is_finished()) {
            observer.progress(shared.finished.load(Ordering::Relaxed));
            std::thread::sleep(PROGRESS_EVERY);
        }
        observer.progress(shared.finished.load(Ordering::Relaxed));
        let outcomes: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
        match refused {
            Some(error) => Err(error).context("cannot start the worker threads"),
            None => Ok((outcomes, started)),
        }
    })?;
    let mut tally = Tally::new();
    for outcome in outcomes {
        tally.absorb(outcome.map_err(|_| anyhow!("a load-test worker panicked"))??);
    }
    // The clock stops at the last answer, not when the workers were seen
    // done (that is looked at every 50 ms).
    let elapsed = tally.last_answer.map_or(Duration::ZERO, |last| {
        last.saturating_duration_since(started)
    });
    Ok(Measured {
        tally,
        started,
        elapsed,
        workers,
    })
}
