//! How results are shown: tables for people, JSON for scripts.

use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
use serde::Serialize;

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    /// Human-readable table.
    #[default]
    Table,
    /// One JSON document on stdout, for scripts.
    Json,
    /// Prometheus text exposition format (`status` only: node_exporter's textfile collector).
    Prometheus,
}

impl Format {
    /// The `--format` spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Table => "table",
            Format::Json => "json",
            Format::Prometheus => "prometheus",
        }
    }
}

/// A table with the house style and these column headers.
pub fn table<I: IntoIterator<Item = S>, S: Into<comfy_table::Cell>>(header: I) -> Table {
    let mut table = Table::new();
    table
        .load_style(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(header);
    table
}

/// Print `value` as pretty JSON on stdout.
pub fn print_json<T: Serialize>(value: &T) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

/// Unix milliseconds as RFC 3339 UTC, or "-" when absent.
pub fn time_or_dash(ms: Option<i64>) -> String {
    ms.and_then(chrono::DateTime::from_timestamp_millis)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_else(|| "-".to_string())
}
