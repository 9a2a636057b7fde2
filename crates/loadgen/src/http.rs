//! HTTP/1.1 as the engine speaks it, for load tests through an HTTP front
//! door: a request packed once (a [`crate::Template`] whose fields sit in
//! the body, so `Content-Length` never changes), answers framed by their
//! `Content-Length` on keep-alive connections, one request at a time per
//! connection as a browser sends them. An answer with `Connection: close`
//! makes the engine open a new connection for the next request.
//!
//! May import: scenario.

use anyhow::{Result, anyhow};

use crate::scenario::Protocol;

/// HTTP/1.1 answers, framed for the engine.
pub struct Http1;

/// One answer: its status, its body, and whether the server closes the connection after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
    pub close: bool,
}

impl Protocol for Http1 {
    type Reply = Answer;

    fn parse(input: &[u8]) -> Result<Option<(Answer, usize)>> {
        parse_answer(input)
    }

    fn closes(answer: &Answer) -> bool {
        answer.close
    }
}

/// A request with a body: its head (`Host`, `Content-Type`, `Content-Length`) and `body`.
pub fn request(method: &str, path: &str, host: &str, content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut packed = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    packed.extend_from_slice(body);
    packed
}

/// The answer at the front of `input` and the bytes it took; `None` while it is still arriving.
pub fn parse_answer(input: &[u8]) -> Result<Option<(Answer, usize)>> {
    let Some(end) = input.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Ok(None);
    };
    let head = String::from_utf8_lossy(&input[..end]);
    let lower = head.to_ascii_lowercase();
    let length = lower
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let body_start = end + 4;
    if input.len() < body_start + length {
        return Ok(None);
    }
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow!("not an HTTP answer"))?;
    let answer = Answer {
        status,
        body: input[body_start..body_start + length].to_vec(),
        close: lower.contains("connection: close"),
    };
    Ok(Some((answer, body_start + length)))
}

/// The string value of `"name":"..."` in a JSON body (up to the next `"`),
/// without parsing the whole body.
pub fn json_string<'a>(body: &'a [u8], name: &str) -> Option<&'a str> {
    let text = std::str::from_utf8(body).ok()?;
    let marker = format!("\"{name}\":\"");
    let start = text.find(&marker)? + marker.len();
    let end = text[start..].find('"')?;
    Some(&text[start..start + end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_framed_by_their_content_length() {
        let wire = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nContent-Length: 16\r\n\r\n{\"outcome\":\"ok\"}HTTP/1.1 503";
        let (answer, used) = parse_answer(wire).unwrap().unwrap();
        assert_eq!(used, wire.len() - "HTTP/1.1 503".len());
        assert_eq!(answer.status, 200);
        assert_eq!(json_string(&answer.body, "outcome"), Some("ok"));
        assert!(!answer.close);
        for cut in 0..used {
            assert!(
                parse_answer(&wire[..cut]).unwrap().is_none(),
                "cut at {cut}"
            );
        }
        let closing =
            b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\ncontent-length: 0\r\n\r\n";
        let (answer, _) = parse_answer(closing).unwrap().unwrap();
        assert_eq!((answer.status, answer.close), (503, true));
        assert!(parse_answer(b"garbage\r\n\r\n").is_err());
    }

    #[test]
    fn requests_carry_their_length_and_fields_are_read_from_bodies() {
        let packed = request("POST", "/v1/x", "h:1", "application/json", b"{}");
        assert_eq!(
            packed,
            b"POST /v1/x HTTP/1.1\r\nHost: h:1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
        );
        assert_eq!(
            json_string(br#"{"outcome":"sold_out","x":1}"#, "outcome"),
            Some("sold_out")
        );
        assert_eq!(
            json_string(br#"{"error":{"kind":"overloaded"}}"#, "kind"),
            Some("overloaded")
        );
        assert_eq!(json_string(b"{}", "kind"), None);
    }
}
