//! The load test's results as people read them: the comparison table (narrow,
//! or every column with `--wide`), the open-loop latency table, a bucketed
//! run's figures and buckets, the reservations race, a run through `serve`.
//! Formatting only: the numbers are the scenarios' reports'.
//!
//! Within loadtest it uses: buckets, report, reservations, target, ticket_room.

use super::Variant;
use super::buckets::BucketReport;
use super::report::VariantReport;
use super::reservations::RaceReport;
use super::target::TargetReport;
use crate::util::columns::{self, Column};
use crate::util::output;

/// The heading, the comparison table (narrow, or every column with `--wide`),
/// in open loop the latency table, on a cluster each master's share.
pub(crate) fn variants(heading: &str, reports: &[VariantReport], wide: bool) -> String {
    let heading: String = heading.lines().map(output::paragraph).collect();
    let mut text = format!("{heading}{}\n", comparison_table(reports, wide));
    if reports.iter().any(|r| r.requested_rate.is_some()) {
        text.push_str(&latency_table(reports));
    }
    for r in reports {
        for master in r.masters.iter().flatten() {
            text.push_str(&format!(
                "{} on master {}: {:.1}% of the commands ({})\n",
                r.variant.as_str(),
                master.node,
                100.0 * master.share,
                master.commands
            ));
        }
    }
    text
}

fn comparison_table(reports: &[VariantReport], wide: bool) -> comfy_table::Table {
    let ms = |value: f64| format!("{value:.2}");
    let mut table = if wide {
        output::table([
            "variant",
            "requests",
            "elapsed s",
            "qps",
            "succeeded",
            "unreplicated",
            "sold out",
            "rejected",
            "oversold",
            "undersold",
            "final stock",
            "stream",
            "p50 ms",
            "p90 ms",
            "p95 ms",
            "p99 ms",
            "p99.9 ms",
            "max ms",
            "service p99 ms",
            "late",
            "dropped",
            "retries",
            "verdict",
        ])
    } else {
        output::table([
            "variant",
            "qps",
            "succeeded",
            "oversold",
            "p99 ms",
            "verdict",
        ])
    };
    for r in reports {
        let row = if wide {
            vec![
                r.variant.as_str().to_string(),
                r.requests.to_string(),
                format!("{:.2}", r.elapsed_s),
                format!("{:.0}", r.qps),
                r.succeeded.to_string(),
                r.unreplicated.to_string(),
                r.sold_out.to_string(),
                r.rejected.to_string(),
                r.oversold.to_string(),
                r.undersold.to_string(),
                r.final_stock.to_string(),
                r.stream_len.to_string(),
                ms(r.p50_ms),
                ms(r.p90_ms),
                ms(r.p95_ms),
                ms(r.p99_ms),
                ms(r.p99_9_ms),
                ms(r.max_ms),
                ms(r.service.p99_ms),
                r.late_sends.to_string(),
                r.dropped.to_string(),
                retries_text(r),
                r.verdict.clone(),
            ]
        } else {
            vec![
                r.variant.as_str().to_string(),
                format!("{:.0}", r.qps),
                r.succeeded.to_string(),
                r.oversold.to_string(),
                ms(r.p99_ms),
                r.verdict.clone(),
            ]
        };
        table.add_row(row);
    }
    // Only the free-text columns wrap (between words): retries and verdict.
    let free_text: &[usize] = if wide { &[21, 22] } else { &[5] };
    output::fit(&mut table, free_text);
    table
}

/// Open loop: corrected latency (from the planned send) beside service time
/// (from the actual send), and whether the plan was kept.
fn latency_table(reports: &[VariantReport]) -> String {
    let mut table = output::table([
        "variant", "latency", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms",
    ]);
    let ms = |value: f64| format!("{value:.2}");
    for r in reports {
        table.add_row(vec![
            r.variant.as_str().to_string(),
            "corrected".to_string(),
            ms(r.p50_ms),
            ms(r.p90_ms),
            ms(r.p99_ms),
            ms(r.p99_9_ms),
            ms(r.max_ms),
        ]);
        let s = &r.service;
        table.add_row(vec![
            String::new(),
            "service".to_string(),
            ms(s.p50_ms),
            ms(s.p90_ms),
            ms(s.p99_ms),
            ms(s.p99_9_ms),
            ms(s.max_ms),
        ]);
    }
    output::fit(&mut table, &[]);
    let mut text = format!("{table}\n");
    for r in reports {
        text.push_str(&format!(
            "{}: {:.0}/s requested, {:.0}/s achieved, {} sent late (> 2 ms), {} dropped\n",
            r.variant.as_str(),
            r.requested_rate.unwrap_or(0.0),
            r.achieved_rate,
            r.late_sends,
            r.dropped
        ));
    }
    text
}

/// What `retries` counts depends on the variant; say it in the cell.
fn retries_text(report: &VariantReport) -> String {
    match report.variant {
        Variant::V2 => format!("{} aborts", report.retries),
        Variant::V4 => match report.lowest_stock_seen {
            Some(lowest) => format!("{} below 0 (min {lowest})", report.retries),
            None => "0 below 0".to_string(),
        },
        Variant::Lock => format!("{} waits", report.retries),
        _ => report.retries.to_string(),
    }
}

/// The bucketed run as people read it: the figures, then one row per bucket.
pub(crate) fn buckets(report: &BucketReport) -> String {
    let figures = record(&[
        (
            "variant",
            format!("{} ({} buckets)", report.variant, report.buckets),
        ),
        ("buys/s", format!("{:.0}", report.qps)),
        ("succeeded", report.succeeded.to_string()),
        ("sold out", report.sold_out.to_string()),
        ("rejected", report.rejected.to_string()),
        ("oversold", report.oversold.to_string()),
        ("undersold", report.undersold.to_string()),
        ("final stock", report.final_stock.to_string()),
        ("orders in streams", report.stream_len.to_string()),
        (
            "p50 / p99 ms",
            format!("{:.2} / {:.2}", report.p50_ms, report.p99_ms),
        ),
        (
            "round trips per ok",
            format!(
                "mean {:.2}, p99 {}",
                report.round_trips_per_ok_mean, report.round_trips_per_ok_p99
            ),
        ),
        (
            "transfer share",
            format!(
                "{:.1}% ({} transfers)",
                report.transfer_share * 100.0,
                report.transfers
            ),
        ),
        ("verdict", report.verdict.clone()),
    ]);
    let rows: Vec<Vec<String>> = report
        .per_bucket
        .iter()
        .map(|b| {
            vec![
                b.bucket.to_string(),
                b.slot.to_string(),
                b.initial_stock.to_string(),
                b.final_stock.to_string(),
                b.orders.to_string(),
                b.transfers_out.to_string(),
                b.transfers_in.to_string(),
            ]
        })
        .collect();
    let columns = [
        Column::figure("BUCKET"),
        Column::figure("SLOT"),
        Column::figure("INITIAL"),
        Column::figure("FINAL"),
        Column::figure("ORDERS"),
        Column::figure("MOVED OUT"),
        Column::figure("MOVED IN"),
    ];
    let table = columns::list(&columns, &rows).text;
    format!("{figures}\n{table}")
}

/// The reservations race: one figure per line, fits any terminal.
pub(crate) fn reservations(heading: &str, r: &RaceReport) -> String {
    let fields = output::fields(&[
        ("reserved (buy ok)", r.reserved.to_string()),
        (
            "sold out / refused",
            format!("{} / {}", r.sold_out, r.rejected),
        ),
        ("payments sent", r.pay_attempts.to_string()),
        (
            "  aimed at the deadline",
            r.paid_at_deadline_attempts.to_string(),
        ),
        ("  answered paid", r.paid.to_string()),
        ("  refused: expired", r.pay_refused_expired.to_string()),
        ("final: paid", r.final_paid.to_string()),
        ("final: expired", r.final_expired.to_string()),
        ("final: still reserved", r.final_reserved.to_string()),
        ("final stock", r.final_stock.to_string()),
        (
            "buy + race",
            format!("{:.2} s + {:.2} s", r.buy_elapsed_s, r.race_elapsed_s),
        ),
        ("identity", r.identity.clone()),
        ("verdict", r.verdict.clone()),
    ]);
    format!("{}{fields}", output::paragraph(heading))
}

/// A run through `seckill serve` (`--target`): outcomes and statuses as a
/// record, latency as a table (corrected from the planned send, service
/// from the actual send).
pub(crate) fn target(r: &TargetReport) -> String {
    let outcomes: Vec<String> = r.outcomes.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let statuses: Vec<String> = r.statuses.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let figures = record(&[
        ("answers/s", format!("{:.0}", r.qps)),
        (
            "answered",
            format!("{} of {} ({} errors)", r.completed, r.requests, r.errors),
        ),
        ("succeeded", r.succeeded.to_string()),
        ("sold out", r.sold_out.to_string()),
        ("rejected", r.rejected.to_string()),
        ("outcomes", outcomes.join(", ")),
        ("HTTP statuses", statuses.join(", ")),
        ("late sends", r.late_sends.to_string()),
    ]);
    let room = r
        .ticket_room
        .as_ref()
        .map(|room| record(&super::ticket_room::rows(room)))
        .unwrap_or_default();
    let ms = |v: f64| format!("{v:.2}");
    let rows: Vec<Vec<String>> = [("corrected", &r.latency), ("service", &r.service)]
        .into_iter()
        .map(|(kind, p)| {
            vec![
                kind.to_string(),
                ms(p.p50_ms),
                ms(p.p90_ms),
                ms(p.p99_ms),
                ms(p.p99_9_ms),
                ms(p.max_ms),
            ]
        })
        .collect();
    let latency = columns::list(
        &[
            Column::whole("LATENCY ms"),
            Column::figure("P50"),
            Column::figure("P90"),
            Column::figure("P99"),
            Column::figure("P99.9"),
            Column::figure("MAX"),
        ],
        &rows,
    );
    format!("{figures}{room}{}", latency.text)
}

/// One `label  value` line per field, labels in a column of their own and
/// each value wrapped under itself (like `kubectl describe`): a record whose
/// values are sentences fits any terminal.
pub(crate) fn record(fields: &[(&str, String)]) -> String {
    let label_width = fields
        .iter()
        .map(|(label, _)| output::display_width(label))
        .max()
        .unwrap_or(0);
    fields
        .iter()
        .map(|(label, value)| {
            let fill = " ".repeat(usize::from(label_width - output::display_width(label)));
            output::hanging(&format!("{label}{fill}  {value}"), label_width + 2)
        })
        .collect()
}
