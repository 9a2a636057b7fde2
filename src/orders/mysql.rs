//! The production order store: MySQL or MariaDB over TCP.
//!
//! One connection, dropped after any error and opened again on the next
//! call, so a restarted database is picked up without restarting `consume`.
//! A batch is one lookup of the order ids already stored and one multi-row
//! `INSERT` of the others inside one transaction: two round trips and one
//! commit per batch. Not `INSERT IGNORE`: it would also swallow a refusal by
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
    BuyerTotal, ItemTotals, Order, OrderStore, SCHEMA_VERSION, StoredContent, StoredOrder,
};

const SCHEMA: [&str; 2] = [
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
        KEY orders_by_item (campaign, item_id, order_id)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
];

/// Rows per INSERT statement (9 placeholders each, far below the 65,535 limit).
const ROWS_PER_INSERT: usize = 1000;
/// Order ids per lookup query.
const LOOKUP_CHUNK: usize = 1000;

/// A MySQL/MariaDB order store.
pub struct MysqlStore {
    opts: Opts,
    connection: Option<Conn>,
    display: String,
}

impl MysqlStore {
    /// Connect and create the schema when missing. `display` is the URL without password.
    pub fn open(url: &str, display: String) -> Result<MysqlStore> {
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
        store.create_schema()?;
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

    fn create_schema(&mut self) -> Result<()> {
        let display = self.display.clone();
        self.with_conn(|conn| {
            for statement in SCHEMA {
                conn.query_drop(statement)
                    .with_context(|| format!("cannot create the schema in {display}"))?;
            }
            let mut tx = conn.start_transaction(TxOpts::default()).context("cannot begin a transaction")?;
            let version: Option<Option<i64>> = tx
                .query_first("SELECT MAX(version) FROM seckill_schema FOR UPDATE")
                .context("cannot read seckill_schema")?;
            match version.flatten() {
                None => tx
                    .exec_drop("INSERT INTO seckill_schema (version) VALUES (?)", (SCHEMA_VERSION,))
                    .context("cannot record the schema version")?,
                Some(v) if v > SCHEMA_VERSION => bail!(
                    "{display} has schema version {v}, newer than this seckill understands ({SCHEMA_VERSION}): upgrade seckill"
                ),
                Some(_) => {}
            }
            tx.commit().context("cannot commit the schema")
        })
    }
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
                let chunk: Vec<&Order> = chunk
                    .iter()
                    .filter(|o| stored.insert(o.order_id.clone()))
                    .collect();
                if chunk.is_empty() {
                    continue;
                }
                let sql = format!(
                    "INSERT INTO orders
                     (order_id, campaign, item_id, user_id, qty, price_cents, bought_at, stream_id, consumed_at)
                     VALUES {}",
                    placeholders(chunk.len(), "(?,?,?,?,?,?,?,?,?)")
                );
                let mut values: Vec<Value> = Vec::with_capacity(chunk.len() * 9);
                for o in &chunk {
                    values.extend([
                        o.order_id.as_str().into(),
                        o.campaign.as_str().into(),
                        o.item_id.as_str().into(),
                        o.user_id.as_str().into(),
                        o.qty.into(),
                        o.price_cents.into(),
                        o.bought_at_ms.into(),
                        o.stream_id.as_str().into(),
                        consumed_at_ms.into(),
                    ]);
                }
                tx.exec_drop(sql, values)
                    .with_context(|| format!("cannot insert {} orders into {display}", chunk.len()))?;
                inserted += tx.affected_rows();
            }
            tx.commit()
                .with_context(|| format!("cannot commit {} orders to {display}", orders.len()))?;
            Ok(inserted)
        })
    }

    fn stored_contents(&mut self, order_ids: &[&str]) -> Result<HashMap<String, StoredContent>> {
        let display = self.display.clone();
        self.with_conn(|conn| {
            let mut found = HashMap::new();
            for chunk in order_ids.chunks(LOOKUP_CHUNK) {
                let sql = format!(
                    "SELECT order_id, campaign, item_id, user_id, qty, price_cents FROM orders
                     WHERE order_id IN ({})",
                    placeholders(chunk.len(), "?")
                );
                let rows: Vec<(String, String, String, String, i64, i64)> = conn
                    .exec(sql, chunk.to_vec())
                    .with_context(|| format!("cannot look up orders in {display}"))?;
                for (order_id, campaign, item_id, user_id, qty, price_cents) in rows {
                    let content = StoredContent {
                        campaign,
                        item_id,
                        user_id,
                        qty,
                        price_cents,
                    };
                    found.insert(order_id, content);
                }
            }
            Ok(found)
        })
    }

    fn item_totals(&mut self, campaign: &str, item: &str) -> Result<ItemTotals> {
        let display = self.display.clone();
        self.with_conn(|conn| {
            let row: Option<(i64, i64)> = conn
                .exec_first(
                    "SELECT COUNT(*), CAST(COALESCE(SUM(qty), 0) AS SIGNED) FROM orders WHERE campaign = ? AND item_id = ?",
                    (campaign, item),
                )
                .with_context(|| format!("cannot count orders of {campaign}/{item} in {display}"))?;
            let (rows, units) = row.unwrap_or((0, 0));
            Ok(ItemTotals { rows, units })
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
            conn.exec_drop("DELETE FROM orders WHERE campaign = ?", (campaign,))
                .with_context(|| format!("cannot delete orders of {campaign} from {display}"))?;
            Ok(conn.affected_rows())
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
            let rows: Vec<(String, String)> = conn
                .exec(
                    "SELECT order_id, stream_id FROM orders
                     WHERE campaign = ? AND item_id = ? AND order_id > ?
                     ORDER BY order_id LIMIT ?",
                    (campaign, item, after, limit as u64),
                )
                .with_context(|| format!("cannot page orders of {campaign}/{item} in {display}"))?;
            Ok(rows
                .into_iter()
                .map(|(order_id, stream_id)| StoredOrder {
                    order_id,
                    stream_id,
                })
                .collect())
        })
    }
}
