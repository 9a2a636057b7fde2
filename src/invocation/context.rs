//! What every command gets from below the command line: which command it is,
//! the campaign file, the Redis target, the output format; and the one way
//! to open them (plus the order database for the commands that need it).
//!
//! The command layer (`cli`, `cmd`) builds a [`Context`]; nothing below the
//! command line imports that layer. The context also remembers the campaign
//! id and Redis target once they are known, so the JSON envelope of a command
//! that fails halfway still names them.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use anyhow::{Context as _, Result};

use crate::domain::orders::transient::{self, OPEN_PATIENCE};
use crate::domain::orders::{OrderStore, StoreArgs, StoreLocation};
use crate::invocation::notify::{Notifier, NotifyArgs};
use crate::model::campaign::Campaign;
use crate::model::error::usage;
use crate::redis_client::conn::{Conn, ConnectionArgs, RedisTarget, UrlSource, redact, split_urls};
use crate::util::output::Format;
use crate::util::text::{self, Tz};
use redis::IntoConnectionInfo as _;

/// What every subcommand gets besides its own flags.
#[derive(Debug)]
pub(crate) struct Context {
    /// The command line's clap definition, from the parser above (for
    /// `completions` and `man`, which are generated from it).
    definition: fn() -> clap::Command,
    /// The subcommand's name, e.g. `reconcile` (the envelope's `command`, log lines).
    pub(crate) command: &'static str,
    /// `-c FILE`.
    pub(crate) campaign_file: Option<PathBuf>,
    /// `--format`.
    pub(crate) format: Format,
    /// `--redis`, `--cluster`, TLS and timeouts.
    pub(crate) connection: ConnectionArgs,
    /// `--tz`: where the times people read are shown.
    tz: Tz,
    /// The warning about `SECKILL_REDIS_URL` was said (a command that
    /// resolves its target twice, or once per `--watch` round, says it once).
    warned_env_url: AtomicBool,
    campaign_id: OnceLock<String>,
    redis_display: OnceLock<String>,
    redis_source: OnceLock<UrlSource>,
    /// `--notify`: where events go (waits for its deliveries when dropped).
    notifier: Notifier,
}

/// `SECKILL_REDIS_URL_<NAME>` of region `name` (upper-cased, `-` as `_`), if set.
fn region_url(name: &str) -> Option<String> {
    let variable = format!(
        "SECKILL_REDIS_URL_{}",
        name.to_ascii_uppercase().replace('-', "_")
    );
    std::env::var(variable).ok().filter(|url| !url.is_empty())
}

/// Whether opening the order database may create it: only `consume` (and
/// `pending-claim`, which stores orders too) may; a reader must find it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StoreAccess {
    CreateIfMissing,
    MustExist,
}

/// A campaign and a live connection to its Redis.
pub(crate) struct Opened {
    pub(crate) campaign: Campaign,
    pub(crate) target: RedisTarget,
    pub(crate) conn: Conn,
}

impl Context {
    /// This context in region `name`: a command that works in every region
    /// (`preheat`, `doctor` without `--region`) runs once per region with
    /// it, on the region's URL ([`Context::connection_in`]: never `--redis`,
    /// which names one Redis).
    pub(crate) fn in_region(&self, name: &str) -> Context {
        Context {
            definition: self.definition,
            command: self.command,
            campaign_file: self.campaign_file.clone(),
            format: self.format,
            connection: ConnectionArgs {
                redis_url: region_url(name),
                region: Some(name.to_string()),
                ..self.connection.clone()
            },
            tz: self.tz,
            warned_env_url: AtomicBool::new(self.warned_env_url.load(Ordering::Relaxed)),
            campaign_id: OnceLock::new(),
            redis_display: OnceLock::new(),
            redis_source: OnceLock::new(),
            notifier: Notifier::default(),
        }
    }

    /// The context of `command` with the global flags.
    pub(crate) fn new(
        definition: fn() -> clap::Command,
        command: &'static str,
        campaign_file: Option<PathBuf>,
        format: Format,
        connection: ConnectionArgs,
        tz: Tz,
    ) -> Context {
        if shows_people_times(command, format) {
            match tz {
                Tz::Fixed(offset_s) => text::show_times_at(offset_s),
                // UTC until a campaign file says otherwise (see `campaign`).
                Tz::Utc | Tz::File => text::show_times_at(0),
            }
        }
        Context {
            definition,
            command,
            campaign_file,
            format,
            connection,
            tz,
            warned_env_url: AtomicBool::new(false),
            campaign_id: OnceLock::new(),
            redis_display: OnceLock::new(),
            redis_source: OnceLock::new(),
            notifier: Notifier::default(),
        }
    }

    /// The context with `--notify`'s webhooks.
    pub(crate) fn with_notify(self, args: NotifyArgs) -> Context {
        Context {
            notifier: Notifier::new(args),
            ..self
        }
    }

    /// Where this command's events go (`--notify`).
    pub(crate) fn notifier(&self) -> &Notifier {
        &self.notifier
    }

    /// The campaign file as written, every region in it (`seckill regions`).
    pub(crate) fn campaign_everywhere(&self) -> Result<Campaign> {
        let path = self.campaign_file.as_ref().ok_or_else(|| {
            usage("no campaign file: pass -c FILE (or set SECKILL_CAMPAIGN), e.g. -c campaigns/moutai.yaml")
        })?;
        let campaign = Campaign::load(path)?;
        let _ = self.campaign_id.set(campaign.id.clone());
        Ok(campaign)
    }

    /// The connection flags for the region `campaign` is seen from, for a
    /// command that works in every region (`seckill regions`): `--redis`
    /// and `SECKILL_REDIS_URL` name one Redis and so do not apply; the
    /// region's URL is `SECKILL_REDIS_URL_<NAME>` when set (the region's
    /// name upper-cased, `-` as `_`: credentials per region, out of the
    /// campaign file), else the file's.
    pub(crate) fn connection_in(&self, campaign: &Campaign) -> ConnectionArgs {
        ConnectionArgs {
            redis_url: campaign.region.as_deref().and_then(region_url),
            cluster: self.connection.cluster || campaign.region_cluster,
            region: campaign.region.clone(),
            ..self.connection.clone()
        }
    }

    /// Load the campaign file named by `-c` (as `--region` sees it, when
    /// given), or explain how to name one.
    pub(crate) fn campaign(&self) -> Result<Campaign> {
        let path = self.campaign_file.as_ref().ok_or_else(|| {
            usage("no campaign file: pass -c FILE (or set SECKILL_CAMPAIGN), e.g. -c campaigns/moutai.yaml")
        })?;
        let mut campaign = Campaign::load(path)?;
        if let Some(region) = &self.connection.region {
            campaign = campaign.in_region(region)?;
        }
        let _ = self.campaign_id.set(campaign.id.clone());
        if self.tz == Tz::File && shows_people_times(self.command, self.format) {
            text::show_times_at(campaign.utc_offset_s.unwrap_or(0));
        }
        Ok(campaign)
    }

    /// The Redis target for this campaign (flag/env > file > default). A
    /// `SECKILL_REDIS_URL` left in the environment that overrides a
    /// different `redis:` of the file is said on stderr, once (not under
    /// `-q`): it is easy to forget, and it sends every command to another
    /// Redis. The same server spelled two ways (`redis://h:p` and
    /// `redis://h:p/0`) is no override.
    pub(crate) fn redis(&self, campaign: &Campaign) -> Result<RedisTarget> {
        self.redis_of(Some(campaign))
    }

    /// [`Context::redis`] for a command that may run without a campaign file
    /// (`seckill campaigns --redis URL`).
    pub(crate) fn redis_of(&self, campaign: Option<&Campaign>) -> Result<RedisTarget> {
        let target = RedisTarget::resolve(&self.connection, campaign)?;
        if target.source == UrlSource::Env
            && let Some(campaign) = campaign
            && let Some(file_url) = &campaign.redis_url
            && !same_servers(file_url, self.connection.redis_url.as_deref())
            && !self.warned_env_url.swap(true, Ordering::Relaxed)
        {
            crate::util::output::warn(format!(
                "seckill: warning: SECKILL_REDIS_URL sends this command to {}, not to `redis: {}` \
                 of {} (unset SECKILL_REDIS_URL to use the file's)",
                target.display,
                redact(file_url),
                campaign.path.display()
            ));
        }
        let _ = self.redis_display.set(target.display.clone());
        let _ = self.redis_source.set(target.source.clone());
        Ok(target)
    }

    /// Load the campaign and connect to its Redis: how every command but
    /// `completions` starts.
    pub(crate) fn open(&self) -> Result<Opened> {
        let campaign = self.campaign()?;
        let target = self.redis(&campaign)?;
        let conn = target.connect()?;
        Ok(Opened {
            campaign,
            target,
            conn,
        })
    }

    /// [`Context::open`], then the order database (`--orders-db`): what
    /// `consume`, `pending-claim` and `reconcile` share. A database still
    /// starting (refused, reset, timeout) is retried for up to `OPEN_PATIENCE`
    /// unless `stop` is set; a wrong password, an unknown database or a bad
    /// path fails at once.
    /// The store's location is checked before Redis is contacted, so a bad URL
    /// is a usage error whatever state Redis is in.
    pub(crate) fn open_with_store(
        &self,
        store: &StoreArgs,
        stop: &AtomicBool,
    ) -> Result<(Opened, Box<dyn OrderStore>)> {
        self.open_with_store_as(store, stop, StoreAccess::CreateIfMissing)
    }

    /// [`Context::open_with_store`], for a command that must find the
    /// database already there ([`StoreAccess::MustExist`]: `reconcile`).
    pub(crate) fn open_with_store_as(
        &self,
        store: &StoreArgs,
        stop: &AtomicBool,
        access: StoreAccess,
    ) -> Result<(Opened, Box<dyn OrderStore>)> {
        let campaign = self.campaign()?;
        let location = StoreLocation::resolve(store, &campaign)?;
        let target = self.redis(&campaign)?;
        let conn = target.connect()?;
        if access == StoreAccess::MustExist {
            // Permanent: checked once, before the patient retry below.
            location.require_existing()?;
        }
        let what = format!("opening {}", location.display());
        let deadline = Some(Instant::now() + OPEN_PATIENCE);
        let store = transient::retry_until(self.command, &what, stop, deadline, || match access {
            StoreAccess::CreateIfMissing => location.open(),
            // A database without the schema is refused, never given one.
            StoreAccess::MustExist => location.open_existing(),
        })?;
        Ok((
            Opened {
                campaign,
                target,
                conn,
            },
            store,
        ))
    }

    /// A flag SIGINT and SIGTERM set instead of killing the process, for the
    /// long-running commands that finish the batch in hand before exiting.
    pub(crate) fn stop_on_signals(&self) -> Result<Arc<AtomicBool>> {
        let stop = Arc::new(AtomicBool::new(false));
        for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::flag::register(signal, Arc::clone(&stop))
                .context("cannot install signal handler")?;
        }
        Ok(stop)
    }

    /// The whole command line's clap definition.
    pub(crate) fn cli_definition(&self) -> clap::Command {
        (self.definition)()
    }

    /// The campaign id, once [`Context::campaign`] loaded it.
    pub(crate) fn campaign_id(&self) -> Option<&str> {
        self.campaign_id.get().map(String::as_str)
    }

    /// The Redis target (password hidden), once [`Context::redis`] resolved it.
    pub(crate) fn redis_display(&self) -> Option<&str> {
        self.redis_display.get().map(String::as_str)
    }

    /// Where the Redis URL came from, once [`Context::redis`] resolved it.
    pub(crate) fn redis_source(&self) -> Option<&UrlSource> {
        self.redis_source.get()
    }

    /// A context with no campaign and default flags, for unit tests.
    #[cfg(test)]
    pub(crate) fn for_test(command: &'static str) -> Context {
        use clap::Parser;
        #[derive(Parser)]
        struct Flags {
            #[command(flatten)]
            connection: ConnectionArgs,
        }
        let flags = Flags::parse_from(["seckill"]);
        Context::new(
            || clap::Command::new("seckill"),
            command,
            None,
            Format::Json,
            flags.connection,
            Tz::Utc,
        )
    }
}

/// Whether `command` under `format` prints times for people: tables do, in
/// the `--tz` offset; JSON and `serve`'s HTTP answers are for programs and
/// stay UTC.
fn shows_people_times(command: &str, format: Format) -> bool {
    format == Format::Table && command != "serve"
}

/// Whether the URL lists `a` and `b` name the same servers, databases and
/// users in the same order, however spelled: a missing `/0` or port 6379,
/// a trailing slash or a password are no difference. A URL that does not
/// parse is compared as typed.
fn same_servers(a: &str, b: Option<&str>) -> bool {
    let Some(b) = b else {
        return false;
    };
    let normalized = |list: &str| -> Vec<String> {
        split_urls(list)
            .into_iter()
            .map(|url| match url.as_str().into_connection_info() {
                Ok(info) => format!(
                    "{}/{} as {}",
                    info.addr(),
                    info.redis_settings().db(),
                    info.redis_settings().username().unwrap_or("default")
                ),
                Err(_) => url,
            })
            .collect()
    };
    normalized(a) == normalized(b)
}

#[cfg(test)]
mod tests {
    use super::same_servers;

    #[test]
    fn one_server_spelled_two_ways_is_the_same() {
        assert!(same_servers("redis://h:7000", Some("redis://h:7000/0")));
        assert!(same_servers("redis://h", Some("redis://h:6379/")));
        assert!(same_servers("redis://u:a@h:1/2", Some("redis://u:b@h:1/2")));
        assert!(same_servers(
            "redis://a:1,redis://b:2",
            Some("redis://a:1/0, redis://b:2")
        ));
        assert!(!same_servers("redis://h:7000", Some("redis://h:7001")));
        assert!(!same_servers("redis://h:7000/0", Some("redis://h:7000/1")));
        assert!(!same_servers("redis://u@h:1", Some("redis://v@h:1")));
        assert!(!same_servers("redis://h:1", None));
    }
}
