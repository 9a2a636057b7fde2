//! `seckill completions SHELL`: print a completion script generated from the clap definition.

use anyhow::Result;
use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::Cli;

/// Flags of `seckill completions`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Shell to generate for; the files in completions/ are this output.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Write the completion script for `shell` to stdout (not a report: the
/// script itself is the output, in either `--format`).
pub fn run(args: &Args) -> Result<i32> {
    let mut script = Vec::new();
    write(args.shell, &mut script);
    crate::output::write_stdout(&String::from_utf8_lossy(&script))?;
    Ok(crate::exit_codes::SUCCESS)
}

/// Generate the completion script for `shell` into `out`.
pub fn write(shell: Shell, out: &mut dyn std::io::Write) {
    clap_complete::generate(shell, &mut cli_definition(), "seckill", out);
}

/// The whole command line as clap sees it: the one door from the commands
/// up to `src/cli.rs`, for the two commands generated from it (completions
/// here, man pages in `cmd::man`).
pub fn cli_definition() -> clap::Command {
    Cli::command()
}
