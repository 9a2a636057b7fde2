//! The engine end to end: a scenario run on the one worker loop against a
//! real redis-server (started per test on a free port), over sockets and
//! over blocking links, closed and open loop; a server that stops answering;
//! HTTP connections that close or fail; a conversation moving between two
//! servers.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use redis::Value;
use seckill_loadgen::http::{self, Answer, Http1};
use seckill_loadgen::resp::{self, Resp};
use seckill_loadgen::template::width;
use seckill_loadgen::{
    BlockingLink, Conversation, Counts, Field, Measured, Next, Observer, Pace, Plan, Scenario,
    Template, Transport,
};

/// A redis-server of the test's own, killed when dropped.
struct RedisServer {
    port: u16,
    child: Child,
}

impl RedisServer {
    fn start() -> RedisServer {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server must be installed (apt-get install redis-server)");
        let server = RedisServer { port, child };
        let deadline = Instant::now() + Duration::from_secs(10);
        while server.query(&[b"PING"]).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        server
    }

    fn connect(&self) -> Result<TcpStream> {
        let stream = TcpStream::connect(("127.0.0.1", self.port))?;
        stream.set_nodelay(true)?;
        Ok(stream)
    }

    /// One command on a fresh connection.
    fn query(&self, words: &[&[u8]]) -> Result<Value> {
        let mut link = Link {
            stream: self.connect()?,
            input: Vec::new(),
        };
        let mut replies = VecDeque::new();
        link.round_trip(&resp::command(words), 1, &mut replies)?;
        Ok(replies.pop_front().unwrap())
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A blocking RESP link over a plain socket.
struct Link {
    stream: TcpStream,
    input: Vec<u8>,
}

impl BlockingLink<Value> for Link {
    fn round_trip(
        &mut self,
        packed: &[u8],
        replies: usize,
        into: &mut VecDeque<Value>,
    ) -> Result<()> {
        self.stream.write_all(packed)?;
        let mut taken = 0;
        while taken < replies {
            match resp::parse(&self.input)? {
                Some((value, used)) => {
                    self.input.drain(..used);
                    into.push_back(value);
                    taken += 1;
                }
                None => {
                    let mut chunk = [0u8; 4096];
                    let n = self.stream.read(&mut chunk)?;
                    if n == 0 {
                        bail!("redis-server closed the connection");
                    }
                    self.input.extend_from_slice(&chunk[..n]);
                }
            }
        }
        Ok(())
    }
}

const MEMBER: Field = Field::new(1);

/// `SADD members <n>` per attempt: a set of the attempts made, and how
/// often one was made twice.
struct Members {
    command: Template,
    pipeline: usize,
}

impl Members {
    fn new(requests: u64, pipeline: usize) -> Members {
        let words = [
            b"SADD".to_vec(),
            b"members".to_vec(),
            MEMBER.placeholder(width(requests - 1)),
        ];
        Members {
            command: Template::resp(&words, &[MEMBER]),
            pipeline,
        }
    }
}

#[derive(Debug, Default)]
struct Added {
    new: u64,
    again: u64,
}

impl Counts for Added {
    fn absorb(&mut self, other: Added) {
        self.new += other.new;
        self.again += other.again;
    }
}

struct AddTalk(Template);

impl Conversation for AddTalk {
    type Reply = Value;
    type Counts = Added;

    fn begin(&mut self, requests: &[u64], out: &mut Vec<u8>) -> usize {
        for &n in requests {
            self.0.write(|_| n, out);
        }
        requests.len()
    }

    fn reply(&mut self, reply: Value, _out: &mut Vec<u8>, counts: &mut Added) -> Result<Next> {
        match resp::int_or_nil(reply, "SADD")? {
            Some(1) => counts.new += 1,
            _ => counts.again += 1,
        }
        Ok(Next::Finished)
    }
}

impl Scenario for Members {
    type Protocol = Resp;
    type Counts = Added;
    type Conversation = AddTalk;

    fn conversation(&self) -> AddTalk {
        AddTalk(self.command.clone())
    }

    fn batch_limit(&self) -> usize {
        self.pipeline
    }
}

fn plan(pace: Pace, requests: u64, connections: usize, threads: usize) -> Plan {
    Plan {
        pace,
        requests,
        connections,
        threads,
        stall_limit: Duration::from_secs(5),
        peer: "Redis".to_string(),
    }
}

/// Counts the start and the last progress seen.
#[derive(Default)]
struct Seen {
    started: u32,
    finished: u64,
}

impl Observer for Seen {
    fn started(&mut self) {
        self.started += 1;
    }

    fn progress(&mut self, finished: u64) {
        self.finished = finished;
    }
}

/// Every attempt made exactly once, answered, timed; the server agrees.
fn check_members(server: &RedisServer, measured: &Measured<Added>, requests: u64) {
    let tally = &measured.tally;
    assert_eq!(
        (tally.counts.new, tally.counts.again),
        (requests, 0),
        "{tally:?}"
    );
    assert_eq!(tally.completed(), requests);
    assert_eq!((tally.failed, tally.dropped), (0, 0));
    assert_eq!(
        server.query(&[b"SCARD", b"members"]).unwrap(),
        Value::Int(requests as i64)
    );
    assert!(measured.elapsed > Duration::ZERO);
    server.query(&[b"DEL", b"members"]).unwrap();
}

#[test]
fn event_loops_share_the_connections_and_make_every_attempt_once() {
    let server = RedisServer::start();
    let connect = |_peer: usize| server.connect();
    for (pace, pipeline) in [(Pace::Closed, 4), (Pace::Open { rate: 4000.0 }, 1)] {
        let mut seen = Seen::default();
        let measured = seckill_loadgen::run(
            &Members::new(1200, pipeline),
            &plan(pace, 1200, 7, 3),
            Transport::Sockets(&connect),
            &mut seen,
        )
        .unwrap();
        assert_eq!(measured.workers, 3);
        assert_eq!((seen.started, seen.finished), (1, 1200));
        check_members(&server, &measured, 1200);
        if pace != Pace::Closed {
            // 1,200 attempts at 4,000/s: about 0.3 s, not as fast as it goes.
            assert!(
                measured.elapsed >= Duration::from_millis(290),
                "{:?}",
                measured.elapsed
            );
        }
    }
}

#[test]
fn blocking_links_run_the_same_loop_one_thread_each() {
    let server = RedisServer::start();
    let link = || -> Result<Box<dyn BlockingLink<Value>>> {
        Ok(Box::new(Link {
            stream: server.connect()?,
            input: Vec::new(),
        }))
    };
    for pace in [Pace::Closed, Pace::Open { rate: 3000.0 }] {
        let measured = seckill_loadgen::run(
            &Members::new(600, 3),
            &plan(pace, 600, 4, 1),
            Transport::Blocking(&link),
            &mut (),
        )
        .unwrap();
        assert_eq!(measured.workers, 4, "one thread per link");
        check_members(&server, &measured, 600);
    }
}

/// A server that accepts and never answers: the run ends with an error
/// naming the stall, it does not hang.
#[test]
fn a_server_that_never_answers_ends_the_run() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let held =
        std::thread::spawn(move || listener.incoming().take(2).flatten().collect::<Vec<_>>());
    let connect = |_peer: usize| Ok(TcpStream::connect(address)?);
    let mut plan = plan(Pace::Closed, 10, 2, 1);
    plan.stall_limit = Duration::from_millis(300);
    let started = Instant::now();
    let error = seckill_loadgen::run(
        &Members::new(10, 1),
        &plan,
        Transport::Sockets(&connect),
        &mut (),
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "Redis answered nothing for 300ms: the load test gave up"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    drop(held.join());
}

const SHOPPER: Field = Field::new(1);

/// One `POST /buy` per attempt; answers counted by status.
struct Door(Template);

#[derive(Debug, Default)]
struct Statuses(Vec<u16>);

impl Counts for Statuses {
    fn absorb(&mut self, other: Statuses) {
        self.0.extend(other.0);
    }
}

impl Conversation for Door {
    type Reply = Answer;
    type Counts = Statuses;

    fn begin(&mut self, requests: &[u64], out: &mut Vec<u8>) -> usize {
        self.0.write(|_| requests[0], out);
        1
    }

    fn reply(&mut self, answer: Answer, _out: &mut Vec<u8>, counts: &mut Statuses) -> Result<Next> {
        assert_eq!(http::json_string(&answer.body, "outcome"), Some("ok"));
        counts.0.push(answer.status);
        Ok(Next::Finished)
    }
}

impl Scenario for Door {
    type Protocol = Http1;
    type Counts = Statuses;
    type Conversation = Door;

    fn conversation(&self) -> Door {
        Door(self.0.clone())
    }

    fn survives_failures(&self) -> bool {
        true
    }
}

/// A door that answers once per connection and closes it (`Connection:
/// close`), and drops every fifth connection without an answer: each
/// dropped attempt is counted as failed, every other one answered, and the
/// run goes on over fresh connections.
#[test]
fn http_connections_that_close_or_fail_are_opened_again() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let requests = 50u64;
    let door = std::thread::spawn(move || {
        for (n, stream) in listener.incoming().take(requests as usize).enumerate() {
            let mut stream = stream.unwrap();
            let mut request = Vec::new();
            while !request.ends_with(b"}") {
                let mut chunk = [0u8; 1024];
                match stream.read(&mut chunk).unwrap() {
                    0 => break,
                    got => request.extend_from_slice(&chunk[..got]),
                }
            }
            if n % 5 == 4 {
                continue; // dropped unanswered
            }
            let body = br#"{"outcome":"ok"}"#;
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            stream.write_all(&[head.as_bytes(), body].concat()).unwrap();
        }
    });
    let body = [b"{\"n\":\"".as_slice(), &SHOPPER.placeholder(2), b"\"}"].concat();
    let packed = http::request(
        "POST",
        "/buy",
        &address.to_string(),
        "application/json",
        &body,
    );
    let connect = |_peer: usize| Ok(TcpStream::connect(address)?);
    let mut plan = plan(Pace::Closed, requests, 2, 1);
    plan.peer = "the door".to_string();
    let measured = seckill_loadgen::run(
        &Door(Template::new(packed, &[SHOPPER])),
        &plan,
        Transport::Sockets(&connect),
        &mut (),
    )
    .unwrap();
    door.join().unwrap();
    let tally = measured.tally;
    assert_eq!(tally.failed, requests / 5);
    assert_eq!(tally.completed(), requests - requests / 5);
    assert!(tally.counts.0.iter().all(|&status| status == 200));
}

/// `SADD members <n>` on peer `n mod 2`, then the same on the other peer:
/// one attempt moving between two servers.
struct BothPeers(Template);

struct BothTalk {
    command: Template,
    attempt: u64,
    second: bool,
}

impl Conversation for BothTalk {
    type Reply = Value;
    type Counts = Added;

    fn begin(&mut self, requests: &[u64], out: &mut Vec<u8>) -> usize {
        self.attempt = requests[0];
        self.second = false;
        self.command.write(|_| self.attempt, out);
        1
    }

    fn reply(&mut self, reply: Value, out: &mut Vec<u8>, counts: &mut Added) -> Result<Next> {
        match resp::int_or_nil(reply, "SADD")? {
            Some(1) => counts.new += 1,
            _ => counts.again += 1,
        }
        if self.second {
            return Ok(Next::Finished);
        }
        self.second = true;
        self.command.write(|_| self.attempt, out);
        Ok(Next::Send { replies: 1 })
    }

    fn peer(&self) -> usize {
        ((self.attempt + u64::from(self.second)) % 2) as usize
    }
}

impl Scenario for BothPeers {
    type Protocol = Resp;
    type Counts = Added;
    type Conversation = BothTalk;

    fn conversation(&self) -> BothTalk {
        BothTalk {
            command: self.0.clone(),
            attempt: 0,
            second: false,
        }
    }

    fn peers(&self) -> usize {
        2
    }
}

/// Each request goes to the peer its conversation names: every attempt
/// reaches both servers once, whichever connection carried it. Failed while
/// a connection had one socket (every request went to the first server).
#[test]
fn a_conversation_moves_between_peers() {
    let servers = [RedisServer::start(), RedisServer::start()];
    let connect = |peer: usize| servers[peer].connect();
    let requests = 500;
    let words = [
        b"SADD".to_vec(),
        b"members".to_vec(),
        MEMBER.placeholder(width(requests - 1)),
    ];
    let scenario = BothPeers(Template::resp(&words, &[MEMBER]));
    let measured = seckill_loadgen::run(
        &scenario,
        &plan(Pace::Closed, requests, 6, 2),
        Transport::Sockets(&connect),
        &mut (),
    )
    .unwrap();
    assert_eq!(measured.tally.completed(), requests);
    assert_eq!(
        (measured.tally.counts.new, measured.tally.counts.again),
        (2 * requests, 0)
    );
    for server in &servers {
        assert_eq!(
            server.query(&[b"SCARD", b"members"]).unwrap(),
            Value::Int(requests as i64)
        );
    }
}
