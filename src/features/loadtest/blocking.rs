//! The load-test worker for targets the event loop does not speak to: TLS,
//! Unix sockets and Redis Cluster (redis-rs routes each call to the master
//! of its slot). One blocking redis-rs connection per worker thread, driving
//! the same [`Conversation`]s, paced by the same [`Source`].
//!
//! redis-rs connections carry the response timeout, so a Redis that stops
//! answering ends the run with a timeout error.

use std::sync::Barrier;
use std::sync::atomic::Ordering;
use std::time::Instant;

use anyhow::{Context, Result};
use redis::ConnectionLike;

use super::Job;
use super::conversation::{Conversation, Next};
use super::measure::Tally;
use super::schedule::Source;
use crate::redis_client::conn::RedisTarget;

/// One worker thread with one connection, until the variant's attempts are done.
/// Always reaches the start line, even when connecting fails.
pub(crate) fn work(
    target: &RedisTarget,
    worker: usize,
    job: &Job<'_>,
    start_line: &Barrier,
) -> Result<Tally> {
    let connected = target.connect();
    start_line.wait();
    let mut conn = connected?;
    let mut tally = Tally::new()?;
    let mut source = Source::new(
        job.plan.settings.pace,
        job.plan.settings.requests,
        &job.issued,
        worker,
        job.workers,
        Instant::now(),
    );
    let mut conversation = Conversation::new(job.variant, job.plan);
    let mut batch = Vec::with_capacity(job.batch_limit);
    let mut numbers = Vec::with_capacity(job.batch_limit);
    let mut out = Vec::new();
    loop {
        batch.clear();
        source.take(Instant::now(), job.batch_limit, &mut batch);
        if batch.is_empty() {
            match source.due_at() {
                Some(due) => {
                    std::thread::sleep(due.saturating_duration_since(Instant::now()));
                    continue;
                }
                // Nothing due and nothing left: every attempt was handed out.
                None => break,
            }
        }
        numbers.clear();
        numbers.extend(batch.iter().map(|a| a.number));
        let mut replies = conversation.begin(&numbers, &mut out);
        for attempt in &batch {
            tally.sent(attempt);
        }
        let mut finished = 0;
        while finished < batch.len() {
            let values = if replies == 1 {
                vec![conn.req_packed_command(&out)]
            } else {
                conn.req_packed_commands(&out, 0, replies)
                    .map(|values| values.into_iter().map(Ok).collect())
                    .with_context(|| format!("Redis at {} failed", target.display))?
            };
            for value in values {
                let value = value.with_context(|| format!("Redis at {} failed", target.display))?;
                match conversation.reply(value, &mut out, &mut tally.counts)? {
                    Next::Pending => {}
                    Next::Finished => {
                        tally.answered(&batch[finished], Instant::now())?;
                        finished += 1;
                    }
                    Next::Send { replies: next } => replies = next,
                    Next::SendAfter {
                        pause,
                        replies: next,
                    } => {
                        std::thread::sleep(pause);
                        replies = next;
                    }
                }
            }
        }
        job.done.fetch_add(batch.len() as u64, Ordering::Relaxed);
    }
    tally.dropped = source.dropped();
    Ok(tally)
}
