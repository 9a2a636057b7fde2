//! What every command gets from below the command line: the campaign file,
//! the Redis target, the output format. The command layer (`cli`, `cmd`)
//! builds it; `orders`, `loadtest` and the commands read it, so nothing below
//! the command line has to import it.

use std::path::PathBuf;

use anyhow::Result;

use crate::campaign::Campaign;
use crate::error::usage;
use crate::output::Format;
use crate::redis_conn::{ConnectionArgs, RedisTarget};

/// What every subcommand gets besides its own flags.
#[derive(Debug, Clone)]
pub struct Globals {
    pub campaign: Option<PathBuf>,
    pub format: Format,
    pub connection: ConnectionArgs,
}

impl Globals {
    /// Load the campaign file named by `-c`, or explain how to name one.
    pub fn campaign(&self) -> Result<Campaign> {
        let path = self.campaign.as_ref().ok_or_else(|| {
            usage("no campaign file: pass -c FILE (or set SECKILL_CAMPAIGN), e.g. -c campaigns/moutai.yaml")
        })?;
        Campaign::load(path)
    }

    /// The Redis target for this campaign (flag/env > file > default).
    pub fn redis(&self, campaign: &Campaign) -> Result<RedisTarget> {
        RedisTarget::resolve(&self.connection, Some(campaign))
    }
}
