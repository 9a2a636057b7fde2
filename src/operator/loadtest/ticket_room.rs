//! `seckill loadtest --target` on an item with a ticket waiting room
//! (docs/waiting-room.md, "Ticket mode"): what each shopper's conversation
//! recorded ([`TicketTrace`]), what Redis did meanwhile ([`RedisSide`]: the
//! clients' commands counted on a `MONITOR` connection, `INFO commandstats`
//! and the room hash before and after), and the judgment
//! of both ([`TicketRoomReport`]): rates, Redis calls per join, admissions
//! achieved against asked, Kendall τ-b of admission against arrival, waits,
//! the clock error ε of each instance, and `ok` without admission.
//!
//! Definitions (docs/loadtest.md says the same to users):
//! - arrival order: the midpoint of the client's wall-clock send and receive
//!   of the join; admission order: the order the cursor passes the tickets,
//!   i.e. their `arrival_ms` (admitted ⇔ `arrival_ms ≤ cursor`, the cursor
//!   never moves back), over the tickets seen admitted;
//! - ε of an instance: the largest distance by which a join's `arrival_ms`
//!   falls outside the client's [sent, received] of that join;
//! - `ok` without admission: an `ok` (or `unreplicated`) buy that was sent
//!   before the shopper held an `admitted` answer whose `cursor_ms` had
//!   reached the ticket's `arrival_ms` (an instance's cursor mirrors Redis's
//!   and never runs ahead of it, so such an answer proves the buy script saw
//!   the cursor past the ticket).
//!
//! Within loadtest it uses: queue.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use redis::Value;
use serde::Serialize;

use super::queue::{discordant_pairs, kendall_tau_b, percentiles};
use crate::model::keys::ItemKeys;
use crate::redis_client::conn::{Conn, RedisTarget};
use crate::redis_client::raw::RawConnection;

/// One shopper's attempt in a ticket room, as the client saw it.
#[derive(Debug, Clone, Default)]
pub(crate) struct TicketTrace {
    /// The serve instance (index in `--target`) that answered the join.
    pub(crate) join_peer: usize,
    /// Wall clock (ms since the epoch, fractional) when the join was written and answered.
    pub(crate) join_sent_ms: f64,
    pub(crate) join_received_ms: f64,
    /// The ticket's arrival, as the join answered it.
    pub(crate) arrival_ms: Option<i64>,
    /// Wall clock when the first `admitted` answer came, and its `cursor_ms`.
    pub(crate) admitted_seen_ms: Option<f64>,
    pub(crate) admitted_cursor_ms: Option<i64>,
    /// When the answering instance saw the cursor pass the ticket (Redis ms).
    pub(crate) admitted_from_ms: Option<i64>,
    /// The buy's last answer (`ok`, `sold_out`…), when one was sent.
    pub(crate) bought: Option<String>,
}

/// What Redis counted, read before and after the run.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RedisSnapshot {
    /// Calls of every command (`INFO commandstats`, summed over masters).
    calls: u64,
    /// Of which scripts (`eval*`, `fcall*`).
    script_calls: u64,
    /// The room hash's `admitted_total` and `arrived_total`.
    admitted_total: i64,
    arrived_total: i64,
}

/// Redis as the load test reads it, when it can.
pub(crate) enum RedisSide {
    /// Read before the run: the connection and the first snapshot.
    Read {
        conn: Box<Conn>,
        room_key: String,
        before: RedisSnapshot,
        /// Counting the clients' commands, or why not.
        monitor: std::result::Result<Monitor, String>,
    },
    /// Why the figures are unknown.
    Unknown(String),
}

impl RedisSide {
    /// Connect to `target` (the campaign's Redis: `--redis` or `redis:`;
    /// `None` when neither was given) and read the first snapshot.
    pub(crate) fn before(target: Option<&RedisTarget>, campaign: &str, item: &str) -> RedisSide {
        let Some(target) = target else {
            return RedisSide::Unknown(
                "no Redis URL (give --redis or the campaign file's redis:)".into(),
            );
        };
        let room_key = ItemKeys::live(campaign, item).room().room;
        let read = || -> Result<RedisSide> {
            let mut conn = target.connect()?;
            let before = snapshot(&mut conn, &room_key)?;
            let monitor = Monitor::start(target).map_err(|e| format!("{e:#}"));
            Ok(RedisSide::Read {
                conn: Box::new(conn),
                room_key: room_key.clone(),
                before,
                monitor,
            })
        };
        read().unwrap_or_else(|error| {
            RedisSide::Unknown(format!("cannot read {}: {error:#}", target.display))
        })
    }

    /// The commands clients sent (`Err(why)` when not counted), and the
    /// second snapshot less the first (`Err(why)` when unknown).
    fn delta(
        self,
    ) -> (
        std::result::Result<u64, String>,
        std::result::Result<RedisSnapshot, String>,
    ) {
        match self {
            RedisSide::Unknown(why) => (Err(why.clone()), Err(why)),
            RedisSide::Read {
                mut conn,
                room_key,
                before,
                monitor,
            } => {
                let sent = monitor.and_then(|m| m.stop(&mut conn).map_err(|e| format!("{e:#}")));
                let after = match snapshot(&mut conn, &room_key) {
                    Ok(after) => after,
                    Err(error) => return (sent, Err(format!("{error:#}"))),
                };
                // The first snapshot's reads are counted in the second, the
                // monitor's own MONITOR and ECHO too: not the run's.
                let own = OWN_READS + 2;
                (
                    sent,
                    Ok(RedisSnapshot {
                        calls: after.calls.saturating_sub(before.calls + own),
                        script_calls: after.script_calls.saturating_sub(before.script_calls),
                        admitted_total: after.admitted_total - before.admitted_total,
                        arrived_total: after.arrived_total - before.arrived_total,
                    }),
                )
            }
        }
    }
}

/// Commands one [`snapshot`] sends on a standalone Redis (INFO, HMGET).
const OWN_READS: u64 = 2;

/// A `MONITOR` connection counting, while the run goes, the commands that
/// clients send (`[0 127.0.0.1:5000]`), not those a script runs (`[0 lua]`):
/// Redis's `INFO commandstats` counts both, and only the first are calls.
pub(crate) struct Monitor {
    marker: String,
    counter: JoinHandle<Result<u64>>,
}

impl Monitor {
    /// Open the connection (plain TCP, standalone only) and wait until
    /// Redis has said it monitors.
    fn start(target: &RedisTarget) -> Result<Monitor> {
        let Some(plain) = target.plain_tcp() else {
            bail!("the clients' commands are counted on a plain-TCP standalone Redis only");
        };
        let mut stream: TcpStream =
            RawConnection::connect(&plain, target.connect_timeout(), target.response_timeout())?
                .into_stream();
        stream
            .write_all(b"MONITOR\r\n")
            .context("cannot send MONITOR")?;
        let mut first = [0u8; 5];
        stream
            .set_read_timeout(Some(target.response_timeout()))
            .context("cannot set a read timeout")?;
        stream
            .read_exact(&mut first)
            .context("no answer to MONITOR")?;
        if &first != b"+OK\r\n" {
            bail!(
                "MONITOR was refused ({}): the load test's user needs it to count calls",
                String::from_utf8_lossy(&first).trim()
            );
        }
        let marker = format!("seckill-loadtest-end-{:016x}", rand::random::<u64>());
        let end = marker.clone();
        let counter = std::thread::Builder::new()
            .name("loadtest-monitor".into())
            .spawn(move || count_until(stream, &end))
            .context("cannot start the monitor thread")?;
        Ok(Monitor { marker, counter })
    }

    /// Send the end marker on `conn` and take the count of what came before it.
    fn stop(self, conn: &mut Conn) -> Result<u64> {
        let _: String = redis::cmd("ECHO")
            .arg(&self.marker)
            .query(conn)
            .context("cannot send the monitor's end marker")?;
        self.counter
            .join()
            .map_err(|_| anyhow!("the monitor thread panicked"))?
    }
}

/// Count the monitored lines that are not a script's own commands, up to
/// the one carrying `marker`.
fn count_until(mut stream: TcpStream, marker: &str) -> Result<u64> {
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .context("cannot set a read timeout")?;
    let mut pending: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    let mut sent = 0u64;
    loop {
        let n = stream
            .read(&mut chunk)
            .context("the MONITOR connection failed")?;
        if n == 0 {
            bail!("Redis closed the MONITOR connection");
        }
        pending.extend_from_slice(&chunk[..n]);
        let mut start = 0;
        while let Some(at) = pending[start..].windows(2).position(|w| w == b"\r\n") {
            let line = &pending[start..start + at];
            start += at + 2;
            let text = String::from_utf8_lossy(line);
            if text.contains(marker) {
                return Ok(sent);
            }
            sent += u64::from(from_a_client(&text));
        }
        pending.drain(..start);
    }
}

/// Whether a MONITOR line (`+1700000000.123456 [0 127.0.0.1:5000] "get" "k"`)
/// is a client's command, not a script's (`[0 lua]`).
fn from_a_client(line: &str) -> bool {
    let Some(source) = line
        .split_once(" [")
        .and_then(|(_, rest)| rest.split_once(']'))
        .map(|(source, _)| source)
    else {
        return false;
    };
    !source.ends_with(" lua")
}

/// `INFO commandstats` (every master of a cluster) and the room hash's totals.
fn snapshot(conn: &mut Conn, room_key: &str) -> Result<RedisSnapshot> {
    let mut texts = Vec::new();
    match conn {
        Conn::Cluster(cluster) => {
            let routing = redis::cluster_routing::RoutingInfo::MultiNode((
                redis::cluster_routing::MultipleNodeRoutingInfo::AllMasters,
                None,
            ));
            let reply = cluster
                .route_command(redis::cmd("INFO").arg("commandstats"), routing)
                .context("cannot read INFO commandstats from the cluster's masters")?;
            let Value::Map(nodes) = reply else {
                return Err(anyhow!(
                    "INFO commandstats on every master answered {reply:?}"
                ));
            };
            for (_, info) in nodes {
                texts.push(redis::from_redis_value::<String>(info).context("INFO text")?);
            }
        }
        _ => texts.push(
            redis::cmd("INFO")
                .arg("commandstats")
                .query::<String>(conn)
                .context("cannot read INFO commandstats")?,
        ),
    }
    let mut taken = RedisSnapshot::default();
    for text in &texts {
        let (calls, scripts) = command_calls(text);
        taken.calls += calls;
        taken.script_calls += scripts;
    }
    let (admitted, arrived): (Option<i64>, Option<i64>) = redis::cmd("HMGET")
        .arg(room_key)
        .arg("admitted_total")
        .arg("arrived_total")
        .query(conn)
        .with_context(|| format!("cannot read the room hash {room_key}"))?;
    taken.admitted_total = admitted.unwrap_or(0);
    taken.arrived_total = arrived.unwrap_or(0);
    Ok(taken)
}

/// Calls of every command, and of scripts, in an `INFO commandstats` text
/// (`cmdstat_evalsha:calls=12,usec=…`).
fn command_calls(info: &str) -> (u64, u64) {
    let (mut calls, mut scripts) = (0, 0);
    for line in info.lines() {
        let Some((name, stats)) = line
            .strip_prefix("cmdstat_")
            .and_then(|rest| rest.split_once(':'))
        else {
            continue;
        };
        let n: u64 = stats
            .split(',')
            .find_map(|field| field.strip_prefix("calls="))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        calls += n;
        if name.starts_with("eval") || name.starts_with("fcall") {
            scripts += n;
        }
    }
    (calls, scripts)
}

/// The clock error of one serve instance.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct InstanceClock {
    pub(crate) target: String,
    /// Joins it answered with a ticket.
    pub(crate) joins: u64,
    /// The largest distance by which an `arrival_ms` fell outside the
    /// client's [sent, received] of its join, ms (0: every one inside).
    pub(crate) epsilon_ms: f64,
    /// Arrivals before the join was sent, and after it was answered.
    pub(crate) early: u64,
    pub(crate) late: u64,
}

/// The ticket room's figures (docs/loadtest.md, "Through a ticket room").
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TicketRoomReport {
    /// Joins answered with a ticket; position polls and buys answered.
    pub(crate) joins: u64,
    pub(crate) polls: u64,
    pub(crate) buys: u64,
    /// Per second of the run.
    pub(crate) join_rate: f64,
    pub(crate) poll_rate: f64,
    pub(crate) buy_rate: f64,
    /// Buys an instance refused from memory (`not_admitted`: its mirror of
    /// the cursor was behind the instance that said `admitted`), sent again.
    pub(crate) buys_retried: u64,
    /// Commands the clients (serve instances) sent Redis during the run,
    /// counted by a `MONITOR` connection (a script's own commands not
    /// counted: one script call is one call).
    pub(crate) redis_calls: Option<u64>,
    /// `redis_calls` ÷ `joins`.
    pub(crate) redis_calls_per_join: Option<f64>,
    /// Every command Redis ran during the run, scripts' own included
    /// (`INFO commandstats` before and after, less the load test's reads),
    /// per join, and the script calls among them.
    pub(crate) redis_commands: Option<u64>,
    pub(crate) redis_commands_per_join: Option<f64>,
    pub(crate) redis_script_calls: Option<u64>,
    /// Why a Redis figure is null.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) redis_unknown: Option<String>,
    /// The room hash's `admitted_total` and `arrived_total` over the run.
    pub(crate) room_admitted: Option<i64>,
    pub(crate) room_arrived: Option<i64>,
    /// The campaign's `admit_rate` (per second).
    pub(crate) admit_rate: f64,
    /// Tickets seen admitted, and their admissions per second over the
    /// admission span (first to last `admitted_from_ms`).
    pub(crate) admitted: u64,
    pub(crate) admit_rate_achieved: f64,
    /// Admission order (the cursor's: by `arrival_ms`) against arrival
    /// order (the client's), over the tickets seen admitted.
    pub(crate) kendall_tau_b: f64,
    pub(crate) admitted_out_of_arrival_order: u64,
    /// From the join's send to the first `admitted` answer, ms.
    pub(crate) wait_p50_ms: f64,
    pub(crate) wait_p99_ms: f64,
    pub(crate) wait_max_ms: f64,
    /// The largest ε over the instances, and each instance's.
    pub(crate) clock_error_ms: f64,
    pub(crate) instances: Vec<InstanceClock>,
    /// Must be 0 (definition in the module header and docs/loadtest.md).
    pub(crate) ok_without_admission: u64,
}

/// What the conversations counted besides the traces.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TicketCounts {
    pub(crate) polls: u64,
    pub(crate) buys: u64,
    pub(crate) buys_retried: u64,
}

/// Judge the run: `traces` of every attempt, `targets` as given, `elapsed_s`
/// of the run, `redis` read before it (read again now).
pub(crate) fn judge(
    traces: &[TicketTrace],
    counts: TicketCounts,
    targets: &[String],
    elapsed_s: f64,
    admit_rate: f64,
    redis: RedisSide,
) -> TicketRoomReport {
    let per_second = |n: u64| n as f64 / elapsed_s.max(1e-9);
    let joined: Vec<&TicketTrace> = traces.iter().filter(|t| t.arrival_ms.is_some()).collect();
    let joins = joined.len() as u64;
    let (sent, delta) = redis.delta();
    let redis_unknown = match (&sent, &delta) {
        (Err(why), _) | (_, Err(why)) => Some(why.clone()),
        _ => None,
    };
    let redis_calls = sent.ok();
    let delta = delta.ok();
    let per_join = |n: Option<u64>| {
        n.filter(|_| joins > 0)
            .map(|calls| calls as f64 / joins as f64)
    };
    let mut instances: Vec<InstanceClock> = targets
        .iter()
        .map(|t| InstanceClock {
            target: t.clone(),
            joins: 0,
            epsilon_ms: 0.0,
            early: 0,
            late: 0,
        })
        .collect();
    for t in &joined {
        let Some(clock) = instances.get_mut(t.join_peer) else {
            continue;
        };
        let arrival = t.arrival_ms.unwrap_or_default() as f64;
        clock.joins += 1;
        // arrival_ms is whole milliseconds: a join inside one millisecond
        // may carry its start.
        let early = t.join_sent_ms.floor() - arrival;
        let late = arrival - t.join_received_ms;
        if early > 0.0 {
            clock.early += 1;
        }
        if late > 0.0 {
            clock.late += 1;
        }
        clock.epsilon_ms = clock.epsilon_ms.max(early).max(late);
    }
    let clock_error_ms = instances.iter().map(|c| c.epsilon_ms).fold(0.0, f64::max);

    let admitted: Vec<&TicketTrace> = joined
        .iter()
        .copied()
        .filter(|t| t.admitted_seen_ms.is_some())
        .collect();
    let arrival_order: Vec<f64> = admitted
        .iter()
        .map(|t| (t.join_sent_ms + t.join_received_ms) / 2.0)
        .collect();
    let admission_order: Vec<f64> = admitted
        .iter()
        .map(|t| t.arrival_ms.unwrap_or_default() as f64)
        .collect();
    let mut waits: Vec<f64> = admitted
        .iter()
        .map(|t| t.admitted_seen_ms.unwrap_or_default() - t.join_sent_ms)
        .collect();
    let (wait_p50_ms, wait_p99_ms, wait_max_ms) = percentiles(&mut waits);
    let mut moments: Vec<i64> = admitted.iter().filter_map(|t| t.admitted_from_ms).collect();
    moments.sort_unstable();
    let admit_rate_achieved = match (moments.first(), moments.last()) {
        (Some(first), Some(last)) if last > first => {
            (moments.len() - 1) as f64 * 1000.0 / (last - first) as f64
        }
        _ => 0.0,
    };
    let ok_without_admission = traces
        .iter()
        .filter(|t| matches!(t.bought.as_deref(), Some("ok" | "unreplicated")))
        .filter(|t| match (t.arrival_ms, t.admitted_cursor_ms) {
            (Some(arrival), Some(cursor)) => cursor < arrival,
            _ => true,
        })
        .count() as u64;
    TicketRoomReport {
        joins,
        polls: counts.polls,
        buys: counts.buys,
        join_rate: per_second(joins),
        poll_rate: per_second(counts.polls),
        buy_rate: per_second(counts.buys),
        buys_retried: counts.buys_retried,
        redis_calls_per_join: per_join(redis_calls),
        redis_calls,
        redis_commands: delta.map(|d| d.calls),
        redis_commands_per_join: per_join(delta.map(|d| d.calls)),
        redis_script_calls: delta.map(|d| d.script_calls),
        redis_unknown,
        room_admitted: delta.map(|d| d.admitted_total),
        room_arrived: delta.map(|d| d.arrived_total),
        admit_rate,
        admitted: admitted.len() as u64,
        admit_rate_achieved,
        kendall_tau_b: kendall_tau_b(&arrival_order, &admission_order),
        admitted_out_of_arrival_order: discordant_pairs(&arrival_order, &admission_order),
        wait_p50_ms,
        wait_p99_ms,
        wait_max_ms,
        clock_error_ms,
        instances,
        ok_without_admission,
    }
}

/// The report's lines for the table (`label`, value).
pub(crate) fn rows(r: &TicketRoomReport) -> Vec<(&'static str, String)> {
    let unknown = || {
        format!(
            "unknown ({})",
            r.redis_unknown.as_deref().unwrap_or("no join")
        )
    };
    let redis = match (r.redis_calls, r.redis_calls_per_join) {
        (Some(calls), Some(per_join)) => format!(
            "{per_join:.3} per join ({calls} calls from clients ÷ {} joins)",
            r.joins
        ),
        _ => unknown(),
    };
    let commands = match (r.redis_commands, r.redis_commands_per_join) {
        (Some(commands), Some(per_join)) => format!(
            "{per_join:.3} per join ({commands}, scripts' own included; {} script calls)",
            r.redis_script_calls.unwrap_or(0)
        ),
        _ => unknown(),
    };
    let clocks: Vec<String> = r
        .instances
        .iter()
        .map(|c| {
            format!(
                "{} {:.1} ms ({} joins, {} early, {} late)",
                c.target, c.epsilon_ms, c.joins, c.early, c.late
            )
        })
        .collect();
    let mut rows = vec![
        (
            "room requests",
            format!(
                "{} joins {:.0}/s · {} polls {:.0}/s · {} buys {:.0}/s ({} sent again)",
                r.joins, r.join_rate, r.polls, r.poll_rate, r.buys, r.buy_rate, r.buys_retried
            ),
        ),
        ("Redis calls", redis),
        ("Redis commands", commands),
        (
            "admissions",
            format!(
                "{:.0}/s asked, {:.0}/s achieved ({} seen admitted{})",
                r.admit_rate,
                r.admit_rate_achieved,
                r.admitted,
                r.room_admitted
                    .map(|n| format!(", room admitted_total +{n}"))
                    .unwrap_or_default()
            ),
        ),
        (
            "kendall τ-b",
            format!(
                "{:.4} admission vs arrival ({} pairs out of order)",
                r.kendall_tau_b, r.admitted_out_of_arrival_order
            ),
        ),
        (
            "wait ms",
            format!(
                "p50 {:.0} · p99 {:.0} · max {:.0}",
                r.wait_p50_ms, r.wait_p99_ms, r.wait_max_ms
            ),
        ),
        ("clock error ε", format!("{:.1} ms", r.clock_error_ms)),
    ];
    for clock in clocks {
        rows.push(("", clock));
    }
    rows.push(("ok without admission", r.ok_without_admission.to_string()));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commandstats_calls_are_summed_and_scripts_told_apart() {
        let info = "# Commandstats\r\n\
            cmdstat_evalsha:calls=12,usec=300,usec_per_call=25.00,rejected_calls=0,failed_calls=0\r\n\
            cmdstat_info:calls=2,usec=10,usec_per_call=5.00\r\n\
            cmdstat_fcall_ro:calls=1,usec=1\r\n";
        assert_eq!(command_calls(info), (15, 13));
        assert_eq!(command_calls(""), (0, 0));
    }

    #[test]
    fn monitor_lines_from_clients_are_told_from_scripts_commands() {
        assert!(from_a_client(
            r#"+1700000000.123456 [0 127.0.0.1:5000] "evalsha" "abc""#
        ));
        assert!(!from_a_client(
            r#"+1700000000.123456 [0 lua] "hset" "k" "f" "v""#
        ));
        assert!(!from_a_client("+OK"));
    }

    fn trace(peer: usize, sent: f64, received: f64, arrival: i64) -> TicketTrace {
        TicketTrace {
            join_peer: peer,
            join_sent_ms: sent,
            join_received_ms: received,
            arrival_ms: Some(arrival),
            admitted_seen_ms: Some(received + 100.0),
            admitted_cursor_ms: Some(arrival),
            admitted_from_ms: Some(arrival + 50),
            bought: Some("ok".into()),
        }
    }

    /// ε is the distance outside [sent, received], per instance; τ-b sees
    /// two arrivals the clocks swapped; an `ok` whose admitted answer had
    /// the cursor below the arrival counts as without admission.
    #[test]
    fn clock_error_order_and_admission_are_judged_per_trace() {
        let mut traces = vec![
            trace(0, 1000.2, 1001.5, 1001),
            trace(1, 1002.0, 1003.0, 1007), // 4 ms late
            trace(0, 1004.0, 1005.0, 1004),
            trace(1, 1010.0, 1011.0, 1003), // 7 ms early
        ];
        traces[2].admitted_cursor_ms = Some(1003);
        let report = judge(
            &traces,
            TicketCounts::default(),
            &["a".into(), "b".into()],
            1.0,
            200.0,
            RedisSide::Unknown("test".into()),
        );
        assert_eq!(report.instances[0].epsilon_ms, 0.0);
        assert_eq!(report.instances[1].epsilon_ms, 7.0);
        assert_eq!(
            (report.instances[1].early, report.instances[1].late),
            (1, 1)
        );
        assert_eq!(report.clock_error_ms, 7.0);
        assert_eq!(report.admitted_out_of_arrival_order, 3);
        assert!(report.kendall_tau_b < 1.0);
        assert_eq!(report.ok_without_admission, 1);
        assert_eq!(report.redis_calls_per_join, None);
        assert_eq!(report.joins, 4);
    }
}
