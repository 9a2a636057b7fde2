//! A plain HTTP/1.1 client for the tests of `seckill serve`: one request per
//! connection (`Connection: close`), written and read by hand, so a test
//! sees exactly the bytes the server sent, and can send what a broken or
//! slow client sends.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// One answer.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.body))
    }

    /// A header's value (case-insensitive name).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Send raw bytes, read the whole answer (the server closes after it).
pub fn raw(addr: SocketAddr, bytes: &[u8]) -> std::io::Result<Answer> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    stream.write_all(bytes)?;
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply)?;
    parse(&reply).ok_or_else(|| {
        std::io::Error::other(format!(
            "not an HTTP answer: {:?}",
            String::from_utf8_lossy(&reply)
        ))
    })
}

fn parse(reply: &[u8]) -> Option<Answer> {
    let text = String::from_utf8_lossy(reply);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let mut lines = head.lines();
    let status = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    Some(Answer {
        status,
        headers,
        body: body.to_string(),
    })
}

/// `method path` with `body` as JSON.
pub fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<Answer> {
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    let mut bytes = request.into_bytes();
    bytes.extend_from_slice(body);
    raw(addr, &bytes)
}

/// `POST path` with a JSON body.
pub fn post(addr: SocketAddr, path: &str, body: &serde_json::Value) -> Answer {
    send(
        addr,
        "POST",
        path,
        &[("Content-Type", "application/json")],
        body.to_string().as_bytes(),
    )
    .unwrap_or_else(|e| panic!("POST {path}: {e}"))
}

/// `GET path`.
pub fn get(addr: SocketAddr, path: &str) -> Answer {
    send(addr, "GET", path, &[], b"").unwrap_or_else(|e| panic!("GET {path}: {e}"))
}

/// `POST /v1/items/{item}/buy` for `user` with `request_id`.
pub fn buy(addr: SocketAddr, item: &str, user: &str, request_id: &str) -> Answer {
    post(
        addr,
        &format!("/v1/items/{item}/buy"),
        &serde_json::json!({"user": user, "qty": 1, "request_id": request_id}),
    )
}
