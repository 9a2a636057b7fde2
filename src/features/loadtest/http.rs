//! `seckill loadtest --target http://HOST:PORT`: shoppers' attempts through
//! a running `seckill serve`, end to end, so a sale is rehearsed through its
//! front door. Keep-alive HTTP/1.1 connections (one request at a time each,
//! as a browser's), written and read by hand on a tokio runtime: closed loop
//! (each connection sends when answered) or open loop (attempt `n` planned at
//! `start + n / rate`; latency from the planned time, corrected, beside the
//! service time from the actual send).
//!
//! It touches no Redis itself: the target sells what it was started for.
//! Rehearse on a rehearsal Redis (preheat there, `serve` there, then this),
//! and read the books afterwards with `status` and `reconcile`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use hdrhistogram::Histogram;
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::report::Percentiles;
use super::schedule::{LATE_AFTER, Pace};

/// What to run against the target.
#[derive(Debug, Clone)]
pub(crate) struct TargetRun {
    /// `host:port` of the serve instance.
    pub(crate) address: String,
    pub(crate) item: String,
    pub(crate) connections: usize,
    pub(crate) requests: u64,
    pub(crate) pace: Pace,
    /// Synthetic shoppers: attempt `n` is user `u<n mod users>`.
    pub(crate) users: u64,
    /// Request ids are `<run>-<n>`: a new run never replays an old one.
    pub(crate) run_id: String,
}

/// What the run saw.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TargetReport {
    pub(crate) target: String,
    pub(crate) item: String,
    /// `closed` or `open`.
    pub(crate) mode: &'static str,
    pub(crate) connections: usize,
    pub(crate) requests: u64,
    /// Attempts answered.
    pub(crate) completed: u64,
    pub(crate) elapsed_s: f64,
    /// Answered attempts per second.
    pub(crate) qps: f64,
    /// --rate; null in closed loop.
    pub(crate) requested_rate: Option<f64>,
    /// Answers by the buy outcome (or the refusal's kind).
    pub(crate) outcomes: BTreeMap<String, u64>,
    /// Answers by HTTP status.
    pub(crate) statuses: BTreeMap<u16, u64>,
    pub(crate) succeeded: u64,
    pub(crate) sold_out: u64,
    /// Every other answer.
    pub(crate) rejected: u64,
    /// Attempts that got no answer (the connection failed).
    pub(crate) errors: u64,
    /// Corrected latency (from the planned send; = service time in closed loop).
    pub(crate) latency: Percentiles,
    /// From the actual send to the answer.
    pub(crate) service: Percentiles,
    /// Attempts sent more than 2 ms behind plan (open loop).
    pub(crate) late_sends: u64,
}

/// Counted by each connection, merged at the end.
struct Tally {
    outcomes: BTreeMap<String, u64>,
    statuses: BTreeMap<u16, u64>,
    errors: u64,
    late: u64,
    corrected: Histogram<u64>,
    service: Histogram<u64>,
    last_answer: Option<Instant>,
}

fn histogram() -> Result<Histogram<u64>> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).context("cannot create a histogram")
}

/// `http://host:port` (a path is not allowed: the API's are fixed).
pub(crate) fn parse_target(text: &str) -> std::result::Result<String, String> {
    let rest = text
        .strip_prefix("http://")
        .ok_or_else(|| format!("{text:?}: the target is http://HOST:PORT of a `seckill serve`"))?;
    let address = rest.trim_end_matches('/');
    if address.is_empty() || address.contains('/') || !address.contains(':') {
        return Err(format!(
            "{text:?}: the target is http://HOST:PORT (no path)"
        ));
    }
    Ok(address.to_string())
}

/// Run the attempts and count what came back.
pub(crate) fn run(plan: &TargetRun) -> Result<TargetReport> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the load generator's runtime")?;
    runtime.block_on(drive(plan))
}

async fn drive(plan: &TargetRun) -> Result<TargetReport> {
    // Fail at once when nothing listens, not once per attempt.
    TcpStream::connect(&plan.address)
        .await
        .with_context(|| format!("cannot connect to the target http://{}", plan.address))?;
    let issued = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut workers = Vec::new();
    for worker in 0..plan.connections {
        let (plan, issued) = (plan.clone(), Arc::clone(&issued));
        workers.push(tokio::spawn(async move {
            connection(&plan, worker, &issued, started).await
        }));
    }
    let mut total = Tally {
        outcomes: BTreeMap::new(),
        statuses: BTreeMap::new(),
        errors: 0,
        late: 0,
        corrected: histogram()?,
        service: histogram()?,
        last_answer: None,
    };
    for worker in workers {
        let tally = worker
            .await
            .map_err(|_| anyhow!("a load-test connection panicked"))??;
        for (k, v) in tally.outcomes {
            *total.outcomes.entry(k).or_default() += v;
        }
        for (k, v) in tally.statuses {
            *total.statuses.entry(k).or_default() += v;
        }
        total.errors += tally.errors;
        total.late += tally.late;
        total.corrected.add(&tally.corrected)?;
        total.service.add(&tally.service)?;
        total.last_answer = total.last_answer.max(tally.last_answer);
    }
    let elapsed = total
        .last_answer
        .map_or(Duration::ZERO, |last| {
            last.saturating_duration_since(started)
        })
        .as_secs_f64();
    let completed = total.corrected.len();
    let count = |name: &str| total.outcomes.get(name).copied().unwrap_or(0);
    let (succeeded, sold_out) = (count("ok") + count("unreplicated"), count("sold_out"));
    Ok(TargetReport {
        target: format!("http://{}", plan.address),
        item: plan.item.clone(),
        mode: match plan.pace {
            Pace::Closed => "closed",
            Pace::Open { .. } => "open",
        },
        connections: plan.connections,
        requests: plan.requests,
        completed,
        elapsed_s: elapsed,
        qps: completed as f64 / elapsed.max(1e-9),
        requested_rate: match plan.pace {
            Pace::Open { rate } => Some(rate),
            Pace::Closed => None,
        },
        rejected: completed - succeeded - sold_out,
        succeeded,
        sold_out,
        outcomes: total.outcomes,
        statuses: total.statuses,
        errors: total.errors,
        latency: Percentiles::of(&total.corrected),
        service: Percentiles::of(&total.service),
        late_sends: total.late,
    })
}

/// One keep-alive connection: take attempts until the plan is done.
async fn connection(
    plan: &TargetRun,
    worker: usize,
    issued: &AtomicU64,
    start: Instant,
) -> Result<Tally> {
    let mut tally = Tally {
        outcomes: BTreeMap::new(),
        statuses: BTreeMap::new(),
        errors: 0,
        late: 0,
        corrected: histogram()?,
        service: histogram()?,
        last_answer: None,
    };
    let mut stream: Option<TcpStream> = None;
    let mut buffer = Vec::with_capacity(4096);
    let mut own = worker as u64;
    loop {
        // Which attempt, and when it is due.
        let (number, planned) = match plan.pace {
            Pace::Closed => {
                let n = issued.fetch_add(1, Ordering::Relaxed);
                (n, None)
            }
            Pace::Open { rate } => {
                let n = own;
                own += plan.connections as u64;
                (n, Some(start + Duration::from_secs_f64(n as f64 / rate)))
            }
        };
        if number >= plan.requests {
            return Ok(tally);
        }
        if let Some(at) = planned {
            tokio::time::sleep_until(at.into()).await;
        }
        let sent = Instant::now();
        if let Some(at) = planned
            && sent.duration_since(at) > LATE_AFTER
        {
            tally.late += 1;
        }
        let user = number % plan.users.max(1);
        let body = format!(
            "{{\"user\":\"u{user}\",\"qty\":1,\"request_id\":\"{}-{number}\"}}",
            plan.run_id
        );
        let request = format!(
            "POST /v1/items/{}/buy HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            plan.item,
            plan.address,
            body.len()
        );
        let answer = exchange(&mut stream, &plan.address, request.as_bytes(), &mut buffer).await;
        let done = Instant::now();
        match answer {
            Ok((status, outcome)) => {
                *tally.statuses.entry(status).or_default() += 1;
                *tally.outcomes.entry(outcome).or_default() += 1;
                let micros = |from: Instant| (done.duration_since(from).as_micros() as u64).max(1);
                tally.service.record(micros(sent))?;
                tally.corrected.record(micros(planned.unwrap_or(sent)))?;
                tally.last_answer = Some(done);
            }
            Err(_) => {
                tally.errors += 1;
                stream = None;
            }
        }
    }
}

/// Send one request on the kept connection (opening it if needed) and read
/// one answer: (status, the body's `outcome` or error `kind`).
async fn exchange(
    stream: &mut Option<TcpStream>,
    address: &str,
    request: &[u8],
    buffer: &mut Vec<u8>,
) -> Result<(u16, String)> {
    if stream.is_none() {
        let fresh = TcpStream::connect(address).await?;
        fresh.set_nodelay(true)?;
        *stream = Some(fresh);
    }
    let connection = stream.as_mut().expect("just opened");
    connection.write_all(request).await?;
    buffer.clear();
    let (head_end, length) = loop {
        let mut chunk = [0u8; 4096];
        let n = connection.read(&mut chunk).await?;
        if n == 0 {
            bail!("the target closed the connection");
        }
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            break (end + 4, length);
        }
    };
    while buffer.len() < head_end + length {
        let mut chunk = [0u8; 4096];
        let n = connection.read(&mut chunk).await?;
        if n == 0 {
            bail!("the target closed the connection mid-answer");
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    let head = String::from_utf8_lossy(&buffer[..head_end]);
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow!("not an HTTP answer"))?;
    if head.to_ascii_lowercase().contains("connection: close") {
        *stream = None;
    }
    let body = &buffer[head_end..head_end + length];
    let outcome = field(body, "\"outcome\":\"")
        .or_else(|| field(body, "\"kind\":\""))
        .unwrap_or_else(|| format!("http_{status}"));
    Ok((status, outcome))
}

/// The string after `marker` up to the next `"`.
fn field(body: &[u8], marker: &str) -> Option<String> {
    let text = std::str::from_utf8(body).ok()?;
    let start = text.find(marker)? + marker.len();
    let end = text[start..].find('"')?;
    Some(text[start..start + end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_http_host_port() {
        assert_eq!(
            parse_target("http://127.0.0.1:8080").unwrap(),
            "127.0.0.1:8080"
        );
        assert_eq!(parse_target("http://h:1/").unwrap(), "h:1");
        assert!(parse_target("https://h:1").is_err());
        assert!(parse_target("http://h:1/v1").is_err());
        assert!(parse_target("h:1").is_err());
    }

    #[test]
    fn outcomes_are_read_from_the_body() {
        assert_eq!(
            field(br#"{"outcome":"sold_out","x":1}"#, "\"outcome\":\"").as_deref(),
            Some("sold_out")
        );
        assert_eq!(
            field(br#"{"error":{"kind":"overloaded"}}"#, "\"kind\":\"").as_deref(),
            Some("overloaded")
        );
    }
}
