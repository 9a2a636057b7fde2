//! `seckill`: a thin shell around the library. Parse, run (the command
//! reports its outcome or error once, see `report`), exit with the documented code.

use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use seckill::cli::Cli;
use seckill::invocation::report;
use seckill::model::exit_codes;

fn main() -> ExitCode {
    let code = match Cli::try_parse() {
        Ok(cli) => cli.run(),
        Err(error) if error.kind() == clap::error::ErrorKind::DisplayVersion && wants_json() => {
            println!(
                "{}",
                serde_json::json!({ "name": "seckill", "version": env!("SECKILL_VERSION") })
            );
            exit_codes::SUCCESS
        }
        Err(error) => {
            let _ = error.print();
            if error.use_stderr() {
                if wants_json() {
                    report::emit_usage_error(subcommand().as_deref(), &first_paragraph(&error));
                }
                exit_codes::USAGE_ERROR
            } else {
                exit_codes::SUCCESS
            }
        }
    };
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// clap's explanation without the usage and the hint, on one line.
fn first_paragraph(error: &clap::Error) -> String {
    let text = error.render().to_string();
    let head = text.split("\n\n").next().unwrap_or_default();
    let head = head.strip_prefix("error: ").unwrap_or(head);
    head.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `--format json` (or `--format=json`, or `SECKILL_FORMAT=json` without a
/// `--format`) among the raw arguments clap refused.
fn wants_json() -> bool {
    let args = raw_args();
    args.windows(2)
        .any(|pair| pair[0] == "--format" && pair[1] == "json")
        || args.iter().any(|arg| arg == "--format=json")
        || (!args.iter().any(|arg| arg.starts_with("--format"))
            && std::env::var("SECKILL_FORMAT").as_deref() == Ok("json"))
}

/// The first raw argument that names a subcommand.
fn subcommand() -> Option<String> {
    let names: Vec<String> = Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect();
    raw_args()
        .into_iter()
        .skip(1)
        .find(|arg| names.contains(arg))
}

/// The arguments as text; bytes that are not UTF-8 (which clap has just
/// refused, naming them) become U+FFFD here instead of a panic.
fn raw_args() -> Vec<String> {
    std::env::args_os()
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect()
}
