//! The embedded order store: one SQLite file in WAL mode.
//!
//! WAL lets `reconcile` read while `consume` writes. `synchronous=FULL`
//! because a commit is followed by XACK: a commit that a power cut could
//! still undo would make the ack a lie. One transaction per batch with a
//! cached prepared statement keeps that fsync per batch, not per order.
//! `busy_timeout` is short on purpose: a locked database is a database
//! error, which the pipeline answers with backoff and a log line.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use rusqlite::types::Value;
use rusqlite::{Connection, params, params_from_iter};

use super::{
    BuyerTotal, ItemTotals, Order, OrderState, OrderStore, SCHEMA_VERSION, StateChange,
    StoredContent, StoredOrder, change_times, parse_state,
};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS seckill_schema (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS orders (
    order_id    TEXT    NOT NULL PRIMARY KEY,
    campaign    TEXT    NOT NULL,
    item_id     TEXT    NOT NULL,
    user_id     TEXT    NOT NULL,
    qty         INTEGER NOT NULL,
    price_cents INTEGER NOT NULL,
    bought_at   INTEGER NOT NULL, -- Unix ms, Redis clock
    stream_id   TEXT    NOT NULL,
    consumed_at INTEGER NOT NULL, -- Unix ms, consumer clock
    state       TEXT    NOT NULL DEFAULT 'confirmed',
    deadline_at INTEGER,          -- Unix ms, Redis clock; NULL = final on ok
    paid_at     INTEGER,          -- Unix ms, Redis clock
    released_at INTEGER,          -- Unix ms, Redis clock (expired or cancelled)
    release_reason TEXT
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS orders_by_item ON orders (campaign, item_id, order_id);
";

/// Schema 1 → 2: the order state and its times (`payment_timeout`). Added
/// to an existing table column by column, inside the schema transaction;
/// rows stored before are `confirmed` (final on ok), as they were.
const STATE_COLUMNS: [(&str, &str); 5] = [
    ("state", "TEXT NOT NULL DEFAULT 'confirmed'"),
    ("deadline_at", "INTEGER"),
    ("paid_at", "INTEGER"),
    ("released_at", "INTEGER"),
    ("release_reason", "TEXT"),
];

/// Apply a final state change: create the row in that state when the order
/// entry has not been stored yet, else move a `reserved` row (and only a
/// reserved one: a paid row never becomes cancelled) to it.
const APPLY_CHANGE: &str = "INSERT INTO orders
    (order_id, campaign, item_id, user_id, qty, price_cents, bought_at, stream_id, consumed_at,
     state, deadline_at, paid_at, released_at, release_reason)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
    ON CONFLICT (order_id) DO UPDATE SET
        state = excluded.state, paid_at = excluded.paid_at,
        released_at = excluded.released_at, release_reason = excluded.release_reason
    WHERE orders.state = 'reserved'";

/// Idempotent for a repeated order id only: `INSERT OR IGNORE` would also
/// swallow a refusal by a unique index or a CHECK a DBA added, and the order
/// would be acked as stored but never stored (`tests/it/refused_orders.rs`).
const INSERT: &str = "INSERT INTO orders
    (order_id, campaign, item_id, user_id, qty, price_cents, bought_at, stream_id, consumed_at,
     state, deadline_at)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
    ON CONFLICT (order_id) DO NOTHING";

/// An order row's first eleven columns, in INSERT order (see the schema).
fn row_values(o: &Order, consumed_at_ms: i64, state: OrderState) -> [Value; 11] {
    [
        o.order_id.clone().into(),
        o.campaign.clone().into(),
        o.item_id.clone().into(),
        o.user_id.clone().into(),
        o.qty.into(),
        o.price_cents.into(),
        o.bought_at_ms.into(),
        o.stream_id.clone().into(),
        consumed_at_ms.into(),
        state.as_str().to_string().into(),
        o.deadline_ms.into(),
    ]
}

/// Order ids looked up per query (well under SQLite's variable limit).
const LOOKUP_CHUNK: usize = 500;

/// An open SQLite order store.
pub struct SqliteStore {
    connection: Connection,
    display: String,
}

impl SqliteStore {
    /// Open (creating file and schema when missing).
    pub fn open(path: &Path) -> Result<SqliteStore> {
        let display = format!("sqlite://{}", path.display());
        let connection = Connection::open(path)
            .with_context(|| format!("cannot open order database {display}"))?;
        connection
            .busy_timeout(Duration::from_millis(500))
            .context("cannot set SQLite busy timeout")?;
        let mode: String = connection
            .query_row("PRAGMA journal_mode=WAL", [], |row| row.get(0))
            .with_context(|| format!("cannot switch {display} to WAL"))?;
        if !mode.eq_ignore_ascii_case("wal") {
            bail!("{display} refused WAL mode (journal_mode is {mode})");
        }
        connection
            .execute_batch("PRAGMA synchronous=FULL;")
            .context("cannot set SQLite synchronous mode")?;
        let mut store = SqliteStore {
            connection,
            display,
        };
        store.create_schema()?;
        Ok(store)
    }

    fn create_schema(&mut self) -> Result<()> {
        // A read first: opening a database that has the schema must not need
        // the write lock, so a consumer can start while another writer holds it.
        let current: rusqlite::Result<Option<i64>> =
            self.connection
                .query_row("SELECT MAX(version) FROM seckill_schema", [], |row| {
                    row.get(0)
                });
        if let Ok(Some(SCHEMA_VERSION)) = current {
            return Ok(());
        }
        let tx = self
            .connection
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .with_context(|| format!("cannot lock {} to create the schema", self.display))?;
        tx.execute_batch(SCHEMA)
            .with_context(|| format!("cannot create the schema in {}", self.display))?;
        let existing: HashSet<String> = tx
            .prepare("SELECT name FROM pragma_table_info('orders')")
            .and_then(|mut statement| {
                statement
                    .query_map([], |row| row.get::<_, String>(0))?
                    .collect()
            })
            .with_context(|| format!("cannot read the columns of orders in {}", self.display))?;
        for (column, definition) in STATE_COLUMNS {
            if !existing.contains(column) {
                tx.execute_batch(&format!(
                    "ALTER TABLE orders ADD COLUMN {column} {definition}"
                ))
                .with_context(|| {
                    format!("cannot add column {column} to orders in {}", self.display)
                })?;
            }
        }
        let version: Option<i64> = tx
            .query_row("SELECT MAX(version) FROM seckill_schema", [], |row| {
                row.get(0)
            })
            .context("cannot read seckill_schema")?;
        match version {
            None | Some(1) => {
                tx.execute(
                    "INSERT INTO seckill_schema (version) VALUES (?1)",
                    [SCHEMA_VERSION],
                )
                .context("cannot record the schema version")?;
            }
            Some(v) if v > SCHEMA_VERSION => bail!(
                "{} has schema version {v}, newer than this seckill understands ({SCHEMA_VERSION}): upgrade seckill",
                self.display
            ),
            Some(_) => {}
        }
        tx.commit().context("cannot commit the schema")
    }
}

impl OrderStore for SqliteStore {
    fn display(&self) -> String {
        self.display.clone()
    }

    fn insert_orders(&mut self, orders: &[Order], consumed_at_ms: i64) -> Result<u64> {
        let tx = self
            .connection
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .with_context(|| format!("cannot begin a transaction on {}", self.display))?;
        let mut inserted = 0u64;
        {
            let mut statement = tx
                .prepare_cached(INSERT)
                .context("cannot prepare the order insert")?;
            for o in orders {
                inserted += statement
                    .execute(params_from_iter(row_values(
                        o,
                        consumed_at_ms,
                        o.initial_state(),
                    )))
                    .with_context(|| format!("cannot insert order {}", o.order_id))?
                    as u64;
            }
        }
        tx.commit().with_context(|| {
            format!("cannot commit {} orders to {}", orders.len(), self.display)
        })?;
        Ok(inserted)
    }

    fn apply_changes(&mut self, changes: &[StateChange], consumed_at_ms: i64) -> Result<()> {
        let tx = self
            .connection
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .with_context(|| format!("cannot begin a transaction on {}", self.display))?;
        {
            let mut statement = tx
                .prepare_cached(APPLY_CHANGE)
                .context("cannot prepare the state change")?;
            for c in changes {
                let o = &c.order;
                let (paid_at, released_at) = change_times(c);
                statement
                    .execute(params_from_iter(
                        row_values(o, consumed_at_ms, c.state).into_iter().chain([
                            paid_at.into(),
                            released_at.into(),
                            c.state.released().then(|| c.reason.clone()).into(),
                        ]),
                    ))
                    .with_context(|| {
                        format!(
                            "cannot apply state {} to order {}",
                            c.state.as_str(),
                            o.order_id
                        )
                    })?;
            }
        }
        tx.commit().with_context(|| {
            format!(
                "cannot commit {} state changes to {}",
                changes.len(),
                self.display
            )
        })
    }

    fn stored_contents(&mut self, order_ids: &[&str]) -> Result<HashMap<String, StoredContent>> {
        let mut found = HashMap::new();
        for chunk in order_ids.chunks(LOOKUP_CHUNK) {
            let placeholders = vec!["?"; chunk.len()].join(",");
            let sql = format!(
                "SELECT order_id, campaign, item_id, user_id, qty, price_cents, state FROM orders
                 WHERE order_id IN ({placeholders})"
            );
            let mut statement = self
                .connection
                .prepare_cached(&sql)
                .context("cannot prepare order lookup")?;
            let rows = statement
                .query_map(params_from_iter(chunk.iter()), |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        (
                            row.get(1)?,
                            row.get(2)?,
                            row.get(3)?,
                            row.get(4)?,
                            row.get(5)?,
                        ),
                        row.get::<_, String>(6)?,
                    ))
                })
                .with_context(|| format!("cannot look up orders in {}", self.display))?;
            for row in rows {
                let (order_id, (campaign, item_id, user_id, qty, price_cents), state) =
                    row.context("cannot read an order row")?;
                let state = parse_state(&order_id, &state, &self.display)?;
                let content = StoredContent {
                    campaign,
                    item_id,
                    user_id,
                    qty,
                    price_cents,
                    state,
                };
                found.insert(order_id, content);
            }
        }
        Ok(found)
    }

    fn item_totals(&mut self, campaign: &str, item: &str) -> Result<ItemTotals> {
        self.connection
            .query_row(
                "SELECT COUNT(*), COALESCE(SUM(qty), 0) FROM orders WHERE campaign = ?1 AND item_id = ?2",
                [campaign, item],
                |row| Ok(ItemTotals { rows: row.get(0)?, units: row.get(1)? }),
            )
            .with_context(|| format!("cannot count orders of {campaign}/{item} in {}", self.display))
    }

    fn campaign_rows(&mut self, campaign: &str) -> Result<i64> {
        self.connection
            .query_row(
                "SELECT COUNT(*) FROM orders WHERE campaign = ?1",
                [campaign],
                |row| row.get(0),
            )
            .with_context(|| format!("cannot count orders of {campaign} in {}", self.display))
    }

    fn delete_campaign(&mut self, campaign: &str) -> Result<u64> {
        let deleted = self
            .connection
            .execute("DELETE FROM orders WHERE campaign = ?1", [campaign])
            .with_context(|| format!("cannot delete orders of {campaign} from {}", self.display))?;
        Ok(deleted as u64)
    }

    fn item_buyers_after(
        &mut self,
        campaign: &str,
        item: &str,
        after: &str,
        limit: usize,
    ) -> Result<Vec<BuyerTotal>> {
        let mut statement = self
            .connection
            .prepare_cached(
                "SELECT user_id, SUM(qty), MAX(order_id) FROM orders
                 WHERE campaign = ?1 AND item_id = ?2 AND user_id > ?3
                 GROUP BY user_id ORDER BY user_id LIMIT ?4",
            )
            .context("cannot prepare buyer page query")?;
        let rows = statement
            .query_map(params![campaign, item, after, limit as i64], |row| {
                Ok(BuyerTotal {
                    user_id: row.get(0)?,
                    units: row.get(1)?,
                    latest_order_id: row.get(2)?,
                })
            })
            .with_context(|| {
                format!(
                    "cannot page buyers of {campaign}/{item} in {}",
                    self.display
                )
            })?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .context("cannot read a buyer row")
    }

    fn item_orders_after(
        &mut self,
        campaign: &str,
        item: &str,
        after: &str,
        limit: usize,
    ) -> Result<Vec<StoredOrder>> {
        let mut statement = self
            .connection
            .prepare_cached(
                "SELECT order_id, stream_id FROM orders
                 WHERE campaign = ?1 AND item_id = ?2 AND order_id > ?3
                 ORDER BY order_id LIMIT ?4",
            )
            .context("cannot prepare order page query")?;
        let rows = statement
            .query_map(params![campaign, item, after, limit as i64], |row| {
                Ok(StoredOrder {
                    order_id: row.get(0)?,
                    stream_id: row.get(1)?,
                })
            })
            .with_context(|| {
                format!(
                    "cannot page orders of {campaign}/{item} in {}",
                    self.display
                )
            })?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .context("cannot read an order row")
    }
}
