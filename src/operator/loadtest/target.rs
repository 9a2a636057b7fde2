//! `seckill loadtest --target http://HOST:PORT[,http://HOST:PORT…]`:
//! shoppers' attempts through running `seckill serve` instances, end to
//! end, so a sale is rehearsed through its front door. Keep-alive HTTP/1.1
//! connections (one request at a time each, as a browser's) on the engine's
//! one worker loop: closed loop (each connection sends when answered) or
//! open loop (attempt `n` planned at `start + n / rate`; latency from the
//! planned time, corrected, beside the service time from the actual send).
//! A connection that fails costs the attempt it carried (counted in
//! `errors`) and is opened again.
//!
//! Several instances: request `k` of attempt `n` (0 the first) goes to
//! instance `(n + k) mod instances`, so attempts start evenly spread and a
//! shopper's join, polls and buy alternate between instances — a ticket
//! issued by one instance is verified by another on every other request.
//! Each connection keeps one socket per instance it used.
//!
//! It touches no Redis for the attempts: the targets sell what they were
//! started for — real stock, to synthetic shoppers whose ids start with the
//! run's prefix (`loadtest-<run>-u007`), so no real shopper ever meets one
//! of them as "duplicate". The command refuses to run without `--rehearsal`
//! (the operator's word that the target sells a rehearsal's stock). An item
//! behind a waiting room is joined first, its position polled at the wait
//! the room announces, then bought once admitted, as a shop's page does; in
//! a ticket room the join's ticket travels as `Seckill-Ticket` with every
//! later request, and what each shopper saw is kept for `ticket_room` to
//! judge (with Redis's own counts, read before and after when reachable).
//! Read the books afterwards with `status` and `reconcile`; `init --yes`
//! resets the rehearsal.
//!
//! Within loadtest it uses: ticket_room.

use std::collections::BTreeMap;
use std::net::TcpStream;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use seckill_loadgen::http::{self, Answer, Http1};
use seckill_loadgen::template::width;
use seckill_loadgen::{Conversation, Counts, Field, Next, Pace, Percentiles, Scenario, Template};
use serde::Serialize;

use super::ticket_room::{self, RedisSide, TicketCounts, TicketRoomReport, TicketTrace};

/// What to run against the targets.
#[derive(Debug, Clone)]
pub(crate) struct TargetRun {
    /// `host:port` of each serve instance, as `--target` lists them.
    pub(crate) addresses: Vec<String>,
    pub(crate) item: String,
    pub(crate) connections: usize,
    /// Event-loop threads sharing the connections.
    pub(crate) threads: usize,
    pub(crate) requests: u64,
    pub(crate) pace: Pace,
    /// Synthetic shoppers: attempt `n` is user `<user_prefix>u<n mod users>` (zero-padded).
    pub(crate) users: u64,
    /// What every synthetic user id starts with (the run's own).
    pub(crate) user_prefix: String,
    /// The item's waiting room, if any: join, wait to be admitted, then buy.
    pub(crate) room: Option<RoomKind>,
    /// Request ids are `<run>-<n>`: a new run never replays an old one.
    pub(crate) run_id: String,
    /// No answer for this long while attempts are in flight ends the run.
    pub(crate) stall_limit: Duration,
}

/// Which waiting room the item has.
#[derive(Debug, Clone)]
pub(crate) enum RoomKind {
    /// `rate` or `max_active`: positions in Redis.
    Exact,
    /// `ticket`: signed tickets from the door (admissions per second asked,
    /// and Redis to read before and after).
    Ticket { admit_rate: f64, campaign: String },
}

/// What the run saw.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TargetReport {
    /// The first target, and every one.
    pub(crate) target: String,
    pub(crate) targets: Vec<String>,
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
    /// A ticket room's figures (docs/loadtest.md, "Through a ticket room").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) ticket_room: Option<TicketRoomReport>,
}

/// `http://host:port[,http://host:port…]` (a path is not allowed: the API's
/// are fixed), as `host:port` joined by commas.
pub(crate) fn parse_target(text: &str) -> std::result::Result<String, String> {
    let mut addresses = Vec::new();
    for one in text.split(',').map(str::trim) {
        let rest = one.strip_prefix("http://").ok_or_else(|| {
            format!("{one:?}: each target is http://HOST:PORT of a `seckill serve`")
        })?;
        let address = rest.trim_end_matches('/');
        if address.is_empty() || address.contains('/') || !address.contains(':') {
            return Err(format!(
                "{one:?}: each target is http://HOST:PORT (no path)"
            ));
        }
        if addresses.contains(&address) {
            return Err(format!("{one:?} is listed twice"));
        }
        addresses.push(address);
    }
    if addresses.len() > seckill_loadgen::MAX_PEERS {
        return Err(format!(
            "{} targets: at most {}",
            addresses.len(),
            seckill_loadgen::MAX_PEERS
        ));
    }
    Ok(addresses.join(","))
}

/// The template fields of the shopper's and the request's numbers.
const USER: Field = Field::new(1);
const REQUEST: Field = Field::new(2);

/// Answers counted by outcome and by status; a ticket room's traces.
#[derive(Debug, Default)]
struct DoorCounts {
    outcomes: BTreeMap<String, u64>,
    statuses: BTreeMap<u16, u64>,
    traces: Vec<TicketTrace>,
    tickets: TicketCounts,
}

impl Counts for DoorCounts {
    fn absorb(&mut self, other: DoorCounts) {
        for (k, v) in other.outcomes {
            *self.outcomes.entry(k).or_default() += v;
        }
        for (k, v) in other.statuses {
            *self.statuses.entry(k).or_default() += v;
        }
        self.traces.extend(other.traces);
        self.tickets.polls += other.tickets.polls;
        self.tickets.buys += other.tickets.buys;
        self.tickets.buys_retried += other.tickets.buys_retried;
    }
}

/// One instance's packed requests (the `Host` header differs).
#[derive(Clone)]
struct Requests {
    buy: Template,
    /// The room's join and position read, when the item has a room.
    room: Option<(Template, Template)>,
}

/// One buy per attempt through the shop's front door (after the waiting
/// room, when the item has one).
struct BuyThroughDoor {
    /// By instance.
    requests: Vec<Requests>,
    ticket: bool,
    users: u64,
}

impl BuyThroughDoor {
    /// `POST /v1/items/<item>/buy` for user `<prefix>u<n mod users>`, qty 1,
    /// request id `<run>-<n>`; for a room item also its join and its read;
    /// one set per instance.
    fn new(run: &TargetRun) -> BuyThroughDoor {
        let users = run.users.max(1);
        let user = [
            run.user_prefix.as_bytes(),
            b"u",
            &USER.placeholder(width(users - 1)),
        ]
        .concat();
        let body = [
            b"{\"user\":\"".as_slice(),
            &user,
            b"\",\"qty\":1,\"request_id\":\"",
            run.run_id.as_bytes(),
            b"-",
            &REQUEST.placeholder(width(run.requests.saturating_sub(1))),
            b"\"}",
        ]
        .concat();
        let path = format!("/v1/items/{}/buy", run.item);
        let requests = run
            .addresses
            .iter()
            .map(|address| {
                let packed = http::request("POST", &path, address, "application/json", &body);
                let room = run.room.is_some().then(|| {
                    let join_body = [b"{\"user\":\"".as_slice(), &user, b"\"}"].concat();
                    let join = http::request(
                        "POST",
                        &format!("/v1/items/{}/queue", run.item),
                        address,
                        "application/json",
                        &join_body,
                    );
                    let read_path =
                        [format!("/v1/items/{}/queue/", run.item).as_bytes(), &user].concat();
                    let read = http::request(
                        "GET",
                        &String::from_utf8_lossy(&read_path),
                        address,
                        "application/json",
                        b"",
                    );
                    (Template::new(join, &[USER]), Template::new(read, &[USER]))
                });
                Requests {
                    buy: Template::new(packed, &[USER, REQUEST]),
                    room,
                }
            })
            .collect();
        BuyThroughDoor {
            requests,
            ticket: matches!(run.room, Some(RoomKind::Ticket { .. })),
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
            requests: self.requests.clone(),
            ticket_room: self.ticket,
            users: self.users,
            attempt: 0,
            sent: 0,
            step: Step::Buy,
            ticket: None,
            trace: TicketTrace::default(),
            retries: 0,
        }
    }

    fn peers(&self) -> usize {
        self.requests.len()
    }

    /// A shopper's connection may drop (a restart, an overloaded door): the
    /// attempt is an error, the next one opens a fresh connection.
    fn survives_failures(&self) -> bool {
        true
    }
}

/// Where an attempt stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// The join is sent.
    Join,
    /// In the waiting room: polling, not admitted yet.
    Queued,
    /// The buy is sent.
    Buy,
}

/// Polls of a waiting shopper come at the wait the room announced, within these.
const POLL_AT_LEAST: Duration = Duration::from_millis(50);
const POLL_AT_MOST: Duration = Duration::from_secs(2);
/// A buy an instance refuses as `not_admitted` while another said
/// `admitted` (its mirror of the cursor one beat behind) is sent again at
/// most this often before the answer counts.
const BUY_RETRIES: u32 = 50;

/// One keep-alive connection's requests and answers.
struct DoorTalk {
    requests: Vec<Requests>,
    ticket_room: bool,
    users: u64,
    /// The attempt in hand (its number: user and request id).
    attempt: u64,
    /// Requests of the attempt written so far (the next one's instance).
    sent: u64,
    step: Step,
    /// The ticket room's ticket, sent as `Seckill-Ticket`.
    ticket: Option<String>,
    trace: TicketTrace,
    retries: u32,
}

/// Now, in ms since the epoch (fractional): the client's wall clock, which
/// the serve instances' clocks are measured against.
fn wall_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

impl DoorTalk {
    /// The instance the next request goes to.
    fn instance(&self) -> usize {
        ((self.attempt + self.sent) % self.requests.len() as u64) as usize
    }

    /// Write the request `pick` chooses, for the instance it goes to; with
    /// the ticket header once the ticket room gave one.
    fn write(&mut self, pick: fn(&Requests) -> &Template, out: &mut Vec<u8>) {
        let (n, users) = (self.attempt, self.users);
        let template = pick(&self.requests[self.instance()]);
        template.write(|field| if field == USER { n % users } else { n }, out);
        if let Some(ticket) = &self.ticket
            && let Some(line_end) = out.windows(2).position(|w| w == b"\r\n")
        {
            let header = format!("Seckill-Ticket: {ticket}\r\n");
            out.splice(line_end + 2..line_end + 2, header.into_bytes());
        }
        self.sent += 1;
    }

    /// Count an answer as what the attempt came to.
    fn count(answer: &Answer, prefix: &str, counts: &mut DoorCounts) {
        let outcome = outcome_of(answer);
        *counts.statuses.entry(answer.status).or_default() += 1;
        *counts
            .outcomes
            .entry(format!("{prefix}{outcome}"))
            .or_default() += 1;
    }

    /// The attempt ends with `answer`, counted with `prefix`.
    fn finish(&mut self, answer: &Answer, prefix: &str, counts: &mut DoorCounts) -> Next {
        Self::count(answer, prefix, counts);
        if self.ticket_room {
            if prefix.is_empty() {
                self.trace.bought = Some(outcome_of(answer));
            }
            counts.traces.push(std::mem::take(&mut self.trace));
        }
        Next::Finished
    }

    /// The pause before the next poll: the wait the answer announced.
    fn pause(answer: &Answer) -> Duration {
        let eta = json_number(&answer.body, "eta_ms").unwrap_or(0).max(0) as u64;
        Duration::from_millis(eta).clamp(POLL_AT_LEAST, POLL_AT_MOST)
    }

    /// A ticket room's join or poll answer.
    fn ticket_standing(
        &mut self,
        answer: Answer,
        out: &mut Vec<u8>,
        counts: &mut DoorCounts,
    ) -> Next {
        if self.step == Step::Join {
            self.trace.join_received_ms = wall_ms();
            match http::json_string(&answer.body, "ticket") {
                Some(ticket) if answer.status == 200 => {
                    self.ticket = Some(ticket.to_string());
                    self.trace.arrival_ms = json_number(&answer.body, "arrival_ms");
                }
                _ => return self.finish(&answer, "queue:", counts),
            }
            self.step = Step::Queued;
        } else {
            counts.tickets.polls += 1;
        }
        match http::json_string(&answer.body, "state") {
            Some("admitted") => {
                if self.trace.admitted_seen_ms.is_none() {
                    self.trace.admitted_seen_ms = Some(wall_ms());
                    self.trace.admitted_cursor_ms = json_number(&answer.body, "cursor_ms");
                    self.trace.admitted_from_ms = json_number(&answer.body, "admitted_from_ms");
                }
                self.step = Step::Buy;
                self.write(|r| &r.buy, out);
                Next::Send { replies: 1 }
            }
            Some("waiting") => {
                self.write(|r| &r.room.as_ref().expect("a room item").1, out);
                Next::SendAfter {
                    pause: Self::pause(&answer),
                    replies: 1,
                }
            }
            _ => self.finish(&answer, "queue:", counts),
        }
    }
}

/// The buy outcome of an answer, or its refusal's kind, or `http_<status>`.
fn outcome_of(answer: &Answer) -> String {
    http::json_string(&answer.body, "outcome")
        .or_else(|| http::json_string(&answer.body, "kind"))
        .map_or_else(|| format!("http_{}", answer.status), str::to_string)
}

/// A JSON number field of `body` (`"eta_ms":1200`).
fn json_number(body: &[u8], name: &str) -> Option<i64> {
    let text = std::str::from_utf8(body).ok()?;
    let marker = format!("\"{name}\":");
    let start = text.find(&marker)? + marker.len();
    let digits: String = text[start..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '-')
        .collect();
    digits.parse().ok()
}

impl Conversation for DoorTalk {
    type Reply = Answer;
    type Counts = DoorCounts;

    fn begin(&mut self, requests: &[u64], out: &mut Vec<u8>) -> usize {
        for &n in requests {
            self.attempt = n;
            self.sent = 0;
            self.ticket = None;
            self.retries = 0;
            if self.requests[0].room.is_some() {
                self.step = Step::Join;
                self.trace = TicketTrace {
                    join_peer: self.instance(),
                    join_sent_ms: wall_ms(),
                    ..TicketTrace::default()
                };
                self.write(|r| &r.room.as_ref().expect("a room item").0, out);
            } else {
                self.step = Step::Buy;
                self.write(|r| &r.buy, out);
            }
        }
        requests.len()
    }

    /// A buy's answer ends the attempt, counted by its `outcome` (or the
    /// refusal's `kind`); a room's answer sends the buy once admitted, the
    /// next read at the wait it announces while waiting, and ends the
    /// attempt (counted `queue:<what>`) when the room refuses the shopper.
    /// In a ticket room a buy refused `not_admitted` (that instance's
    /// mirror of the cursor a beat behind the one that said `admitted`) is
    /// sent again at the wait it announces.
    fn reply(
        &mut self,
        answer: Answer,
        out: &mut Vec<u8>,
        counts: &mut DoorCounts,
    ) -> Result<Next> {
        if self.ticket_room {
            if self.step != Step::Buy {
                return Ok(self.ticket_standing(answer, out, counts));
            }
            counts.tickets.buys += 1;
            let not_yet = answer.status == 425
                && http::json_string(&answer.body, "outcome") == Some("not_admitted");
            if not_yet && self.retries < BUY_RETRIES {
                self.retries += 1;
                counts.tickets.buys_retried += 1;
                self.write(|r| &r.buy, out);
                return Ok(Next::SendAfter {
                    pause: Self::pause(&answer),
                    replies: 1,
                });
            }
            return Ok(self.finish(&answer, "", counts));
        }
        match self.step {
            Step::Join | Step::Queued => match http::json_string(&answer.body, "state") {
                Some("admitted") => {
                    self.step = Step::Buy;
                    self.write(|r| &r.buy, out);
                    Ok(Next::Send { replies: 1 })
                }
                Some("waiting" | "prequeue") => {
                    self.step = Step::Queued;
                    self.write(|r| &r.room.as_ref().expect("a room item").1, out);
                    Ok(Next::SendAfter {
                        pause: Self::pause(&answer),
                        replies: 1,
                    })
                }
                _ => Ok(self.finish(&answer, "queue:", counts)),
            },
            Step::Buy => Ok(self.finish(&answer, "", counts)),
        }
    }

    fn peer(&self) -> usize {
        // The request just written went to the instance before `sent` moved.
        ((self.attempt + self.sent.saturating_sub(1)) % self.requests.len() as u64) as usize
    }
}

/// Run the attempts and count what came back; a ticket room's run is
/// judged with `redis` (read before the run here, after it in the judgment).
pub(crate) fn run(
    run: &TargetRun,
    redis: Option<&crate::redis_client::conn::RedisTarget>,
) -> Result<TargetReport> {
    let scenario = BuyThroughDoor::new(run);
    let targets: Vec<String> = run
        .addresses
        .iter()
        .map(|a| format!("http://{a}"))
        .collect();
    let plan = seckill_loadgen::Plan {
        pace: run.pace,
        requests: run.requests,
        connections: run.connections,
        threads: run.threads,
        stall_limit: run.stall_limit,
        peer: format!("the target {}", targets.join(",")),
    };
    let connect = |peer: usize| {
        let address = &run.addresses[peer];
        let stream = TcpStream::connect(address)
            .with_context(|| format!("cannot connect to the target http://{address}"))?;
        stream.set_nodelay(true).context("cannot set TCP_NODELAY")?;
        Ok(stream)
    };
    let redis_side = match &run.room {
        Some(RoomKind::Ticket { campaign, .. }) => {
            Some(RedisSide::before(redis, campaign, &run.item))
        }
        _ => None,
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
    let ticket_room = match (&run.room, redis_side) {
        (Some(RoomKind::Ticket { admit_rate, .. }), Some(side)) => Some(ticket_room::judge(
            &tally.counts.traces,
            tally.counts.tickets,
            &targets,
            elapsed,
            *admit_rate,
            side,
        )),
        _ => None,
    };
    Ok(TargetReport {
        target: targets[0].clone(),
        targets,
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
        ticket_room,
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
        assert_eq!(parse_target("http://a:1,http://b:2/").unwrap(), "a:1,b:2");
        assert!(parse_target("http://a:1,http://a:1").is_err());
        assert!(parse_target("http://a:1,b:2").is_err());
    }

    /// Every attempt is one buy of one unit, its user and request id filled
    /// in place; the length never changes.
    #[test]
    fn a_buy_is_packed_once_and_numbered_per_attempt() {
        let run = TargetRun {
            addresses: vec!["127.0.0.1:8080".into()],
            item: "1001".into(),
            connections: 1,
            threads: 1,
            requests: 1000,
            pace: Pace::Closed,
            users: 50,
            user_prefix: String::new(),
            room: None,
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

    fn answer(status: u16, body: &str) -> Answer {
        Answer {
            status,
            body: body.as_bytes().to_vec(),
            close: false,
        }
    }

    /// In a ticket room over two instances the join goes to one, the polls
    /// and the buy alternate, each carrying the join's ticket; what the
    /// shopper saw is kept for the judgment.
    #[test]
    fn a_ticket_shopper_alternates_instances_and_carries_the_ticket() {
        let run = TargetRun {
            addresses: vec!["a:1".into(), "b:2".into()],
            item: "room".into(),
            connections: 1,
            threads: 1,
            requests: 10,
            pace: Pace::Closed,
            users: 10,
            user_prefix: String::new(),
            room: Some(RoomKind::Ticket {
                admit_rate: 100.0,
                campaign: "c".into(),
            }),
            run_id: "RUN".into(),
            stall_limit: Duration::from_secs(1),
        };
        let mut talk = BuyThroughDoor::new(&run).conversation();
        let mut counts = DoorCounts::default();
        let mut out = Vec::new();
        talk.begin(&[3], &mut out);
        let join = String::from_utf8(out.clone()).unwrap();
        assert!(
            join.starts_with("POST /v1/items/room/queue HTTP/1.1\r\nHost: b:2\r\n"),
            "{join}"
        );
        assert!(!join.contains("Seckill-Ticket"), "{join}");
        assert_eq!(talk.peer(), 1);
        out.clear();
        let waiting = r#"{"outcome":"joined","state":"waiting","ticket":"t1.X.Y","arrival_ms":1000,"eta_ms":120,"cursor_ms":900}"#;
        let next = talk
            .reply(answer(200, waiting), &mut out, &mut counts)
            .unwrap();
        assert_eq!(
            next,
            Next::SendAfter {
                pause: Duration::from_millis(120),
                replies: 1
            }
        );
        let poll = String::from_utf8(out.clone()).unwrap();
        assert!(
            poll.starts_with(
                "GET /v1/items/room/queue/u3 HTTP/1.1\r\nSeckill-Ticket: t1.X.Y\r\nHost: a:1\r\n"
            ),
            "{poll}"
        );
        assert_eq!(talk.peer(), 0);
        out.clear();
        let admitted =
            r#"{"state":"admitted","arrival_ms":1000,"admitted_from_ms":1100,"cursor_ms":1005}"#;
        let next = talk
            .reply(answer(200, admitted), &mut out, &mut counts)
            .unwrap();
        assert_eq!(next, Next::Send { replies: 1 });
        let buy = String::from_utf8(out.clone()).unwrap();
        assert!(
            buy.starts_with(
                "POST /v1/items/room/buy HTTP/1.1\r\nSeckill-Ticket: t1.X.Y\r\nHost: b:2\r\n"
            ),
            "{buy}"
        );
        assert_eq!(talk.peer(), 1);
        out.clear();
        // The other instance's mirror is a beat behind: the buy goes again.
        let not_yet = r#"{"outcome":"not_admitted","state":"waiting","eta_ms":60}"#;
        let next = talk
            .reply(answer(425, not_yet), &mut out, &mut counts)
            .unwrap();
        assert!(matches!(next, Next::SendAfter { .. }), "{next:?}");
        assert_eq!(talk.peer(), 0);
        out.clear();
        let next = talk
            .reply(answer(200, r#"{"outcome":"ok"}"#), &mut out, &mut counts)
            .unwrap();
        assert_eq!(next, Next::Finished);
        assert_eq!(counts.outcomes["ok"], 1);
        assert_eq!(
            (
                counts.tickets.polls,
                counts.tickets.buys,
                counts.tickets.buys_retried
            ),
            (1, 2, 1)
        );
        let trace = &counts.traces[0];
        assert_eq!(trace.join_peer, 1);
        assert_eq!(trace.arrival_ms, Some(1000));
        assert_eq!(trace.admitted_cursor_ms, Some(1005));
        assert_eq!(trace.bought.as_deref(), Some("ok"));
    }
}
