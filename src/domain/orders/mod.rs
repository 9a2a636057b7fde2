//! The order pipeline: stream entries → order database, and the checks that
//! prove nothing was lost or doubled on the way.
//!
//! * [`entry`]: the one parser of order stream entries (consume, pending-claim
//!   and reconcile all use it).
//! * [`stream`]: consumer-group calls on the order and dead-letter streams.
//! * [`pipeline`]: "commit, THEN ack", with bounded exponential backoff.
//! * [`reconnecting`]: a Redis connection replaced after any failed call.
//! * [`consumer`]: `consume` as named phases (own pending, new, final pass).
//! * [`claimer`]: `pending-claim` as a claim step and a settle step.
//! * [`transient`]: which database errors opening waits out (the rest fail fast).
//! * [`wire`]: the stream readers' connection, replies parsed straight into entries.
//! * [`OrderStore`] with two backends chosen by URL: [`sqlite`] (embedded
//!   default) and [`mysql`] (MySQL/MariaDB for production).
//!
//! Where the database is: `--orders-db URL` > `SECKILL_ORDERS_DB` > the
//! campaign file's `orders.store` > `sqlite://orders.db`. A relative SQLite
//! path from the file (or the default) is relative to the campaign file's
//! directory, so the same file works from any working directory; one given
//! on the command line or in the environment is relative to the current
//! directory, like any other path typed in a shell.
//!
//! May import: domain::item, redis_client, model, util.

pub(crate) mod claimer;
pub(crate) mod consumer;
pub(crate) mod counters;
pub(crate) mod dead_letters;
pub(crate) mod entry;
pub(crate) mod mysql;
pub(crate) mod pipeline;
pub(crate) mod reconnecting;
pub mod sqlite;
pub mod stream;
pub(crate) mod transient;
pub(crate) mod wire;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::model::campaign::Campaign;
use crate::model::error::usage;
use crate::redis_client::conn::redact;

pub use entry::{Order, OrderState, StateChange};

/// Version of the schema this build writes (table `seckill_schema`): 2 added
/// the reservation states, 3 the recovery baseline (`orders.recovered_at`,
/// table `seckill_recoveries`), 4 a seat item's seats (table `order_seats`,
/// one row per seat; docs/seats.md, "Orders and reconcile, seat by seat").
pub const SCHEMA_VERSION: i64 = 4;

/// The order database when neither flag, environment nor file names one.
pub(crate) const DEFAULT_STORE: &str = "sqlite://orders.db";

/// `--orders-db`, shared by every command that talks to the order database.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct StoreArgs {
    /// Order database URL: sqlite://PATH (relative to the current directory) or
    /// mysql://user:pass@host:3306/db. Overrides the campaign file's `orders.store`.
    /// [default: sqlite://orders.db next to the campaign file]
    #[arg(
        long = "orders-db",
        env = "SECKILL_ORDERS_DB",
        value_name = "URL",
        hide_env_values = true
    )]
    pub(crate) orders_db: Option<String>,
}

/// Where the orders go, resolved from flag, environment, file and default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreLocation {
    Sqlite(PathBuf),
    /// The full URL (with password); show it only through [`StoreLocation::display`].
    Mysql(String),
}

impl StoreLocation {
    /// Resolve by precedence; relative SQLite paths from the file are
    /// relative to the campaign file's directory.
    pub(crate) fn resolve(args: &StoreArgs, campaign: &Campaign) -> Result<StoreLocation> {
        let campaign_dir = campaign
            .path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        match &args.orders_db {
            Some(url) => StoreLocation::parse(url, Path::new(".")),
            None => StoreLocation::parse(
                campaign.orders_store.as_deref().unwrap_or(DEFAULT_STORE),
                campaign_dir,
            ),
        }
    }

    /// Parse a store URL; a relative SQLite path is joined to `base`.
    pub fn parse(url: &str, base: &Path) -> Result<StoreLocation> {
        if let Some(path) = url.strip_prefix("sqlite://") {
            if path.is_empty() {
                return Err(usage(
                    "sqlite:// URL without a path (e.g. sqlite://orders.db)",
                ));
            }
            let path = Path::new(path);
            return Ok(StoreLocation::Sqlite(if path.is_absolute() {
                path.to_path_buf()
            } else {
                base.join(path)
            }));
        }
        if url.starts_with("mysql://") || url.starts_with("mariadb://") {
            let url = url.replacen("mariadb://", "mysql://", 1);
            ::mysql::Opts::from_url(&url)
                .map_err(|e| usage(format!("invalid order database URL {}: {e}", redact(&url))))?;
            return Ok(StoreLocation::Mysql(url));
        }
        Err(usage(format!(
            "order database URL {} must start with sqlite:// or mysql://",
            redact(url)
        )))
    }

    /// The location without the password, for messages.
    pub(crate) fn display(&self) -> String {
        match self {
            StoreLocation::Sqlite(path) => format!("sqlite://{}", path.display()),
            StoreLocation::Mysql(url) => redact(url),
        }
    }

    /// Connect to a database that must already exist with its schema: a
    /// mistyped SQLite path is "no such database", never a fresh empty file,
    /// and a database without the seckill schema is "no schema", never a
    /// fresh empty one (only `consume` creates them; everything else reads
    /// what it wrote). An older schema is upgraded in place, as `consume`
    /// would.
    pub(crate) fn open_existing(&self) -> Result<Box<dyn OrderStore>> {
        self.require_existing()?;
        self.open_as(Schema::MustExist)
    }

    /// Fail with "no such database" when a SQLite file is missing.
    pub(crate) fn require_existing(&self) -> Result<()> {
        if let StoreLocation::Sqlite(path) = self
            && !path.is_file()
        {
            anyhow::bail!(
                "no such database: {} (only `seckill consume` creates it; check --orders-db, \
                 SECKILL_ORDERS_DB or the campaign file's orders.store)",
                self.display()
            );
        }
        Ok(())
    }

    /// Connect, creating the database file (SQLite) and the schema when missing.
    pub fn open(&self) -> Result<Box<dyn OrderStore>> {
        self.open_as(Schema::CreateIfMissing)
    }

    fn open_as(&self, schema: Schema) -> Result<Box<dyn OrderStore>> {
        Ok(match self {
            StoreLocation::Sqlite(path) => Box::new(sqlite::SqliteStore::open_as(path, schema)?),
            StoreLocation::Mysql(url) => {
                Box::new(mysql::MysqlStore::open(url, self.display(), schema)?)
            }
        })
    }
}

/// Whether opening a store may create the seckill schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Schema {
    /// `consume` and the other writers: create the tables when missing.
    CreateIfMissing,
    /// Readers (`reconcile`): a database without the tables holds no orders
    /// of seckill, and creating them would make it look consumed into.
    MustExist,
}

/// The error of [`Schema::MustExist`] on a database without the tables:
/// permanent (waiting does not create a schema), and it says what to do.
pub(crate) fn no_schema(display: &str) -> anyhow::Error {
    anyhow::Error::new(NoSchema(display.to_string()))
}

/// A reachable database without the seckill tables (`doctor` tells it from
/// an unreachable one: `consume` creates them on its first start).
#[derive(Debug)]
pub(crate) struct NoSchema(String);

impl std::fmt::Display for NoSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} has no seckill schema (table seckill_schema is missing): it holds no orders \
             of seckill, so there is nothing to check against, and this command does not create \
             one. Point --orders-db, SECKILL_ORDERS_DB or the campaign file's orders.store at the \
             database `seckill consume` stores into; only `seckill consume` creates the schema",
            self.0
        )
    }
}

impl std::error::Error for NoSchema {}

/// Whether `error` says the database is reachable but has no schema yet.
pub(crate) fn is_no_schema(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| cause.is::<NoSchema>())
}

/// Rows and units of one campaign item in the database.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ItemTotals {
    /// Order rows.
    pub(crate) rows: i64,
    /// Units those rows ordered.
    pub(crate) units: i64,
    /// Of those, rows `preheat --recover` carried over a Redis data loss.
    pub(crate) carried_rows: i64,
    /// Units of the carried-over rows.
    pub(crate) carried_units: i64,
}

/// A stored order's identity, for comparing the database against the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredOrder {
    pub(crate) order_id: String,
    pub(crate) stream_id: String,
    pub(crate) qty: i64,
    /// Carried over a Redis data loss by `preheat --recover`: its stream
    /// entry is gone by definition.
    pub(crate) carried: bool,
}

/// One `preheat --recover` of one item: the baseline reconcile balances
/// against. Written to the order database before Redis is loaded, with
/// the rows it carried over marked (`orders.recovered_at`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Recovery {
    pub(crate) campaign: String,
    pub(crate) item_id: String,
    /// Unix ms, Redis clock; also the `recovered_at` of the rows it carried.
    pub(crate) recovered_at_ms: i64,
    /// Who ran it (`--by`-style operator name).
    pub(crate) recovered_by: String,
    /// Orders stored before the loss, carried over (their stream entries are gone).
    pub(crate) rows_carried: i64,
    /// Their units.
    pub(crate) units_carried: i64,
    /// The item's stock at the recovery (the campaign file's).
    pub(crate) initial_stock: i64,
    /// What was loaded into Redis: initial − every unit stored.
    pub(crate) stock_loaded: i64,
}

/// What a stored row says about its order: reconcile compares it with the
/// order entry, so a row changed behind the pipeline's back is drift.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredContent {
    pub(crate) campaign: String,
    pub(crate) item_id: String,
    pub(crate) user_id: String,
    pub(crate) qty: i64,
    pub(crate) price_cents: i64,
    /// The order's state (`confirmed` for orders final on `ok`).
    pub(crate) state: OrderState,
}

/// One seat of a stored order (table `order_seats`), with its order's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredSeat {
    /// The seat's label, `A-12-7`.
    pub(crate) seat: String,
    pub(crate) order_id: String,
    /// The state of the order row that holds it.
    pub(crate) state: OrderState,
}

/// One user's stored purchases of one item (`preheat --recover` restores them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuyerTotal {
    pub(crate) user_id: String,
    pub(crate) units: i64,
    /// The user's latest order (order ids sort by time).
    pub(crate) latest_order_id: String,
}

impl Recovery {
    /// This recovery as recorded, once its transaction counted what it marked
    /// (`rows`, `units`) and every unit stored of the item (`all_units`).
    pub(crate) fn counted(&self, rows: i64, units: i64, all_units: i64) -> Recovery {
        Recovery {
            rows_carried: rows,
            units_carried: units,
            stock_loaded: (self.initial_stock - all_units).max(0),
            ..self.clone()
        }
    }
}

/// An order database. Every method is one transaction or one query.
pub trait OrderStore {
    /// Where it is, without password.
    fn display(&self) -> String;

    /// Insert `orders` in ONE transaction, ignoring order ids already stored;
    /// returns how many rows are new. When this returns `Ok` the rows are committed.
    fn insert_orders(&mut self, orders: &[Order], consumed_at_ms: i64) -> Result<u64>;

    /// Whether the database takes writes right now: an empty write transaction commits.
    fn accepts_writes(&mut self) -> bool {
        self.insert_orders(&[], 0).is_ok()
    }

    /// Apply reservations' final state changes in ONE transaction: a missing
    /// row is created in the new state, a `reserved` row moves to it, any
    /// other row is left as it is (idempotent; a paid row never becomes
    /// cancelled). When this returns `Ok` the changes are committed.
    fn apply_changes(&mut self, changes: &[StateChange], consumed_at_ms: i64) -> Result<()>;

    /// The stored state of each of `order_ids` that is stored.
    fn order_states(&mut self, order_ids: &[&str]) -> Result<HashMap<String, OrderState>> {
        Ok(self
            .stored_contents(order_ids)?
            .into_iter()
            .map(|(order_id, content)| (order_id, content.state))
            .collect())
    }

    /// Which of `order_ids` are stored.
    fn existing_order_ids(&mut self, order_ids: &[&str]) -> Result<HashSet<String>> {
        Ok(self.stored_contents(order_ids)?.into_keys().collect())
    }

    /// The stored rows of `order_ids` (those that are stored), by order id.
    fn stored_contents(&mut self, order_ids: &[&str]) -> Result<HashMap<String, StoredContent>>;

    /// Every seat the stored orders of one campaign item hold (released
    /// orders' too), with each order's state, by seat then order id. One
    /// row per seat sold, held or released: a section is at most 20,000
    /// seats, an item at most 64 sections.
    fn item_seats(&mut self, campaign: &str, item: &str) -> Result<Vec<StoredSeat>>;

    /// Rows and units of one campaign item.
    fn item_totals(&mut self, campaign: &str, item: &str) -> Result<ItemTotals>;

    /// Rows of one campaign, every item (also items no longer in the file).
    fn campaign_rows(&mut self, campaign: &str) -> Result<i64>;

    /// Delete every row of one campaign, and its recovery records, in one
    /// transaction; returns how many rows.
    fn delete_campaign(&mut self, campaign: &str) -> Result<u64>;

    /// In ONE transaction: mark every stored row of the item not yet carried
    /// over as carried by this recovery (`recovered_at`), count what it
    /// marked (`rows_carried`, `units_carried`) and what is left of the
    /// initial stock after every stored unit (`stock_loaded`, at least 0),
    /// and record it. Returns the record; nothing newly marked
    /// (`rows_carried` 0: an interrupted `--recover` marked them already)
    /// records nothing.
    fn record_recovery(&mut self, recovery: &Recovery) -> Result<Recovery>;

    /// Every recovery recorded for one campaign item, oldest first.
    fn recoveries(&mut self, campaign: &str, item: &str) -> Result<Vec<Recovery>>;
    /// Up to `limit` buyers of one campaign item with user id > `after`, in user id order.
    fn item_buyers_after(
        &mut self,
        campaign: &str,
        item: &str,
        after: &str,
        limit: usize,
    ) -> Result<Vec<BuyerTotal>>;

    /// Up to `limit` orders of one campaign item with order id > `after`, in order id order.
    fn item_orders_after(
        &mut self,
        campaign: &str,
        item: &str,
        after: &str,
        limit: usize,
    ) -> Result<Vec<StoredOrder>>;
}

/// A stored `state` column, or an error naming the order and the database.
pub(crate) fn parse_state(order_id: &str, state: &str, database: &str) -> Result<OrderState> {
    OrderState::parse(state).ok_or_else(|| {
        anyhow::anyhow!("order {order_id} in {database} has an unknown state {state:?}")
    })
}

/// (paid_at, released_at) of a state change: one of them is its time.
pub(crate) fn change_times(change: &StateChange) -> (Option<i64>, Option<i64>) {
    match change.state {
        OrderState::Paid => (Some(change.at_ms), None),
        _ => (None, Some(change.at_ms)),
    }
}

/// Wall-clock Unix milliseconds (the `consumed_at` column).
pub(crate) fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// `host` (`role-host`): a consumer name that stays the same across
/// restarts, so a restarted consumer resumes its own pending entries first
/// and the group does not collect a new name per process.
pub(crate) fn default_consumer_name(role: &str) -> String {
    let host = crate::util::identity::host_name();
    if role.is_empty() {
        host
    } else {
        format!("{role}-{host}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_urls_resolve_and_hide_passwords() {
        let base = Path::new("/srv/campaigns");
        assert_eq!(
            StoreLocation::parse("sqlite://orders.db", base).unwrap(),
            StoreLocation::Sqlite("/srv/campaigns/orders.db".into())
        );
        assert_eq!(
            StoreLocation::parse("sqlite:///var/lib/o.db", base).unwrap(),
            StoreLocation::Sqlite("/var/lib/o.db".into())
        );
        let mysql = StoreLocation::parse("mysql://app:secret@db:3306/shop", base).unwrap();
        assert_eq!(mysql.display(), "mysql://app:***@db:3306/shop");
        let err = StoreLocation::parse("postgres://u:secret@h/db", base).unwrap_err();
        assert!(!format!("{err:#}").contains("secret"));
        assert_eq!(
            crate::model::error::exit_code_for(&err),
            crate::model::exit_codes::USAGE_ERROR
        );
    }
}
