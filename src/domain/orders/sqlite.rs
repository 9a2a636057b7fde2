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
use std::sync::LazyLock;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use rusqlite::types::Value;
use rusqlite::{Connection, params, params_from_iter};

use super::{
    BuyerTotal, ItemTotals, Order, OrderState, OrderStore, Recovery, SCHEMA_VERSION, Schema,
    StateChange, StoredContent, StoredOrder, StoredSeat, change_times, no_schema, parse_state,
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
    release_reason TEXT,
    recovered_at INTEGER          -- Unix ms, Redis clock: carried over a Redis data loss by preheat --recover
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS orders_by_item ON orders (campaign, item_id, order_id);
CREATE TABLE IF NOT EXISTS seckill_recoveries (
    campaign      TEXT    NOT NULL,
    item_id       TEXT    NOT NULL,
    recovered_at  INTEGER NOT NULL, -- Unix ms, Redis clock
    recovered_by  TEXT    NOT NULL,
    rows_carried  INTEGER NOT NULL,
    units_carried INTEGER NOT NULL,
    initial_stock INTEGER NOT NULL,
    stock_loaded  INTEGER NOT NULL,
    PRIMARY KEY (campaign, item_id, recovered_at)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS order_seats (
    order_id TEXT    NOT NULL,
    campaign TEXT    NOT NULL,
    item_id  TEXT    NOT NULL,
    seat     TEXT    NOT NULL, -- A-12-7: section-row-seat, 1-based
    sold     INTEGER CHECK (sold = 1), -- 1 once the order is paid or final on ok; NULL while held or released
    PRIMARY KEY (order_id, seat)
) WITHOUT ROWID;
-- No seat sold twice: NULLs are distinct, so held and released rows never collide.
CREATE UNIQUE INDEX IF NOT EXISTS order_seats_sold_once ON order_seats (campaign, item_id, seat, sold);
";

/// The seats of one order: one row per seat, sold when the order row is
/// paid or final on ok (the row may have been created in its final state by
/// a state change that arrived first). A seat stored already is left as it
/// is (a redelivery); a second sold row for a seat is refused by
/// `order_seats_sold_once`, like any order the database refuses.
const INSERT_SEAT: &str = "INSERT INTO order_seats (order_id, campaign, item_id, seat, sold)
    SELECT order_id, campaign, item_id, ?2, CASE WHEN state IN ('paid', 'confirmed') THEN 1 END
    FROM orders WHERE order_id = ?1
    ON CONFLICT (order_id, seat) DO NOTHING";

/// A payment sells the order's seats. `OR IGNORE`: a seat some other paid
/// order holds already (a double sale Redis never makes) stays unsold here
/// instead of stopping every later state change; reconcile names the seat
/// ("in two live orders").
const SELL_SEATS: &str = "UPDATE OR IGNORE order_seats SET sold = 1
    WHERE order_id = ?1 AND sold IS NULL
      AND EXISTS (SELECT 1 FROM orders WHERE order_id = ?1 AND state = 'paid')";

/// Columns later schemas added to `orders`, added to an existing table column
/// by column inside the schema transaction. Schema 2: the order state and its
/// times (`payment_timeout`; rows stored before are `confirmed`, final on ok,
/// as they were). Schema 3: `recovered_at` (the recovery baseline; rows
/// stored before were carried over by nothing).
const ADDED_COLUMNS: [(&str, &str); 6] = [
    ("state", "TEXT NOT NULL DEFAULT 'confirmed'"),
    ("deadline_at", "INTEGER"),
    ("paid_at", "INTEGER"),
    ("released_at", "INTEGER"),
    ("release_reason", "TEXT"),
    ("recovered_at", "INTEGER"),
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
fn insert_statement(rows: usize) -> String {
    format!(
        "INSERT INTO orders
         (order_id, campaign, item_id, user_id, qty, price_cents, bought_at, stream_id, consumed_at,
          state, deadline_at)
         VALUES {}
         ON CONFLICT (order_id) DO NOTHING",
        vec!["(?,?,?,?,?,?,?,?,?,?,?)"; rows].join(",")
    )
}

/// Orders per INSERT statement (11 variables each, far below SQLite's
/// 32,766): one statement step per 50 rows instead of one per row cut the
/// insert's CPU (bench-consume.sh); the rest of a batch goes one by one.
const ROWS_PER_STATEMENT: usize = 50;

static INSERT_MANY: LazyLock<String> = LazyLock::new(|| insert_statement(ROWS_PER_STATEMENT));
static INSERT_ONE: LazyLock<String> = LazyLock::new(|| insert_statement(1));

/// One INSERT of `orders` (as many as `sql` has rows), each bound by
/// reference: nothing of an order is copied for it. Rows new.
fn insert_rows(
    tx: &rusqlite::Transaction,
    sql: &str,
    orders: &[Order],
    consumed_at_ms: i64,
) -> rusqlite::Result<u64> {
    let mut statement = tx.prepare_cached(sql)?;
    let states: Vec<&str> = orders.iter().map(|o| o.initial_state().as_str()).collect();
    let mut values: Vec<&dyn rusqlite::ToSql> = Vec::with_capacity(orders.len() * 11);
    for (o, state) in orders.iter().zip(&states) {
        values.extend([
            &o.order_id as &dyn rusqlite::ToSql,
            &o.campaign,
            &o.item_id,
            &o.user_id,
            &o.qty,
            &o.price_cents,
            &o.bought_at_ms,
            &o.stream_id,
            &consumed_at_ms,
            state,
            &o.deadline_ms,
        ]);
    }
    Ok(statement.execute(values.as_slice())? as u64)
}

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

/// Order ids looked up per query: a reconcile page in one (SQLite takes
/// 32,766 variables).
const LOOKUP_CHUNK: usize = 1000;

/// An open SQLite order store.
pub struct SqliteStore {
    connection: Connection,
    display: String,
}

impl SqliteStore {
    /// Open (creating file and schema when missing).
    pub fn open(path: &Path) -> Result<SqliteStore> {
        SqliteStore::open_as(path, Schema::CreateIfMissing)
    }

    /// Open; with [`Schema::MustExist`] a file without the seckill tables is
    /// refused before anything is written to it (not even the WAL switch).
    pub(crate) fn open_as(path: &Path, schema: Schema) -> Result<SqliteStore> {
        let display = format!("sqlite://{}", path.display());
        let connection = Connection::open(path)
            .with_context(|| format!("cannot open order database {display}"))?;
        connection
            .busy_timeout(Duration::from_millis(500))
            .context("cannot set SQLite busy timeout")?;
        if schema == Schema::MustExist && schema_version(&connection).is_none() {
            return Err(no_schema(&display));
        }
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
        if schema_version(&self.connection) == Some(SCHEMA_VERSION) {
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
        for (column, definition) in ADDED_COLUMNS {
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
            Some(v) if v > SCHEMA_VERSION => bail!(
                "{} has schema version {v}, newer than this seckill understands ({SCHEMA_VERSION}): upgrade seckill",
                self.display
            ),
            Some(SCHEMA_VERSION) => {}
            _ => {
                tx.execute(
                    "INSERT INTO seckill_schema (version) VALUES (?1)",
                    [SCHEMA_VERSION],
                )
                .context("cannot record the schema version")?;
            }
        }
        tx.commit().context("cannot commit the schema")
    }
}

/// The recorded schema version; `None` when there is no seckill schema.
fn schema_version(connection: &Connection) -> Option<i64> {
    connection
        .query_row("SELECT MAX(version) FROM seckill_schema", [], |row| {
            row.get(0)
        })
        .ok()
        .flatten()
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
        for chunk in orders.chunks(ROWS_PER_STATEMENT) {
            if chunk.len() == ROWS_PER_STATEMENT {
                inserted += insert_rows(&tx, &INSERT_MANY, chunk, consumed_at_ms)
                    .with_context(|| format!("cannot insert {} orders", chunk.len()))?;
                continue;
            }
            // The tail of a batch, and a lone order: one by one.
            for one in chunk {
                inserted +=
                    insert_rows(&tx, &INSERT_ONE, std::slice::from_ref(one), consumed_at_ms)
                        .with_context(|| format!("cannot insert order {}", one.order_id))?;
            }
        }
        // Seats after every order row: each seat row reads its order's state.
        for order in orders.iter().filter(|o| !o.seats.is_empty()) {
            let mut statement = tx
                .prepare_cached(INSERT_SEAT)
                .context("cannot prepare the seat insert")?;
            for seat in &order.seats {
                statement
                    .execute(params![order.order_id, seat])
                    .with_context(|| {
                        format!("cannot store seat {seat} of order {}", order.order_id)
                    })?;
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
                if c.state == OrderState::Paid {
                    tx.prepare_cached(SELL_SEATS)
                        .and_then(|mut sell| sell.execute([&o.order_id]))
                        .with_context(|| {
                            format!("cannot sell the seats of order {}", o.order_id)
                        })?;
                }
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
        let mut found = HashMap::with_capacity(order_ids.len());
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

    fn item_seats(&mut self, campaign: &str, item: &str) -> Result<Vec<StoredSeat>> {
        let mut statement = self
            .connection
            .prepare_cached(
                "SELECT s.seat, s.order_id, o.state FROM order_seats s
                 JOIN orders o ON o.order_id = s.order_id
                 WHERE s.campaign = ?1 AND s.item_id = ?2
                 ORDER BY s.seat, s.order_id",
            )
            .context("cannot prepare the seat query")?;
        let rows = statement
            .query_map([campaign, item], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get::<_, String>(2)?))
            })
            .with_context(|| {
                format!(
                    "cannot read the seats of {campaign}/{item} in {}",
                    self.display
                )
            })?;
        let mut seats = Vec::new();
        for row in rows {
            let (seat, order_id, state): (String, String, String) =
                row.context("cannot read a seat row")?;
            let state = parse_state(&order_id, &state, &self.display)?;
            seats.push(StoredSeat {
                seat,
                order_id,
                state,
            });
        }
        Ok(seats)
    }

    fn item_totals(&mut self, campaign: &str, item: &str) -> Result<ItemTotals> {
        self.connection
            .query_row(
                "SELECT COUNT(*), COALESCE(SUM(qty), 0), COUNT(recovered_at),
                        COALESCE(SUM(CASE WHEN recovered_at IS NOT NULL THEN qty END), 0)
                 FROM orders WHERE campaign = ?1 AND item_id = ?2",
                [campaign, item],
                |row| {
                    Ok(ItemTotals {
                        rows: row.get(0)?,
                        units: row.get(1)?,
                        carried_rows: row.get(2)?,
                        carried_units: row.get(3)?,
                    })
                },
            )
            .with_context(|| {
                format!(
                    "cannot count orders of {campaign}/{item} in {}",
                    self.display
                )
            })
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
        let display = self.display.clone();
        let tx = self
            .connection
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .with_context(|| format!("cannot begin a transaction on {display}"))?;
        let deleted = tx
            .execute("DELETE FROM orders WHERE campaign = ?1", [campaign])
            .with_context(|| format!("cannot delete orders of {campaign} from {display}"))?;
        tx.execute("DELETE FROM order_seats WHERE campaign = ?1", [campaign])
            .with_context(|| format!("cannot delete the seats of {campaign} from {display}"))?;
        tx.execute(
            "DELETE FROM seckill_recoveries WHERE campaign = ?1",
            [campaign],
        )
        .with_context(|| format!("cannot delete the recoveries of {campaign} from {display}"))?;
        tx.commit()
            .with_context(|| format!("cannot commit the purge of {campaign} in {display}"))?;
        Ok(deleted as u64)
    }

    fn record_recovery(&mut self, recovery: &Recovery) -> Result<Recovery> {
        let display = self.display.clone();
        let (campaign, item, at) = (
            &recovery.campaign,
            &recovery.item_id,
            recovery.recovered_at_ms,
        );
        let tx = self
            .connection
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .with_context(|| format!("cannot begin a transaction on {display}"))?;
        tx.execute(
            "UPDATE orders SET recovered_at = ?3
             WHERE campaign = ?1 AND item_id = ?2 AND recovered_at IS NULL",
            params![campaign, item, at],
        )
        .with_context(|| {
            format!("cannot mark the orders of {campaign}/{item} carried over in {display}")
        })?;
        let (rows, units, all_units): (i64, i64, i64) = tx
            .query_row(
                "SELECT COUNT(CASE WHEN recovered_at = ?3 THEN 1 END),
                        COALESCE(SUM(CASE WHEN recovered_at = ?3 THEN qty END), 0),
                        COALESCE(SUM(qty), 0)
                 FROM orders WHERE campaign = ?1 AND item_id = ?2",
                params![campaign, item, at],
                |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
            )
            .with_context(|| format!("cannot count the carried-over orders in {display}"))?;
        let written = recovery.counted(rows, units, all_units);
        if rows == 0 {
            return Ok(written);
        }
        tx.execute(
            "INSERT INTO seckill_recoveries (campaign, item_id, recovered_at, recovered_by,
                 rows_carried, units_carried, initial_stock, stock_loaded)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                campaign,
                item,
                at,
                written.recovered_by,
                rows,
                units,
                written.initial_stock,
                written.stock_loaded
            ],
        )
        .with_context(|| format!("cannot record the recovery of {campaign}/{item} in {display}"))?;
        tx.commit().with_context(|| {
            format!("cannot commit the recovery of {campaign}/{item} to {display}")
        })?;
        Ok(written)
    }

    fn recoveries(&mut self, campaign: &str, item: &str) -> Result<Vec<Recovery>> {
        let mut statement = self
            .connection
            .prepare_cached(
                "SELECT recovered_at, recovered_by, rows_carried, units_carried, initial_stock,
                        stock_loaded
                 FROM seckill_recoveries WHERE campaign = ?1 AND item_id = ?2
                 ORDER BY recovered_at",
            )
            .context("cannot prepare the recovery query")?;
        let rows = statement
            .query_map(params![campaign, item], |row| {
                Ok(Recovery {
                    campaign: campaign.to_string(),
                    item_id: item.to_string(),
                    recovered_at_ms: row.get(0)?,
                    recovered_by: row.get(1)?,
                    rows_carried: row.get(2)?,
                    units_carried: row.get(3)?,
                    initial_stock: row.get(4)?,
                    stock_loaded: row.get(5)?,
                })
            })
            .with_context(|| {
                format!(
                    "cannot read the recoveries of {campaign}/{item} in {}",
                    self.display
                )
            })?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .context("cannot read a recovery row")
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
                "SELECT order_id, stream_id, qty, recovered_at IS NOT NULL FROM orders
                 WHERE campaign = ?1 AND item_id = ?2 AND order_id > ?3
                 ORDER BY order_id LIMIT ?4",
            )
            .context("cannot prepare order page query")?;
        let rows = statement
            .query_map(params![campaign, item, after, limit as i64], |row| {
                Ok(StoredOrder {
                    order_id: row.get(0)?,
                    stream_id: row.get(1)?,
                    qty: row.get(2)?,
                    carried: row.get(3)?,
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
