//! `seckill`: a thin shell around the library. Parse, run (the command
//! reports its outcome or error once, see `report`), exit with the documented code.

use std::process::ExitCode;

use clap::Parser;
use seckill::{cli::Cli, exit_codes};

fn main() -> ExitCode {
    let code = match Cli::try_parse() {
        Ok(cli) => cli.run(),
        Err(error) => {
            let _ = error.print();
            if error.use_stderr() {
                exit_codes::USAGE_ERROR
            } else {
                exit_codes::SUCCESS
            }
        }
    };
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
