//! The tiny HTTP responder behind `--metrics-listen`: `GET /metrics` and
//! `GET /healthz`, and the listen address as operators write it (`:9464`,
//! node_exporter's way, or `HOST:PORT`).
//!
//! One connection at a time on a thread of its own, closed after each answer:
//! a scraper and a probe every few seconds need no more, and a broken client
//! cannot stop the responder. Each page is computed afresh per request by
//! [`Pages`], so what it says is current, not the worker's last view.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::Duration;

use anyhow::{Context, Result};

/// Content type of the classic Prometheus text exposition format.
pub(crate) const METRICS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";
const TEXT: &str = "text/plain; charset=utf-8";

/// What the responder serves; each call answers one request.
pub(crate) trait Pages {
    /// The exposition text of `/metrics`.
    fn metrics(&mut self) -> String;
    /// `/healthz`: `Ok(what answered)` is 200, `Err(what failed)` is 503.
    fn health(&mut self) -> Result<String, String>;
}

/// `--metrics-listen`: `:PORT` listens on every IPv4 interface (0.0.0.0, as
/// node_exporter's `:9100`), `HOST:PORT` on the address HOST resolves to first
/// (`127.0.0.1:9464`, `[::1]:9464`, `localhost:9464`). Port 0 picks a free one.
pub(crate) fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    let hint = "expected :PORT or HOST:PORT, e.g. :9464 or 127.0.0.1:9464";
    let (host, port) = text
        .rsplit_once(':')
        .ok_or_else(|| format!("{text:?} has no port ({hint})"))?;
    let port: u16 = port
        .parse()
        .map_err(|_| format!("{text:?}: {port:?} is not a port number ({hint})"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let host = if host.is_empty() { "0.0.0.0" } else { host };
    (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("{text:?}: cannot resolve {host:?}: {e}"))?
        .next()
        .ok_or_else(|| format!("{text:?}: {host:?} resolves to no address"))
}

/// Bind `listen` and answer requests from a thread named `metrics-http`
/// with the pages `make` builds there (they need not be `Send`: a database
/// connection is opened on that thread); returns the bound address.
pub(crate) fn serve<P: Pages>(
    listen: SocketAddr,
    make: impl FnOnce() -> P + Send + 'static,
) -> Result<SocketAddr> {
    let listener = TcpListener::bind(listen)
        .with_context(|| format!("cannot listen for metrics on {listen}"))?;
    let bound = listener.local_addr().context("metrics listener address")?;
    std::thread::Builder::new()
        .name("metrics-http".into())
        .spawn(move || {
            let mut pages = make();
            for stream in listener.incoming().flatten() {
                // A broken client must not stop the responder.
                let _ = answer(stream, &mut pages);
            }
        })
        .context("cannot start the metrics thread")?;
    Ok(bound)
}

/// Read one request head and answer it.
fn answer(mut stream: TcpStream, pages: &mut impl Pages) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.set_write_timeout(Some(Duration::from_secs(5)))?;
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let head = String::from_utf8_lossy(&head);
    let mut parts = head.lines().next().unwrap_or("").split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let (status, content_type, body) = match (method, path) {
        ("GET" | "HEAD", "/metrics") => ("200 OK", METRICS_CONTENT_TYPE, pages.metrics()),
        ("GET" | "HEAD", "/healthz") => match pages.health() {
            Ok(said) => ("200 OK", TEXT, format!("ok: {said}\n")),
            Err(failed) => (
                "503 Service Unavailable",
                TEXT,
                format!("unhealthy: {failed}\n"),
            ),
        },
        ("GET" | "HEAD", _) => (
            "404 Not Found",
            TEXT,
            "seckill serves /metrics and /healthz\n".to_string(),
        ),
        _ => ("405 Method Not Allowed", TEXT, "only GET\n".to_string()),
    };
    let mut response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    if method != "HEAD" {
        response.push_str(&body);
    }
    stream.write_all(response.as_bytes())?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses_read_like_node_exporters() {
        assert_eq!(
            parse_listen(":9464").unwrap(),
            "0.0.0.0:9464".parse().unwrap()
        );
        assert_eq!(
            parse_listen("127.0.0.1:9464").unwrap(),
            "127.0.0.1:9464".parse().unwrap()
        );
        assert_eq!(parse_listen("[::1]:0").unwrap(), "[::1]:0".parse().unwrap());
        assert!(parse_listen("localhost:9464").unwrap().ip().is_loopback());
        for bad in ["9464", "127.0.0.1", ":http", ":99999"] {
            assert!(parse_listen(bad).is_err(), "{bad}");
        }
    }
}
