//! `seckill`: a thin shell around the library. Parse, run, print the error
//! once with its causes (like `{:#}`, minus repeated causes), exit with the documented code.

use clap::Parser;
use seckill::{cli::Cli, error, exit_codes};

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let code = if error.use_stderr() {
                exit_codes::USAGE_ERROR
            } else {
                exit_codes::SUCCESS
            };
            let _ = error.print();
            std::process::exit(code);
        }
    };
    let code = match cli.run() {
        Ok(code) => code,
        Err(error) => {
            eprintln!("seckill: error: {}", error::render(&error));
            error::exit_code_for(&error)
        }
    };
    std::process::exit(code);
}
