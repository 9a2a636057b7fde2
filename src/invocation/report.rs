//! The one output path: every command hands a named report to [`emit`],
//! which prints it as a table for people or as the JSON envelope for scripts.
//!
//! The envelope is the same for every command, so a script can read any of
//! them the same way, and a failure still produces one (a cron job that
//! redirects stdout never writes an empty file):
//!
//! ```json
//! {"schema": 1, "command": "reconcile", "campaign": "moutai-2026", "redis": "redis://…",
//!  "exit_code": 1, ...the report's own fields..., "error": {"kind": "runtime_error", "message": "…"}}
//! ```
//!
//! `campaign` and `redis` are what the command got as far as opening (null
//! when it failed before); `error.kind` is the exit code's name in
//! [`crate::model::exit_codes::ALL`]. Errors and failures reach stderr once, as
//! `seckill: error: ...`, in both formats.

use serde::Serialize;

use crate::invocation::context::Context;
use crate::model::error::{self, usage};
use crate::model::exit_codes;
use crate::redis_client::conn::UrlSource;
use crate::util::output::{self, Format};

/// Version of the envelope; bumped when a field changes meaning or goes away.
pub(crate) const SCHEMA: u32 = 1;

/// What a command produced: its JSON fields (the `Serialize` impl, flattened
/// into the envelope) and the text people read.
pub(crate) trait Report: Serialize {
    /// The table and the lines around it, ending in a newline.
    fn render(&self) -> String;

    /// The report as CSV, for the commands that have one (`--format csv`).
    fn csv(&self) -> Option<String> {
        None
    }

    /// The exit code of this outcome (see `exit_codes`).
    fn exit_code(&self) -> i32 {
        exit_codes::SUCCESS
    }

    /// Why the command failed although it has a report (e.g. preheat refused an
    /// item): the envelope's `error` and the `seckill: error:` line.
    fn failure(&self) -> Option<String> {
        None
    }

    /// The Prometheus text exposition of the report, for the commands that
    /// have one (`status`); `--format prometheus` is refused for the others.
    fn exposition(&self) -> Option<String> {
        None
    }

    /// Whether the table starts with the line naming the Redis (every table
    /// does but a probe's, whose first line is what a monitoring system shows).
    fn names_redis(&self) -> bool {
        true
    }
}

/// The envelope's `error`.
#[derive(Debug, Serialize)]
pub(crate) struct ErrorField {
    /// The exit code's name: `runtime_error`, `usage_error`, ...
    pub(crate) kind: &'static str,
    /// The error and its causes on one line.
    pub(crate) message: String,
}

/// The JSON document every command prints under `--format json`.
#[derive(Serialize)]
struct Envelope<'a, R: Serialize> {
    /// [`SCHEMA`].
    schema: u32,
    /// The subcommand, e.g. `reconcile`.
    command: &'a str,
    /// The campaign id, once the campaign file was loaded.
    campaign: Option<&'a str>,
    /// The Redis target (password hidden), once it was resolved.
    redis: Option<&'a str>,
    /// Where its URL came from: `flag` (--redis), `env` (SECKILL_REDIS_URL),
    /// `file` (the campaign's `redis:`) or `default`.
    redis_source: Option<&'a str>,
    /// The process's exit code.
    exit_code: i32,
    /// The command's own fields.
    #[serde(flatten)]
    report: Option<&'a R>,
    /// Null on success and on outcomes that are not failures (a `sold_out` buy, drift).
    error: Option<ErrorField>,
}

/// Print `report` in the chosen format; returns the exit code. A closed
/// stdout ends the output quietly, with the same exit code.
pub(crate) fn emit<R: Report>(ctx: &Context, report: &R) -> anyhow::Result<i32> {
    let code = report.exit_code();
    let failure = report.failure();
    if output::quiet()
        && code == exit_codes::SUCCESS
        && failure.is_none()
        && ctx.format == Format::Table
    {
        // `-q`: success says nothing to people; drift, refusals and errors
        // still print, and what a program asked for (JSON, CSV, the
        // Prometheus text a cron job writes for node_exporter) always is.
        return Ok(code);
    }
    let text = match ctx.format {
        Format::Table if report.names_redis() => format!("{}{}", redis_line(ctx), report.render()),
        Format::Table => report.render(),
        Format::Prometheus => report.exposition().ok_or_else(|| {
            usage(format!(
                "--format prometheus does not go with `{}`",
                ctx.command
            ))
        })?,
        Format::Csv => report.csv().ok_or_else(|| {
            usage(format!(
                "--format csv: {} has no CSV output (loadtest has)",
                ctx.command
            ))
        })?,
        Format::Json => envelope_json(
            ctx,
            code,
            Some(report),
            failure.as_ref().map(|message| ErrorField {
                kind: exit_codes::name_of(code),
                message: message.clone(),
            }),
        )?,
    };
    output::write_stdout(&text)?;
    if let Some(message) = failure {
        output::say(crate::util::log::stamped(&format!(
            "seckill: error: {message}"
        )));
    }
    Ok(code)
}

/// The first line of every table: which Redis, and where its URL came from
/// (a leftover environment variable or a wrong file is seen at once).
fn redis_line(ctx: &Context) -> String {
    match (ctx.redis_display(), ctx.redis_source()) {
        (Some(redis), Some(source)) => {
            let from = match source {
                UrlSource::Default => "the default URL".to_string(),
                other => other.to_string(),
            };
            format!("Redis {redis} ({from})\n")
        }
        _ => String::new(),
    }
}

/// Report a command that failed without a report: `seckill: error: ...` on
/// stderr and, under `--format json`, the envelope with `error` on stdout.
/// Returns the exit code.
pub(crate) fn emit_error(ctx: &Context, failure: &anyhow::Error) -> i32 {
    let code = error::exit_code_for(failure);
    let message = crate::util::error_text::render(failure);
    output::say(crate::util::log::stamped(&format!(
        "seckill: error: {message}"
    )));
    if ctx.format == Format::Json {
        let field = ErrorField {
            kind: exit_codes::name_of(code),
            message,
        };
        if let Ok(text) = envelope_json::<()>(ctx, code, None, Some(field)) {
            let _ = output::write_stdout(&text);
        }
    }
    code
}

/// A command line clap refused, under `--format json`: the envelope with a
/// `usage_error` on stdout (clap has already explained it on stderr).
pub fn emit_usage_error(command: Option<&str>, message: &str) {
    let envelope = Envelope::<()> {
        schema: SCHEMA,
        command: command.unwrap_or_default(),
        campaign: None,
        redis: None,
        redis_source: None,
        exit_code: exit_codes::USAGE_ERROR,
        report: None,
        error: Some(ErrorField {
            kind: exit_codes::name_of(exit_codes::USAGE_ERROR),
            message: message.to_string(),
        }),
    };
    if let Ok(mut text) = serde_json::to_string_pretty(&envelope) {
        text.push('\n');
        let _ = output::write_stdout(&text);
    }
}

/// The envelope of `report` on one line (no pretty-printing), for commands
/// that print one document per sample (`status --watch --format json`).
pub(crate) fn envelope_line<R: Report>(ctx: &Context, report: &R) -> anyhow::Result<String> {
    let envelope = Envelope {
        schema: SCHEMA,
        command: ctx.command,
        campaign: ctx.campaign_id(),
        redis: ctx.redis_display(),
        redis_source: ctx.redis_source().map(UrlSource::short),
        exit_code: report.exit_code(),
        report: Some(report),
        error: None,
    };
    let mut line = serde_json::to_string(&envelope)?;
    line.push('\n');
    Ok(line)
}

fn envelope_json<R: Serialize>(
    ctx: &Context,
    exit_code: i32,
    report: Option<&R>,
    error: Option<ErrorField>,
) -> anyhow::Result<String> {
    let envelope = Envelope {
        schema: SCHEMA,
        command: ctx.command,
        campaign: ctx.campaign_id(),
        redis: ctx.redis_display(),
        redis_source: ctx.redis_source().map(UrlSource::short),
        exit_code,
        report,
        error,
    };
    let mut text = serde_json::to_string_pretty(&envelope)?;
    text.push('\n');
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Counted {
        /// A field of the command's own.
        counted: u32,
    }

    #[test]
    fn the_envelope_wraps_the_report_fields_between_exit_code_and_error() {
        let ctx = Context::for_test("reconcile");
        let text = envelope_json(&ctx, 3, Some(&Counted { counted: 7 }), None).unwrap();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            value,
            serde_json::json!({
                "schema": 1, "command": "reconcile", "campaign": null, "redis": null, "redis_source": null,
                "exit_code": 3, "counted": 7, "error": null
            })
        );
        let at = |key: &str| text.find(&format!("\"{key}\"")).unwrap();
        assert!(at("schema") < at("exit_code") && at("exit_code") < at("counted"));
        assert!(at("counted") < at("error"), "{text}");
    }
}
