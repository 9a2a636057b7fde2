//! `--notify URL`: real commands against a real Redis post their events to a
//! real HTTP (and HTTPS) receiver started here — a kill switch flip, dead
//! letters, reconcile drift, a consume loop stalled by a frozen Redis and its
//! recovery — and a receiver that never answers changes neither the outcome
//! nor the exit code: the command ends within two attempts and warns.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redis::Commands;
use serde_json::Value;

use crate::support::certs::private_ca;
use crate::support::orders::{
    buy_many, orders_key, seckill_on, spawn_seckill, sqlite_path, terminate, two_item_campaign,
    wait_exit,
};
use crate::support::spec::{campaign, seckill};
use crate::support::{Frozen, RedisServer};
use seckill::model::exit_codes::{DRIFT_FOUND, USAGE_ERROR};

/// One request the receiver read.
#[derive(Debug, Clone)]
struct Received {
    request_line: String,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// How the receiver answers.
#[derive(Clone, Copy, PartialEq)]
enum Answer {
    Ok,
    /// Reads the request and never answers (a hung webhook).
    Never,
}

/// A webhook receiver on a free port, recording every request.
struct Receiver {
    port: u16,
    received: Arc<Mutex<Vec<Received>>>,
    connections: Arc<Mutex<usize>>,
}

impl Receiver {
    fn start(answer: Answer) -> Receiver {
        Receiver::serve(answer, None)
    }

    /// Speaking TLS with this certificate and key.
    fn https(cert: &Path, key: &Path) -> Receiver {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let chain = CertificateDer::pem_file_iter(cert)
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_file(key).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap();
        Receiver::serve(Answer::Ok, Some(Arc::new(config)))
    }

    fn serve(answer: Answer, tls: Option<Arc<rustls::ServerConfig>>) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let received = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(Mutex::new(0));
        let (into, counted) = (Arc::clone(&received), Arc::clone(&connections));
        std::thread::spawn(move || {
            // Hung connections are kept open here until the test ends.
            let mut held = Vec::new();
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                *counted.lock().unwrap() += 1;
                if answer == Answer::Never {
                    held.push(stream);
                    continue;
                }
                let (into, tls) = (Arc::clone(&into), tls.clone());
                std::thread::spawn(move || match tls {
                    Some(config) => {
                        let server = rustls::ServerConnection::new(config).unwrap();
                        let mut stream = rustls::StreamOwned::new(server, stream);
                        answer_one(&mut stream, &into);
                    }
                    None => answer_one(&mut { stream }, &into),
                });
            }
        });
        Receiver {
            port,
            received,
            connections,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn requests(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    fn events(&self) -> Vec<Value> {
        self.requests().into_iter().map(|r| r.body).collect()
    }

    fn connections(&self) -> usize {
        *self.connections.lock().unwrap()
    }

    /// The first event named `name`, waiting for it up to `limit`.
    fn wait_for(&self, name: &str, limit: Duration) -> Value {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(event) = self.events().into_iter().find(|e| e["event"] == name) {
                return event;
            }
            assert!(
                Instant::now() < deadline,
                "no {name} event within {limit:?}; got {:?}",
                self.events()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Read one HTTP/1.1 request (Content-Length body), record it, answer 200.
fn answer_one(stream: &mut (impl Read + Write), into: &Mutex<Vec<Received>>) {
    let mut reader = BufReader::new(&mut *stream);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.trim_end().split_once(':') {
            headers.push((name.trim().to_string(), value.trim().to_string()));
        }
    }
    let length: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    into.lock().unwrap().push(Received {
        request_line: request_line.trim_end().to_string(),
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    });
    let _ =
        stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
    let _ = stream.flush();
}

/// The fields every event carries, whatever it is.
fn assert_envelope(event: &Value, name: &str, campaign: &str) {
    assert_eq!(event["event"], name, "{event}");
    assert_eq!(event["campaign"], campaign, "{event}");
    let at = event["at"].as_str().expect("at");
    assert!(
        chrono::DateTime::parse_from_rfc3339(at).is_ok() && at.ends_with('Z'),
        "at {at} is RFC 3339 UTC"
    );
    assert!(!event["host"].as_str().unwrap_or("").is_empty(), "{event}");
    assert!(event["detail"].is_object(), "{event}");
    assert!(!event["text"].as_str().unwrap_or("").is_empty(), "{event}");
}

#[test]
fn a_switch_flip_posts_one_event_naming_who_why_and_the_scope() {
    let server = RedisServer::start();
    let file = campaign("hooked")
        .item("1", 5)
        .item("2", 5)
        .orders_store(None)
        .write();
    let hook = Receiver::start(Answer::Ok);
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    // Showing the switch, or a dry run, tells nobody anything.
    seckill(&["shutdown-switch", "status", "--notify", &hook.url("/h")])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    seckill(&[
        "shutdown-switch",
        "on",
        "--dry-run",
        "--notify",
        &hook.url("/h"),
    ])
    .campaign(&file)
    .redis(&server)
    .succeeds();
    assert!(hook.events().is_empty(), "{:?}", hook.events());

    seckill(&[
        "shutdown-switch",
        "on",
        "--reason",
        "gateway down",
        "--by",
        "alice",
    ])
    .args(&["--notify", &hook.url("/hooks/seckill?channel=ops")])
    .campaign(&file)
    .redis(&server)
    .succeeds();
    // The command waited for its delivery: the event is there when it exits.
    let requests = hook.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    let request = &requests[0];
    assert_eq!(
        request.request_line,
        "POST /hooks/seckill?channel=ops HTTP/1.1"
    );
    assert_eq!(request.header("content-type"), Some("application/json"));
    let event = &request.body;
    assert_envelope(event, "kill_switch", "hooked");
    assert_eq!(event["item"], Value::Null);
    assert_eq!(event["detail"]["switch"], "on");
    assert_eq!(event["detail"]["by"], "alice");
    assert_eq!(event["detail"]["reason"], "gateway down");
    assert_eq!(event["detail"]["scope"], "campaign");
    assert_eq!(event["detail"]["items"], serde_json::json!(["1", "2"]));
    let text = event["text"].as_str().unwrap();
    assert!(
        text.contains("ON") && text.contains("alice") && text.contains("gateway down"),
        "{text}"
    );

    // From the environment, as a systemd unit sets it; one item.
    seckill(&["shutdown-switch", "off", "--item", "2", "--by", "bob"])
        .env("SECKILL_NOTIFY", &hook.url("/h"))
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let events = hook.events();
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[1]["item"], "2");
    assert_eq!(events[1]["detail"]["switch"], "off");
    assert_eq!(events[1]["detail"]["scope"], "item");
    assert_eq!(events[1]["detail"]["by"], "bob");
}

#[test]
fn every_webhook_given_gets_the_event_and_a_bad_url_is_refused() {
    let server = RedisServer::start();
    let file = campaign("two").item("1", 5).orders_store(None).write();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let (a, b) = (Receiver::start(Answer::Ok), Receiver::start(Answer::Ok));
    seckill(&["shutdown-switch", "on"])
        .env(
            "SECKILL_NOTIFY",
            &format!("{},{}", a.url("/a"), b.url("/b")),
        )
        .campaign(&file)
        .redis(&server)
        .succeeds();
    assert_eq!((a.events().len(), b.events().len()), (1, 1));

    let refused = seckill(&["shutdown-switch", "off", "--notify", "ftp://h/x"])
        .campaign(&file)
        .redis(&server)
        .fails_with(USAGE_ERROR)
        .stderr();
    assert!(refused.contains("--notify"), "{refused}");
}

#[test]
fn a_webhook_that_never_answers_neither_fails_nor_holds_the_command() {
    let server = RedisServer::start();
    let file = campaign("hung").item("1", 5).orders_store(None).write();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let hung = Receiver::start(Answer::Never);
    let url = format!("http://ops:s3cret@127.0.0.1:{}/h", hung.port);
    // Two attempts of 2 s and a pause: far below the limit, which only
    // catches a delivery without a timeout.
    let ran = seckill(&["shutdown-switch", "on", "--notify", &url])
        .campaign(&file)
        .redis(&server)
        .within(Duration::from_secs(15))
        .succeeds();
    let stderr = ran.stderr();
    assert!(
        stderr.contains("warning") && stderr.contains("ops:***@127.0.0.1"),
        "{stderr}"
    );
    assert!(
        stderr.contains("kill_switch event was not delivered"),
        "{stderr}"
    );
    assert!(!stderr.contains("s3cret"), "{stderr}");
    assert_eq!(hung.connections(), 2, "one attempt and one retry");
    // The switch is on all the same.
    let status = seckill(&["shutdown-switch", "status"])
        .campaign(&file)
        .redis(&server)
        .json()
        .succeeds()
        .json();
    assert_eq!(status["items"][0]["closed"], true);

    // Nothing listening at all: the same warning, the same success.
    let closed_port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let nobody = format!("http://127.0.0.1:{closed_port}/h");
    let stderr = seckill(&["shutdown-switch", "off", "--notify", &nobody])
        .campaign(&file)
        .redis(&server)
        .within(Duration::from_secs(15))
        .succeeds()
        .stderr();
    assert!(
        stderr.contains(&nobody) && stderr.contains("not delivered"),
        "{stderr}"
    );
}

#[test]
fn dead_letters_post_an_event_for_their_item() {
    let server = RedisServer::start();
    let file = two_item_campaign(100, 100);
    seckill_on(&file, &server, &["preheat"]).succeeds();
    buy_many(&server, &file, "1001", "a", 5);
    let mut conn = server.conn();
    let _: String = conn
        .xadd(orders_key("1001"), "*", &[("order_id", "not an order!")])
        .unwrap();
    seckill_on(&file, &server, &["consume", "--drain"]).succeeds();
    let hook = Receiver::start(Answer::Ok);
    let claims = seckill_on(&file, &server, &["pending-claim", "--min-idle", "0s"])
        .args(&["--notify", &hook.url("/dead")])
        .json()
        .succeeds()
        .json();
    assert_eq!(claims["items"][0]["dead_lettered"], 1);
    let events = hook.events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_envelope(&events[0], "dead_letter", "flash");
    assert_eq!(events[0]["item"], "1001");
    assert_eq!(events[0]["detail"]["dead_lettered"], 1);
    let text = events[0]["text"].as_str().unwrap();
    assert!(
        text.contains("1 entry") && text.contains("dead-letter list"),
        "{text}"
    );

    // Nothing left to dead-letter: nothing posted.
    seckill_on(&file, &server, &["pending-claim", "--min-idle", "0s"])
        .args(&["--notify", &hook.url("/dead")])
        .succeeds();
    assert_eq!(hook.events().len(), 1);
}

#[test]
fn reconcile_drift_posts_what_differs() {
    let server = RedisServer::start();
    let file = two_item_campaign(50, 50);
    seckill_on(&file, &server, &["preheat"]).succeeds();
    let ok = buy_many(&server, &file, "1002", "u", 5);
    seckill_on(&file, &server, &["consume", "--drain"]).succeeds();
    let hook = Receiver::start(Answer::Ok);
    // Balanced: nothing to say.
    seckill_on(&file, &server, &["reconcile", "--notify", &hook.url("/r")]).succeeds();
    assert!(hook.events().is_empty(), "{:?}", hook.events());

    let db = rusqlite::Connection::open(sqlite_path(&file)).unwrap();
    let victim = &ok[2];
    db.execute("DELETE FROM orders WHERE order_id = ?1", [victim])
        .unwrap();
    seckill_on(&file, &server, &["reconcile", "--notify", &hook.url("/r")]).fails_with(DRIFT_FOUND);
    let events = hook.events();
    assert_eq!(events.len(), 1, "{events:?}");
    let event = &events[0];
    assert_envelope(event, "reconcile_drift", "flash");
    assert_eq!(event["item"], "1002");
    assert_eq!(event["detail"]["exit_code"], DRIFT_FOUND);
    let item = &event["detail"]["items"][0];
    assert_eq!(item["missing_from_database"], 1);
    assert_eq!(item["missing_from_database_first"][0], victim.as_str());
    assert!(event["text"].as_str().unwrap().contains("DRIFT"), "{event}");
}

#[test]
fn a_consume_stalled_on_a_frozen_redis_posts_stalled_then_recovered() {
    let server = RedisServer::start();
    let file = two_item_campaign(10, 10);
    seckill_on(&file, &server, &["preheat"]).succeeds();
    let hook = Receiver::start(Answer::Ok);
    let url = hook.url("/stall");
    let mut consumer = spawn_seckill(
        &file,
        &server.url(),
        &[],
        &[
            "consume",
            "--notify",
            &url,
            "--notify-stall",
            "1s",
            "--response-timeout",
            "500ms",
            "--connect-timeout",
            "500ms",
        ],
        "consume",
    );
    // Running: the group reads an order bought now.
    buy_many(&server, &file, "1001", "a", 1);
    crate::support::orders::wait_until("the consumer stored the order", || {
        crate::support::orders::group_state(&server, &orders_key("1001")) == (0, 1, 0)
    });
    {
        let _frozen = Frozen::new(&mut server.conn());
        let stalled = hook.wait_for("loop_stalled", Duration::from_secs(30));
        assert_envelope(&stalled, "loop_stalled", "flash");
        assert_eq!(stalled["detail"]["command"], "consume");
        assert!(stalled["detail"]["failing_for_ms"].as_u64().unwrap() >= 1000);
        assert!(
            !stalled["detail"]["last_error"].as_str().unwrap().is_empty(),
            "{stalled}"
        );
        assert!(
            hook.events().iter().all(|e| e["event"] != "loop_recovered"),
            "recovered while still frozen"
        );
    }
    let recovered = hook.wait_for("loop_recovered", Duration::from_secs(30));
    assert_envelope(&recovered, "loop_recovered", "flash");
    assert!(recovered["detail"]["stalled_for_ms"].as_u64().unwrap() >= 1000);
    let names: Vec<Value> = hook.events().iter().map(|e| e["event"].clone()).collect();
    assert_eq!(names, ["loop_stalled", "loop_recovered"]);
    terminate(&consumer);
    assert!(wait_exit(&mut consumer).success());
}

#[test]
fn an_https_webhook_is_posted_over_tls_trusting_the_system_store() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let certs = private_ca(d);
    let hook = Receiver::https(&certs.cert, &certs.key);
    let url = format!("https://localhost:{}/secure", hook.port);
    let server = RedisServer::start();
    let file = campaign("tls").item("1", 5).orders_store(None).write();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    // The private CA, as `SSL_CERT_FILE` names a system's bundle.
    let ran = seckill(&["shutdown-switch", "on", "--notify", &url])
        .env_remove("SSL_CERT_DIR")
        .env("SSL_CERT_FILE", certs.ca.to_str().unwrap())
        .campaign(&file)
        .redis(&server)
        .succeeds();
    assert!(!ran.stderr().contains("warning"), "{}", ran.stderr());
    let events = hook.events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_envelope(&events[0], "kill_switch", "tls");

    // A server the store does not vouch for is never posted to.
    let stderr = seckill(&["shutdown-switch", "off", "--notify", &url])
        .campaign(&file)
        .redis(&server)
        .env_remove("SSL_CERT_FILE")
        .env_remove("SSL_CERT_DIR")
        .succeeds()
        .stderr();
    assert!(stderr.contains("not delivered"), "{stderr}");
    assert_eq!(hook.events().len(), 1);
}

#[test]
fn a_reconcile_that_cannot_check_posts_why() {
    let server = RedisServer::start();
    let file = two_item_campaign(50, 50);
    seckill_on(&file, &server, &["preheat"]).succeeds();
    seckill_on(&file, &server, &["consume", "--drain"]).succeeds();
    // The sale's keys are gone (expired, flushed): nothing to check against.
    let _: () = redis::cmd("FLUSHDB").query(&mut server.conn()).unwrap();
    let hook = Receiver::start(Answer::Ok);
    seckill_on(&file, &server, &["reconcile", "--notify", &hook.url("/r")])
        .fails_with(seckill::model::exit_codes::RUNTIME_ERROR);
    let events = hook.events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_envelope(&events[0], "reconcile_unchecked", "flash");
    assert_eq!(events[0]["detail"]["exit_code"], 1);
    let items = events[0]["detail"]["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{events:?}");
    assert!(!items[0]["problem"].as_str().unwrap_or("").is_empty());
}

#[test]
fn an_expire_loop_stalled_on_a_frozen_redis_posts_stalled_then_recovered() {
    let server = RedisServer::start();
    let file = campaign("resv")
        .item("1", 5)
        .payment_timeout("1s")
        .orders_store(None)
        .write();
    seckill(&["preheat"])
        .campaign(&file)
        .redis(&server)
        .succeeds();
    let hook = Receiver::start(Answer::Ok);
    let url = hook.url("/stall");
    let mut running = seckill(&["expire", "--loop", "--interval", "200ms"])
        .args(&["--notify", &url, "--notify-stall", "1s"])
        .args(&["--response-timeout", "500ms", "--connect-timeout", "500ms"])
        .campaign(&file)
        .redis(&server)
        .start();
    std::thread::sleep(Duration::from_millis(500));
    {
        let _frozen = Frozen::new(&mut server.conn());
        let stalled = hook.wait_for("loop_stalled", Duration::from_secs(30));
        assert_envelope(&stalled, "loop_stalled", "resv");
        assert_eq!(stalled["detail"]["command"], "expire");
    }
    let recovered = hook.wait_for("loop_recovered", Duration::from_secs(30));
    assert_eq!(recovered["detail"]["command"], "expire");
    terminate(running.child());
    let stopped = running.finish_within(Duration::from_secs(30));
    assert_eq!(stopped.code(), 0, "{}", stopped.describe());
}
