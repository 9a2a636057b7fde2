//! `seckill man`: manual pages generated from the clap definition, so the
//! man page can never disagree with `--help`. `man/` holds the generated
//! files (`tests/it/man.rs` fails when they are stale;
//! `scripts/update-completions.sh` regenerates them).

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};

use crate::invocation::context::Context;

/// Flags of `seckill man`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Write seckill.1 and one seckill-SUBCOMMAND.1 per subcommand into DIR
    /// (created if missing) instead of printing seckill.1.
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,
}

/// Print the main page, or write every page into `--out`.
pub(crate) fn run(ctx: &Context, args: &Args) -> Result<i32> {
    match &args.out {
        Some(dir) => {
            // `/usr/local/share/man/man1` (the README's target) may not exist yet.
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            for (name, page) in pages(ctx.cli_definition())? {
                let path = dir.join(&name);
                std::fs::write(&path, page)
                    .with_context(|| format!("cannot write {}", path.display()))?;
            }
        }
        None => {
            let (_, page) = pages(ctx.cli_definition())?
                .into_iter()
                .next()
                .context("no man page")?;
            std::io::Write::write_all(&mut std::io::stdout(), &page)?;
        }
    }
    Ok(crate::model::exit_codes::SUCCESS)
}

/// Every page of `definition` (the command line's) as (file name, roff), the main page first. Stamped with the
/// package version only (not the commit), so the committed files stay
/// current across commits.
pub fn pages(definition: clap::Command) -> Result<Vec<(String, Vec<u8>)>> {
    let mut command = definition.version(env!("CARGO_PKG_VERSION"));
    command.build();
    let mut pages = vec![("seckill.1".to_string(), render(command.clone())?)];
    for sub in command.get_subcommands().filter(|s| s.get_name() != "help") {
        // After `build`, a subcommand's display name is `seckill-NAME`: the page title.
        let name = format!("seckill-{}", sub.get_name());
        pages.push((format!("{name}.1"), render(sub.clone())?));
    }
    Ok(pages)
}

fn render(command: clap::Command) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    clap_mangen::Man::new(command)
        .render(&mut out)
        .context("cannot render the man page")?;
    Ok(out)
}

/// The directory the committed pages live in.
pub fn committed_dir() -> &'static Path {
    Path::new("man")
}
