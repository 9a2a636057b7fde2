//! `seckill completions SHELL`: print a completion script generated from the
//! clap definition, which the command line hands down in the context.

use anyhow::Result;
use clap_complete::Shell;

use crate::invocation::context::Context;

/// Flags of `seckill completions`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Shell to generate for; the files in completions/ are this output.
    #[arg(value_enum)]
    pub(crate) shell: Shell,
}

/// Write the completion script for `shell` to stdout (not a report: the
/// script itself is the output, in either `--format`).
pub(crate) fn run(ctx: &Context, args: &Args) -> Result<i32> {
    let mut script = Vec::new();
    write(args.shell, ctx.cli_definition(), &mut script);
    crate::util::output::write_stdout(&String::from_utf8_lossy(&script))?;
    Ok(crate::model::exit_codes::SUCCESS)
}

/// Generate the completion script for `shell` from the command line's
/// definition into `out`.
pub fn write(shell: Shell, mut definition: clap::Command, out: &mut dyn std::io::Write) {
    clap_complete::generate(shell, &mut definition, "seckill", out);
}
