//! `seckill loadtest --target http://HOST:PORT`: shoppers' attempts through
//! a running `seckill serve`, end to end, so a sale is rehearsed through its
//! front door. Keep-alive HTTP/1.1 connections (one request at a time each,
//! as a browser's) on the engine's one worker loop: closed loop (each
//! connection sends when answered) or open loop (attempt `n` planned at
//! `start + n / rate`; latency from the planned time, corrected, beside the
//! service time from the actual send). A connection that fails costs the
//! attempt it carried (counted in `errors`) and is opened again.
//!
//! It touches no Redis itself: the target sells what it was started for.
//! Rehearse on a rehearsal Redis (preheat there, `serve` there, then this),
//! and read the books afterwards with `status` and `reconcile`.
//!
//! Within loadtest it uses: nothing.

use std::collections::BTreeMap;
use std::net::TcpStream;
use std::time::Duration;

use anyhow::{Context, Result};
use seckill_loadgen::http::{self, Answer, Http1};
use seckill_loadgen::template::width;
use seckill_loadgen::{Conversation, Counts, Field, Next, Pace, Percentiles, Scenario, Template};
use serde::Serialize;

/// What to run against the target.
#[derive(Debug, Clone)]
pub(crate) struct TargetRun {
    /// `host:port` of the serve instance.
    pub(crate) address: String,
    pub(crate) item: String,
    pub(crate) connections: usize,
    /// Event-loop threads sharing the connections.
    pub(crate) threads: usize,
    pub(crate) requests: u64,
    pub(crate) pace: Pace,
    /// Synthetic shoppers: attempt `n` is user `u<n mod users>` (zero-padded).
    pub(crate) users: u64,
    /// Request ids are `<run>-<n>`: a new run never replays an old one.
    pub(crate) run_id: String,
    /// No answer for this long while attempts are in flight ends the run.
    pub(crate) stall_limit: Duration,
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

/// The template fields of the shopper's and the request's numbers.
const USER: Field = Field::new(1);
const REQUEST: Field = Field::new(2);

/// Answers counted by outcome and by status.
#[derive(Debug, Default)]
struct DoorCounts {
    outcomes: BTreeMap<String, u64>,
    statuses: BTreeMap<u16, u64>,
}

impl Counts for DoorCounts {
    fn absorb(&mut self, other: DoorCounts) {
        for (k, v) in other.outcomes {
            *self.outcomes.entry(k).or_default() += v;
        }
        for (k, v) in other.statuses {
            *self.statuses.entry(k).or_default() += v;
        }
    }
}

/// One buy per attempt through the shop's front door.
struct BuyThroughDoor {
    request: Template,
    users: u64,
}

impl BuyThroughDoor {
    /// `POST /v1/items/<item>/buy` for user `u<n mod users>`, qty 1, request id `<run>-<n>`.
    fn new(run: &TargetRun) -> BuyThroughDoor {
        let users = run.users.max(1);
        let body = [
            b"{\"user\":\"u".as_slice(),
            &USER.placeholder(width(users - 1)),
            b"\",\"qty\":1,\"request_id\":\"",
            run.run_id.as_bytes(),
            b"-",
            &REQUEST.placeholder(width(run.requests.saturating_sub(1))),
            b"\"}",
        ]
        .concat();
        let path = format!("/v1/items/{}/buy", run.item);
        let packed = http::request("POST", &path, &run.address, "application/json", &body);
        BuyThroughDoor {
            request: Template::new(packed, &[USER, REQUEST]),
            users,
        }
    }
}

impl Scenario for BuyThroughDoor {
    type Protocol = Http1;
    type Counts = DoorCounts;
    type Conversation = DoorTalk;

    fn conversation(&self) -> DoorTalk {
        DoorTalk {
            request: self.request.clone(),
            users: self.users,
        }
    }

    /// A shopper's connection may drop (a restart, an overloaded door): the
    /// attempt is an error, the next one opens a fresh connection.
    fn survives_failures(&self) -> bool {
        true
    }
}

/// One keep-alive connection's requests and answers.
struct DoorTalk {
    request: Template,
    users: u64,
}

impl Conversation for DoorTalk {
    type Reply = Answer;
    type Counts = DoorCounts;

    fn begin(&mut self, requests: &[u64], out: &mut Vec<u8>) -> usize {
        for &n in requests {
            let users = self.users;
            self.request
                .write(|field| if field == USER { n % users } else { n }, out);
        }
        requests.len()
    }

    /// The body's `outcome` (a buy's answer) or error `kind` (a refusal).
    fn reply(
        &mut self,
        answer: Answer,
        _out: &mut Vec<u8>,
        counts: &mut DoorCounts,
    ) -> Result<Next> {
        let outcome = http::json_string(&answer.body, "outcome")
            .or_else(|| http::json_string(&answer.body, "kind"))
            .map_or_else(|| format!("http_{}", answer.status), str::to_string);
        *counts.statuses.entry(answer.status).or_default() += 1;
        *counts.outcomes.entry(outcome).or_default() += 1;
        Ok(Next::Finished)
    }
}

/// Run the attempts and count what came back.
pub(crate) fn run(run: &TargetRun) -> Result<TargetReport> {
    let scenario = BuyThroughDoor::new(run);
    let plan = seckill_loadgen::Plan {
        pace: run.pace,
        requests: run.requests,
        connections: run.connections,
        threads: run.threads,
        stall_limit: run.stall_limit,
        peer: format!("the target http://{}", run.address),
    };
    let connect = || {
        let stream = TcpStream::connect(&run.address)
            .with_context(|| format!("cannot connect to the target http://{}", run.address))?;
        stream.set_nodelay(true).context("cannot set TCP_NODELAY")?;
        Ok(stream)
    };
    let measured = seckill_loadgen::run(
        &scenario,
        &plan,
        seckill_loadgen::Transport::Sockets(&connect),
        &mut (),
    )?;
    let tally = measured.tally;
    let completed = tally.completed();
    let elapsed = measured.elapsed.as_secs_f64();
    let count = |name: &str| tally.counts.outcomes.get(name).copied().unwrap_or(0);
    let (succeeded, sold_out) = (count("ok") + count("unreplicated"), count("sold_out"));
    Ok(TargetReport {
        target: format!("http://{}", run.address),
        item: run.item.clone(),
        mode: run.pace.mode(),
        connections: run.connections,
        requests: run.requests,
        completed,
        elapsed_s: elapsed,
        qps: completed as f64 / elapsed.max(1e-9),
        requested_rate: run.pace.rate(),
        rejected: completed - succeeded - sold_out,
        succeeded,
        sold_out,
        latency: tally.corrected.percentiles(),
        service: tally.service.percentiles(),
        outcomes: tally.counts.outcomes,
        statuses: tally.counts.statuses,
        errors: tally.failed,
        late_sends: tally.late,
    })
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

    /// Every attempt is one buy of one unit, its user and request id filled
    /// in place; the length never changes.
    #[test]
    fn a_buy_is_packed_once_and_numbered_per_attempt() {
        let run = TargetRun {
            address: "127.0.0.1:8080".into(),
            item: "1001".into(),
            connections: 1,
            threads: 1,
            requests: 1000,
            pace: Pace::Closed,
            users: 50,
            run_id: "RUN".into(),
            stall_limit: Duration::from_secs(1),
        };
        let mut talk = BuyThroughDoor::new(&run).conversation();
        let mut out = Vec::new();
        assert_eq!(talk.begin(&[7], &mut out), 1);
        let first = String::from_utf8(out.clone()).unwrap();
        assert!(
            first.starts_with(
                "POST /v1/items/1001/buy HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\
                 Content-Type: application/json\r\nContent-Length: 45\r\n\r\n"
            ),
            "{first}"
        );
        assert!(
            first.ends_with(r#"{"user":"u07","qty":1,"request_id":"RUN-007"}"#),
            "{first}"
        );
        out.clear();
        talk.begin(&[999], &mut out);
        assert_eq!(out.len(), first.len());
        assert!(
            String::from_utf8(out)
                .unwrap()
                .ends_with(r#""u49","qty":1,"request_id":"RUN-999"}"#)
        );
        let mut counts = DoorCounts::default();
        for body in [
            &br#"{"outcome":"sold_out"}"#[..],
            br#"{"error":{"kind":"overloaded"}}"#,
            b"",
        ] {
            let answer = Answer {
                status: 200,
                body: body.to_vec(),
                close: false,
            };
            assert_eq!(
                talk.reply(answer, &mut Vec::new(), &mut counts).unwrap(),
                Next::Finished
            );
        }
        let outcomes: Vec<&str> = counts.outcomes.keys().map(String::as_str).collect();
        assert_eq!(outcomes, ["http_200", "overloaded", "sold_out"]);
        assert_eq!(counts.statuses[&200], 3);
    }
}
