//! The production order store: MySQL or MariaDB over TCP.
//!
//! One connection, dropped after any error and opened again on the next
//! call, so a restarted database is picked up without restarting `consume`.
//! A batch is one multi-row `INSERT` inside one transaction: one round trip
//! and one commit per batch. When some of its orders are stored already (a
//! redelivery: the statement fails with a duplicate key and is undone), the
//! stored ids are looked up in the same transaction and only the others are
//! inserted. Not `INSERT IGNORE`: it would also swallow a refusal by
//! a unique index or a constraint a DBA added — the order acked as stored but
//! never stored (`tests/it/refused_orders.rs`). Only a repeated order id is
//! idempotent; anything else the database refuses fails the batch, and the
//! pipeline isolates it (`orders::pipeline`). Columns are `utf8mb4_bin` so order
//! ids compare byte for byte, as they do in Redis.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use mysql::prelude::Queryable;
use mysql::{Conn, Opts, OptsBuilder, TxOpts, Value};

use super::{
    BuyerTotal, ItemTotals, Order, OrderState, OrderStore, Recovery, SCHEMA_VERSION, Schema,
    StateChange, StoredContent, StoredOrder, StoredSeat, change_times, no_schema, parse_state,
};

const SCHEMA: [&str; 4] = [
    "CREATE TABLE IF NOT EXISTS seckill_schema (version INT NOT NULL) ENGINE=InnoDB",
    "CREATE TABLE IF NOT EXISTS orders (
        order_id    VARCHAR(64)  NOT NULL PRIMARY KEY,
        campaign    VARCHAR(64)  NOT NULL,
        item_id     VARCHAR(64)  NOT NULL,
        user_id     VARCHAR(255) NOT NULL,
        qty         INT          NOT NULL,
        price_cents BIGINT       NOT NULL,
        bought_at   BIGINT       NOT NULL COMMENT 'Unix ms, Redis clock',
        stream_id   VARCHAR(64)  NOT NULL,
        consumed_at BIGINT       NOT NULL COMMENT 'Unix ms, consumer clock',
        state       VARCHAR(16)  NOT NULL DEFAULT 'confirmed',
        deadline_at BIGINT       NULL COMMENT 'Unix ms, Redis clock; NULL = final on ok',
        paid_at     BIGINT       NULL COMMENT 'Unix ms, Redis clock',
        released_at BIGINT       NULL COMMENT 'Unix ms, Redis clock (expired or cancelled)',
        release_reason VARCHAR(255) NULL,
        recovered_at BIGINT      NULL COMMENT 'Unix ms, Redis clock: carried over a Redis data loss by preheat --recover',
        KEY orders_by_item (campaign, item_id, order_id)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
    "CREATE TABLE IF NOT EXISTS seckill_recoveries (
        campaign      VARCHAR(64)  NOT NULL,
        item_id       VARCHAR(64)  NOT NULL,
        recovered_at  BIGINT       NOT NULL COMMENT 'Unix ms, Redis clock',
        recovered_by  VARCHAR(255) NOT NULL,
        rows_carried  BIGINT       NOT NULL,
        units_carried BIGINT       NOT NULL,
        initial_stock BIGINT       NOT NULL,
        stock_loaded  BIGINT       NOT NULL,
        PRIMARY KEY (campaign, item_id, recovered_at)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
    // One row per seat of a seat item's order (schema 4). `sold` is 1 once
    // the order is paid or final on ok, NULL while held or released: NULLs
    // are distinct in a unique key, so only a seat sold twice collides.
    "CREATE TABLE IF NOT EXISTS order_seats (
        order_id VARCHAR(64) NOT NULL,
        campaign VARCHAR(64) NOT NULL,
        item_id  VARCHAR(64) NOT NULL,
        seat     VARCHAR(80) NOT NULL COMMENT 'A-12-7: section-row-seat, 1-based',
        sold     TINYINT     NULL COMMENT '1 once the order is paid or final on ok; NULL while held or released',
        PRIMARY KEY (order_id, seat),
        UNIQUE KEY order_seats_sold_once (campaign, item_id, seat, sold)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
];

/// A payment sells the order's seats. `IGNORE`: a seat some other paid
/// order holds already (a double sale Redis never makes) stays unsold here
/// instead of stopping every later state change; reconcile names the seat.
const SELL_SEATS: &str = "UPDATE IGNORE order_seats SET sold = 1
    WHERE order_id = ? AND sold IS NULL
      AND EXISTS (SELECT 1 FROM orders WHERE order_id = ? AND state = 'paid')";

/// Columns later schemas added to `orders`, added to an existing table (an
/// instant ADD COLUMN on MariaDB 10.3+). Schema 2: the order state and its
/// times (`payment_timeout`; rows stored before are `confirmed`, final on
/// ok, as they were). Schema 3: `recovered_at` (the recovery baseline). DDL
/// is not transactional here: the migration runs under a named lock and
/// re-reads the columns, so two processes starting at once add each column once.
const ADDED_COLUMNS: [(&str, &str); 6] = [
    ("state", "VARCHAR(16) NOT NULL DEFAULT 'confirmed'"),
    (
        "deadline_at",
        "BIGINT NULL COMMENT 'Unix ms, Redis clock; NULL = final on ok'",
    ),
    ("paid_at", "BIGINT NULL COMMENT 'Unix ms, Redis clock'"),
    (
        "released_at",
        "BIGINT NULL COMMENT 'Unix ms, Redis clock (expired or cancelled)'",
    ),
    ("release_reason", "VARCHAR(255) NULL"),
    (
        "recovered_at",
        "BIGINT NULL COMMENT 'Unix ms, Redis clock: carried over a Redis data loss by preheat --recover'",
    ),
];

/// ER_DUP_ENTRY: a row with this key is stored already.
const DUPLICATE_ENTRY: u16 = 1062;

/// ER_NO_SUCH_TABLE: the database has no seckill schema.
const NO_SUCH_TABLE: u16 = 1146;

/// Named lock held while the schema is created or migrated.
const SCHEMA_LOCK: &str = "seckill_schema_migration";

/// Columns of one state change row (see `apply_changes`).
const CHANGE_COLUMNS: usize = 14;

/// Rows per INSERT statement (at most 14 placeholders each: 56,000, below
/// the 65,535 limit): a transaction of the 4 rounds `consume` may store
/// together at its default batch is one statement, one round trip.
const ROWS_PER_INSERT: usize = 4000;
/// Order ids per lookup query.
const LOOKUP_CHUNK: usize = 1000;

/// A MySQL/MariaDB order store.
pub(crate) struct MysqlStore {
    opts: Opts,
    connection: Option<Conn>,
    display: String,
}

impl MysqlStore {
    /// Connect and create the schema when missing (with [`Schema::MustExist`]:
    /// refuse a database without it). `display` is the URL without password.
    pub(crate) fn open(url: &str, display: String, schema: Schema) -> Result<MysqlStore> {
        let opts = Opts::from_url(url)
            .map_err(|_| anyhow::anyhow!("invalid order database URL {display}"))?;
        let opts: Opts = OptsBuilder::from_opts(opts)
            .tcp_connect_timeout(Some(Duration::from_secs(2)))
            .read_timeout(Some(Duration::from_secs(30)))
            .write_timeout(Some(Duration::from_secs(30)))
            .into();
        let mut store = MysqlStore {
            opts,
            connection: None,
            display,
        };
        store.create_schema(schema)?;
        Ok(store)
    }

    /// Run `work` on the connection (opening it if needed); drop it after an error.
    fn with_conn<T>(&mut self, work: impl FnOnce(&mut Conn) -> Result<T>) -> Result<T> {
        let conn = match &mut self.connection {
            Some(conn) => conn,
            None => {
                let conn = Conn::new(self.opts.clone()).with_context(|| {
                    format!("cannot connect to order database {}", self.display)
                })?;
                self.connection.insert(conn)
            }
        };
        let result = work(conn);
        if result.is_err() {
            self.connection = None;
        }
        result
    }

    fn create_schema(&mut self, schema: Schema) -> Result<()> {
        let display = self.display.clone();
        self.with_conn(|conn| {
            // A read first: a reader needs no lock nor DDL rights on a current schema.
            let current: mysql::Result<Option<Option<i64>>> =
                conn.query_first("SELECT MAX(version) FROM seckill_schema");
            match current {
                Ok(Some(Some(SCHEMA_VERSION))) => return Ok(()),
                Ok(Some(Some(_))) => {}
                Err(mysql::Error::MySqlError(e)) if e.code == NO_SUCH_TABLE && schema == Schema::MustExist => {
                    return Err(no_schema(&display));
                }
                Ok(_) if schema == Schema::MustExist => return Err(no_schema(&display)),
                Ok(_) | Err(mysql::Error::MySqlError(_)) => {}
                Err(e) => return Err(e).context("cannot read seckill_schema"),
            }
            let locked: Option<Option<i64>> = conn
                .exec_first("SELECT GET_LOCK(?, 30)", (SCHEMA_LOCK,))
                .context("cannot take the schema lock")?;
            if locked.flatten() != Some(1) {
                bail!("{display}: another process held the schema lock for 30 s");
            }
            let created = create_and_migrate(conn, &display);
            let _ = conn.exec_drop("SELECT RELEASE_LOCK(?)", (SCHEMA_LOCK,));
            created?;
            let mut tx = conn.start_transaction(TxOpts::default()).context("cannot begin a transaction")?;
            let version: Option<Option<i64>> = tx
                .query_first("SELECT MAX(version) FROM seckill_schema FOR UPDATE")
                .context("cannot read seckill_schema")?;
            match version.flatten() {
                Some(v) if v > SCHEMA_VERSION => bail!(
                    "{display} has schema version {v}, newer than this seckill understands ({SCHEMA_VERSION}): upgrade seckill"
                ),
                Some(SCHEMA_VERSION) => {}
                _ => tx
                    .exec_drop("INSERT INTO seckill_schema (version) VALUES (?)", (SCHEMA_VERSION,))
                    .context("cannot record the schema version")?,
            }
            tx.commit().context("cannot commit the schema")
        })
    }
}

/// Create the tables when missing and add the state columns an older table lacks.
fn create_and_migrate(conn: &mut Conn, display: &str) -> Result<()> {
    for statement in SCHEMA {
        conn.query_drop(statement)
            .with_context(|| format!("cannot create the schema in {display}"))?;
    }
    let existing: Vec<String> = conn
        .query(
            "SELECT COLUMN_NAME FROM information_schema.COLUMNS
             WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'orders'",
        )
        .with_context(|| format!("cannot read the columns of orders in {display}"))?;
    let missing: Vec<String> = ADDED_COLUMNS
        .iter()
        .filter(|(column, _)| !existing.iter().any(|e| e.eq_ignore_ascii_case(column)))
        .map(|(column, definition)| format!("ADD COLUMN {column} {definition}"))
        .collect();
    if !missing.is_empty() {
        conn.query_drop(format!("ALTER TABLE orders {}", missing.join(", ")))
            .with_context(|| format!("cannot add the state columns to orders in {display}"))?;
    }
    Ok(())
}

/// An order row's first eleven columns, in INSERT order (see the schema).
fn row_values(o: &Order, consumed_at_ms: i64, state: OrderState) -> [Value; 11] {
    [
        o.order_id.as_str().into(),
        o.campaign.as_str().into(),
        o.item_id.as_str().into(),
        o.user_id.as_str().into(),
        o.qty.into(),
        o.price_cents.into(),
        o.bought_at_ms.into(),
        o.stream_id.as_str().into(),
        consumed_at_ms.into(),
        state.as_str().into(),
        o.deadline_ms.into(),
    ]
}

/// One multi-row INSERT of `orders` (nothing for none); rows inserted.
fn insert_rows(
    tx: &mut mysql::Transaction,
    orders: &[&Order],
    consumed_at_ms: i64,
) -> mysql::Result<u64> {
    if orders.is_empty() {
        return Ok(0);
    }
    let sql = format!(
        "INSERT INTO orders
         (order_id, campaign, item_id, user_id, qty, price_cents, bought_at, stream_id, consumed_at,
          state, deadline_at)
         VALUES {}",
        placeholders(orders.len(), "(?,?,?,?,?,?,?,?,?,?,?)")
    );
    let mut values: Vec<Value> = Vec::with_capacity(orders.len() * 11);
    for o in orders {
        values.extend(row_values(o, consumed_at_ms, o.initial_state()));
    }
    tx.exec_drop(sql, values)?;
    Ok(tx.affected_rows())
}

/// The seats of `orders` (those of a seat item), after their order rows in
/// the same transaction: each seat sold when its order row is paid or
/// final on ok (a state change that arrived first may have created it
/// final). An order whose seats are stored already (a redelivery) is left
/// as it is; a second sold row for a seat is refused by
/// `order_seats_sold_once`, like any order the database refuses.
fn insert_seats(tx: &mut mysql::Transaction, orders: &[Order]) -> Result<()> {
    let with_seats: Vec<&Order> = orders.iter().filter(|o| !o.seats.is_empty()).collect();
    if with_seats.is_empty() {
        return Ok(());
    }
    let ids: Vec<&str> = with_seats.iter().map(|o| o.order_id.as_str()).collect();
    let rows: Vec<(String, String, bool)> = tx.exec(
        format!(
            "SELECT o.order_id, o.state,
                    EXISTS (SELECT 1 FROM order_seats s WHERE s.order_id = o.order_id)
             FROM orders o WHERE o.order_id IN ({})",
            placeholders(ids.len(), "?")
        ),
        ids,
    )?;
    let state: HashMap<String, (String, bool)> = rows
        .into_iter()
        .map(|(id, state, stored)| (id, (state, stored)))
        .collect();
    let mut values: Vec<Value> = Vec::new();
    let mut done: HashSet<&str> = HashSet::new();
    for order in with_seats {
        let Some((order_state, stored)) = state.get(&order.order_id) else {
            continue;
        };
        if *stored || !done.insert(order.order_id.as_str()) {
            continue;
        }
        let sold: Option<i64> = matches!(order_state.as_str(), "paid" | "confirmed").then_some(1);
        for seat in &order.seats {
            values.extend([
                order.order_id.as_str().into(),
                order.campaign.as_str().into(),
                order.item_id.as_str().into(),
                seat.as_str().into(),
                sold.into(),
            ]);
        }
    }
    for rows in values.chunks(5 * ROWS_PER_INSERT) {
        tx.exec_drop(
            format!(
                "INSERT INTO order_seats (order_id, campaign, item_id, seat, sold) VALUES {}",
                placeholders(rows.len() / 5, "(?,?,?,?,?)")
            ),
            rows.to_vec(),
        )?;
    }
    Ok(())
}

fn placeholders(rows: usize, per_row: &str) -> String {
    vec![per_row; rows].join(",")
}

impl OrderStore for MysqlStore {
    fn display(&self) -> String {
        self.display.clone()
    }

    fn insert_orders(&mut self, orders: &[Order], consumed_at_ms: i64) -> Result<u64> {
        let display = self.display.clone();
        self.with_conn(|conn| {
            let mut tx = conn
                .start_transaction(TxOpts::default())
                .with_context(|| format!("cannot begin a transaction on {display}"))?;
            let mut inserted = 0;
            for chunk in orders.chunks(ROWS_PER_INSERT) {
                let all: Vec<&Order> = chunk.iter().collect();
                let new = match insert_rows(&mut tx, &all, consumed_at_ms) {
                    Ok(rows) => rows,
                    // Some are stored already (a redelivery): the statement is
                    // undone, the transaction goes on with the others only.
                    Err(mysql::Error::MySqlError(e)) if e.code == DUPLICATE_ENTRY => {
                        let lookup = format!(
                            "SELECT order_id FROM orders WHERE order_id IN ({})",
                            placeholders(chunk.len(), "?")
                        );
                        let ids: Vec<&str> = chunk.iter().map(|o| o.order_id.as_str()).collect();
                        let mut stored: HashSet<String> = tx
                            .exec(lookup, ids)
                            .with_context(|| format!("cannot look up orders in {display}"))?
                            .into_iter()
                            .collect();
                        // New ones only, each once (a repeated order id is the one idempotent case).
                        let fresh: Vec<&Order> = chunk
                            .iter()
                            .filter(|o| stored.insert(o.order_id.clone()))
                            .collect();
                        insert_rows(&mut tx, &fresh, consumed_at_ms).with_context(|| {
                            format!("cannot insert {} orders into {display}", fresh.len())
                        })?
                    }
                    Err(e) => {
                        return Err(e).with_context(|| {
                            format!("cannot insert {} orders into {display}", chunk.len())
                        });
                    }
                };
                inserted += new;
                insert_seats(&mut tx, chunk)
                    .with_context(|| format!("cannot store the seats of orders in {display}"))?;
            }
            tx.commit()
                .with_context(|| format!("cannot commit {} orders to {display}", orders.len()))?;
            Ok(inserted)
        })
    }

    fn apply_changes(&mut self, changes: &[StateChange], consumed_at_ms: i64) -> Result<()> {
        let display = self.display.clone();
        self.with_conn(|conn| {
            let mut tx = conn
                .start_transaction(TxOpts::default())
                .with_context(|| format!("cannot begin a transaction on {display}"))?;
            for chunk in changes.chunks(ROWS_PER_INSERT) {
                // Assignments run left to right and see the columns already
                // assigned: `state` goes last so the others test the old one.
                let sql = format!(
                    "INSERT INTO orders
                     (order_id, campaign, item_id, user_id, qty, price_cents, bought_at, stream_id, consumed_at,
                      state, deadline_at, paid_at, released_at, release_reason)
                     VALUES {}
                     ON DUPLICATE KEY UPDATE
                       paid_at = IF(state = 'reserved', VALUES(paid_at), paid_at),
                       released_at = IF(state = 'reserved', VALUES(released_at), released_at),
                       release_reason = IF(state = 'reserved', VALUES(release_reason), release_reason),
                       state = IF(state = 'reserved', VALUES(state), state)",
                    placeholders(chunk.len(), "(?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
                );
                let mut values: Vec<Value> = Vec::with_capacity(chunk.len() * CHANGE_COLUMNS);
                for c in chunk {
                    let o = &c.order;
                    let (paid_at, released_at) = change_times(c);
                    values.extend(row_values(o, consumed_at_ms, c.state));
                    values.extend([
                        paid_at.into(),
                        released_at.into(),
                        c.state.released().then_some(c.reason.as_str()).into(),
                    ]);
                }
                tx.exec_drop(sql, values).with_context(|| {
                    format!("cannot apply {} state changes in {display}", chunk.len())
                })?;
                for c in chunk.iter().filter(|c| c.state == OrderState::Paid) {
                    let id = c.order.order_id.as_str();
                    tx.exec_drop(SELL_SEATS, (id, id)).with_context(|| {
                        format!("cannot sell the seats of order {id} in {display}")
                    })?;
                }
            }
            tx.commit().with_context(|| {
                format!("cannot commit {} state changes to {display}", changes.len())
            })
        })
    }

    fn stored_contents(&mut self, order_ids: &[&str]) -> Result<HashMap<String, StoredContent>> {
        let display = self.display.clone();
        self.with_conn(|conn| {
            let mut found = HashMap::with_capacity(order_ids.len());
            for chunk in order_ids.chunks(LOOKUP_CHUNK) {
                let sql = format!(
                    "SELECT order_id, campaign, item_id, user_id, qty, price_cents, state FROM orders
                     WHERE order_id IN ({})",
                    placeholders(chunk.len(), "?")
                );
                type Row = (String, String, String, String, i64, i64, String);
                let rows: Vec<Row> = conn
                    .exec(sql, chunk.to_vec())
                    .with_context(|| format!("cannot look up orders in {display}"))?;
                for (order_id, campaign, item_id, user_id, qty, price_cents, state) in rows {
                    let state = parse_state(&order_id, &state, &display)?;
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
        })
    }

    fn item_seats(&mut self, campaign: &str, item: &str) -> Result<Vec<StoredSeat>> {
        let display = self.display.clone();
        self.with_conn(|conn| {
            let rows: Vec<(String, String, String)> = conn
                .exec(
                    "SELECT s.seat, s.order_id, o.state FROM order_seats s
                     JOIN orders o ON o.order_id = s.order_id
                     WHERE s.campaign = ? AND s.item_id = ?
                     ORDER BY s.seat, s.order_id",
                    (campaign, item),
                )
                .with_context(|| {
                    format!("cannot read the seats of {campaign}/{item} in {display}")
                })?;
            rows.into_iter()
                .map(|(seat, order_id, state)| {
                    let state = parse_state(&order_id, &state, &display)?;
                    Ok(StoredSeat {
                        seat,
                        order_id,
                        state,
                    })
                })
                .collect()
        })
    }

    fn item_totals(&mut self, campaign: &str, item: &str) -> Result<ItemTotals> {
        let display = self.display.clone();
        self.with_conn(|conn| {
            let row: Option<(i64, i64, i64, i64)> = conn
                .exec_first(
                    "SELECT COUNT(*), CAST(COALESCE(SUM(qty), 0) AS SIGNED), COUNT(recovered_at),
                            CAST(COALESCE(SUM(CASE WHEN recovered_at IS NOT NULL THEN qty END), 0) AS SIGNED)
                     FROM orders WHERE campaign = ? AND item_id = ?",
                    (campaign, item),
                )
                .with_context(|| format!("cannot count orders of {campaign}/{item} in {display}"))?;
            let (rows, units, carried_rows, carried_units) = row.unwrap_or_default();
            Ok(ItemTotals { rows, units, carried_rows, carried_units })
        })
    }

    fn campaign_rows(&mut self, campaign: &str) -> Result<i64> {
        let display = self.display.clone();
        self.with_conn(|conn| {
            let rows: Option<i64> = conn
                .exec_first(
                    "SELECT COUNT(*) FROM orders WHERE campaign = ?",
                    (campaign,),
                )
                .with_context(|| format!("cannot count orders of {campaign} in {display}"))?;
            Ok(rows.unwrap_or(0))
        })
    }

    fn delete_campaign(&mut self, campaign: &str) -> Result<u64> {
        let display = self.display.clone();
        self.with_conn(|conn| {
            let mut tx = conn
                .start_transaction(TxOpts::default())
                .with_context(|| format!("cannot begin a transaction on {display}"))?;
            tx.exec_drop("DELETE FROM orders WHERE campaign = ?", (campaign,))
                .with_context(|| format!("cannot delete orders of {campaign} from {display}"))?;
            let deleted = tx.affected_rows();
            tx.exec_drop("DELETE FROM order_seats WHERE campaign = ?", (campaign,))
                .with_context(|| format!("cannot delete the seats of {campaign} from {display}"))?;
            tx.exec_drop(
                "DELETE FROM seckill_recoveries WHERE campaign = ?",
                (campaign,),
            )
            .with_context(|| {
                format!("cannot delete the recoveries of {campaign} from {display}")
            })?;
            tx.commit()
                .with_context(|| format!("cannot commit the purge of {campaign} in {display}"))?;
            Ok(deleted)
        })
    }

    fn record_recovery(&mut self, recovery: &Recovery) -> Result<Recovery> {
        let display = self.display.clone();
        self.with_conn(|conn| {
            let (campaign, item, at) = (&recovery.campaign, &recovery.item_id, recovery.recovered_at_ms);
            let mut tx = conn
                .start_transaction(TxOpts::default())
                .with_context(|| format!("cannot begin a transaction on {display}"))?;
            tx.exec_drop(
                "UPDATE orders SET recovered_at = ?
                 WHERE campaign = ? AND item_id = ? AND recovered_at IS NULL",
                (at, campaign, item),
            )
            .with_context(|| format!("cannot mark the orders of {campaign}/{item} carried over in {display}"))?;
            let counted: Option<(i64, i64, i64)> = tx
                .exec_first(
                    "SELECT COUNT(CASE WHEN recovered_at = ? THEN 1 END),
                            CAST(COALESCE(SUM(CASE WHEN recovered_at = ? THEN qty END), 0) AS SIGNED),
                            CAST(COALESCE(SUM(qty), 0) AS SIGNED)
                     FROM orders WHERE campaign = ? AND item_id = ?",
                    (at, at, campaign, item),
                )
                .with_context(|| format!("cannot count the carried-over orders in {display}"))?;
            let (rows, units, all_units) = counted.unwrap_or_default();
            let written = recovery.counted(rows, units, all_units);
            if rows == 0 {
                return Ok(written);
            }
            tx.exec_drop(
                "INSERT INTO seckill_recoveries (campaign, item_id, recovered_at, recovered_by,
                     rows_carried, units_carried, initial_stock, stock_loaded)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    campaign,
                    item,
                    at,
                    &written.recovered_by,
                    rows,
                    units,
                    written.initial_stock,
                    written.stock_loaded,
                ),
            )
            .with_context(|| format!("cannot record the recovery of {campaign}/{item} in {display}"))?;
            tx.commit()
                .with_context(|| format!("cannot commit the recovery of {campaign}/{item} to {display}"))?;
            Ok(written)
        })
    }

    fn recoveries(&mut self, campaign: &str, item: &str) -> Result<Vec<Recovery>> {
        let display = self.display.clone();
        self.with_conn(|conn| {
            type Row = (i64, String, i64, i64, i64, i64);
            let rows: Vec<Row> = conn
                .exec(
                    "SELECT recovered_at, recovered_by, rows_carried, units_carried, initial_stock,
                            stock_loaded
                     FROM seckill_recoveries WHERE campaign = ? AND item_id = ?
                     ORDER BY recovered_at",
                    (campaign, item),
                )
                .with_context(|| {
                    format!("cannot read the recoveries of {campaign}/{item} in {display}")
                })?;
            Ok(rows
                .into_iter()
                .map(|(at, by, rows, units, initial, loaded)| Recovery {
                    campaign: campaign.to_string(),
                    item_id: item.to_string(),
                    recovered_at_ms: at,
                    recovered_by: by,
                    rows_carried: rows,
                    units_carried: units,
                    initial_stock: initial,
                    stock_loaded: loaded,
                })
                .collect())
        })
    }

    fn item_buyers_after(
        &mut self,
        campaign: &str,
        item: &str,
        after: &str,
        limit: usize,
    ) -> Result<Vec<BuyerTotal>> {
        let display = self.display.clone();
        self.with_conn(|conn| {
            let rows: Vec<(String, i64, String)> = conn
                .exec(
                    "SELECT user_id, CAST(SUM(qty) AS SIGNED), MAX(order_id) FROM orders
                     WHERE campaign = ? AND item_id = ? AND user_id > ?
                     GROUP BY user_id ORDER BY user_id LIMIT ?",
                    (campaign, item, after, limit as u64),
                )
                .with_context(|| format!("cannot page buyers of {campaign}/{item} in {display}"))?;
            Ok(rows
                .into_iter()
                .map(|(user_id, units, latest_order_id)| BuyerTotal {
                    user_id,
                    units,
                    latest_order_id,
                })
                .collect())
        })
    }

    fn item_orders_after(
        &mut self,
        campaign: &str,
        item: &str,
        after: &str,
        limit: usize,
    ) -> Result<Vec<StoredOrder>> {
        let display = self.display.clone();
        self.with_conn(|conn| {
            let rows: Vec<(String, String, i64, bool)> = conn
                .exec(
                    "SELECT order_id, stream_id, qty, recovered_at IS NOT NULL FROM orders
                     WHERE campaign = ? AND item_id = ? AND order_id > ?
                     ORDER BY order_id LIMIT ?",
                    (campaign, item, after, limit as u64),
                )
                .with_context(|| format!("cannot page orders of {campaign}/{item} in {display}"))?;
            Ok(rows
                .into_iter()
                .map(|(order_id, stream_id, qty, carried)| StoredOrder {
                    order_id,
                    stream_id,
                    qty,
                    carried,
                })
                .collect())
        })
    }
}
