//! Metrics for Prometheus: the sale's families (written in the text format
//! of `util::prometheus`), the counters `consume` keeps, and the tiny HTTP
//! responder behind `consume --metrics-listen`.
//!
//! `seckill status --format prometheus` writes the same families for
//! node_exporter's textfile collector. Every sample carries `campaign` and
//! `item` labels (the store retries only `campaign`: one database transaction
//! spans several items).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};

use std::time::Duration;

use anyhow::{Context, Result};

use crate::domain::item::SaleItem;
use crate::domain::orders::counters::{CONSUME, ConsumeCounters};
use crate::features::monitor::status::{ItemStatus, StatusReader, WindowState};
use crate::model::campaign::Campaign;
use crate::redis_client::conn::{Conn, RedisTarget};
pub(crate) use crate::util::prometheus::{CONTENT_TYPE, Exposition, Metric, counter, gauge};

pub(crate) const STOCK_LEFT: Metric = gauge("seckill_stock_left", "Units left in Redis.");
pub(crate) const STOCK_INITIAL: Metric = gauge("seckill_stock_initial", "Units preheated.");
pub(crate) const SOLD: Metric = counter(
    "seckill_sold_total",
    "Units sold: initial stock minus stock left (starts over after init).",
);
pub(crate) const BUYERS: Metric = gauge("seckill_buyers", "Distinct users who bought.");
pub(crate) const PREHEATED: Metric = gauge(
    "seckill_preheated",
    "1 when the item is preheated in Redis, 0 when never preheated or expired.",
);
pub(crate) const WINDOW_OPEN: Metric = gauge(
    "seckill_window_open",
    "1 while the sale window is open on the Redis clock, 0 before, after, or not preheated.",
);
pub(crate) const KILL_SWITCH: Metric = gauge(
    "seckill_kill_switch",
    "1 while the kill switch refuses every buy, else 0.",
);
pub(crate) const STREAM_LENGTH: Metric =
    gauge("seckill_stream_length", "Entries in the order stream.");
pub(crate) const STREAM_PENDING: Metric = gauge(
    "seckill_stream_pending",
    "Order entries delivered to a consumer and not yet stored and acknowledged.",
);
pub(crate) const STREAM_LAG: Metric = gauge(
    "seckill_stream_lag",
    "Order entries not yet delivered to any consumer.",
);
pub(crate) const DEAD_LETTER: Metric = counter(
    "seckill_dead_letter_total",
    "Entries moved to the dead-letter stream by pending-claim.",
);
pub(crate) const KEYS_EXPIRY: Metric = gauge(
    "seckill_keys_expiry_timestamp_seconds",
    "When the item's keys expire (Unix time); reconcile must run before.",
);
pub(crate) const RESERVATION_UNITS: Metric = gauge(
    "seckill_reservation_units",
    "Units of reservations by state (reserved, paid, expired, cancelled); payment_timeout campaigns.",
);
pub(crate) const ORDERS_STORED: Metric = counter(
    "seckill_orders_stored_total",
    "Order entries this consume process stored in the database and acknowledged.",
);
pub(crate) const STORE_RETRIES: Metric = counter(
    "seckill_store_retries_total",
    "Failed attempts of this consume process to store a batch in the order database.",
);
pub(crate) const REDIS_UP: Metric = gauge(
    "seckill_redis_up",
    "1 when this scrape read the item state from Redis, 0 when Redis failed.",
);

/// The families of [`ItemStatus`]: stock, sales, window, switch, stream, expiry.
pub(crate) fn add_statuses(exposition: &mut Exposition, campaign: &str, statuses: &[ItemStatus]) {
    for s in statuses {
        let labels = [("campaign", campaign), ("item", s.item.as_str())];
        let flag = |b: bool| if b { 1.0 } else { 0.0 };
        exposition.add(PREHEATED, &labels, flag(s.preheated));
        if let Some(stock) = s.stock_left {
            exposition.add(STOCK_LEFT, &labels, stock as f64);
        }
        if let Some(initial) = s.initial_stock {
            exposition.add(STOCK_INITIAL, &labels, initial as f64);
        }
        if let Some(sold) = s.sold {
            exposition.add(SOLD, &labels, sold as f64);
        }
        exposition.add(BUYERS, &labels, s.buyers as f64);
        exposition.add(
            WINDOW_OPEN,
            &labels,
            flag(s.window.state == WindowState::Open),
        );
        exposition.add(KILL_SWITCH, &labels, flag(s.kill_switch.on));
        exposition.add(STREAM_LENGTH, &labels, s.stream.length as f64);
        exposition.add(STREAM_PENDING, &labels, s.stream.pending as f64);
        if let Some(lag) = s.stream.lag {
            exposition.add(STREAM_LAG, &labels, lag as f64);
        }
        exposition.add(DEAD_LETTER, &labels, s.dead_letter as f64);
        if let Some(ms) = s.expires_in_ms {
            let at = (s.redis_time_ms + ms) as f64 / 1000.0;
            exposition.add(KEYS_EXPIRY, &labels, at);
        }
        let r = &s.reservations;
        if r != &crate::domain::reservations::Totals::default() {
            for (state, units) in [
                ("reserved", r.reserved_units),
                ("paid", r.paid_units),
                ("expired", r.expired_units),
                ("cancelled", r.cancelled_units),
            ] {
                let labels = [labels[0], labels[1], ("state", state)];
                exposition.add(RESERVATION_UNITS, &labels, units as f64);
            }
        }
    }
}

/// Add this process' consume counters; every item of the campaign gets a series from 0.
pub(crate) fn add_consume_counters(
    exposition: &mut Exposition,
    counters: &ConsumeCounters,
    campaign: &Campaign,
) {
    let stored = counters.stored();
    for item in &campaign.items {
        let n = stored.get(&item.id).copied().unwrap_or(0);
        exposition.add(
            ORDERS_STORED,
            &[("campaign", &campaign.id), ("item", &item.id)],
            n as f64,
        );
    }
    exposition.add(
        STORE_RETRIES,
        &[("campaign", &campaign.id)],
        counters.store_retries() as f64,
    );
}

/// Serve `/metrics` for a running `consume` on `listen` from a thread of its
/// own: each scrape reads every item from Redis on its own connection (one
/// script call per item) and adds this process' counters. Returns the bound
/// address (port 0 picks a free one).
pub(crate) fn serve_consume(
    listen: SocketAddr,
    campaign: Campaign,
    target: RedisTarget,
) -> Result<SocketAddr> {
    let mut conn: Option<Conn> = None;
    let mut reader = StatusReader::default();
    serve(listen, move || {
        let mut exposition = Exposition::default();
        let read = (|| -> Result<Vec<ItemStatus>> {
            let conn = match &mut conn {
                Some(conn) => conn,
                None => conn.insert(target.connect()?),
            };
            reader.read_items(conn, &SaleItem::select(&campaign, None)?)
        })();
        let up = match read {
            Ok(statuses) => {
                add_statuses(&mut exposition, &campaign.id, &statuses);
                1.0
            }
            Err(_) => {
                // The old connection may still owe a reply: the next scrape opens a fresh one.
                conn = None;
                0.0
            }
        };
        exposition.add(REDIS_UP, &[("campaign", &campaign.id)], up);
        add_consume_counters(&mut exposition, &CONSUME, &campaign);
        exposition.render()
    })
}

/// A minimal HTTP/1.1 responder: `GET /metrics` answers `render()`, anything
/// else 404 (405 for other methods). One connection at a time, closed after
/// each answer: a scraper every few seconds needs no more.
pub(crate) fn serve(
    listen: SocketAddr,
    mut render: impl FnMut() -> String + Send + 'static,
) -> Result<SocketAddr> {
    let listener = TcpListener::bind(listen)
        .with_context(|| format!("cannot listen for metrics on {listen}"))?;
    let bound = listener.local_addr().context("metrics listener address")?;
    std::thread::Builder::new()
        .name("metrics-http".into())
        .spawn(move || {
            for stream in listener.incoming().flatten() {
                // A broken client must not stop the responder.
                let _ = answer(stream, &mut render);
            }
        })
        .context("cannot start the metrics thread")?;
    Ok(bound)
}

/// Read one request head and answer it.
fn answer(mut stream: TcpStream, render: &mut impl FnMut() -> String) -> std::io::Result<()> {
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
        ("GET" | "HEAD", "/metrics") => ("200 OK", CONTENT_TYPE, render()),
        ("GET" | "HEAD", _) => (
            "404 Not Found",
            "text/plain; charset=utf-8",
            "seckill consume serves metrics at /metrics\n".to_string(),
        ),
        _ => (
            "405 Method Not Allowed",
            "text/plain; charset=utf-8",
            "only GET\n".to_string(),
        ),
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
    fn labels_and_numbers_are_escaped_and_spelled_as_the_format_wants() {
        let mut e = Exposition::default();
        e.add(
            STOCK_LEFT,
            &[("campaign", "a\"b\\c\nd"), ("item", "1")],
            3.0,
        );
        e.add(STOCK_LEFT, &[("campaign", "x"), ("item", "2")], 0.5);
        e.add(KEYS_EXPIRY, &[("campaign", "x"), ("item", "2")], f64::NAN);
        let text = e.render();
        assert!(text.contains("seckill_stock_left{campaign=\"a\\\"b\\\\c\\nd\",item=\"1\"} 3\n"));
        assert!(text.contains("seckill_stock_left{campaign=\"x\",item=\"2\"} 0.5\n"));
        assert!(text.contains("} NaN\n"));
        assert_eq!(text.matches("# TYPE seckill_stock_left gauge").count(), 1);
    }
}
