//! `seckill scripts list|show NAME`: the Lua scripts as Redis runs them,
//! each `lua/NAME.lua` with the `lua/lib/` helpers it includes pasted in
//! (docs/lua.md): the very text this binary embeds and calls by EVALSHA. A
//! reader follows the buy path top to bottom with `scripts show buy`,
//! without building anything; no Redis is asked.

use anyhow::Result;
use serde::Serialize;

use crate::invocation::context::Context;
use crate::invocation::report::Report;
use crate::model::error::usage;
use crate::redis_client::scripts::{ALL, Spec};
use crate::util::output;

/// Flags of `seckill scripts`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    pub(crate) action: Action,
}

/// What to show.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Action {
    /// Every script: how many KEYS and ARGV it takes, its lines as Redis runs it, its SHA1.
    List,
    /// One script as Redis runs it, its library helpers pasted in (without NAME: the list).
    Show {
        /// The script: its file in lua/, `.lua` optional (buy, bucket_buy, queue_join, ...).
        name: Option<String>,
    },
}

/// `seckill scripts`'s report: the list, or one script's text.
#[derive(Debug, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub(crate) enum ScriptsReport {
    List {
        /// Every script, by name.
        scripts: Vec<ScriptRow>,
    },
    Show {
        /// The script's contract and size.
        script: ScriptRow,
        /// The text Redis runs.
        source: &'static str,
    },
}

/// One script: its contract (the `KEYS[n]`/`ARGV[n]` lines of its header)
/// and the text the binary runs.
#[derive(Debug, Serialize)]
pub(crate) struct ScriptRow {
    /// Its file under `lua/`, without `.lua`.
    pub(crate) name: &'static str,
    /// KEYS names, in order.
    pub(crate) keys: &'static [&'static str],
    /// Fixed ARGV names, in order.
    pub(crate) argv: &'static [&'static str],
    /// Name of the variable ARGV tail that follows them, if any.
    pub(crate) argv_rest: Option<&'static str>,
    /// Lines of the text Redis runs (the script with its helpers).
    pub(crate) lines: usize,
    /// SHA1 of that text: the EVALSHA handle.
    pub(crate) sha: String,
}

impl ScriptRow {
    fn of(spec: &'static Spec) -> ScriptRow {
        ScriptRow {
            name: spec.name(),
            keys: spec.keys,
            argv: spec.argv,
            argv_rest: spec.argv_rest,
            lines: spec.source.lines().count(),
            sha: spec.sha().to_string(),
        }
    }
}

impl Report for ScriptsReport {
    fn render(&self) -> String {
        match self {
            ScriptsReport::Show { source, .. } => source.to_string(),
            ScriptsReport::List { scripts } => {
                let rows = scripts
                    .iter()
                    .map(|s| {
                        let argv = match s.argv_rest {
                            Some(rest) => format!("{} + {rest}...", s.argv.len()),
                            None => s.argv.len().to_string(),
                        };
                        vec![
                            s.name.to_string(),
                            s.keys.len().to_string(),
                            argv,
                            s.lines.to_string(),
                            s.sha.clone(),
                        ]
                    })
                    .collect();
                output::grid(&["script", "KEYS", "ARGV", "lines", "SHA1"], rows, &[])
            }
        }
    }

    /// The scripts are this binary's own: no Redis was asked.
    fn names_redis(&self) -> bool {
        false
    }
}

/// List the scripts, or show one.
pub(crate) fn run(_ctx: &Context, args: &Args) -> Result<ScriptsReport> {
    let mut specs: Vec<&'static Spec> = ALL.to_vec();
    specs.sort_by_key(|spec| spec.name());
    let name = match &args.action {
        Action::List | Action::Show { name: None } => {
            return Ok(ScriptsReport::List {
                scripts: specs.into_iter().map(ScriptRow::of).collect(),
            });
        }
        Action::Show { name: Some(name) } => name.strip_suffix(".lua").unwrap_or(name),
    };
    let Some(spec) = specs.iter().find(|spec| spec.name() == name) else {
        let known: Vec<&str> = specs.iter().map(|spec| spec.name()).collect();
        return Err(usage(format!(
            "no script named {name:?}; the scripts are: {}",
            known.join(", ")
        )));
    };
    Ok(ScriptsReport::Show {
        script: ScriptRow::of(spec),
        source: spec.source,
    })
}
